import Basics
import PostbackCrypto
import PostbackStore
import Postbacks

/// What happens to one postback body, independent of HTTP: verify, decide (`IngestDecision`, the
/// policy as a value), carry the decision out (budgets, metrics, logs, the append to the right
/// spool), wait for the record to be durable, then complete with the decision's reply. The HTTP
/// layer hands a `Job` over (`ingest(_:)`) and sends whatever reply the job completes with; it never
/// sees a spool writer.
final class PostbackIngest: VerificationQueue.Consumer {
    /// Either a reply right away, or a record to store first (carried out by `perform` only): the
    /// reply is then `decision.reply(after:)` the writer's outcome, once `settled` counted it.
    private enum Action {
        case reply(HTTPReply)
        case store(
            writer: SpoolWriter, line: [UInt8], day: UTCDay, key: String?, values: UnsignedValues = .unknown,
            decision: IngestDecision, settled: (@Sendable (SpoolWriter.Outcome) -> Void)?)
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
    struct Received: Sendable {
        let body: [UInt8]
        let route: Route
        let receivedAt: UTCTimestamp
        /// The ad network's copy or the advertiser's developer copy (by the request's `Host`).
        let copy: PostbackCopy
        /// The client's address (see `ClientAddress`), captured when the request began; kept by the
        /// records that keep one (rejections, conflicting copies) and counted by the budgets.
        let client: String

        init(body: [UInt8], route: Route, receivedAt: UTCTimestamp = .now(), copy: PostbackCopy, client: String) {
            self.body = body
            self.route = route
            self.receivedAt = receivedAt
            self.copy = copy
            self.client = client
        }
    }

    /// A postback's reply, once its fate is settled.
    struct Answer: Sendable {
        let reply: HTTPReply
        /// A spool writer was asked first (the reply waited for its group commit).
        let waitedForStorage: Bool
    }

    /// One postback handed over by the HTTP layer, and where its answer goes: `completion` is called
    /// exactly once, on any thread (the verifying one, or the spool writer's after its fdatasync).
    struct Job: Sendable {
        let received: Received
        let completion: @Sendable (Answer) -> Void

        init(received: Received, completion: @escaping @Sendable (Answer) -> Void) {
            self.received = received
            self.completion = completion
        }
    }

    /// Verifies the jobs' bodies together (their P-256 signatures share one modular inversion,
    /// `PostbackVerifier.verify(batch:)`), decides, appends each record to its spool, and completes
    /// each job once its record is durable (or could not be made so). `VerificationQueue`'s threads call this.
    func ingest(_ jobs: [Job]) {
        metrics.verificationBatch.observe(Double(jobs.count))
        guard isStorageHealthy else {
            for job in jobs { perform(Self.storageUnavailable, job.completion) }
            return
        }
        for (job, result) in zip(jobs, verifier.verify(batch: jobs.map(\.received.body))) {
            perform(act(on: result, job.received), job.completion)
        }
    }

    private func perform(_ action: Action, _ completion: @escaping @Sendable (Answer) -> Void) {
        switch action {
        case .reply(let reply):
            completion(Answer(reply: reply, waitedForStorage: false))
        case .store(let writer, let line, let day, let key, let values, let decision, let settled):
            writer.submit(line: line, day: day, dedupKey: key, values: values) { outcome in
                settled?(outcome)
                completion(Answer(reply: decision.reply(after: outcome), waitedForStorage: true))
            }
        }
    }

    /// The receiver's families and the per-network flow, with the gauges of this moment.
    func metricsPage(ready: Bool, openConnections: Int) -> MetricsPage {
        var page = metrics.render(
            ServerMetrics.Gauges(
                ready: ready,
                storageHealthy: [
                    .postbacks: postbacks.isHealthy, .rejected: rejected.isHealthy, .unverifiable: unverifiable.isHealthy,
                ],
                dedupKeys: postbacks.dedupKeyCount, openConnections: openConnections))
        flow.render(into: &page)
        return page
    }

