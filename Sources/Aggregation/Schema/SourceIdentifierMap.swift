package import Basics
import Postbacks

/// What the digits of one ad network's source identifiers mean (SKAdNetwork 4 and AdAttributionKit),
/// and what its SKAdNetwork 1–3 campaign ids mean.
///
/// Positions are the digits of the full four-digit identifier, numbered 1 to 4 from the left. A
/// postback at a lower crowd-anonymity tier carries only two or three digits; `truncation` says
/// which ones survive. A dimension is decoded only when all of its positions are present.
package struct SourceIdentifierMap: Sendable {
    /// Which digits a two- or three-digit source identifier keeps.
    package enum Truncation: String, Sendable, CaseIterable {
        /// The low-order digits (`5239` → `239` → `39`): Apple's example pair of postbacks
        /// (`5239` high tier, `39` low tier) and WWDC22 session 10038 describe this. The default.
        case keepsTrailing = "keeps_trailing"
        /// The high-order digits (`5239` → `523` → `52`), as some vendors' guides describe it.
        case keepsLeading = "keeps_leading"
    }

    /// The dimensions a digit group can decode to: the output columns `campaign`, `geo`, `placement`.
    package enum Dimension: String, Sendable, CaseIterable {
        case campaign, geo, placement
    }

    package struct DigitGroup: Sendable {
        package let dimension: Dimension
        /// Ascending, each 1...4.
        package let positions: [Int]
        /// Digits → name. Nil means the digits themselves are the value.
        package let values: [String: String]?
    }

    /// Lower-cased.
    package let adNetworkID: String
    package let validFrom: UTCDay?
    package let validTo: UTCDay?
    package let truncation: Truncation
    package let groups: [DigitGroup]
    /// SKAdNetwork 1.0–3.0 `campaign-id` → campaign name.
    package let campaignIDs: [Int64: String]

    package func covers(_ day: UTCDay) -> Bool {
        (validFrom.map { day >= $0 } ?? true) && (validTo.map { day <= $0 } ?? true)
    }

    /// The decoded dimensions of a source identifier (2–4 digits, as received).
    package func dimensions(sourceIdentifier: String) -> DecodedDimensions {
        var text = sourceIdentifier
        return text.withUTF8 { dimensions(sourceIdentifier: UnsafeRawBufferPointer($0)) }
    }

    func dimensions(sourceIdentifier digits: UnsafeRawBufferPointer) -> DecodedDimensions {
        guard (1...4).contains(digits.count) else { return DecodedDimensions() }
        var result = DecodedDimensions()
        for group in groups {
            var key: [UInt8] = []
            for position in group.positions {
                let index = truncation == .keepsTrailing ? position - 1 - (4 - digits.count) : position - 1
                guard index >= 0, index < digits.count else {
                    key = []
                    break
                }
                key.append(digits[index])
            }
            guard !key.isEmpty else { continue }
            let text = String(decoding: key, as: UTF8.self)
            result[group.dimension] = group.values.map { $0[text] } ?? text
        }
        return result
    }

    /// The campaign name of a SKAdNetwork 1–3 campaign id.
    package func dimensions(campaignID: Int64) -> DecodedDimensions {
        var result = DecodedDimensions()
        result.campaign = campaignIDs[campaignID]
        return result
    }
}

/// Decoded `campaign`, `geo`, `placement`; nil when unknown.
package struct DecodedDimensions: Sendable, Equatable {
    package var campaign: String?
    package var geo: String?
    package var placement: String?

    package init(campaign: String? = nil, geo: String? = nil, placement: String? = nil) {
        self.campaign = campaign
        self.geo = geo
        self.placement = placement
    }

    package subscript(dimension: SourceIdentifierMap.Dimension) -> String? {
        get {
            switch dimension {
            case .campaign: return campaign
            case .geo: return geo
            case .placement: return placement
            }
        }
        set {
            switch dimension {
            case .campaign: campaign = newValue
            case .geo: geo = newValue
            case .placement: placement = newValue
            }
        }
    }
}

// MARK: Reading

extension SourceIdentifierMap {
    static let keys = ["ad_network_id", "description", "valid_from", "valid_to", "truncation", "digits", "campaign_id_map"]

