import Postbacks
import PostbackStore

/// What happens to one postback body, independent of HTTP: verify, apply the receiver's policy, and
/// hand the record to the right spool. The reply is only made once the spool says the record is
/// durable (or could not be made so).
final class PostbackIngest: Sendable {
    /// Either a reply right away, or a record to store first.
    enum Action {
        case reply(HTTPReply)
        case store(writer: SpoolWriter, line: [UInt8], day: UTCDay, dedupKey: String?,
                   reply: @Sendable (SpoolWriter.Outcome) -> HTTPReply)
    }

    let verifier: PostbackVerifier
    let configuration: ServerConfiguration
    let postbacks: SpoolWriter
    let rejected: SpoolWriter
    /// Quarantine: postbacks we cannot judge or count yet, answered 200 and never counted.
    let unverifiable: SpoolWriter
    let metrics: ServerMetrics
    let log: ServerLog

    init(configuration: ServerConfiguration, postbacks: SpoolWriter, rejected: SpoolWriter, unverifiable: SpoolWriter,
         metrics: ServerMetrics, log: ServerLog) {
        self.configuration = configuration
        self.verifier = PostbackVerifier(policy: VerificationPolicy(
            allowsDevelopment: configuration.allowsDevelopment, testKeys: configuration.testKeys))
        self.postbacks = postbacks
        self.rejected = rejected
        self.unverifiable = unverifiable
        self.metrics = metrics
        self.log = log
    }

    func receive(body: [UInt8], route: Route) -> Action {
        let receivedAt = UTCTimestamp.now()
        // Unhealthy storage: 500 before spending a signature check on it.
        guard postbacks.isHealthy, rejected.isHealthy, unverifiable.isHealthy else {
            return .reply(.storageUnavailable("storage is unavailable since a write or sync failed; it is retried continuously"))
        }
        let result = verifier.verify(body: body)
        metrics.verdict(result)
        metrics.flags(result.flags)

        var rejection: (reason: String, policy: String?)?
        if !result.isVerified {
            rejection = (result.reason ?? result.status.rawValue, nil)
        } else if result.environment == .development, !configuration.allowsDevelopment {
            rejection = ("development postback (\(result.isTestMode ? "SKAdNetwork test mode" : "key \(result.keyName ?? "?")")); this receiver does not accept development postbacks (allow_development is off)", "development")
        } else if let accepted = configuration.acceptedAdNetworkIDs, let network = result.postback?.attribution.adNetworkID,
                  !accepted.contains(network) {
            rejection = ("ad-network-id \"\(JSONWriter.escapedForMessage(network))\" is not one this receiver accepts (ad_network_ids)", "ad-network")
        }

        let writer = configuration.writerID
        if rejection == nil || !result.isVerified, let quarantine = result.quarantineReason {
            return self.quarantine(result: result, reason: quarantine, body: body, route: route, receivedAt: receivedAt)
        }
        guard let rejection else {
            let record = SpoolRecord(receivedAt: receivedAt, writer: writer, route: route.rawValue, result: result, body: body)
            let postbackProtocol = result.postbackProtocol
            let dedupKey = result.dedupKey
            let metrics = metrics
            let log = log
            return .store(writer: postbacks, line: record.encoded(), day: receivedAt.day, dedupKey: dedupKey) { outcome in
                switch outcome {
                case .stored:
                    return .json(200) { $0.field("status", "stored"); $0.field("dedup_key", dedupKey) }
                case .duplicate:
                    metrics.duplicate(protocol: postbackProtocol)
                    log.debug("duplicate postback", ["dedup_key": .string(dedupKey ?? "")])
                    return .json(200) { $0.field("status", "duplicate"); $0.field("dedup_key", dedupKey) }
                case .failed(let reason):
                    return .storageUnavailable(reason)
                }
            }
        }

        if let policy = rejection.policy { metrics.policyRejection(policy) }
        let record = SpoolRecord(receivedAt: receivedAt, writer: writer, route: route.rawValue, result: result, body: body,
                                 reason: rejection.reason)
        log.info("postback rejected", [
            "route": .string(route.rawValue), "verdict": .string(result.status.rawValue),
            "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(rejection.reason),
        ])
        let status = result.status
        let dedupKey = result.dedupKey
        let title = Self.title(status: status, policy: rejection.policy)
        let type = rejection.policy.map { "not-accepted-\($0)" } ?? status.rawValue
        return .store(writer: rejected, line: record.encoded(), day: receivedAt.day, dedupKey: nil) { outcome in
            if case .failed(let reason) = outcome { return .storageUnavailable(reason) }
            return .problem(400, type: type, title: title, detail: rejection.reason) { json in
                json.field("verdict", status.rawValue)
                if let dedupKey { json.field("dedup_key", dedupKey) }
            }
        }
    }

    /// Kept in `raw/unverifiable/` and answered 200, so the device does not retry for nine days: an
    /// unknown version or kid usually means Apple shipped something new, and `postback reverify`
    /// takes such postbacks back once a release knows it.
    private func quarantine(result: VerificationResult, reason: QuarantineReason, body: [UInt8], route: Route,
                            receivedAt: UTCTimestamp) -> Action {
        metrics.quarantined(reason)
        let detail = result.reason ?? "signed value(s) not known yet: " + result.flags.filter { $0.action == .unrecognized }.map(\.summary).joined(separator: "; ")
        log.warning("postback quarantined: it cannot be checked or counted yet, which usually means Apple shipped something new", [
            "route": .string(route.rawValue), "quarantine": .string(reason.rawValue), "verdict": .string(result.status.rawValue),
            "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(detail),
        ])
        let record = SpoolRecord(receivedAt: receivedAt, writer: configuration.writerID, route: route.rawValue, result: result,
                                 body: body, reason: detail)
        let dedupKey = result.dedupKey
        return .store(writer: unverifiable, line: record.encoded(), day: receivedAt.day, dedupKey: nil) { outcome in
            if case .failed(let reason) = outcome { return .storageUnavailable(reason) }
            return .json(200) { json in
                json.field("status", "quarantined")
                json.field("quarantine", reason.rawValue)
                if let dedupKey { json.field("dedup_key", dedupKey) }
            }
        }
    }

    private static func title(status: VerificationStatus, policy: String?) -> String {
        switch policy {
        case "development": return "Development postbacks are not accepted here"
        case "ad-network": return "Postback for an ad network this receiver does not accept"
        default: break
        }
        switch status {
        case .verified: return "Postback not accepted"
        case .invalidSignature: return "The postback's signature does not verify"
        case .malformed: return "The body is not a valid postback"
        case .unsupportedVersion: return "Unsupported SKAdNetwork version"
        case .untrustedKey: return "The postback names a key this receiver does not trust"
        }
    }
}
