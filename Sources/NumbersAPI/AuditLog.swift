import Basics
import Foundation

/// One JSON line per request: when, which token (its name, never the token), the method and path,
/// the query's arguments, the status, rows and bytes answered, and the milliseconds taken. An
/// argument whose value looks like a token (`pbk_…`, pasted into a URL by mistake) is written
/// `[redacted]`.
package struct AuditLog: Sendable {
    private let write: @Sendable (String) -> Void

    /// - Parameter write: takes one line (without its newline).
    package init(write: @escaping @Sendable (String) -> Void) { self.write = write }

    package struct Entry {
        var time: UTCTimestamp
        var token: String?
        var method: String
        var path: String
        var query: [(name: String, value: String?)]
        var status: Int
        var rows: Int?
        var bytes: Int
        var milliseconds: Double
        var client: String
    }

    func record(_ entry: Entry) {
        var json = JSONWriter(reservingCapacity: 256)
        json.beginObject()
        json.field("time", entry.time.description)
        json.field("token", entry.token)
        json.field("client", entry.client)
        json.field("method", entry.method)
        json.field("path", entry.path)
        json.key("query")
        json.beginObject()
        for argument in entry.query {
            let value = argument.value.map { $0.contains(APIToken.prefix) ? "[redacted]" : $0 }
            json.field(argument.name.contains(APIToken.prefix) ? "[redacted]" : argument.name, value)
        }
        json.endObject()
        json.field("status", entry.status)
        json.field("rows", entry.rows)
        json.field("bytes", entry.bytes)
        json.key("ms")
        json.value(numberText: String(format: "%.1f", entry.milliseconds))
        json.endObject()
        write(String(decoding: json.bytes, as: UTF8.self))
    }
}
