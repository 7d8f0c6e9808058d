#if canImport(Glibc)
    import Glibc
#endif

/// The fast path for SKAdNetwork impressions in their plain form: one flat JSON object whose
/// strings are printable ASCII without escapes and whose numbers are plain decimal integers, what
/// an ad server writes. It reads the members straight from the bytes into typed slots, with no
/// `JSONValue` tree and no `String` per member name, then applies `SKAdNetworkImpression(parsing:)`'s
/// rules.
///
/// It only ever accepts: anything else (an escape, a non-ASCII byte, a float, an unknown or repeated
/// member, a rule broken) gives nil, and the full parser decides and words the refusal. So an
/// impression it reads is one the full parser reads the same way (`FuzzImpressionRequest` and
/// `ImpressionTests` check that equality).
package enum PlainImpressionReader {
    /// The members, by slot.
    private enum Slot: Int, CaseIterable {
        case version, adNetworkID, campaignID, sourceIdentifier, itunesItemID, nonce, sourceAppID, sourceDomain
        case fidelityType, timestamp

        /// The slot of a member name, compared as bytes.
        init?(_ name: UnsafeRawBufferPointer) {
            func equals(_ literal: StaticString) -> Bool {
                literal.utf8CodeUnitCount == name.count
                    && memcmp(literal.utf8Start, name.baseAddress!, name.count) == 0
            }
            switch name.count {
            case 5: if equals("nonce") { self = .nonce } else { return nil }
            case 7: if equals("version") { self = .version } else { return nil }
            case 9: if equals("timestamp") { self = .timestamp } else { return nil }
            case 11: if equals("campaign-id") { self = .campaignID } else { return nil }
            case 13:
                if equals("ad-network-id") {
                    self = .adNetworkID
                } else if equals("source-app-id") {
                    self = .sourceAppID
                } else if equals("source-domain") {
                    self = .sourceDomain
                } else if equals("fidelity-type") {
                    self = .fidelityType
                } else {
                    return nil
                }
            case 14: if equals("itunes-item-id") { self = .itunesItemID } else { return nil }
            case 17: if equals("source-identifier") { self = .sourceIdentifier } else { return nil }
            default: return nil
            }
        }

        var isText: Bool { self == .version || self == .adNetworkID || self == .nonce || self == .sourceDomain }
    }

    /// A member's value: a text's byte range, or an integer.
    private enum Value {
        case text(Range<Int>)
        case integer(Int64)
    }

    package static func read(_ bytes: UnsafeRawBufferPointer) -> SKAdNetworkImpression? {
        guard let values = members(bytes) else { return nil }
        func text(_ slot: Slot) -> String? {
            guard case .text(let range)? = values[slot.rawValue] else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        func integer(_ slot: Slot) -> Int64? {
            guard case .integer(let value)? = values[slot.rawValue] else { return nil }
            return value
        }
        func has(_ slot: Slot) -> Bool { values[slot.rawValue] != nil }
        func lowerCase(_ slot: Slot) -> String? {
            guard let value = text(slot), !value.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return nil }
            return value
        }

        guard let versionText = text(.version), let version = SKAdNetworkVersion(rawValue: versionText),
            let adNetworkID = lowerCase(.adNetworkID)
        else { return nil }
        var campaignID: Int64?
        var sourceIdentifier: Int64?
        if version.hasSourceIdentifier {
            guard !has(.campaignID), let value = integer(.sourceIdentifier), value <= 9999 else { return nil }
            sourceIdentifier = value
        } else {
            guard !has(.sourceIdentifier), let value = integer(.campaignID), (1...100).contains(value) else { return nil }
            campaignID = value
        }
        guard let itunesItemID = integer(.itunesItemID), let nonceText = text(.nonce), ImpressionFields.isUUID(nonceText)
        else { return nil }
        let sourceAppID = integer(.sourceAppID)
        guard sourceAppID != nil || !has(.sourceAppID) else { return nil }
        var sourceDomain: String?
        if has(.sourceDomain) {
            guard version.hasSourceDomain, let domain = lowerCase(.sourceDomain) else { return nil }
            sourceDomain = domain
        }
        if version.hasSourceAppID {
            guard (sourceAppID == nil) != (sourceDomain == nil) else { return nil }
        } else {
            guard sourceAppID == nil else { return nil }
        }
        var fidelityType: Int64?
        if version.hasFidelityType {
            guard let fidelity = integer(.fidelityType), fidelity <= 1, sourceDomain == nil || fidelity == 1 else { return nil }
            fidelityType = fidelity
        } else {
            guard !has(.fidelityType) else { return nil }
        }
        guard let timestamp = integer(.timestamp), (1_000_000_000_000...9_999_999_999_999).contains(timestamp) else {
            return nil
        }
        return SKAdNetworkImpression(
            version: version, adNetworkID: adNetworkID, campaignID: campaignID, sourceIdentifier: sourceIdentifier,
            itunesItemID: itunesItemID, nonce: ImpressionFields.lowerCasedUUID(nonceText), sourceAppID: sourceAppID,
            sourceDomain: sourceDomain,
            fidelityType: fidelityType, timestamp: timestamp)
    }

    /// The members of a plain flat object by slot, or nil for anything but the plain form.
    private static func members(_ bytes: UnsafeRawBufferPointer) -> [Value?]? {
        var values = [Value?](repeating: nil, count: Slot.allCases.count)
        var index = 0
        let end = bytes.count
        func skipWhitespace() {
            while index < end, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }
        /// A string's content range, the index after its closing quote; printable ASCII only, no escape.
        func string() -> Range<Int>? {
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            var cursor = start
            while cursor < end {
                let byte = bytes[cursor]
                if byte == UInt8(ascii: "\"") {
                    index = cursor + 1
                    return start..<cursor
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                cursor += 1
            }
            return nil
        }
        skipWhitespace()
        guard index < end, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            skipWhitespace()
            guard let name = string(), let slot = Slot(UnsafeRawBufferPointer(rebasing: bytes[name])),
                values[slot.rawValue] == nil
            else { return nil }
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            if slot.isText {
                guard let range = string(), !range.isEmpty else { return nil }
                values[slot.rawValue] = .text(range)
            } else {
                // A plain non-negative integer: digits, no leading zero, no sign, fraction or exponent.
                let start = index
                var value: Int64 = 0
                while index < end, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                    let (times, overflow) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflowAdding) = times.addingReportingOverflow(Int64(bytes[index] - 0x30))
                    guard !overflow, !overflowAdding else { return nil }
                    value = sum
                    index += 1
                }
                guard index > start, bytes[start] != 0x30 || index == start + 1 else { return nil }
                values[slot.rawValue] = .integer(value)
            }
            skipWhitespace()
            guard index < end else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { return nil }
            index += 1
            skipWhitespace()
            return index == end ? values : nil
        }
    }
}
