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
    /// One multi handle for every batch: its connection cache keeps the partner's connections alive.
    private let multi = CurlMulti()

    package init(settings: ForwardSettings) throws {
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

    /// The request body: the stored body's bytes up to their closing `}`, then the enrichment
    /// fields, then `}`. A field Apple documents (`Postback.documentedFields`) that the body has is
    /// never added: Apple's value wins. Any other member of the body named like an enrichment field
    /// was not sent by Apple (whoever posted the postback first may add members): it is cut out, and
    /// the configured value goes in its place at the end. A byte-order mark in front changes nothing.
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
        let start = record.body.starts(with: utf8ByteOrderMark) ? 3 : 0
        let json = record.body[start...]
        guard !fields.isEmpty, case .object(let apple)? = try? StrictJSONParser.parse(Array(json), keys: Postback.internedKeys),
            let members = Self.memberRanges(json), members.count == apple.members.count,
            let close = record.body.lastIndex(of: UInt8(ascii: "}"))
        else { return record.body }
        let names = Set(fields.map(\.name))
        // Members to cut: not Apple's, and named like a field added here.
        let cut = apple.members.indices.filter { index in
            let key = apple.members[index].key
            return names.contains(key) && !Postback.documentedFields.contains(key)
        }
        // Apple's bytes as they are, less the members cut (and a separator each).
        var body = Array(record.body[..<(members.first?.lowerBound ?? close)])
        var wroteMember = false
        for (index, range) in members.enumerated() where !cut.contains(index) {
            if wroteMember {
                if cut.contains(index - 1) {
                    body.append(UInt8(ascii: ","))
                } else {
                    body += record.body[members[index - 1].upperBound..<range.lowerBound]
                }
            }
            body += record.body[range]
            wroteMember = true
        }
        if let last = members.last, !cut.contains(members.count - 1) { body += record.body[last.upperBound..<close] }
        let keptKeys = Set(apple.members.map(\.key)).subtracting(cut.map { apple.members[$0].key })
        var isFirst = !wroteMember
        for field in fields where !keptKeys.contains(field.name) {
            if !isFirst { body.append(UInt8(ascii: ",")) }
            isFirst = false
            JSONWriter.appendQuoted(field.name, to: &body)
            body.append(UInt8(ascii: ":"))
            JSONWriter.appendQuoted(field.value, to: &body)
        }
        body += record.body[close...]
        return body
    }

    /// The byte ranges of a JSON object's top-level members (`"key":value`, without the commas), in
    /// order; nil when `json` is not an object. Only string quotes and nesting are tracked: the text
    /// is known to parse.
    static func memberRanges(_ json: ArraySlice<UInt8>) -> [Range<Int>]? {
        var ranges: [Range<Int>] = []
        var depth = 0
        var inString = false
        var escaped = false
        var memberStart: Int?
        var memberEnd = 0
        for index in json.indices {
            let byte = json[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                memberEnd = index + 1
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if depth == 0 && byte != UInt8(ascii: "{") { return nil }
                depth += 1
                if depth == 1 { continue }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 {
                    if let start = memberStart { ranges.append(start..<memberEnd) }
                    return ranges
                }
            case UInt8(ascii: ","):
                if depth == 1 {
                    if let start = memberStart { ranges.append(start..<memberEnd) }
                    memberStart = nil
                    continue
                }
            case UInt8(ascii: "\""):
                inString = true
            default:
                break
            }
            if depth == 0 { return nil }
            if memberStart == nil { memberStart = index }
            memberEnd = index + 1
        }
        return nil
    }

    /// Sends the records at once (one per handle, at most `concurrency`) with libcurl's multi
    /// interface on the calling thread; outcomes in the same order.
    package func send(_ records: [SpoolRecord]) -> [Outcome] {
        precondition(records.count <= clients.count, "a batch is at most `concurrency` records")
        let posts = records.indices.map { index in
            HTTPClient.Post(
                client: clients[index], url: settings.url, body: body(for: records[index]), headers: headers(for: records[index]))
        }
        return HTTPClient.postAll(posts, multi: multi).map { result in
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
