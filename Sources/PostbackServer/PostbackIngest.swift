import Basics
import PostbackCrypto
import PostbackStore
import Postbacks

/// What happens to one postback body, independent of HTTP: verify, apply the receiver's policy,
/// append the record to the right spool, wait for it to be durable, then complete with the reply.
/// The HTTP layer hands a `Job` over (`ingest(_:)`) and sends whatever reply the job completes with;
/// it never sees a spool writer.
final class PostbackIngest: Sendable {
    /// Either a reply right away, or a record to store first (carried out by `perform` only).
    private enum Action {
        case reply(HTTPReply)
        case store(
            writer: SpoolWriter, line: [UInt8], day: UTCDay, dedupKey: String?, values: UnsignedValues = .unknown,
            reply: @Sendable (SpoolWriter.Outcome) -> HTTPReply)
    }

    let verifier: PostbackVerifier
    let configuration: ServerConfiguration
    /// Store, quarantine or refuse (`ad_network_ids`, `allow_development`): the policy `postback
    /// reverify` applies too.
    let acceptance: AcceptancePolicy
    let postbacks: SpoolWriter
    let rejected: SpoolWriter
    /// Quarantine: postbacks we cannot judge or count yet, answered 200 and never counted.
    let unverifiable: SpoolWriter
    /// Evidence of copies that disagree with the stored copy's unsigned values (issue 24).
    let conflicts: SpoolWriter
    let metrics: ServerMetrics
    /// Per ad network counts for the alert rules (`FlowMetrics`).
    let flow: FlowMetrics
    let log: ServerLog
    let rejectedBudget: RejectedStoreBudget
    let quarantineBudget: RejectedStoreBudget
    let conflictBudget: RejectedStoreBudget
    /// Rate-limits the lines clients can cause (rejections, quarantines, …); counts stay exact in /metrics.
    let logSampler: LogSampler

    init(
        configuration: ServerConfiguration, postbacks: SpoolWriter, rejected: SpoolWriter, unverifiable: SpoolWriter,
        conflicts: SpoolWriter, metrics: ServerMetrics, log: ServerLog
    ) {
        self.configuration = configuration
        self.acceptance = configuration.acceptancePolicy
        self.verifier = PostbackVerifier(
            policy: VerificationPolicy(
                allowsDevelopment: configuration.allowsDevelopment, testKeys: configuration.testKeys))
        self.postbacks = postbacks
        self.rejected = rejected
        self.unverifiable = unverifiable
        self.conflicts = conflicts
        self.metrics = metrics
        self.flow = FlowMetrics(configuration: configuration)
        self.log = log
        self.logSampler = LogSampler(log: log, windowSeconds: configuration.logSampleWindowSeconds)
        self.rejectedBudget = RejectedStoreBudget(
            configuration: configuration, layout: StoreLayout(root: configuration.dataDirectory))
        self.quarantineBudget = RejectedStoreBudget(
            configuration: configuration, layout: StoreLayout(root: configuration.dataDirectory),
            spool: .unverifiable)
        self.conflictBudget = RejectedStoreBudget(
            configuration: configuration, layout: StoreLayout(root: configuration.dataDirectory), spool: .conflicts)
    }

    /// One postback body as it came in.
    struct Received {
        let body: [UInt8]
        let route: Route
        let receivedAt: UTCTimestamp
        /// The ad network's copy or the advertiser's developer copy (by the request's `Host`).
        let copy: PostbackCopy
        /// The client's address (see `ClientAddress`); asked only when a record keeps it (rejections,
        /// quarantine budgets, conflicting copies): it makes a String from the socket for each ask.
        let client: @Sendable () -> String
    }

    /// A postback's reply, once its fate is settled.
    struct Answer: Sendable {
        let reply: HTTPReply
        /// A spool writer was asked first (the reply waited for its group commit).
        let waitedForStorage: Bool
    }

    /// One postback handed over by the HTTP layer, and where its answer goes: `completion` is called
    /// exactly once, on any thread (the verifying one, or the spool writer's after its fdatasync).
    struct Job {
        let received: Received
        let completion: @Sendable (Answer) -> Void
    }

