import Basics
import PostbackStore
import Postbacks

/// A row key read back for output: numbers decoded, strings left as byte ranges of the key, so
/// rendering a row allocates only its value list. The fields are read in `RowKeyEncoder.grain`
/// order, each as its declared kind (string slices point into the key).
struct RowView {
    var kind: RowKeyEncoder.Kind
    /// Nil for rejected rows.
    var installDay: UTCDay?
    /// The grain's values, indexed by `AttributionField.rawValue`; a field not in the grain, or
    /// absent from the row, is `.absent`. Kept here, not in `PostbackFields`: its accessors are
    /// calls across modules that copy it (see `FieldSlots`), and the renderer reads per column.
    private let values: Values

    /// Tail-allocated: an Array of a module's own enum looked up its generic metadata per row.
    private final class Values: ManagedBuffer<Void, Value> {
        static func make() -> Values {
            let values = unsafeDowncast(create(minimumCapacity: PostbackFields.capacity) { _ in }, to: Values.self)
            values.withUnsafeMutablePointerToElements { $0.initialize(repeating: .absent, count: PostbackFields.capacity) }
            return values
        }

        subscript(slot: Int) -> Value {
            get { withUnsafeMutablePointerToElements { $0[slot] } }
            set { withUnsafeMutablePointerToElements { $0[slot] = newValue } }
        }
    }

    // Trivial (no references), so `Values` needs no deinitialization.
    private enum Value {
        case absent
        case slice(ByteSlice)
        case integer(Int64)
        case boolean(Bool)
        case choice(Int)
    }

    init(key: UnsafeRawBufferPointer) {
        var reader = KeyReader(bytes: key)
        kind = RowKeyEncoder.Kind(rawValue: reader.byte()) ?? .postback
        let day = reader.int32()
        installDay = day == Int32.min ? nil : UTCDay(daysSinceEpoch: Int(day))
        values = Values.make()
        for step in UnsafeBufferPointer(RowKeyEncoder.grainSteps) {
            let value: Value
            switch step.storage {
            case .slice: value = reader.string().map { .slice($0) } ?? .absent
            case .integer: value = reader.optional().map { .integer($0) } ?? .absent
            case .boolean:
                let code = reader.byte()
                value = code == 0 ? .absent : .boolean(code == 2)
            case .choice:
                let code = reader.byte()
                value = code == 0 ? .absent : .choice(Int(code) - 1)
            }
            values[step.slot] = value
        }
    }

    /// The row's values as `PostbackFields` (slices into the key): for checks, not the render path.
    var fields: PostbackFields {
        var fields = PostbackFields()
        for field in AttributionField.allCases {
            switch values[field.rawValue] {
            case .absent: break
            case .slice(let slice): fields.set(field, slice)
            case .integer(let number): fields.set(field, number)
            case .boolean(let flag): fields.set(field, flag)
            case .choice(let index): fields.setChoice(field, index)
            }
        }
        return fields
    }

    private func slice(_ field: AttributionField) -> ByteSlice? {
        if case .slice(let slice) = values[field.rawValue] { slice } else { nil }
    }

    private func integer(_ field: AttributionField) -> Int64? {
        if case .integer(let number) = values[field.rawValue] { number } else { nil }
    }

    private func boolean(_ field: AttributionField) -> Bool? {
        if case .boolean(let flag) = values[field.rawValue] { flag } else { nil }
    }

    private func choice<Choice>(_ field: AttributionField, _ cases: [Choice]) -> Choice? {
        if case .choice(let index) = values[field.rawValue] { cases[index] } else { nil }
    }

    // What the renderer's rules read by name (schema lookup, decoding, counts). The choices'
    // cases are indexed like their declared choices (`allCases` order).
    var appID: Int64? { integer(.appID) }
    var postbackProtocol: PostbackProtocol? { choice(.postbackProtocol, Self.protocols) }
    var adNetworkID: ByteSlice? { slice(.adNetworkID) }
    var campaignID: Int64? { integer(.campaignID) }
    var sourceIdentifier: ByteSlice? { slice(.sourceIdentifier) }
    var conversionType: ConversionType? { choice(.conversionType, Self.conversionTypes) }
    var sequenceIndex: Int? { integer(.sequenceIndex).map { Int(truncatingIfNeeded: $0) } }
    var didWin: Bool? { boolean(.didWin) }
    var fineValue: Int? { integer(.fineValue).map { Int(truncatingIfNeeded: $0) } }
    var coarseValue: CoarseConversionValue? { choice(.coarseValue, Self.coarseValues) }

    // Built once: `allCases` makes a new array per call.
    private static let protocols = PostbackProtocol.allCases
    private static let conversionTypes = ConversionType.allCases
    private static let coarseValues = CoarseConversionValue.allCases

    /// Writes `field` as its CSV column shows it: as stored in the key, a choice as its declared text.
    func write(_ field: AttributionField, of key: UnsafeRawBufferPointer, into line: inout CSVLine) {
        switch values[field.rawValue] {
        case .absent: line.field(nil as String?)
        case .slice(let slice): line.field(slice: slice, of: key)
        case .integer(let number): line.field(number)
        case .boolean(let flag): line.field(flag)
        case .choice(let index): line.field(AttributionField.declaredChoices[field.rawValue]?[index])
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
