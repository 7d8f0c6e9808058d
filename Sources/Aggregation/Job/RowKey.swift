import Postbacks

/// The grain of an aggregate row as a compact byte string: what the interner hashes and compares,
/// and what the output stage decodes back into `RowFields`.
///
/// Everything that decides a row's columns is in it; what the schema derives (label, revenue,
/// campaign/geo/placement) is not, because it follows from these fields and is computed once per row
/// at the end. Layout: kind, est-install day, app id, protocol, version, ad network id (lower-cased),
/// campaign id, source identifier, source app id, source domain, marketplace, country, interaction,
/// conversion type, sequence index, did-win, fine value, coarse value. Strings are a 16-bit length
/// (0xFFFF = absent) and their bytes; optional integers a presence byte and eight bytes.
final class RowKeyEncoder {
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

    /// Encodes a verified postback's fields; strings are read from `base`.
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
        Self.appendOptional(appID, to: &out)
        out.append(postbackProtocol.map { $0 == .skadnetwork ? 0 : 1 } ?? 0xFF)
        Self.appendText(version, to: &out)
        Self.appendText(adNetworkID.map(asciiLowercased), to: &out)
        Self.appendOptional(nil, to: &out)
        Self.appendText(nil, to: &out)
        Self.appendOptional(nil, to: &out)
        Self.appendText(nil, to: &out)
        Self.appendText(nil, to: &out)
        Self.appendText(nil, to: &out)
        for byte: UInt8 in [0, 0xFE, 0xFF, 0, 0xFF, 0] { out.append(byte) }
        buffer = out
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
        guard let value else { out.append(0); return }
        out.append(1)
        withUnsafeBytes(of: value.littleEndian) { out.append($0) }
    }

    @inline(__always)
    private static func appendString(_ slice: ByteSlice?, base: UnsafeRawBufferPointer, lowercased: Bool = false, to out: inout GrowableBuffer<UInt8>) {
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
        copy.withUTF8 { utf8 in appendString(ByteSlice(start: 0, count: utf8.count), base: UnsafeRawBufferPointer(utf8), to: &out) }
    }
}

/// ASCII-only lower-casing, the same in the fast and slow paths and in every engine: ad network ids
/// are ASCII, and Unicode case mapping would make grouping depend on the platform's tables.
func asciiLowercased(_ text: String) -> String {
    String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
}

/// A row key decoded for output.
struct RowFields: Sendable {
    var kind: RowKeyEncoder.Kind
    var installDay: UTCDay?
    var appID: Int64?
    var postbackProtocol: PostbackProtocol?
    var version: String?
    var adNetworkID: String?
    var campaignID: Int64?
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var marketplaceID: String?
    var countryCode: String?
    var interaction: AdInteraction?
    var conversionType: ConversionType?
    var sequenceIndex: Int?
    var didWin: Bool?
    var fineValue: Int?
    var coarseValue: CoarseConversionValue?

    init(key: UnsafeRawBufferPointer) {
        var reader = KeyReader(bytes: key)
        kind = RowKeyEncoder.Kind(rawValue: reader.byte()) ?? .postback
        let day = reader.int32()
        installDay = day == Int32.min ? nil : UTCDay(daysSinceEpoch: Int(day))
        appID = reader.optional()
        let protocolCode = reader.byte()
        postbackProtocol = protocolCode == 0 ? .skadnetwork : protocolCode == 1 ? .adattributionkit : nil
        version = reader.string()
        adNetworkID = reader.string()
        campaignID = reader.optional()
        sourceIdentifier = reader.string()
        sourceAppID = reader.optional()
        sourceDomain = reader.string()
        marketplaceID = reader.string()
        countryCode = reader.string()
        let interactionCode = reader.byte()
        interaction = interactionCode == 1 ? .view : interactionCode == 2 ? .click : nil
        let typeCode = reader.byte()
        conversionType = typeCode == 0 ? .download : typeCode == 1 ? .redownload : typeCode == 2 ? .reengagement : nil
        let sequence = reader.byte()
        sequenceIndex = sequence == 0xFF ? nil : Int(sequence)
        let win = reader.byte()
        didWin = win == 0 ? nil : win == 2
        let fine = reader.byte()
        fineValue = fine == 0xFF ? nil : Int(fine)
        let coarse = reader.byte()
        coarseValue = coarse == 0 ? nil : CoarseConversionValue.allCases[Int(coarse) - 1]
    }

    private struct KeyReader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func byte() -> UInt8 {
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func int32() -> Int32 {
            defer { offset += 4 }
            return Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self))
        }

        mutating func optional() -> Int64? {
            guard byte() == 1 else { return nil }
            defer { offset += 8 }
            return Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
        }

        mutating func string() -> String? {
            let count = Int(byte()) | Int(byte()) << 8
            guard count != 0xFFFF else { return nil }
            defer { offset += count }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]), as: UTF8.self)
        }
    }
}
