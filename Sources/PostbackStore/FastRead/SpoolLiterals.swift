/// The byte strings the fast spool parser compares against: JSON keys (with their quotes and
/// colon) in the order `SpoolRecord.encoded()` writes them (`RecordKey`, `AttributionField`), and the
/// enumeration values. Built once; the parser holds a reference and reads them through pointers.
package final class SpoolLiterals: Sendable {
    package struct Literal: @unchecked Sendable {
        // Points into `storage`, which lives as long as the table and is never written after init.
        let pointer: UnsafePointer<UInt8>
        let count: Int
    }

    package static let shared = SpoolLiterals()

    /// Declared in `RecordKey` and `AttributionField`; the parser's key positions are their raw values.
    package static let recordKeyNames = RecordKey.allCases.map(\.spoolKey)
    package static let attributionKeyNames = AttributionField.allCases.map(\.spoolKey)
    package static let valueNames = [
        "verified", "production", "skadnetwork", "adattributionkit", "click", "view", "download", "redownload",
        "re-engagement", "low", "medium", "high", "null", "true", "false",
    ]

    /// `"name":` for each record key, indexed like `recordKeyNames`. These tables are written only in
    /// init and read-only afterwards, so sharing them between threads is safe; they are pointers so
    /// the parser reads them without reference counting.
    package nonisolated(unsafe) let recordKeys: UnsafeMutablePointer<Literal>
    package nonisolated(unsafe) let attributionKeys: UnsafeMutablePointer<Literal>
    /// The bare words of `valueNames`.
    package nonisolated(unsafe) let values: UnsafeMutablePointer<Literal>
    nonisolated(unsafe) private let storage: UnsafeMutablePointer<UInt8>

    private init() {
        let texts = Self.recordKeyNames.map { "\"\($0)\":" } + Self.attributionKeyNames.map { "\"\($0)\":" } + Self.valueNames
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
        func table(_ slice: ArraySlice<Literal>) -> UnsafeMutablePointer<Literal> {
            let pointer = UnsafeMutablePointer<Literal>.allocate(capacity: slice.count)
            pointer.initialize(from: Array(slice), count: slice.count)
            return pointer
        }
        recordKeys = table(literals[0..<Self.recordKeyNames.count])
        attributionKeys = table(
            literals[Self.recordKeyNames.count..<(Self.recordKeyNames.count + Self.attributionKeyNames.count)])
        values = table(literals[(Self.recordKeyNames.count + Self.attributionKeyNames.count)...])
    }

    deinit {
        storage.deallocate()
        recordKeys.deallocate()
        attributionKeys.deallocate()
        values.deallocate()
    }

    package enum Value: Int {
        case verified, production, skadnetwork, adattributionkit, click, view, download, redownload, reengagement, low, medium,
            high
        case null, `true`, `false`
    }

    package func value(_ value: Value) -> Literal { values[value.rawValue] }
}
