import Basics
import PostbackStore
import Postbacks

/// A row key read back for output: numbers decoded, strings left as byte ranges of the key, so
/// rendering a row allocates nothing. The fields are read in `RowKeyEncoder.grain` order, each as its
/// declared kind (string slices point into the key), into a `Storage` the renderer reuses.
struct RowView {
    var kind: RowKeyEncoder.Kind
    /// Nil for rejected rows.
    var installDay: UTCDay?
    /// The storage's values, indexed by `AttributionField.rawValue`; a field not in the grain, or
    /// absent from the row, is `.absent`. Kept here, not in `PostbackFields`: its accessors are
    /// calls across modules that copy it (see `FieldSlots`), and the renderer reads per column.
    private let values: UnsafeMutablePointer<Value>
    private unowned(unsafe) let storage: Storage

    /// Where views decode their values: one per rendering worker, reused for every row (an
    /// allocation per row showed in profiles). A view is valid while its storage lives and until
    /// the next view is decoded into it.
    final class Storage {
        fileprivate let values: UnsafeMutablePointer<Value>
        // The slots of the fields read by name, looked up once: `AttributionField.rawValue` is a
        // call from this module.
        fileprivate let appID = AttributionField.appID.rawValue
        fileprivate let postbackProtocol = AttributionField.postbackProtocol.rawValue
        fileprivate let adNetworkID = AttributionField.adNetworkID.rawValue
        fileprivate let campaignID = AttributionField.campaignID.rawValue
        fileprivate let sourceIdentifier = AttributionField.sourceIdentifier.rawValue
        fileprivate let conversionType = AttributionField.conversionType.rawValue
        fileprivate let sequenceIndex = AttributionField.sequenceIndex.rawValue
        fileprivate let didWin = AttributionField.didWin.rawValue
        fileprivate let fineValue = AttributionField.fineValue.rawValue
        fileprivate let coarseValue = AttributionField.coarseValue.rawValue
        // The choices' cases, indexed like their declared choices (`allCases` order); built once,
        // since `allCases` makes a new array per call.
        fileprivate let protocols = PostbackProtocol.allCases
        fileprivate let conversionTypes = ConversionType.allCases
        fileprivate let coarseValues = CoarseConversionValue.allCases

        init() {
            values = .allocate(capacity: PostbackFields.capacity)
            values.initialize(repeating: .absent, count: PostbackFields.capacity)
        }

        deinit { values.deallocate() }  // `Value` is trivial: nothing to deinitialize.
    }

    // Trivial (no references).
    fileprivate enum Value {
        case absent
        case slice(ByteSlice)
        case integer(Int64)
        case boolean(Bool)
        case choice(Int)
    }

    init(key: UnsafeRawBufferPointer, storage: Storage) {
        var reader = KeyReader(bytes: key)
        kind = RowKeyEncoder.Kind(rawValue: reader.byte()) ?? .postback
        let day = reader.int32()
        installDay = day == Int32.min ? nil : UTCDay(daysSinceEpoch: Int(day))
        self.storage = storage
        values = storage.values
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

    private func slice(_ slot: Int) -> ByteSlice? {
        if case .slice(let slice) = values[slot] { slice } else { nil }
    }

    private func integer(_ slot: Int) -> Int64? {
        if case .integer(let number) = values[slot] { number } else { nil }
    }

    private func boolean(_ slot: Int) -> Bool? {
        if case .boolean(let flag) = values[slot] { flag } else { nil }
    }

    private func choice<Choice>(_ slot: Int, _ cases: [Choice]) -> Choice? {
        if case .choice(let index) = values[slot] { cases[index] } else { nil }
    }

    // What the renderer's rules read by name (schema lookup, decoding, counts). The choices'
    // cases are indexed like their declared choices (`allCases` order).
    var appID: Int64? { integer(storage.appID) }
    var postbackProtocol: PostbackProtocol? { choice(storage.postbackProtocol, storage.protocols) }
    var adNetworkID: ByteSlice? { slice(storage.adNetworkID) }
    var campaignID: Int64? { integer(storage.campaignID) }
    var sourceIdentifier: ByteSlice? { slice(storage.sourceIdentifier) }
    var conversionType: ConversionType? { choice(storage.conversionType, storage.conversionTypes) }
    var sequenceIndex: Int? { integer(storage.sequenceIndex).map { Int(truncatingIfNeeded: $0) } }
    var didWin: Bool? { boolean(storage.didWin) }
    var fineValue: Int? { integer(storage.fineValue).map { Int(truncatingIfNeeded: $0) } }
    var coarseValue: CoarseConversionValue? { choice(storage.coarseValue, storage.coarseValues) }

    /// A column that shows a field, resolved once (its slot and choice texts), so that writing it
    /// per row reads no declaration: `AttributionField`'s members are calls from this module.
    struct FieldColumn {
        let slot: Int
        /// The field's declared choices as bytes (`SpoolLiterals.choices`); unused unless a choice.
        let choices: UnsafePointer<SpoolLiterals.Literal>

        init(_ field: AttributionField) {
            slot = field.rawValue
            let literals = SpoolLiterals.shared
            choices = UnsafePointer(literals.choices + literals.fieldReadings[slot].firstChoice)
        }
    }

    /// Writes `column`'s field as its CSV column shows it: as stored in the key, a choice as its
    /// declared text.
    func write(_ column: FieldColumn, of key: UnsafeRawBufferPointer, into line: inout CSVLine) {
        switch values[column.slot] {
        case .absent: line.field(nil as String?)
        case .slice(let slice): line.field(slice: slice, of: key)
        case .integer(let number): line.field(number)
        case .boolean(let flag): line.field(flag)
        case .choice(let index):
            let text = column.choices[index]
            line.field(text: UnsafeRawBufferPointer(start: text.pointer, count: text.count))
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