    /// Unhealthy storage: 500 before spending a signature check on it.
    private var isStorageHealthy: Bool { postbacks.isHealthy && rejected.isHealthy && unverifiable.isHealthy }

    private static var storageUnavailable: Action {
        .reply(.storageUnavailable("storage is unavailable since a write or sync failed; it is retried continuously"))
    }

    /// A verdict counted, decided (`IngestDecision.decide`), and the decision carried out.
    private func act(on result: VerificationResult, _ received: Received) -> Action {
        metrics.verdict(result)
        metrics.flags(result.flags)
        if result.isVerified {
            for flag in metrics.unknownMembers(result.flags) {
                log.warning(
                    "postback carries a JWS \(flag.field == .jwsHeader ? "header member" : "claim") this release does not know; verified and counted all the same (logged once per name)",
                    ["field": .string(flag.field.rawValue), "member": .string(flag.raw)])
            }
        }
        let decision = IngestDecision.decide(result, body: received.body, acceptance: acceptance)
        switch decision {
        case .accept(_, let configuredSpelling):
            return accept(result, received, decision: decision, configuredSpelling: configuredSpelling)
        case .quarantine(let reason, let key, _, let detail):
            return quarantine(result, received, decision: decision, reason: reason, key: key, detail: detail)
        case .reject(let rejection):
            return reject(result, received, decision: decision, rejection: rejection)
        }
    }

    /// Appended to `raw/postbacks/`; counted per ad network and copy once stored (or found stored).
    private func accept(
        _ result: VerificationResult, _ received: Received, decision: IngestDecision, configuredSpelling: String?
    ) -> Action {
        if let configuredSpelling {
            log.debug(
                "ad-network-id accepted ignoring ASCII case",
                [
                    "ad_network_id": .string(result.postback?.attribution.adNetworkID ?? ""),
                    "configured": .string(configuredSpelling),
                ])
        }
        let receivedAt = received.receivedAt
        let record = SpoolRecord(
            receivedAt: receivedAt, writer: configuration.writerID, route: received.route.rawValue, result: result,
            body: received.body)
        let postbackProtocol = result.postbackProtocol
        let dedupKey = result.dedupKey
        let attribution = record.attribution
        let values = attribution.map(UnsignedValues.init) ?? .unknown
        let environment = result.environment ?? .production
        let network = attribution.map { configuredSpelling ?? $0.adNetworkID }
        return .store(
            writer: postbacks, line: record.encoded(), day: receivedAt.day, key: dedupKey, values: values, decision: decision
        ) { [self] outcome in
            @Sendable func accepted(stored: Bool) {
                guard let attribution, let network else { return }
                flow.accepted(
                    attribution, network: network, environment: environment, copy: received.copy, stored: stored,
                    at: receivedAt)
            }
            switch outcome {
            case .stored:
                accepted(stored: true)
            case .duplicate(let stored):
                accepted(stored: false)
                metrics.duplicate(protocol: postbackProtocol)
                log.debug("duplicate postback", ["dedup_key": .string(dedupKey ?? "")])
                if let dedupKey, let attribution {
                    recordConflict(copy: values, stored: stored, attribution: attribution, dedupKey: dedupKey, received)
                }
            case .failed:
                break
            }
        }
    }

    /// Answered 400; the record kept as the rejected store's budget allows.
    private func reject(
        _ result: VerificationResult, _ received: Received, decision: IngestDecision, rejection: IngestDecision.Rejection
    ) -> Action {
        if let setting = rejection.setting { metrics.policyRejection(setting.rawValue) }
        var record = SpoolRecord(
            receivedAt: received.receivedAt, writer: configuration.writerID, route: received.route.rawValue, result: result,
            body: received.body, reason: rejection.reason)
        record.client = received.client
        if logSampler.allows(.rejected) {
            log.info(
                "postback rejected",
                [
                    "route": .string(received.route.rawValue), "verdict": .string(result.status.rawValue),
                    "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(rejection.reason),
                    "client": .string(received.client),
                ])
        }
        guard let line = rejectedLine(record, client: received.client) else { return .reply(rejection.problem) }
        return .store(writer: rejected, line: line, day: received.receivedAt.day, key: nil, decision: decision, settled: nil)
    }

