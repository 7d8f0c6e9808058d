/// Why a body is not acceptable JSON, with the byte offset where the problem starts.
package struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    package let offset: Int
    package let reason: String

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    package var description: String { "\(reason) at byte \(offset)" }
}