    /// Verifies the jobs' bodies together (their P-256 signatures share one modular inversion,
    /// `PostbackVerifier.verify(batch:)`), applies the policy, appends each record to its spool, and
    /// completes each job once its record is durable (or could not be made so). `VerificationQueue`'s threads call this.
    func ingest(_ jobs: [Job]) {
        for (job, action) in zip(jobs, receive(jobs.map(\.received))) { perform(action, job.completion) }
    }

    /// One body, verified alone on the calling thread (`thread_per_connection`); otherwise as `ingest(_:)`.
    func ingest(
        body: [UInt8], route: Route, copy: PostbackCopy, client: @escaping @Sendable () -> String,
        completion: @escaping @Sendable (Answer) -> Void
    ) {
        perform(receive(body: body, route: route, copy: copy, client: client), completion)
    }

    private func perform(_ action: Action, _ completion: @escaping @Sendable (Answer) -> Void) {
        switch action {
        case .reply(let reply):
            completion(Answer(reply: reply, waitedForStorage: false))
        case .store(let writer, let line, let day, let dedupKey, let values, let makeReply):
            writer.submit(line: line, day: day, dedupKey: dedupKey, values: values) { outcome in
                completion(Answer(reply: makeReply(outcome), waitedForStorage: true))
            }
        }
    }

    /// - Parameter client: the client's address (see `ClientAddress`), asked only where it is kept
    ///   or counted (rejections, the quarantine's budget, conflicting copies).
    private func receive(
        body: [UInt8], route: Route, copy: PostbackCopy, client: @escaping @Sendable () -> String
    ) -> Action {
        let receivedAt = UTCTimestamp.now()
        guard isStorageHealthy else { return Self.storageUnavailable }
        return act(
            on: verifier.verify(body: body), body: body, route: route, copy: copy, receivedAt: receivedAt, client: client)
    }

    /// Many bodies at once (`VerificationQueue`): each gets exactly the action `receive(body:…)` gives
    /// it, but their P-256 signatures share one modular inversion (`PostbackVerifier.verify(batch:)`).
    private func receive(_ batch: [Received]) -> [Action] {
        guard isStorageHealthy else { return batch.map { _ in Self.storageUnavailable } }
        return zip(batch, verifier.verify(batch: batch.map(\.body))).map { received, result in
            act(
                on: result, body: received.body, route: received.route, copy: received.copy,
                receivedAt: received.receivedAt, client: received.client)
        }
    }

    /// Unhealthy storage: 500 before spending a signature check on it.
    private var isStorageHealthy: Bool { postbacks.isHealthy && rejected.isHealthy && unverifiable.isHealthy }

    private static var storageUnavailable: Action {
        .reply(.storageUnavailable("storage is unavailable since a write or sync failed; it is retried continuously"))
    }

