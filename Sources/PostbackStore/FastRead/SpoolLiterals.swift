/// The byte strings the fast spool parser compares against: JSON keys (with their quotes and
/// colon) in the order `SpoolRecord.encoded()` writes them (`RecordKey`, `AttributionField`), the
/// few record values it checks, and each choice field's choices. Built once from the declaration;
/// the parser holds a reference and reads them through pointers.
package final class SpoolLiterals: Sendable {
    package struct Literal: @unchecked Sendable {
        // Points into `storage`, which lives as long as the table and is never written after init.
        // Stored and package: other modules (the renderer's choice texts) read them in place.
        package let pointer: UnsafePointer<UInt8>
        package let count: Int
    }

    /// How the parser reads one attribution member, from its declaration: the slot kind, and for a
    /// choice field where its choices are in `choices`.
    package struct FieldReading: @unchecked Sendable {
        /// The field at this position (`AttributionField(rawValue:)` per member was a call per member).
        let field: AttributionField
        let storage: AttributionField.Storage
        package let firstChoice: Int
        let choiceCount: Int
    }

    package static let shared = SpoolLiterals()

    /// Declared in `RecordKey` and `AttributionField`; the parser's key positions are their raw values.
    package static let recordKeyNames = RecordKey.allCases.map(\.spoolKey)
    package static let attributionKeyNames = AttributionField.allCases.map(\.spoolKey)
    /// The record-level words the parser compares values with (`Value`).
    package static let valueNames = ["verified", "production", "null", "true", "false"]

    /// `"name":` for each record key, indexed like `recordKeyNames`. These tables are written only in
    /// init and read-only afterwards, so sharing them between threads is safe; they are pointers so
    /// the parser reads them without reference counting.
    package nonisolated(unsafe) let recordKeys: UnsafeMutablePointer<Literal>
    package nonisolated(unsafe) let attributionKeys: UnsafeMutablePointer<Literal>
    /// The bare words of `valueNames`.
    package nonisolated(unsafe) let values: UnsafeMutablePointer<Literal>
    /// Every choice field's choices, one run per field (`FieldReading.firstChoice`), in declared order.
    package nonisolated(unsafe) let choices: UnsafeMutablePointer<Literal>
    /// One per attribution field, indexed by its raw value.
    package nonisolated(unsafe) let fieldReadings: UnsafeMutablePointer<FieldReading>
    nonisolated(unsafe) private let storage: UnsafeMutablePointer<UInt8>
    // Copies of static lets, so the parser reads them per line without a `swift_once` call each.
    let recordKeyCount = recordKeyNames.count
    let attributionKeyCount = attributionKeyNames.count
    /// One bit per required attribution member (by raw value).
    let requiredAttributionKeys = AttributionField.allCases.filter(\.isRequired).reduce(0) { $0 | 1 << $1.rawValue }
    /// `PostbackFields.fieldsWithValueWhenAbsent`.
    let fieldsWithValueWhenAbsent = PostbackFields.fieldsWithValueWhenAbsent

    private init() {
        // The parser keeps the keys seen in one Int's bits (with masking shifts).
        precondition(Self.recordKeyNames.count <= Int.bitWidth && Self.attributionKeyNames.count <= Int.bitWidth)
        let choiceNames = AttributionField.declaredChoices.flatMap { $0 ?? [] }
        let texts =
            Self.recordKeyNames.map { "\"\($0)\":" } + Self.attributionKeyNames.map { "\"\($0)\":" } + Self.valueNames
            + choiceNames
        let total = texts.reduce(0) { $0 + $1.utf8.count }
        storage = .allocate(capacity: total)
        var literals: [Literal] = []
        var offset = 0
        for text in texts {
            let bytes = Array(text.utf8)
            (storage + offset).initialize(from: bytes, count: bytes.count)
            literals.append(Literal(pointer: UnsafePointer(storage + offset), count: bytes.count))
            offset += bytes.count
        }
        func table<Element>(_ elements: some Collection<Element>) -> UnsafeMutablePointer<Element> {
            let pointer = UnsafeMutablePointer<Element>.allocate(capacity: max(1, elements.count))
            pointer.initialize(from: Array(elements), count: elements.count)
            return pointer
        }
        var rest = literals[...]
        func take(_ count: Int) -> ArraySlice<Literal> {
            defer { rest = rest.dropFirst(count) }
            return rest.prefix(count)
        }
        recordKeys = table(take(Self.recordKeyNames.count))
        attributionKeys = table(take(Self.attributionKeyNames.count))
        values = table(take(Self.valueNames.count))
        choices = table(take(choiceNames.count))
        var firstChoice = 0
        fieldReadings = table(
            AttributionField.allCases.map { field in
                let count = AttributionField.declaredChoices[field.rawValue]?.count ?? 0
                defer { firstChoice += count }
                return FieldReading(field: field, storage: field.storage, firstChoice: firstChoice, choiceCount: count)
            })
    }

    deinit {
        storage.deallocate()
        recordKeys.deallocate()
        attributionKeys.deallocate()
        values.deallocate()
        choices.deallocate()
        fieldReadings.deallocate()
    }

    package enum Value: Int {
        case verified, production, null, `true`, `false`
    }

    package func value(_ value: Value) -> Literal { values[value.rawValue] }
}
