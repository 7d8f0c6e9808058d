package import Basics
package import Postbacks

/// How one app's conversion values are to be read during one period: the decoded meaning of every
/// fine value (first window) and coarse value (each window), and how its ad networks' source
/// identifiers break down into campaign, geo and placement.
///
/// Loaded from a JSON file (`schemas/<app-id>/<name>.json`, format in docs/aggregate.md) and fully
/// validated then: once built, every lookup is a table index and cannot fail.
package struct ConversionSchema: Sendable {
    /// Unique over the schema directory; written on every output row decoded with this schema.
    package let schemaID: String
    package let appID: Int64
    /// First day (UTC, inclusive) of the estimated install dates this schema decodes.
    package let effectiveFrom: UTCDay
    /// Last day (inclusive); nil while the schema is still live.
    package let effectiveTo: UTCDay?
    /// ISO 4217 code of every revenue amount in the schema.
    package let currency: String
    package let protocols: [PostbackProtocol]
    package let conversionTypes: [ConversionType]
    package let revenueEstimate: RevenueEstimatePolicy
    /// Indexed by postback sequence index (0, 1, 2).
    package let windows: [WindowDecoding]
    package let sourceIdentifierMaps: [SourceIdentifierMap]
    /// Where it was loaded from, for messages.
    package let file: String
    /// SHA-256 of the file's bytes, recorded in manifests so a changed schema shows.
    package let digest: String

    package func covers(_ day: UTCDay) -> Bool {
        day >= effectiveFrom && (effectiveTo.map { day <= $0 } ?? true)
    }

    package func applies(to postbackProtocol: PostbackProtocol, _ conversionType: ConversionType) -> Bool {
        protocols.contains(postbackProtocol) && conversionTypes.contains(conversionType)
    }

    /// The meaning of fine value `value` (0–63) in window `window`. Fine values only come in the first
    /// postback, so only window 0 can map them; anything else is unmapped (never guessed from a
    /// neighbour, and never read with the coarse rules).
    package func decode(fine value: Int, window: Int) -> ValueDecoding {
        guard windows.indices.contains(window) else { return .unmapped(label: WindowDecoding.defaultUnmappedLabel) }
        let decoding = windows[window]
        guard let table = decoding.fine, table.indices.contains(value), let decoded = table[value] else {
            return .unmapped(label: decoding.unmappedLabel)
        }
        return .decoded(decoded)
    }

    package func decode(coarse value: CoarseConversionValue, window: Int) -> ValueDecoding {
        guard windows.indices.contains(window) else { return .unmapped(label: WindowDecoding.defaultUnmappedLabel) }
        let decoding = windows[window]
        guard let decoded = decoding.coarse[value.tableIndex] else { return .unmapped(label: decoding.unmappedLabel) }
        return .decoded(decoded)
    }

    /// The source-identifier map of `adNetworkID` (compared case-insensitively) valid on `day`.
    package func sourceIdentifierMap(adNetworkID: String, day: UTCDay) -> SourceIdentifierMap? {
        let network = adNetworkID.asciiLowercased
        return sourceIdentifierMaps.first { $0.adNetworkID == network && $0.covers(day) }
    }

    /// The same for an already lower-cased network id given as bytes (the row keys hold them so).
    func sourceIdentifierMap(lowercasedAdNetworkID network: UnsafeRawBufferPointer, day: UTCDay) -> SourceIdentifierMap? {
        sourceIdentifierMaps.first { map in
            map.covers(day) && map.adNetworkID.utf8.count == network.count && map.adNetworkID.utf8.elementsEqual(network)
        }
    }
}

/// The result of looking a value up in a schema.
package enum ValueDecoding: Sendable, Equatable {
    case decoded(DecodedValue)
    /// The schema has no rule for the value; the label says so (default `undecoded`).
    case unmapped(label: String)
}

/// The decoding rules of one conversion window (postback sequence index).
package struct WindowDecoding: Sendable {
    package static let defaultUnmappedLabel = "undecoded"

    /// 64 slots, one per fine value; nil when the window maps no fine values.
    package var fine: [DecodedValue?]?
    /// Three slots: low, medium, high.
    package var coarse: [DecodedValue?]
    /// Label for values the window does not map.
    package var unmappedLabel: String

    package init(
        fine: [DecodedValue?]? = nil, coarse: [DecodedValue?] = [nil, nil, nil], unmappedLabel: String = defaultUnmappedLabel
    ) {
        self.fine = fine
        self.coarse = coarse
        self.unmappedLabel = unmappedLabel
    }
}

extension CoarseConversionValue {
    /// Position in `WindowDecoding.coarse`.
    package var tableIndex: Int {
        switch self {
        case .low: return 0
        case .medium: return 1
        case .high: return 2
        }
    }
}
