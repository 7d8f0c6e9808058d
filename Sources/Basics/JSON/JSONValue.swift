/// A JSON value as the strict parser produced it.
///
/// Numbers keep their literal text: the fields we sign are rendered from it, and a round trip through
/// `Double` (what Foundation does) turns `525463029` into `5.25463029e8` in some code paths.
package enum JSONValue: Sendable, Equatable {
    case string(String)
    case number(JSONNumber)
    case bool(Bool)
    case null
    case object(JSONObject)
    case array([JSONValue])

    /// A short name for the kind of value, for error messages ("expected an integer, got a string").
    package var kindDescription: String {
        switch self {
        case .string: return "a string"
        case .number(let number): return number.isInteger ? "an integer" : "a non-integer number"
        case .bool: return "a boolean"
        case .null: return "null"
        case .object: return "an object"
        case .array: return "an array"
        }
    }
}

/// A JSON number literal, exactly as written (it already passed the JSON number grammar).
package struct JSONNumber: Sendable, Equatable, CustomStringConvertible {
    package let text: String
    /// No fraction and no exponent: `42`, `-7`, not `42.0` or `4.2e1`.
    package let isInteger: Bool

    package var description: String { text }

    /// The value as Int64 when the literal is an integer that fits; nil for `1.5`, `1e3` or 2^63.
    package var int64Value: Int64? { isInteger ? Int64(text) : nil }
}

/// A JSON object with its members in document order. Keys are unique: the parser rejects duplicates.
package struct JSONObject: Sendable, Equatable {
    package struct Member: Sendable, Equatable {
        package let key: String
        package let value: JSONValue
    }

    package let members: [Member]

    package init(members: [Member]) { self.members = members }

    /// The value for `key`, or nil when absent. Objects from postbacks have a dozen members, so a linear
    /// scan beats hashing.
    package subscript(key: String) -> JSONValue? {
        // Comparing lengths first (O(1) for native strings) skips most full string comparisons.
        let length = key.utf8.count
        for member in members where member.key.utf8.count == length && member.key == key { return member.value }
        return nil
    }

    package var keys: [String] { members.map(\.key) }
}
