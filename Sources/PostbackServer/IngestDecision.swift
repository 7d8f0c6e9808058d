import Basics
package import PostbackStore
package import Postbacks

/// The receiver's policy over one body's verdict, as a value: where its record goes, and the reply
/// for each outcome of storing it. Pure (no metrics, logs, budgets or writers): `PostbackIngest`
/// carries a decision out, and every reply rule can be judged without a socket.
package enum IngestDecision: Sendable, Equatable {
    /// Counted: appended to `raw/postbacks/` under its signed dedup key. `configuredSpelling` is the
    /// `ad_network_ids` entry it matched when that is spelled otherwise (ASCII case).
    case accept(dedupKey: String?, configuredSpelling: String?)
    /// Not countable yet (usually news from Apple): kept in `raw/unverifiable/` under `key` (its
    /// signed dedup key when verified, else its bytes: `QuarantineKey`) within the quarantine's daily
    /// budget, and answered 200, so the device does not retry for nine days.
    case quarantine(QuarantineReason, key: String, dedupKey: String?, detail: String)
    /// Answered 400 and kept in `raw/rejected/` within the rejected store's daily budget.
    case reject(Rejection)

    /// A refused postback: its verdict, and the receiver's setting that refused it if it verified.
    package struct Rejection: Sendable, Equatable {
        package let status: VerificationStatus
        /// Nil when it did not verify.
        package let setting: AcceptancePolicy.Setting?
        package let reason: String
        package let dedupKey: String?
    }

    /// The one rule (`AcceptancePolicy`, which `postback reverify` applies too) as a decision.
    package static func decide(_ result: VerificationResult, body: [UInt8], acceptance: AcceptancePolicy) -> IngestDecision {
        switch acceptance.decide(result) {
        case .store(let configuredSpelling):
            return .accept(dedupKey: result.dedupKey, configuredSpelling: configuredSpelling)
        case .quarantine(let reason):
            let unknown = result.flags.filter { $0.action == .unrecognized && !$0.isUnknownMember }
            return .quarantine(
                reason, key: QuarantineKey.make(status: result.status, dedupKey: result.dedupKey, body: body),
                dedupKey: result.dedupKey,
                detail: result.reason ?? "signed value(s) not known yet: " + unknown.map(\.summary).joined(separator: "; "))
        case .reject(let reason, let setting):
            return .reject(Rejection(status: result.status, setting: setting, reason: reason, dedupKey: result.dedupKey))
        }
    }

    /// The spool its record goes to.
    package var spool: StoreLayout.Spool {
        switch self {
        case .accept: .postbacks
        case .quarantine: .unverifiable
        case .reject: .rejected
        }
    }

    /// The reply once the spool writer answered for the record.
    package func reply(after outcome: SpoolWriter.Outcome) -> HTTPReply {
        if case .failed(let reason) = outcome { return .storageUnavailable(reason) }
        let duplicate = outcome != .stored
        switch self {
        case .accept(let dedupKey, _):
            return .json(200) {
                $0.field("status", duplicate ? "duplicate" : "stored")
                $0.field("dedup_key", dedupKey)
            }
        case .quarantine(let reason, _, let dedupKey, _):
            return .json(200) { json in
                json.field("status", duplicate ? "duplicate" : "quarantined")
                json.field("quarantine", reason.rawValue)
                if let dedupKey { json.field("dedup_key", dedupKey) }
            }
        case .reject(let rejection):
            return rejection.problem
        }
    }

    /// The reply when the day's budget keeps no record (`why`): a rejection is answered 400 all the
    /// same; a quarantined postback is not acknowledged (503 with Retry-After, or 500 on a route that
    /// can carry AdAttributionKit), since nothing is acknowledged that is not on disk.
    package func replyNotStored(route: Route, why: String) -> HTTPReply {
        guard case .reject(let rejection) = self else {
            return .retryLater(
                503, route: route, retryAfterSeconds: 3600, type: "quarantine-full", title: "Not stored; retry later",
                detail: "the quarantine for postbacks this release cannot check yet is full for today (\(why)); retry later")
        }
        return rejection.problem
    }
}

extension IngestDecision.Rejection {
    /// The 400 problem: its type names the setting that refused it, else the verdict.
    package var problem: HTTPReply {
        let status = status
        let dedupKey = dedupKey
        return .problem(400, type: setting.map { "not-accepted-\($0.rawValue)" } ?? status.rawValue, title: title, detail: reason)
        {
            json in
            json.field("verdict", status.rawValue)
            if let dedupKey { json.field("dedup_key", dedupKey) }
        }
    }

    private var title: String {
        switch setting {
        case .development: return "Development postbacks are not accepted here"
        case .adNetwork: return "Postback for an ad network this receiver does not accept"
        case nil: break
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
