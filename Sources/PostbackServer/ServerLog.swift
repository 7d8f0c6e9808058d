import Basics
import Postbacks

/// Structured logs: one JSON object per line (`time`, `level`, `msg`, then fields), on stderr by
/// default. Values are escaped by `JSONWriter`, so a hostile string cannot forge or break a line.
package struct ServerLog: Sendable {
    package enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error

        package init?(name: String) {
            switch name {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        var name: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// A field value.
    package enum Value: Sendable {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)
    }

    package let minimumLevel: Level
    private let sink: @Sendable ([UInt8]) -> Void

    /// - Parameter sink: receives each line, newline included.
    package init(minimumLevel: Level = .info, sink: @escaping @Sendable ([UInt8]) -> Void) {
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    package func isEnabled(_ level: Level) -> Bool { level >= minimumLevel }

    package func log(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, Value> = [:]) {
        guard isEnabled(level) else { return }
        var json = JSONWriter(reservingCapacity: 256)
        json.beginObject()
        json.field("time", UTCTimestamp.now().description)
        json.field("level", level.name)
        json.field("msg", message)
        for (key, value) in fields {
            switch value {
            case .string(let text): json.field(key, text)
            case .int(let number): json.field(key, number)
            case .bool(let flag): json.field(key, flag)
            case .double(let number):
                json.key(key)
                json.value(numberText: number.isFinite ? String(number) : "null")
            }
        }
        json.endObject()
        var line = json.bytes
        line.append(0x0A)
        sink(line)
    }

    package func debug(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) { log(.debug, message, fields) }
    package func info(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) { log(.info, message, fields) }
    package func warning(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) { log(.warning, message, fields) }
    package func error(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) { log(.error, message, fields) }
}
