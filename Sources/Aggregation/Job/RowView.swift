import Basics
import PostbackStore
import Postbacks

/// A row key read back for output: numbers decoded, strings left as byte ranges of the key, so
/// rendering a row allocates nothing.
struct RowView {
    var kind: RowKeyEncoder.Kind
    /// Nil for rejected rows.
    var installDay: UTCDay?
    var appID: Int64?
    var postbackProtocol: PostbackProtocol?
    var version: ByteSlice?
    var adNetworkID: ByteSlice?
    var campaignID: Int64?
    var sourceIdentifier: ByteSlice?
    var sourceAppID: Int64?
    var sourceDomain: ByteSlice?
    var marketplaceID: ByteSlice?
    var countryCode: ByteSlice?
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

        mutating func string() -> ByteSlice? {
            let count = Int(byte()) | Int(byte()) << 8
            guard count != 0xFFFF else { return nil }
            defer { offset += count }
            return ByteSlice(start: offset, count: count)
        }
    }
}
