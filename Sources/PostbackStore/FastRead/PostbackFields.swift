package import Postbacks

/// A run of bytes inside a backing buffer (a spool line, or scratch space for decoded records).
/// 32-bit offsets keep `PostbackFields`, which is copied per postback, small (lines are < 4 MiB).
package struct ByteSlice: Equatable {
    let storedStart: Int32
    let storedCount: Int32

    @inline(__always)
    package init(start: Int, count: Int) {
        storedStart = Int32(truncatingIfNeeded: start)
        storedCount = Int32(truncatingIfNeeded: count)
    }

    package var start: Int { Int(storedStart) }
    package var count: Int { Int(storedCount) }

    /// Appends `text`'s UTF-8 to `scratch` and returns where it is; nil for nil.
    package static func appending(_ text: String?, to scratch: inout [UInt8]) -> ByteSlice? {
        guard let text else { return nil }
        let start = scratch.count
        scratch.append(contentsOf: text.utf8)
        return ByteSlice(start: start, count: scratch.count - start)
    }

    /// The slice packed into one `PostbackFields` slot (start in the low half, count in the high).
    @inline(__always)
    var slot: Int64 { Int64(UInt32(bitPattern: storedStart)) | Int64(storedCount) << 32 }

    @inline(__always)
    package init(slot: Int64) {
        storedStart = Int32(truncatingIfNeeded: slot)
        storedCount = Int32(truncatingIfNeeded: slot >> 32)
    }
}