    /// The receiver's policy applied to a verdict: what to store, and the reply once it is stored.
    private func act(
        on result: VerificationResult, body: [UInt8], route: Route, copy: PostbackCopy, receivedAt: UTCTimestamp,
        client: @escaping @Sendable () -> String
    ) -> Action {
        metrics.verdict(result)
        metrics.flags(result.flags)
        if result.isVerified {
            for flag in metrics.unknownMembers(result.flags) {
                log.warning(
                    "postback carries a JWS \(flag.field == .jwsHeader ? "header member" : "claim") this release does not know; verified and counted all the same (logged once per name)",
                    ["field": .string(flag.field.rawValue), "member": .string(flag.raw)])
            }
        }

        let writer = configuration.writerID
        let rejection: (reason: String, policy: String?)
        switch acceptance.decide(result) {
        case .quarantine(let quarantine):
            return self.quarantine(
                result: result, reason: quarantine, body: body, route: route, receivedAt: receivedAt, client: client)
        case .reject(let reason, let policy):
            rejection = (reason, policy)
        case .store(let configuredSpelling):
            if let configuredSpelling {
                log.debug(
                    "ad-network-id accepted ignoring ASCII case",
                    [
                        "ad_network_id": .string(result.postback?.attribution.adNetworkID ?? ""),
                        "configured": .string(configuredSpelling),
                    ])
            }
            let record = SpoolRecord(receivedAt: receivedAt, writer: writer, route: route.rawValue, result: result, body: body)
            let postbackProtocol = result.postbackProtocol
            let dedupKey = result.dedupKey
            let metrics = metrics
            let log = log
            let attribution = record.attribution
            let values = attribution.map(UnsignedValues.init) ?? .unknown
            let flow = flow
            let environment = result.environment ?? .production
            let network = attribution.map { configuredSpelling ?? $0.adNetworkID }
            @Sendable func accepted(stored: Bool) {
                guard let attribution, let network else { return }
                flow.accepted(attribution, network: network, environment: environment, copy: copy, stored: stored, at: receivedAt)
            }
            // Asked only for a copy that disagrees with the stored one, which the writer's answer
            // shows; its connection is still suspended then (the reply made here resumes it).
            return .store(writer: postbacks, line: record.encoded(), day: receivedAt.day, dedupKey: dedupKey, values: values) {
                [self] outcome in
                switch outcome {
                case .stored:
                    accepted(stored: true)
                    return .json(200) {
                        $0.field("status", "stored")
                        $0.field("dedup_key", dedupKey)
                    }
                case .duplicate(let stored):
                    accepted(stored: false)
                    metrics.duplicate(protocol: postbackProtocol)
                    log.debug("duplicate postback", ["dedup_key": .string(dedupKey ?? "")])
                    if let dedupKey, let attribution {
                        recordConflict(
                            copy: values, stored: stored, attribution: attribution, dedupKey: dedupKey, route: route,
                            client: client, receivedAt: receivedAt, body: body)
                    }
                    return .json(200) {
                        $0.field("status", "duplicate")
                        $0.field("dedup_key", dedupKey)
                    }
                case .failed(let reason):
                    return .storageUnavailable(reason)
                }
            }
        }

        if let policy = rejection.policy { metrics.policyRejection(policy) }
        var record = SpoolRecord(
            receivedAt: receivedAt, writer: writer, route: route.rawValue, result: result, body: body,
            reason: rejection.reason)
        let client = client()
        record.client = client
        if logSampler.allows(.rejected) {
            log.info(
                "postback rejected",
                [
                    "route": .string(route.rawValue), "verdict": .string(result.status.rawValue),
                    "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(rejection.reason),
                    "client": .string(client),
                ])
        }
        let status = result.status
        let dedupKey = result.dedupKey
        let title = Self.title(status: status, policy: rejection.policy)
        let type = rejection.policy.map { "not-accepted-\($0)" } ?? status.rawValue
        let problem = HTTPReply.problem(400, type: type, title: title, detail: rejection.reason) { json in
            json.field("verdict", status.rawValue)
            if let dedupKey { json.field("dedup_key", dedupKey) }
        }
        guard let line = rejectedLine(record, client: client) else { return .reply(problem) }
        return .store(writer: rejected, line: line, day: receivedAt.day, dedupKey: nil) { outcome in
            if case .failed(let reason) = outcome { return .storageUnavailable(reason) }
            return problem
        }
    }

    /// A copy of a stored postback with other unsigned values (issue 24): counted by route and field,
    /// and kept as evidence in `raw/conflicts/` within its own daily byte budget (the rejected store's
    /// settings, counted apart; per client too, so one replaying client cannot spend it). The stored
    /// copy is never changed. Not waited for: the reply ("duplicate") does not depend on it.
    private func recordConflict(
        copy: UnsignedValues, stored: UnsignedValues, attribution: Attribution, dedupKey: String, route: Route,
        client: () -> String, receivedAt: UTCTimestamp, body: [UInt8]
    ) {
        let differences = copy.differences(from: stored)
        guard !differences.isEmpty else { return }
        let client = client()
        metrics.conflictingCopy(route: route, fields: differences.map(\.field))
        let record = ConflictRecord(
            receivedAt: receivedAt, writer: configuration.writerID, route: route.rawValue, client: client, dedupKey: dedupKey,
            differences: differences.map { ConflictRecord.Difference(field: $0.field, stored: $0.stored, copy: $0.copy) },
            bodySHA256: SHA256.hash(body).description,
            storedAttribution: ConflictRecord.storedAttribution(of: attribution, stored: stored))
        let line = record.encoded()
        if case .skip(let why) = conflictBudget.admit(
            wholeBytes: line.count, day: receivedAt.day, client: client, hashOnlyBytes: nil)
        {
            metrics.conflictNotStored(why)
            return
        }
        conflicts.submit(line: line, day: receivedAt.day, dedupKey: nil) { _ in }
    }

