#if canImport(Glibc)
    import Glibc
#endif

/// Object keys a caller expects in every document it parses (a postback's members, a spool record's
/// keys), given to `StrictJSONParser` so that each is one shared string instead of a fresh allocation
/// per parse; equality checks against them are then cheap too. The caller declares the names (Basics
/// knows none); a key not in the table is parsed as any other string.
package struct InternedKeys: Sendable {
    /// No interned keys: every key is a fresh string.
    package static let none = InternedKeys([String]())

    /// Keys longer than this are never interned (no postback or record key comes close).
    private static let maximumLength = 32

    /// Keys grouped by UTF-8 length, for a quick candidate list.
    private let byLength: [[(bytes: [UInt8], string: String)]]

    /// - Parameter keys: the names to share; duplicates and names of `maximumLength` bytes or more are ignored.
    package init(_ keys: some Sequence<String>) {
        var table = [[(bytes: [UInt8], string: String)]](repeating: [], count: Self.maximumLength)
        for key in keys where key.utf8.count < Self.maximumLength {
            let bytes = Array(key.utf8)
            if !table[bytes.count].contains(where: { $0.bytes == bytes }) { table[bytes.count].append((bytes, key)) }
        }
        byLength = table
    }

    /// Every interned key, shortest first.
    package var keys: [String] { byLength.flatMap { $0.map(\.string) } }

    /// The shared string for a key's raw bytes (between its quotes, no escapes), or nil.
    func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count < Self.maximumLength else { return nil }
        for candidate in byLength[bytes.count]
        where candidate.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            return candidate.string
        }
        return nil
    }
}
