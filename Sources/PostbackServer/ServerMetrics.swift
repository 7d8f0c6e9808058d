import Basics
import Locking
import PostbackStore
import Postbacks
import Synchronization

/// The receiver's metrics behind `GET /metrics` (the Prometheus text format, version 0.0.4): each
/// family is one handle declared below, in the page's order (`MetricGroup`); the code that counts
/// bumps the handle itself. The methods here only map a value onto labels (a verdict, a writer's event).
///
/// Labels are bounded and escaped: a value a request can influence goes through `MetricLabels` (a
/// closed set per label, `other` for anything else a request claims) or is a closed enum, so no
/// request can add a series or a line.
final class ServerMetrics: MetricGroup {
    struct RequestKey: MetricLabelValues {
        let route: Route
        let code: Int
        var labelValues: [String] { [route.rawValue, String(code)] }
    }
    struct VerdictKey: MetricLabelValues {
        let protocolName: String
        let version: String
        let status: String
        let environment: String
        var labelValues: [String] { [protocolName, version, status, environment] }
    }
    struct MemberKey: MetricLabelValues {
        let field: PostbackFlag.Field
        let member: String
        var labelValues: [String] { [field.rawValue, member] }
    }
    /// Why a request's reply did not reach its client.
    enum Abort: String, ClosedMetricLabel {
        case clientLeft = "client-left"
        case timeout, error, shutdown
    }
    /// What a rejected record kept of a body it could not keep whole.
    enum BodyKept: String, ClosedMetricLabel {
        case hash, prefix
    }

    /// Unknown claim or header member names with a series of their own; later names share `other`.
    static let unknownMemberLabelLimit = 16
    /// Unknown member names remembered so each is logged once; past this, new names are not logged.
    static let unknownMemberLogLimit = 256

