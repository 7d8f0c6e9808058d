import AggregateSchema
import Basics
import Postbacks

/// Typed, path-aware access to one JSON object of a schema file. Every accessor records a problem
/// (instead of throwing) and returns nil, so the reader can go on and report everything at once.
struct SchemaObject {
    let object: JSONObject
    let path: String
    let log: ProblemLog

    init?(_ value: JSONValue, path: String, log: ProblemLog) {
        guard case .object(let object) = value else {
            log.add(path, "must be an object, got \(value.kindDescription)")
            return nil
        }
        self.object = object
        self.path = path
        self.log = log
    }

    func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Records every key not in `allowed`: a typo (`"revenu"`) must not silently mean "no revenue".
    func allowOnly(_ allowed: [String]) {
        for key in object.keys where !allowed.contains(key) {
            let suggestion = Suggestion.closest(to: key, in: allowed)
            log.add(
                path,
                "unknown key \"\(JSONWriter.escapedForMessage(key))\"" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
                    + "; allowed: \(allowed.joined(separator: ", "))")
        }
    }

    func has(_ key: String) -> Bool {
        if case .null? = object[key] { return false }
        return object[key] != nil
    }

    func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func string(_ key: String, required: Bool = false, maximumLength: Int = 200) -> String? {
        guard let value = value(key) else {
            if required { log.add(child(key), "is required") }
            return nil
        }
        guard case .string(let text) = value else {
            log.add(child(key), "must be a string, got \(value.kindDescription)")
            return nil
        }
        if text.isEmpty {
            log.add(child(key), "must not be empty")
            return nil
        }
        if let bad = UnicodeSafety.firstControlOrInvisible(in: text) {
            log.add(child(key), "contains \(UnicodeSafety.describe(bad)), which would corrupt CSV output")
            return nil
        }
        if text.unicodeScalars.count > maximumLength {
            log.add(child(key), "is longer than \(maximumLength) characters")
            return nil
        }
        return text
    }

    func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int64>) -> Int64? {
        guard let value = value(key) else {
            if required { log.add(child(key), "is required") }
            return nil
        }
        return Self.integer(value, path: child(key), in: range, log: log)
    }

    static func integer(_ value: JSONValue, path: String, in range: ClosedRange<Int64>, log: ProblemLog) -> Int64? {
        guard case .number(let number) = value, let integer = number.int64Value else {
            log.add(path, "must be a whole number, got \(value.kindDescription)\(numberText(value))")
            return nil
        }
        guard range.contains(integer) else {
            log.add(path, "must be from \(range.lowerBound) to \(range.upperBound), got \(integer)")
            return nil
        }
        return integer
    }

    func money(_ key: String, required: Bool = false) -> Money? {
        guard let value = value(key) else {
            if required { log.add(child(key), "is required") }
            return nil
        }
        guard case .number(let number) = value else {
            log.add(child(key), "must be a number, got \(value.kindDescription)")
            return nil
        }
        guard let money = Money(decimal: number.text) else {
            log.add(child(key), "must be a non-negative amount with at most 6 decimals and no exponent, got \(number.text)")
            return nil
        }
        return money
    }

    func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else {
            log.add(child(key), "must be true or false, got \(value.kindDescription)")
            return nil
        }
        return flag
    }

    func day(_ key: String, required: Bool = false) -> UTCDay? {
        guard let text = string(key, required: required) else { return nil }
        guard let day = UTCDay(text) else {
            log.add(child(key), "must be a date YYYY-MM-DD, got \"\(JSONWriter.escapedForMessage(text))\"")
            return nil
        }
        return day
    }

    func object(_ key: String, required: Bool = false) -> SchemaObject? {
        guard let value = value(key) else {
            if required { log.add(child(key), "is required") }
            return nil
        }
        return SchemaObject(value, path: child(key), log: log)
    }

    func array(_ key: String, required: Bool = false) -> [JSONValue]? {
        guard let value = value(key) else {
            if required { log.add(child(key), "is required") }
            return nil
        }
        guard case .array(let elements) = value else {
            log.add(child(key), "must be an array, got \(value.kindDescription)")
            return nil
        }
        return elements
    }

    /// One of a fixed set of strings.
    func choice<T: RawRepresentable<String> & CaseIterable>(_ key: String, _ type: T.Type) -> T? {
        guard let text = string(key) else { return nil }
        guard let choice = T(rawValue: text) else {
            log.add(
                child(key),
                "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), got \"\(JSONWriter.escapedForMessage(text))\""
            )
            return nil
        }
        return choice
    }

    private static func numberText(_ value: JSONValue) -> String {
        if case .number(let number) = value { return " (\(number.text))" }
        return ""
    }
}
