package import Basics
import Postbacks

/// A response to send: status, content type, body and extra headers.
package struct HTTPReply: Sendable {
    package var status: Int
    package var contentType: String
    package var body: [UInt8]
    package var headers: [(name: String, value: String)] = []

    package init(status: Int, contentType: String, body: [UInt8], headers: [(name: String, value: String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// The body as text (for logs and tests).
    package var text: String { String(decoding: body, as: UTF8.self) }

    static func json(_ status: Int, _ build: (inout JSONWriter) -> Void) -> HTTPReply {
        var json = JSONWriter(reservingCapacity: 128)
        json.beginObject()
        build(&json)
        json.endObject()
        return HTTPReply(status: status, contentType: "application/json", body: json.bytes + [0x0A])
    }

    static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPReply {
        HTTPReply(status: status, contentType: contentType, body: Array(text.utf8))
    }

    /// An RFC 9457 problem: `type` is a URN naming the problem, `title` fixed per type, `detail` this
    /// occurrence. Extra members (`verdict`, …) come from `extend`.
    package static func problem(
        _ status: Int, type: String, title: String, detail: String,
        extend: (inout JSONWriter) -> Void = { _ in }
    ) -> HTTPReply {
        var json = JSONWriter(reservingCapacity: 256)
        json.beginObject()
        json.field("type", "urn:postback:problem:\(type)")
        json.field("title", title)
        json.field("status", status)
        json.field("detail", detail)
        extend(&json)
        json.endObject()
        return HTTPReply(status: status, contentType: "application/problem+json", body: json.bytes + [0x0A])
    }

    /// "Not now, try again later" with `Retry-After`: `preferred` (429, 503) where any answer but
    /// 200 is retried (SKAdNetwork), `500` on a route that can carry AdAttributionKit, whose devices
    /// are documented to retry after a 500 (`Route.mayCarryAdAttributionKit`, spec §12).
    static func retryLater(
        _ preferred: Int, route: Route, retryAfterSeconds: Int, type: String, title: String, detail: String
    ) -> HTTPReply {
        var reply = problem(route.mayCarryAdAttributionKit ? 500 : preferred, type: type, title: title, detail: detail)
        reply.headers.append(("Retry-After", String(retryAfterSeconds)))
        return reply
    }

    static func storageUnavailable(_ detail: String) -> HTTPReply {
        problem(
            500, type: "storage-unavailable", title: "The postback could not be stored durably; retry later",
            detail: detail)
    }
}
