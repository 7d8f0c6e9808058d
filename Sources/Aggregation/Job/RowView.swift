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
        for field in RowKeyEncoder.grain {
            switch field {
            case .appID: appID = reader.optional()
            case .postbackProtocol:
                let code = reader.byte()
                postbackProtocol = code == 0 ? .skadnetwork : code == 1 ? .adattributionkit : nil
            case .version: version = reader.string()
            case .adNetworkID: adNetworkID = reader.string()
            case .campaignID: campaignID = reader.optional()
            case .sourceIdentifier: sourceIdentifier = reader.string()
            case .sourceAppID: sourceAppID = reader.optional()
            case .sourceDomain: sourceDomain = reader.string()
            case .marketplaceID: marketplaceID = reader.string()
            case .countryCode: countryCode = reader.string()
            case .interaction:
                let code = reader.byte()
                interaction = code == 1 ? .view : code == 2 ? .click : nil
            case .conversionType:
                let code = reader.byte()
                conversionType = code == 0 ? .download : code == 1 ? .redownload : code == 2 ? .reengagement : nil
            case .sequenceIndex:
                let sequence = reader.byte()
                sequenceIndex = sequence == 0xFF ? nil : Int(sequence)
            case .didWin:
                let win = reader.byte()
                didWin = win == 0 ? nil : win == 2
            case .fineValue:
                let fine = reader.byte()
                fineValue = fine == 0xFF ? nil : Int(fine)
            case .coarseValue:
                let coarse = reader.byte()
                coarseValue = coarse == 0 ? nil : CoarseConversionValue.allCases[Int(coarse) - 1]
            case .testMode: break
            }
        }
    }

    /// Writes `field` as its CSV column shows it (strings as stored in the key).
    func write(_ field: AttributionField, of key: UnsafeRawBufferPointer, into line: inout CSVLine) {
        switch field {
        case .appID: line.field(appID)
        case .postbackProtocol: line.field(postbackProtocol?.rawValue)
        case .version: line.field(slice: version, of: key)
        case .adNetworkID: line.field(slice: adNetworkID, of: key)
        case .campaignID: line.field(campaignID)
        case .sourceIdentifier: line.field(slice: sourceIdentifier, of: key)
        case .sourceAppID: line.field(sourceAppID)
        case .sourceDomain: line.field(slice: sourceDomain, of: key)
        case .marketplaceID: line.field(slice: marketplaceID, of: key)
        case .countryCode: line.field(slice: countryCode, of: key)
        case .interaction: line.field(interaction?.rawValue)
        case .conversionType: line.field(conversionType?.rawValue)
        case .sequenceIndex: line.field(sequenceIndex)
        case .didWin: line.field(didWin)
        case .fineValue: line.field(fineValue)
        case .coarseValue: line.field(coarseValue?.rawValue)
        case .testMode: preconditionFailure("test mode has no column")
        }
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
