import Basics
import PostbackServer

/// An answer other than 200, as RFC 9457 `application/problem+json`: the status, a URN naming the
/// problem, a fixed title and this occurrence's detail. Details never name anything outside the
/// token's scope: an app, network or table it may not see is answered as one that does not exist.
package struct APIProblem: Error, Sendable, Equatable {
    package let status: Int
    package let type: String
    package let title: String
    package let detail: String
    package var headers: [(name: String, value: String)] = []
    /// What the operator's log says of a failure (paths, the file's own words); never sent, since a
    /// malformed file's message may quote a row of any app.
    package var logDetail: String? = nil

    package static func == (lhs: APIProblem, rhs: APIProblem) -> Bool {
        (lhs.status, lhs.type, lhs.detail) == (rhs.status, rhs.type, rhs.detail)
    }

    static func badQuery(_ detail: String) -> APIProblem {
        APIProblem(status: 400, type: "bad-query", title: "The query is not valid", detail: detail)
    }

    static let unauthorized = APIProblem(
        status: 401, type: "unauthorized", title: "A valid token is required",
        detail: "send 'Authorization: Bearer pbk_…' with a token that is neither unknown, revoked nor expired",
        headers: [("WWW-Authenticate", "Bearer realm=\"postback\"")])

    static func notFound(_ detail: String) -> APIProblem {
        APIProblem(status: 404, type: "not-found", title: "No such resource", detail: detail)
    }

    static func methodNotAllowed(_ method: String) -> APIProblem {
        APIProblem(
            status: 405, type: "method-not-allowed", title: "Method not allowed",
            detail: "\(quoted(method)) is not allowed; the API is read-only: use GET", headers: [("Allow", "GET")])
    }

    static let bodyNotAllowed = APIProblem(
        status: 413, type: "body-not-allowed", title: "Request body not allowed",
        detail: "the API takes no request body; arguments go in the query string")

    static func tooManyRequests(retryAfter: Int, perMinute: Int) -> APIProblem {
        APIProblem(
            status: 429, type: "too-many-requests", title: "Too many requests for this token",
            detail: "at most \(perMinute) requests a minute per token; retry after \(retryAfter) s",
            headers: [("Retry-After", String(retryAfter))])
    }

    static func unavailable(_ detail: String) -> APIProblem {
        APIProblem(status: 503, type: "unavailable", title: "The API cannot answer now", detail: detail)
    }

    static func failed(_ detail: String) -> APIProblem {
        APIProblem(
            status: 500, type: "failed", title: "The published aggregates could not be read",
            detail: "a published file could not be read; the API's log says why", logDetail: detail)
    }

    /// Text from a request, made safe to quote in a detail (escaped, at most 64 characters).
    static func quoted(_ text: String) -> String { JSONWriter.escapedForMessage(String(text.prefix(64))) }

    var reply: HTTPReply {
        var reply = HTTPReply.problem(status, type: type, title: title, detail: detail)
        reply.headers = headers
        return reply
    }
}
