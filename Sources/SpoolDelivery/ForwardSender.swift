import Basics
import Dispatch
import Foundation
import Locking
package import PostbackClient
import PostbackCrypto
package import PostbackStore
import Postbacks

/// Posts verified postbacks to one partner: Apple's body byte for byte (plus the configured
/// enrichment after Apple's fields), an `Idempotency-Key` header (the dedup key) and the configured
/// headers. Up to `concurrency` requests at once, each on its own libcurl handle (kept alive), all
/// driven by libcurl's multi interface from the one delivery thread.
///
/// Shared by the receiver's forwarder, `forward replay` and `forward retry-dead-letters`, so all
/// three send exactly the same request for a postback.
package final class ForwardSender: @unchecked Sendable {
    /// What one request came to.
    package enum Outcome: Sendable, Equatable {
        /// 2xx: the partner holds it.
        case delivered(status: Int)
        /// A 4xx other than 408/429: the partner refuses this postback; retrying will not help.
        case refused(status: Int, answer: String)
        /// 5xx, 408, 429, a timeout or a connection error: try again later.
        case retry(String, retryAfterSeconds: Double?)
    }

    package let settings: ForwardSettings
    // Handle i is used by request slot i of a batch only; batches do not overlap (`send` waits), hence
    // `@unchecked Sendable`.
    private let clients: [HTTPClient]

    package init(settings: ForwardSettings) throws(HTTPClientError) {
        self.settings = settings
        var clients: [HTTPClient] = []
        for _ in 0..<settings.concurrency { clients.append(try HTTPClient(timeoutSeconds: settings.timeoutSeconds)) }
        self.clients = clients
    }

    /// Whether the destination wants this record (verified only, always; then its filters).
    package func accepts(_ record: SpoolRecord) -> Bool {
        guard record.status == .verified, let attribution = record.attribution else { return false }
        if let appIDs = settings.appIDs, !appIDs.contains(attribution.appID) { return false }
        if let networks = settings.adNetworkIDs, !networks.contains(attribution.adNetworkID.lowercased()) { return false }
        if let protocols = settings.protocols, !protocols.contains(attribution.postbackProtocol) { return false }
        if let environments = settings.environments {
            guard let environment = record.environment, environments.contains(environment) else { return false }
        }
        return true
    }

    /// The key a partner drops repeats by: the record's dedup key (the same postback re-sent by Apple
    /// or by us has the same one); the body's SHA-256 for a record without one.
    package static func idempotencyKey(_ record: SpoolRecord) -> String {
        record.dedupKey ?? SHA256.hash(record.body).description
    }

    /// The request body: Apple's bytes up to their closing `}`, then the enrichment fields (a field
    /// Apple's body already has is not added: Apple's value wins), then `}`.
    package func body(for record: SpoolRecord) -> [UInt8] {
        let enrichment = settings.enrichment
        guard !enrichment.isEmpty else { return record.body }
        var fields: [(name: String, value: String)] = []
        if let field = enrichment.receivedAtField { fields.append((field, record.receivedAt.description)) }
        fields += enrichment.fields
        if let attribution = record.attribution,
            let key = attribution.sourceIdentifier ?? attribution.campaignID.map(String.init),
            let campaign = enrichment.campaigns[key]
        {
            fields += campaign
        }
        guard !fields.isEmpty, case .object(let apple)? = try? StrictJSONParser.parse(record.body),
            let close = record.body.lastIndex(of: UInt8(ascii: "}"))
        else { return record.body }
        let appleKeys = Set(apple.keys)
        var body = Array(record.body[..<close])
        var isFirst = apple.members.isEmpty
        for field in fields where !appleKeys.contains(field.name) {
            if !isFirst { body.append(UInt8(ascii: ",")) }
            isFirst = false
            JSONWriter.appendQuoted(field.name, to: &body)
            body.append(UInt8(ascii: ":"))
            JSONWriter.appendQuoted(field.value, to: &body)
        }
        body += record.body[close...]
        return body
    }

    /// Sends the records at once (one per handle, at most `concurrency`) with libcurl's multi
    /// interface on the calling thread; outcomes in the same order.
    package func send(_ records: [SpoolRecord]) -> [Outcome] {
        precondition(records.count <= clients.count, "a batch is at most `concurrency` records")
        let posts = records.indices.map { index in
            HTTPClient.Post(
                client: clients[index], url: settings.url, body: body(for: records[index]), headers: headers(for: records[index]))
        }
        return HTTPClient.postAll(posts).map { result in
            switch result {
            case .success(let response): return Self.classify(response, destination: settings.name)
            case .failure(let error): return .retry("\(settings.name): \(error.description)", retryAfterSeconds: nil)
            }
        }
    }

    private func headers(for record: SpoolRecord) -> [String] {
        ["Idempotency-Key: \(Self.idempotencyKey(record))"] + settings.headers.map { "\($0.name): \($0.value)" }
    }

    static func classify(_ response: HTTPResponse, destination: String) -> Outcome {
        let status = response.status
        switch status {
        case 200..<300:
            return .delivered(status: status)
        case 408, 429:
            return .retry(
                "\(destination): HTTP \(status)", retryAfterSeconds: response.headers["retry-after"].flatMap(retryAfterSeconds))
        case 400..<500:
            return .refused(status: status, answer: String(decoding: response.body.prefix(2048), as: UTF8.self))
        default:
            return .retry(
                "\(destination): HTTP \(status)",
                retryAfterSeconds: status == 503 ? response.headers["retry-after"].flatMap(retryAfterSeconds) : nil)
        }
    }

    /// `Retry-After` as seconds (a number of seconds, or an HTTP date), at most an hour: a partner
    /// asking for a day is retried hourly rather than trusted to come back.
    static func retryAfterSeconds(_ value: String) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text), seconds >= 0 { return min(seconds, 3600) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return min(max(0, date.timeIntervalSinceNow), 3600)
    }
}
