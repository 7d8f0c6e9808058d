/// Why a body is not acceptable JSON, with the byte offset where the problem starts.
package struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    package let offset: Int
    package let reason: String

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    package var description: String { "\(reason) at byte \(offset)" }

    /// The error where a person looks for it in a file they edit: `reason at line 3, column 15`
    /// (lines and columns from 1; a column counts characters, not bytes).
    package func described(in bytes: [UInt8]) -> String {
        let before = bytes.prefix(min(offset, bytes.count))
        let lineStart = before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        let line = before.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
        // UTF-8 continuation bytes (10xxxxxx) do not start a character.
        let column = before[lineStart...].reduce(1) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        return "\(reason) at line \(line), column \(column)"
    }
}