    init?(_ object: SchemaObject) {
        object.allowOnly(Self.keys)
        let log = object.log
        let network = object.string("ad_network_id", required: true)
        let validFrom = object.day("valid_from")
        let validTo = object.day("valid_to")
        if let validFrom, let validTo, validTo < validFrom {
            log.add(object.path, "valid_to \(validTo) is before valid_from \(validFrom)")
        }
        let truncation = object.has("truncation") ? object.choice("truncation", Truncation.self) : .keepsTrailing

        var groups: [DigitGroup] = []
        var usedPositions: [Int: Dimension] = [:]
        for (index, element) in (object.array("digits") ?? []).enumerated() {
            let path = object.child("digits") + "[\(index)]"
            guard let groupObject = SchemaObject(element, path: path, log: log) else { continue }
            groupObject.allowOnly(["dimension", "positions", "values", "description"])
            let dimension = groupObject.choice("dimension", Dimension.self)
            if !groupObject.has("dimension") { log.add(groupObject.child("dimension"), "is required") }
            var positions: [Int] = []
            if let list = groupObject.array("positions", required: true) {
                for (offset, value) in list.enumerated() {
                    if let position = SchemaObject.integer(
                        value, path: groupObject.child("positions") + "[\(offset)]", in: 1...4, log: log)
                    {
                        positions.append(Int(position))
                    }
                }
                if list.isEmpty { log.add(groupObject.child("positions"), "must list at least one digit position (1–4)") }
            }
            if positions != positions.sorted() || Set(positions).count != positions.count {
                log.add(groupObject.child("positions"), "must be ascending without repeats, got \(positions)")
            }
            if let dimension {
                if groups.contains(where: { $0.dimension == dimension }) {
                    log.add(groupObject.child("dimension"), "\(dimension.rawValue) is decoded twice in this map")
                }
                for position in positions {
                    if let other = usedPositions[position] {
                        log.add(groupObject.child("positions"), "position \(position) is already used by \(other.rawValue)")
                    }
                    usedPositions[position] = dimension
                }
            }
            var values: [String: String]? = nil
            if let valuesObject = groupObject.object("values") {
                var table: [String: String] = [:]
                for member in valuesObject.object.members {
                    let digits = member.key.utf8
                    if digits.count != positions.count
                        || !digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                    {
                        log.add(
                            valuesObject.path,
                            "key \"\(JSONWriter.escapedForMessage(member.key))\" must be \(positions.count) digit\(positions.count == 1 ? "" : "s") (one per position)"
                        )
                    }
                    if let name = valuesObject.string(member.key, required: true) { table[member.key] = name }
                }
                values = table
            }
            if let dimension, !positions.isEmpty {
                groups.append(DigitGroup(dimension: dimension, positions: positions, values: values))
            }
        }

        var campaignIDs: [Int64: String] = [:]
        if let map = object.object("campaign_id_map") {
            for member in map.object.members {
                guard let id = Int64(member.key), String(id) == member.key, (0...100).contains(id) else {
                    log.add(
                        map.path,
                        "key \"\(JSONWriter.escapedForMessage(member.key))\" must be a SKAdNetwork campaign id, 0 to 100, without leading zeros"
                    )
                    continue
                }
                if let name = map.string(member.key, required: true) { campaignIDs[id] = name }
            }
        }
        guard let network, let truncation else { return nil }
        self.init(
            adNetworkID: network.asciiLowercased, validFrom: validFrom, validTo: validTo, truncation: truncation,
            groups: groups, campaignIDs: campaignIDs)
    }

    /// True when the two maps are for the same network on at least one common day.
    func overlaps(_ other: SourceIdentifierMap) -> Bool {
        guard adNetworkID == other.adNetworkID else { return false }
        let start = Swift.max(validFrom?.daysSinceEpoch ?? Int.min, other.validFrom?.daysSinceEpoch ?? Int.min)
        let end = Swift.min(validTo?.daysSinceEpoch ?? Int.max, other.validTo?.daysSinceEpoch ?? Int.max)
        return start <= end
    }
}