    /// The rejected record as the budget allows: whole, with a prefix of a large body, hash-only,
    /// or nil (not stored; answered 400 all the same).
    private func rejectedLine(_ record: SpoolRecord, client: String) -> [UInt8]? {
        var record = record
        let body = record.body
        let digest = { SHA256.hash(body).description }
        let keep = configuration.rejectedBodyKeepBytes
        if body.count > keep {
            record.body = Array(body.prefix(keep))
            record.bodyReduction = .init(kept: .prefix, sha256: digest(), byteCount: body.count)
        }
        let line = record.encoded()
        // Made only once the whole record no longer fits the day's budget.
        var hashOnlyLine: [UInt8] = []
        let decision = rejectedBudget.admit(wholeBytes: line.count, day: record.receivedAt.day, client: client) {
            var hashOnly = record
            hashOnly.body = []
            hashOnly.bodyReduction = .init(kept: .none, sha256: record.bodyReduction?.sha256 ?? digest(), byteCount: body.count)
            hashOnlyLine = hashOnly.encoded()
            return hashOnlyLine.count
        }
        switch decision {
        case .store:
            if record.bodyReduction != nil { metrics.rejectedBodyReduced(kept: "prefix") }
            return line
        case .storeHashOnly:
            metrics.rejectedBodyReduced(kept: "hash")
            return hashOnlyLine
        case .skip(let reason):
            metrics.rejectedNotStored(reason)
            return nil
        }
    }

    /// Kept in `raw/unverifiable/` and answered 200, so the device does not retry for nine days: an
    /// unknown version or kid usually means Apple shipped something new, and `postback reverify`
    /// takes such postbacks back once a release knows it.
    ///
    /// Anyone can send a body claiming an unknown version, so the quarantine has a daily byte budget of
    /// its own (the rejected store's settings, counted apart). Past it, or below the free-space floor,
    /// the postback is not stored and gets 503 with Retry-After (500 on a route that can carry
    /// AdAttributionKit, whose devices retry after a 500): a device retries for nine days, and
    /// nothing is acknowledged that is not on disk.
    private func quarantine(
        result: VerificationResult, reason: QuarantineReason, body: [UInt8], route: Route,
        receivedAt: UTCTimestamp, client: () -> String
    ) -> Action {
        let detail =
            result.reason ?? "signed value(s) not known yet: "
            + result.flags.filter { $0.action == .unrecognized && !$0.isUnknownMember }.map(\.summary).joined(separator: "; ")
        if logSampler.allows(.quarantined) {
            log.warning(
                "postback quarantined: it cannot be checked or counted yet, which usually means Apple shipped something new",
                [
                    "route": .string(route.rawValue), "quarantine": .string(reason.rawValue),
                    "verdict": .string(result.status.rawValue),
                    "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(detail),
                ])
        }
        let record = SpoolRecord(
            receivedAt: receivedAt, writer: configuration.writerID, route: route.rawValue, result: result,
            body: body, reason: detail)
        let line = record.encoded()
        if case .skip(let why) = quarantineBudget.admit(
            wholeBytes: line.count, day: receivedAt.day, client: client(), hashOnlyBytes: nil)
        {
            metrics.quarantineNotStored(why)
            return .reply(
                .retryLater(
                    503, route: route, retryAfterSeconds: 3600, type: "quarantine-full", title: "Not stored; retry later",
                    detail: "the quarantine for postbacks this release cannot check yet is full for today (\(why)); retry later"))
        }
        let dedupKey = result.dedupKey
        // A retried copy is stored once (issue 24): keyed by its signed dedup key when verified, else
        // by its bytes (`QuarantineKey`).
        let quarantineKey = QuarantineKey.make(status: result.status, dedupKey: dedupKey, body: body)
        let postbackProtocol = result.postbackProtocol
        let metrics = metrics
        return .store(writer: unverifiable, line: line, day: receivedAt.day, dedupKey: quarantineKey) { outcome in
            let status: String
            switch outcome {
            case .failed(let reason): return .storageUnavailable(reason)
            case .stored:
                metrics.quarantined(reason)
                status = "quarantined"
            case .duplicate:
                metrics.duplicate(protocol: postbackProtocol)
                status = "duplicate"
            }
            return .json(200) { json in
                json.field("status", status)
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
