import Basics
import PostbackStore
import Postbacks

/// A row key read back for output: numbers decoded, strings left as byte ranges of the key, so
/// rendering a row allocates nothing. The fields are read in `RowKeyEncoder.grain` order, each as
/// its declared kind, into `PostbackFields` slots (string slices point into the key).
struct RowView {
    var kind: RowKeyEncoder.Kind
    /// Nil for rejected rows.
    var installDay: UTCDay?
    /// The grain's fields; a field not in the grain, or absent from the row, has no value.
    private(set) var fields = PostbackFields()

    init(key: UnsafeRawBufferPointer) {
        var reader = KeyReader(bytes: key)
        kind = RowKeyEncoder.Kind(rawValue: reader.byte()) ?? .postback
        let day = reader.int32()
        installDay = day == Int32.min ? nil : UTCDay(daysSinceEpoch: Int(day))
        for field in RowKeyEncoder.grain {
            switch field.storage {
            case .slice: fields.set(field, reader.string())
            case .integer: fields.set(field, reader.optional())
            case .boolean:
                let code = reader.byte()
                fields.set(field, code == 0 ? nil : code == 2)
            case .choice:
                let code = reader.byte()
                fields.setChoice(field, code == 0 ? nil : Int(code) - 1)
            }
        }
    }

    // What the renderer's rules read by name (schema lookup, decoding, counts).
    var appID: Int64? { fields.appID }
    var postbackProtocol: PostbackProtocol? { fields.postbackProtocol }
    var adNetworkID: ByteSlice? { fields.adNetworkID }
    var campaignID: Int64? { fields.campaignID }
    var sourceIdentifier: ByteSlice? { fields.sourceIdentifier }
    var conversionType: ConversionType? { fields.conversionType }
    var sequenceIndex: Int? { fields.sequenceIndex }
    var didWin: Bool? { fields.didWin }
    var fineValue: Int? { fields.fineValue }
    var coarseValue: CoarseConversionValue? { fields.coarseValue }

    /// Writes `field` as its CSV column shows it: as stored in the key, a choice as its declared text.
    func write(_ field: AttributionField, of key: UnsafeRawBufferPointer, into line: inout CSVLine) {
        switch field.storage {
        case .slice: line.field(slice: fields.slice(field), of: key)
        case .integer: line.field(fields.integer(field))
        case .boolean: line.field(fields.boolean(field))
        case .choice: line.field(fields.choiceText(field))
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

        /// `RowKeyEncoder.appendOptional`'s byte count and low bytes.
        mutating func optional() -> Int64? {
            let count = Int(byte())
            guard count > 0 else { return nil }
            var value: UInt64 = 0
            for index in 0..<count { value |= UInt64(bytes[offset + index]) << (8 * index) }
            offset += count
            return Int64(bitPattern: value)
        }

        mutating func string() -> ByteSlice? {
            let count = Int(byte()) | Int(byte()) << 8
            guard count != 0xFFFF else { return nil }
            defer { offset += count }
            return ByteSlice(start: offset, count: count)
        }
    }
}