    let requests = KeyedCounter<RequestKey>(
        "postback_http_requests_total", labels: ["route", "code"], help: "HTTP requests answered, by route and status code.")
    let libraryResponses = KeyedCounter<String>(
        "postback_http_library_responses_total", labels: ["code"],
        help:
            "Answers libmicrohttpd made itself (malformed request, request line or headers too large, …), by status code; not in postback_http_requests_total."
    )
    let requestDuration = Histogram(
        "postback_request_duration_seconds", help: "Time from a complete postback request to its response.",
        upperBounds: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    let verdicts = KeyedCounter<VerdictKey>(
        "postback_verdicts_total", labels: ["protocol", "version", "status", "environment"],
        help:
            "Verifier verdicts, by protocol, version, status and environment (production or development, from the key; none when no key applies)."
    )
    let duplicates = KeyedCounter<String>(
        "postback_duplicates_total", labels: ["protocol"],
        help: "Verified postbacks whose dedup key was already stored (answered 200, not stored again).")
    let policyRejections = KeyedCounter<String>(
        "postback_policy_rejections_total", labels: ["reason"],
        help: "Verified postbacks rejected by configuration (ad network not accepted, development not allowed).")
    let flags = LabeledCounter<LabelPair<PostbackFlag.Field, PostbackFlag.Action>>(
        "postback_flags_total", labels: ["field", "action"],
        help:
            "Values not taken as sent (they never change the verdict), by field and action (normalized, dropped, unrecognized)."
    )
    let unrecognizedMembers = KeyedCounter<MemberKey>(
        "postback_unrecognized_members_total", labels: ["field", "member"],
        help:
            "Verified AdAttributionKit postbacks carrying a JWS claim or header member this release does not know (counted all the same), by field (jws-claim, jws-header) and member name; names after the first \(ServerMetrics.unknownMemberLabelLimit) share member=\"other\"."
    )
    let conflictingCopies = LabeledCounter<LabelPair<Route, UnsignedValues.Field>>(
        "postback_conflicting_copies_total", labels: ["route", "field"],
        help:
            "Copies of a stored postback (a duplicate key) whose unsigned values differ from the stored copy's, by route and field (conversion-value, coarse-conversion-value, country-code, ad-interaction-type); the stored copy is kept."
    )
    let conflictsNotStored = KeyedCounter<String>(
        "postback_conflicts_not_stored_total", labels: ["reason"],
        help:
            "Conflicting copies counted but whose evidence was not written to raw/conflicts/, by reason (daily-budget: the day's or the client's share is spent; free-space-floor)."
    )
    let quarantined = LabeledCounter<QuarantineReason>(
        "postback_quarantined_total", labels: ["reason"],
        help:
            "Postbacks answered 200 and kept in raw/unverifiable/ (never counted), by reason; usually Apple shipped something new.",
        series: .every)
    let fsync = Histogram(
        "postback_fsync_duration_seconds", help: "Duration of each group commit's fdatasync.",
        upperBounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    let groupCommitRecords = Histogram(
        "postback_group_commit_records", help: "Records covered by one group commit.",
        upperBounds: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    /// Postbacks checked together by one verifying thread (`VerificationQueue`).
    let verificationBatch = Histogram(
        "postback_verification_batch_postbacks",
        help: "Postbacks whose signatures one verifying thread checked together (one shared modular inversion).",
        upperBounds: [1, 2, 4, 8, 16, 32])
    let spoolBytes = LabeledCounter<StoreLayout.Spool>(
        "postback_spool_bytes_total", labels: ["spool"], help: "Bytes appended (and synced) to the spool, by spool.",
        series: .every)
    let spoolRecords = LabeledCounter<StoreLayout.Spool>(
        "postback_spool_records_total", labels: ["spool"], help: "Records appended (and synced) to the spool, by spool.",
        series: .every)
    let segmentsOpened = LabeledCounter<StoreLayout.Spool>(
        "postback_spool_segments_opened_total", labels: ["spool"], help: "Segment files created, by spool.", series: .every)
    let storageErrors = LabeledCounter<StoreLayout.Spool>(
        "postback_storage_errors_total", labels: ["spool"], help: "Failed writes or syncs, by spool.", series: .every)
    let segmentsVanished = LabeledCounter<StoreLayout.Spool>(
        "postback_spool_segments_vanished_total", labels: ["spool"],
        help:
            "Open segments found deleted or replaced under the receiver (closed and begun anew before the next reply), by spool.",
        series: .every)
    let storageHealthy = LabeledGauge<StoreLayout.Spool>(
        "postback_storage_healthy", labels: ["spool"],
        help: "1 while the spool takes writes, 0 after a failure until it recovers.")
    let dedupKeys = Gauge("postback_dedup_keys", help: "Dedup keys in the index (stored postbacks of every writer).")
    let openConnections = Gauge("postback_open_connections", help: "Open HTTP connections.")
    let timedOutConnections = KeyedCounter<String>(
        "postback_connections_timed_out_total", labels: ["phase"],
        help: "Connections closed for being too slow, by phase (idle, headers, body).")
    let refusedConnections = LabeledCounter<ConnectionWatchdog.Refusal>(
        "postback_connections_refused_total", labels: ["reason"],
        help:
            "Connections closed at the connection limit, by reason (silent-shed: the oldest connection that had sent no request; slow-reader-shed: the one whose reply waited longest for its client to read it; over-limit: the new one)."
    )
    let abortedRequests = LabeledCounter<Abort>(
        "postback_http_requests_aborted_total", labels: ["reason"],
        help: "Requests whose reply did not reach the client, by reason (client-left, timeout, error, shutdown).")
    let rejectedBodiesReduced = LabeledCounter<BodyKept>(
        "postback_rejected_bodies_reduced_total", labels: ["kept"],
        help:
            "Rejected records stored without their whole body, by what was kept (hash: over the daily budget; prefix: body over the size limit)."
    )
    /// A rejected postback answered 400 but not stored at all (`free-space-floor`).
    let rejectedNotStored = KeyedCounter<String>(
        "postback_rejected_not_stored_total", labels: ["reason"],
        help:
            "Rejected postbacks answered 400 but not stored, by reason (free-space-floor: the disk space is kept for verified postbacks)."
    )
    /// A postback to quarantine answered 503 (not stored): the quarantine's daily budget or the free-space floor.
    let quarantineNotStored = KeyedCounter<String>(
        "postback_quarantine_not_stored_total", labels: ["reason"],
        help:
            "Postbacks this release cannot check yet, answered 503 (500 where AdAttributionKit may come; retry later) instead of quarantined: the quarantine's daily budget is spent or the disk is at its free-space floor."
    )
    /// A request refused with 429: its client already had `per_ip_connection_limit` requests in progress.
    let clientLimited = Counter(
        "postback_client_limited_total",
        help:
            "Requests answered 429 (500 where AdAttributionKit may come): the client address (behind trusted_proxies, the forwarded one) already had per_ip_connection_limit requests in progress."
    )
    let ready = Gauge("postback_ready", help: "1 when /readyz answers 200.")

    /// Unknown member names given a label of their own, and those already logged.
    private struct MemberNames {
        /// At most `unknownMemberLabelLimit`.
        var labelled: Set<String> = []
        /// At most `unknownMemberLogLimit`.
        var logged: Set<String> = []
    }
    private let memberNames = Locked(MemberNames())

    func request(route: Route, code: Int, seconds: Double?) {
        requests.increment(RequestKey(route: route, code: code))
        if let seconds, route.receivesPostbacks { requestDuration.observe(seconds) }
    }

    func verdict(_ result: VerificationResult) {
        // `version` is whatever an unverified body claims: only known versions get a label of their own.
        verdicts.increment(
            VerdictKey(
                protocolName: MetricLabels.protocols.label(result.postbackProtocol?.rawValue ?? "unknown"),
                version: MetricLabels.versions.label(
                    result.version ?? (result.postbackProtocol == .adattributionkit ? "aak" : "unknown")),
                status: MetricLabels.statuses.label(result.status.rawValue),
                environment: MetricLabels.environments.label(result.environment?.rawValue ?? "none")))
    }

    func duplicate(protocol postbackProtocol: PostbackProtocol?) {
        duplicates.increment(MetricLabels.protocols.label(postbackProtocol?.rawValue ?? "unknown"))
    }

    /// Field and action come from closed enums, never from the flag's raw value.
    func flags(_ flags: [PostbackFlag]) {
        for flag in flags { self.flags.increment(flag.field, flag.action) }
    }

    /// Counts each unknown AdAttributionKit claim or header member by name (the first
    /// `unknownMemberLabelLimit` names seen get a label each, later ones share `other`, so a sender
    /// cannot grow the page) and returns the flags whose name this process has not logged yet.
    func unknownMembers(_ flags: [PostbackFlag]) -> [PostbackFlag] {
        guard flags.contains(where: \.isUnknownMember) else { return [] }
        var firstSeen: [PostbackFlag] = []
        for flag in flags where flag.isUnknownMember {
            let name = "\(flag.field.rawValue) \(flag.raw)"
            let (labelled, firstTime) = memberNames.withLock { names in
                if !names.labelled.contains(name), names.labelled.count < Self.unknownMemberLabelLimit {
                    names.labelled.insert(name)
                }
                guard !names.logged.contains(name), names.logged.count < Self.unknownMemberLogLimit else {
                    return (names.labelled.contains(name), false)
                }
                names.logged.insert(name)
                return (names.labelled.contains(name), true)
            }
            unrecognizedMembers.increment(MemberKey(field: flag.field, member: labelled ? flag.raw : MetricLabels.other))
            if firstTime { firstSeen.append(flag) }
        }
        return firstSeen
    }

    /// A copy of a stored postback whose unsigned values differ, one count per field that differs.
    func conflictingCopy(route: Route, fields: [UnsignedValues.Field]) {
        for field in fields { conflictingCopies.increment(route, field) }
    }

    /// A verified postback the receiver's policy turned away (`ad-network`, `development`).
    func policyRejection(_ reason: String) {
        policyRejections.increment(MetricLabels.policyReasons.label(reason))
    }

    func writer(_ spool: StoreLayout.Spool, event: SpoolWriter.Event) {
        switch event {
        case .committed(let records, let bytes, let seconds):
            spoolBytes.increment(spool, by: bytes)
            spoolRecords.increment(spool, by: records)
            fsync.observe(seconds)
            groupCommitRecords.observe(Double(records))
        case .openedSegment:
            segmentsOpened.increment(spool)
        case .failed:
            storageErrors.increment(spool)
        case .segmentVanished:
            segmentsVanished.increment(spool)
        case .recovered, .sealNotRecorded:
            break
        }
    }

    /// An answer libmicrohttpd made itself, without a request callback of ours.
    func libraryResponse(code: Int) {
        libraryResponses.increment((100...599).contains(code) ? String(code) : MetricLabels.other)
    }

    /// The status in libmicrohttpd's "Error processing request (HTTP response code is 414 …" message.
    static func libraryResponseCode(inLogMessage text: String) -> Int? {
        guard let marker = text.range(of: "HTTP response code is ") else { return nil }
        return Int(text[marker.upperBound...].prefix { $0.isASCII && $0.isNumber })
    }

    /// Gauges read at scrape time.
    struct Gauges {
        var ready: Bool
        var storageHealthy: [StoreLayout.Spool: Bool]
        var dedupKeys: Int
        var openConnections: Int
    }

    /// The page of this moment: the scrape's gauges set, then every family in declaration order.
    func render(_ gauges: Gauges) -> MetricsPage {
        ready.set(gauges.ready ? 1 : 0)
        for spool in StoreLayout.Spool.allCases { storageHealthy.set(spool, gauges.storageHealthy[spool] == true ? 1 : 0) }
        dedupKeys.set(gauges.dedupKeys)
        openConnections.set(gauges.openConnections)
        var page = MetricsPage()
        page.families(of: self)
        return page
    }
}

extension Route: ClosedMetricLabel {}
extension StoreLayout.Spool: ClosedMetricLabel {}
extension QuarantineReason: ClosedMetricLabel {}
extension PostbackFlag.Field: ClosedMetricLabel {}
extension PostbackFlag.Action: ClosedMetricLabel {}
extension UnsignedValues.Field: ClosedMetricLabel {}