    /// A copy of a stored postback with other unsigned values (issue 24): counted by route and field,
    /// and kept as evidence in `raw/conflicts/` within its own daily byte budget (the rejected store's
    /// settings, counted apart; per client too, so one replaying client cannot spend it). The stored
    /// copy is never changed. Not waited for: the reply ("duplicate") does not depend on it.
    private func recordConflict(
        copy: UnsignedValues, stored: UnsignedValues, attribution: Attribution, dedupKey: String, _ received: Received
    ) {
        let differences = copy.differences(from: stored)
        guard !differences.isEmpty else { return }
        let (client, receivedAt) = (received.client, received.receivedAt)
        metrics.conflictingCopy(route: received.route, fields: differences.map(\.field))
        let record = ConflictRecord(
            receivedAt: receivedAt, writer: configuration.writerID, route: received.route.rawValue, client: client,
            dedupKey: dedupKey,
            differences: differences.map { ConflictRecord.Difference(field: $0.field, stored: $0.stored, copy: $0.copy) },
            bodySHA256: SHA256.hash(received.body).description,
            storedAttribution: ConflictRecord.storedAttribution(of: attribution, stored: stored))
        let line = record.encoded()
        if case .skip(let why) = conflictBudget.admit(
            wholeBytes: line.count, day: receivedAt.day, client: client, hashOnlyBytes: nil)
        {
            metrics.conflictsNotStored.increment(why)
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
            if record.bodyReduction != nil { metrics.rejectedBodiesReduced.increment(.prefix) }
            return line
        case .storeHashOnly:
            metrics.rejectedBodiesReduced.increment(.hash)
            return hashOnlyLine
        case .skip(let reason):
            metrics.rejectedNotStored.increment(reason)
            return nil
        }
    }

    /// Kept in `raw/unverifiable/` and answered 200, so the device does not retry for nine days: an
    /// unknown version or kid usually means Apple shipped something new, and `postback reverify`
    /// takes such postbacks back once a release knows it.
    ///
    /// Anyone can send a body claiming an unknown version, so the quarantine has a daily byte budget of
    /// its own (the rejected store's settings, counted apart); past it, or below the free-space floor,
    /// nothing is stored and the decision's `replyNotStored` says retry later.
    private func quarantine(
        _ result: VerificationResult, _ received: Received, decision: IngestDecision, reason: QuarantineReason,
        key: String, detail: String
    ) -> Action {
        if logSampler.allows(.quarantined) {
            log.warning(
                "postback quarantined: it cannot be checked or counted yet, which usually means Apple shipped something new",
                [
                    "route": .string(received.route.rawValue), "quarantine": .string(reason.rawValue),
                    "verdict": .string(result.status.rawValue),
                    "protocol": .string(result.postbackProtocol?.rawValue ?? ""), "reason": .string(detail),
                ])
        }
        let record = SpoolRecord(
            receivedAt: received.receivedAt, writer: configuration.writerID, route: received.route.rawValue, result: result,
            body: received.body, reason: detail)
        let line = record.encoded()
        if case .skip(let why) = quarantineBudget.admit(
            wholeBytes: line.count, day: received.receivedAt.day, client: received.client, hashOnlyBytes: nil)
        {
            metrics.quarantineNotStored.increment(why)
            return .reply(decision.replyNotStored(route: received.route, why: why))
        }
        let postbackProtocol = result.postbackProtocol
        let metrics = metrics
        return .store(writer: unverifiable, line: line, day: received.receivedAt.day, key: key, decision: decision) { outcome in
            switch outcome {
            case .stored: metrics.quarantined.increment(reason)
            case .duplicate: metrics.duplicate(protocol: postbackProtocol)
            case .failed: break
            }
        }
    }
}