/// The fields of one stored postback that place it in an aggregate row, in the cheapest form the
/// line parser can fill: one 8-byte slot per `AttributionField` (indexed by it), no `String`s on
/// the hot path. What a slot holds follows the field's declared kind (`AttributionField.storage`):
/// a byte slice into the line (or the row key), an integer, a boolean, or a choice's index in the
/// field's `choices`. A new field in the declaration gets its slot here without a change.
package struct PostbackFields {
    /// Room for the declared fields; `RecordSchemaTests` fails when the declaration outgrows it.
    package static let capacity = 32

    /// One bit per field that has a value (a clear bit is `null`, whatever the slot holds).
    // Readable stored properties, so another module can read slots on its hot path: Swift 6.3 does
    // not inline `@inlinable package` functions across modules (each call copied this 264-byte
    // struct), while a stored property of a package struct is read in place. Aggregation's
    // `FieldSlots` reads them.
    package private(set) var present: UInt32 = 0
    package private(set) var slots = InlineArray<32, Int64>(repeating: 0)

    package init() {}

    /// The fields of a parsed record (the full parser's `Attribution`), their text appended to `scratch`.
    package init(_ attribution: Attribution, storingTextIn scratch: inout [UInt8]) {
        for field in AttributionField.allCases {
            switch field.value(in: attribution) {
            case .string(let text):
                if let choices = AttributionField.declaredChoices[field.rawValue] {
                    setChoice(field, text.flatMap { choices.firstIndex(of: $0) })
                } else {
                    set(field, ByteSlice.appending(text, to: &scratch))
                }
            case .integer(let number): set(field, number)
            case .boolean(let flag): set(field, flag)
            }
        }
    }

    /// No field has a value.
    @inline(__always)
    package mutating func clear() { present = 0 }

    @inline(__always)
    package func has(_ field: AttributionField) -> Bool { present & 1 << UInt32(field.rawValue) != 0 }

    /// Gives the fields without a value what a record without them reads as
    /// (`AttributionField.valueWhenAbsent`: a window index of 0, not test mode), as the full parser does.
    @inline(__always)
    package mutating func fillValuesWhenAbsent() {
        guard present & Self.fieldsWithValueWhenAbsent != Self.fieldsWithValueWhenAbsent else { return }
        for field in AttributionField.allCases where !has(field) {
            switch field.valueWhenAbsent {
            case .integer(let number)?: set(field, number)
            case .boolean(let flag)?: set(field, flag)
            case .string(let text)?:
                // Only a choice can stand for absent text here: a slice needs bytes to point at.
                setChoice(field, text.flatMap { AttributionField.declaredChoices[field.rawValue]?.firstIndex(of: $0) })
            case nil: break
            }
        }
    }

    static let fieldsWithValueWhenAbsent = AttributionField.allCases.filter { $0.valueWhenAbsent != nil }.reduce(
        UInt32(0)
    ) { $0 | 1 << UInt32($1.rawValue) }

    /// Fields with a value, one bit per field (`1 << field.rawValue`).
    package var presentFields: UInt32 { present }

    // MARK: Slots by kind

    @inline(__always)
    mutating func store(_ field: AttributionField, _ value: Int64?) {
        // A masking shift: a raw value is below 32 (`capacity`, checked by a test).
        let bit = UInt32(1) &<< UInt32(truncatingIfNeeded: field.rawValue)
        if let value {
            // Through a pointer: the subscript's setter copied the whole array in and out.
            withUnsafeMutablePointer(to: &slots) {
                UnsafeMutableRawPointer($0).storeBytes(of: value, toByteOffset: field.rawValue &* 8, as: Int64.self)
            }
            present |= bit
        } else {
            present &= ~bit
        }
    }

    @inline(__always)
    func load(_ field: AttributionField) -> Int64? { has(field) ? slots[unchecked: field.rawValue] : nil }

    @inline(__always)
    package mutating func set(_ field: AttributionField, _ slice: ByteSlice?) { store(field, slice?.slot) }
    @inline(__always)
    package mutating func set(_ field: AttributionField, _ number: Int64?) { store(field, number) }
    @inline(__always)
    package mutating func set(_ field: AttributionField, _ flag: Bool?) { store(field, flag.map { $0 ? 1 : 0 }) }
    /// A choice field's value as its index in the field's `choices`.
    @inline(__always)
    package mutating func setChoice(_ field: AttributionField, _ index: Int?) { store(field, index.map { Int64($0) }) }

    @inline(__always)
    package func slice(_ field: AttributionField) -> ByteSlice? { load(field).map(ByteSlice.init(slot:)) }
    @inline(__always)
    package func integer(_ field: AttributionField) -> Int64? { load(field) }
    @inline(__always)
    package func boolean(_ field: AttributionField) -> Bool? { load(field).map { $0 != 0 } }
    @inline(__always)
    package func choiceIndex(_ field: AttributionField) -> Int? { load(field).map { Int(truncatingIfNeeded: $0) } }

    /// A choice field's value as its declared text.
    package func choiceText(_ field: AttributionField) -> String? {
        choiceIndex(field).flatMap { AttributionField.declaredChoices[field.rawValue]?[$0] }
    }

    // The cases of the choice fields the pipeline reads, indexed like their declared choices
    // (`allCases` order); built once, since `allCases` makes a new array per call.
    static let protocols = PostbackProtocol.allCases
    static let conversionTypes = ConversionType.allCases
    static let coarseValues = CoarseConversionValue.allCases

    // MARK: The fields the pipeline's rules read by name

    package var postbackProtocol: PostbackProtocol? { choiceIndex(.postbackProtocol).map { Self.protocols[$0] } }
    package var version: ByteSlice? { slice(.version) }
    package var appID: Int64? { integer(.appID) }
    package var adNetworkID: ByteSlice? { slice(.adNetworkID) }
    package var campaignID: Int64? { integer(.campaignID) }
    package var sourceIdentifier: ByteSlice? { slice(.sourceIdentifier) }
    package var conversionType: ConversionType? { choiceIndex(.conversionType).map { Self.conversionTypes[$0] } }
    package var sequenceIndex: Int? { integer(.sequenceIndex).map { Int(truncatingIfNeeded: $0) } }
    package var didWin: Bool? { boolean(.didWin) }
    package var fineValue: Int? { integer(.fineValue).map { Int(truncatingIfNeeded: $0) } }
    package var coarseValue: CoarseConversionValue? { choiceIndex(.coarseValue).map { Self.coarseValues[$0] } }
    package var isTestMode: Bool { boolean(.testMode) ?? false }

    /// The unsigned values (`UnsignedValues`), text slices read from `line` (the dedup index keeps them).
    package func unsignedValues(line: UnsafeRawBufferPointer) -> UnsignedValues {
        let country = slice(.countryCode).map {
            String(decoding: UnsafeRawBufferPointer(rebasing: line[$0.start..<$0.start + $0.count]), as: UTF8.self)
        }
        return UnsignedValues(
            fine: fineValue, coarse: coarseValue, interaction: choiceText(.interaction).flatMap(AdInteraction.init(rawValue:)),
            country: country)
    }

    /// AdAttributionKit and SKAdNetwork from 4.0 have three conversion windows; earlier versions one.
    package func hasConversionWindows(in base: UnsafeRawBufferPointer) -> Bool {
        guard postbackProtocol == .skadnetwork else { return true }
        guard let version else { return false }
        return SKAdNetworkVersion.hasConversionWindows(
            versionText: UnsafeRawBufferPointer(rebasing: base[version.start..<(version.start + version.count)]))
    }
}

extension AttributionField {
    /// What a `PostbackFields` slot holds for the field, from its declared type and choices.
    package enum Storage: UInt8 {
        case slice, integer, boolean, choice
    }

    /// Looked up per field and row: a table, not the declaration's switches.
    package var storage: Storage { Self.storageTable[rawValue] }

    nonisolated(unsafe) private static let storageTable: UnsafeMutablePointer<Storage> = {
        let table = UnsafeMutablePointer<Storage>.allocate(capacity: allCases.count)
        table.initialize(from: allCases.map(\.declaredStorage), count: allCases.count)
        return table
    }()

    private var declaredStorage: Storage {
        switch valueType {
        case .integer: return .integer
        case .boolean: return .boolean
        default: return Self.declaredChoices[rawValue] == nil ? .slice : .choice
        }
    }
}
