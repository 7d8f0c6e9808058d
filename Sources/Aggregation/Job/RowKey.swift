import Basics
import PostbackStore
import Postbacks

/// The grain of an aggregate row as a compact byte string: what the interner hashes and compares,
/// and what the output stage reads back as a `RowView`.
///
/// Everything that decides a row's columns is in it; what the schema derives (label, revenue,
/// campaign/geo/placement) is not, because it follows from these fields and is computed once per row
/// at the end. Layout: kind, est-install day, then the stored fields of `grain` in that order (the
/// ad network id lower-cased). Strings are a 16-bit length (0xFFFF = absent) and their bytes;
/// optional integers a presence byte and eight bytes; choices one code byte.
final class RowKeyEncoder {
    /// The stored fields that place a postback in a row, in key order (`RowView` reads them back in it).
    static let grain: [AttributionField] = [
        .appID, .postbackProtocol, .version, .adNetworkID, .campaignID, .sourceIdentifier, .sourceAppID, .sourceDomain,
        .marketplaceID, .countryCode, .interaction, .conversionType, .sequenceIndex, .didWin, .fineValue, .coarseValue,
    ]

    /// What a rejected record's row keeps of `grain`: what the record claims to be. The rest is absent.
    static let rejectedFields: Set<AttributionField> = [.appID, .postbackProtocol, .version, .adNetworkID]

    enum Kind: UInt8 {
        /// A verified postback's row.
        case postback = 0
        /// A rejected record, counted by what it claims to be (app, protocol, version, network).
        case rejected = 1
    }

    /// Manually managed: encoding runs once per postback, and appending to an array held by a class
    /// pays a uniqueness and an exclusivity check per byte.
    private var buffer = GrowableBuffer<UInt8>(capacity: 256)

    deinit { buffer.free() }

    /// The last encoded key, valid until the next encode.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: buffer.base, count: buffer.count) }

    /// Encodes a verified postback's fields; strings are read from `base`. Written out field by field
    /// in `grain` order rather than looped over it: this runs once per postback.
    func encodePostback(_ fields: PostbackFields, installDay: UTCDay, base: UnsafeRawBufferPointer) {
        var out = buffer
        out.removeAll()
        out.append(Kind.postback.rawValue)
        Self.appendInt32(Int32(truncatingIfNeeded: installDay.daysSinceEpoch), to: &out)
        Self.appendOptional(fields.appID, to: &out)
        out.append(fields.postbackProtocol == .skadnetwork ? 0 : 1)
        Self.appendString(fields.version, base: base, to: &out)
        Self.appendString(fields.adNetworkID, base: base, lowercased: true, to: &out)
        Self.appendOptional(fields.campaignID, to: &out)
        Self.appendString(fields.sourceIdentifier, base: base, to: &out)
        Self.appendOptional(fields.sourceAppID, to: &out)
        Self.appendString(fields.sourceDomain, base: base, to: &out)
        Self.appendString(fields.marketplaceID, base: base, to: &out)
        Self.appendString(fields.countryCode, base: base, to: &out)
        out.append(fields.interaction.map { $0 == .view ? 1 : 2 } ?? 0)
        out.append(Self.code(fields.conversionType))
        out.append(UInt8(truncatingIfNeeded: fields.sequenceIndex))
        out.append(fields.didWin.map { $0 ? 2 : 1 } ?? 0)
        out.append(fields.fineValue.map { UInt8(truncatingIfNeeded: $0) } ?? 0xFF)
        out.append(fields.coarseValue.map { UInt8($0.tableIndex + 1) } ?? 0)
        buffer = out
    }

    /// Encodes a rejected record's row: only what it claims to identify, the rest absent.
    func encodeRejected(appID: Int64?, postbackProtocol: PostbackProtocol?, version: String?, adNetworkID: String?) {
        var out = buffer
        out.removeAll()
        out.append(Kind.rejected.rawValue)
        Self.appendInt32(Int32.min, to: &out)
        for field in Self.grain {
            switch field {
            case .appID: Self.appendOptional(appID, to: &out)
            case .postbackProtocol: out.append(postbackProtocol.map { $0 == .skadnetwork ? 0 : 1 } ?? 0xFF)
            case .version: Self.appendText(version, to: &out)
            case .adNetworkID: Self.appendText(adNetworkID.map(\.asciiLowercased), to: &out)
            default: Self.appendAbsent(field, to: &out)
            }
        }
        buffer = out
    }

    /// The encoding of an absent value of `field` (what `RowView` reads as nil).
    private static func appendAbsent(_ field: AttributionField, to out: inout GrowableBuffer<UInt8>) {
        switch field {
        case .appID, .campaignID, .sourceAppID: appendOptional(nil, to: &out)
        case .version, .adNetworkID, .sourceIdentifier, .sourceDomain, .marketplaceID, .countryCode: appendText(nil, to: &out)
        case .interaction, .didWin, .coarseValue: out.append(0)
        case .conversionType: out.append(0xFE)
        case .postbackProtocol, .sequenceIndex, .fineValue: out.append(0xFF)
        case .testMode: preconditionFailure("test mode is not in a row key")
        }
    }

    static func code(_ type: ConversionType) -> UInt8 {
        switch type {
        case .download: return 0
        case .redownload: return 1
        case .reengagement: return 2
        }
    }

    @inline(__always)
    private static func appendInt32(_ value: Int32, to out: inout GrowableBuffer<UInt8>) {
        withUnsafeBytes(of: value.littleEndian) { out.append($0) }
    }

    @inline(__always)
    private static func appendOptional(_ value: Int64?, to out: inout GrowableBuffer<UInt8>) {
        guard let value else {
            out.append(0)
            return
        }
        out.append(1)
        withUnsafeBytes(of: value.littleEndian) { out.append($0) }
    }

    @inline(__always)
    private static func appendString(
        _ slice: ByteSlice?, base: UnsafeRawBufferPointer, lowercased: Bool = false, to out: inout GrowableBuffer<UInt8>
    ) {
        guard let slice else {
            out.append(0xFF)
            out.append(0xFF)
            return
        }
        let count = min(slice.count, 0xFFFE)
        out.append(UInt8(count & 0xFF))
        out.append(UInt8(count >> 8))
        let source = UnsafeRawBufferPointer(rebasing: base[slice.start..<(slice.start + count)])
        if lowercased {
            for byte in source { out.append(byte &- 0x41 < 26 ? byte | 0x20 : byte) }
        } else {
            out.append(source)
        }
    }

    private static func appendText(_ text: String?, to out: inout GrowableBuffer<UInt8>) {
        guard let text else {
            out.append(0xFF)
            out.append(0xFF)
            return
        }
        var copy = text
        copy.withUTF8 { utf8 in appendString(ByteSlice(start: 0, count: utf8.count), base: UnsafeRawBufferPointer(utf8), to: &out)
        }
    }
}
