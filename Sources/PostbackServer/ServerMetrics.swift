import Basics
import Locking
import PostbackStore
import Postbacks
import Synchronization

/// The counters behind `GET /metrics`, written as a `MetricsPage` (the Prometheus text format, version 0.0.4):
/// each family is one `page.family` declaration in `render`.
///
/// Labels are bounded and escaped: every value goes through `MetricLabels` (a closed set per label,
/// `other` for anything else a request claims), so no request can add a series or a line.
final class ServerMetrics: Sendable {
    private struct RequestKey: Hashable {
        let route: Route
        let code: Int
    }
    private struct VerdictKey: Hashable {
        let protocolName: String
        let version: String
        let status: String
        let environment: String
    }
    private struct FlagKey: Hashable {
        let field: PostbackFlag.Field
        let action: PostbackFlag.Action
    }
    private struct ConflictKey: Hashable {
        let route: Route
        let field: UnsignedValues.Field
    }
    private struct MemberKey: Hashable {
        let field: PostbackFlag.Field
        let member: String
    }

    /// Unknown claim or header member names with a series of their own; later names share `other`.
    static let unknownMemberLabelLimit = 16
    /// Unknown member names remembered so each is logged once; past this, new names are not logged.
    static let unknownMemberLogLimit = 256

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var verdicts: [VerdictKey: Int] = [:]
        var duplicates: [String: Int] = [:]
        var policyRejections: [String: Int] = [:]
        var flags: [FlagKey: Int] = [:]
        var unknownMembers: [MemberKey: Int] = [:]
        /// Names given a label of their own (at most `unknownMemberLabelLimit`).
        var labelledMembers: Set<String> = []
        /// Names already logged (at most `unknownMemberLogLimit`).
        var loggedMembers: Set<String> = []
        var quarantined: [QuarantineReason: Int] = [:]
        var spoolBytes: [StoreLayout.Spool: Int] = [:]
        var spoolRecords: [StoreLayout.Spool: Int] = [:]
        var storageErrors: [StoreLayout.Spool: Int] = [:]
        var segmentsOpened: [StoreLayout.Spool: Int] = [:]
        var timedOutConnections: [String: Int] = [:]
        var abortedRequests: [String: Int] = [:]
        var libraryResponses: [String: Int] = [:]
        var refusedConnections: [String: Int] = [:]
        var rejectedBodiesReduced: [String: Int] = [:]
        var rejectedNotStored: [String: Int] = [:]
        var quarantineNotStored: [String: Int] = [:]
        var conflictingCopies: [ConflictKey: Int] = [:]
        var conflictsNotStored: [String: Int] = [:]
        var clientLimited = 0
        var segmentsVanished: [StoreLayout.Spool: Int] = [:]
        var fsync = Histogram(upperBounds: [
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
        ])
        var batchSize = Histogram(upperBounds: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
        var verificationBatch = Histogram(upperBounds: [1, 2, 4, 8, 16, 32])
        var requestDuration = Histogram(upperBounds: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    }

    private let state = Locked(State())

    func request(route: Route, code: Int, seconds: Double?) {
        state.withLock { state in
            state.requests[RequestKey(route: route, code: code), default: 0] += 1
            if let seconds, route.receivesPostbacks { state.requestDuration.observe(seconds) }
        }
    }

    /// Postbacks checked together by one verifying thread (`VerificationQueue`).
    func verificationBatch(size: Int) {
        state.withLock { $0.verificationBatch.observe(Double(size)) }
    }

    func verdict(_ result: VerificationResult) {
        // `version` is whatever an unverified body claims: only known versions get a label of their own.
        let key = VerdictKey(
            protocolName: MetricLabels.protocols.label(result.postbackProtocol?.rawValue ?? "unknown"),
            version: MetricLabels.versions.label(
                result.version ?? (result.postbackProtocol == .adattributionkit ? "aak" : "unknown")),
            status: MetricLabels.statuses.label(result.status.rawValue),
            environment: MetricLabels.environments.label(result.environment?.rawValue ?? "none"))
        state.withLock { $0.verdicts[key, default: 0] += 1 }
    }

    func duplicate(protocol postbackProtocol: PostbackProtocol?) {
        state.withLock { $0.duplicates[MetricLabels.protocols.label(postbackProtocol?.rawValue ?? "unknown"), default: 0] += 1 }
    }

    /// Field and action come from closed enums, never from the flag's raw value.
    func flags(_ flags: [PostbackFlag]) {
        guard !flags.isEmpty else { return }
        state.withLock { state in
            for flag in flags { state.flags[FlagKey(field: flag.field, action: flag.action), default: 0] += 1 }
        }
    }

    /// Counts each unknown AdAttributionKit claim or header member by name (the first
    /// `unknownMemberLabelLimit` names seen get a label each, later ones share `other`, so a sender
    /// cannot grow the page) and returns the flags whose name this process has not logged yet.
    func unknownMembers(_ flags: [PostbackFlag]) -> [PostbackFlag] {
        guard flags.contains(where: \.isUnknownMember) else { return [] }
        return state.withLock { state in
            var firstSeen: [PostbackFlag] = []
            for flag in flags where flag.isUnknownMember {
                let name = "\(flag.field.rawValue) \(flag.raw)"
                if !state.labelledMembers.contains(name), state.labelledMembers.count < Self.unknownMemberLabelLimit {
                    state.labelledMembers.insert(name)
                }
                let label = state.labelledMembers.contains(name) ? flag.raw : MetricLabels.other
                state.unknownMembers[MemberKey(field: flag.field, member: label), default: 0] += 1
                if !state.loggedMembers.contains(name), state.loggedMembers.count < Self.unknownMemberLogLimit {
                    state.loggedMembers.insert(name)
                    firstSeen.append(flag)
                }
            }
            return firstSeen
        }
    }

    /// A copy of a stored postback whose unsigned values differ, one count per field that differs.
    func conflictingCopy(route: Route, fields: [UnsignedValues.Field]) {
        state.withLock { state in
            for field in fields { state.conflictingCopies[ConflictKey(route: route, field: field), default: 0] += 1 }
        }
    }

    /// Evidence of a conflicting copy not written (`daily-budget`, `free-space-floor`).
    func conflictNotStored(_ reason: String) {
        state.withLock { $0.conflictsNotStored[reason, default: 0] += 1 }
    }

    func quarantined(_ reason: QuarantineReason) {
        state.withLock { $0.quarantined[reason, default: 0] += 1 }
    }

    /// A verified postback the receiver's policy turned away (`ad-network`, `development`).
    func policyRejection(_ reason: String) {
        state.withLock { $0.policyRejections[MetricLabels.policyReasons.label(reason), default: 0] += 1 }
    }

    func writer(_ spool: StoreLayout.Spool, event: SpoolWriter.Event) {
        state.withLock { state in
            switch event {
            case .committed(let records, let bytes, let seconds):
                state.spoolBytes[spool, default: 0] += bytes
                state.spoolRecords[spool, default: 0] += records
                state.fsync.observe(seconds)
                state.batchSize.observe(Double(records))
            case .openedSegment:
                state.segmentsOpened[spool, default: 0] += 1
            case .failed:
                state.storageErrors[spool, default: 0] += 1
            case .segmentVanished:
                state.segmentsVanished[spool, default: 0] += 1
            case .recovered, .sealNotRecorded:
                break
            }
        }
    }

    func connectionTimedOut(phase: String) {
        state.withLock { $0.timedOutConnections[phase, default: 0] += 1 }
    }

    /// An answer libmicrohttpd made itself, without a request callback of ours.
    func libraryResponse(code: Int) {
        state.withLock { $0.libraryResponses[(100...599).contains(code) ? String(code) : MetricLabels.other, default: 0] += 1 }
    }

    /// The status in libmicrohttpd's "Error processing request (HTTP response code is 414 …" message.
    static func libraryResponseCode(inLogMessage text: String) -> Int? {
        guard let marker = text.range(of: "HTTP response code is ") else { return nil }
        return Int(text[marker.upperBound...].prefix { $0.isASCII && $0.isNumber })
    }

    /// A request that ended without its reply reaching the client (`client-left`, `timeout`, `error`,
    /// `shutdown`).
    func requestAborted(_ reason: String) {
        state.withLock { $0.abortedRequests[reason, default: 0] += 1 }
    }

    /// A connection closed at the connection limit (`silent-shed`: the oldest one that never sent a
    /// request, to make room; `over-limit`: the new one, when none was silent).
    func connectionRefused(_ reason: String) {
        state.withLock { $0.refusedConnections[reason, default: 0] += 1 }
    }

    /// A rejected record stored without its whole body (`hash`: over the day's budget; `prefix`: too large).
    func rejectedBodyReduced(kept: String) {
        state.withLock { $0.rejectedBodiesReduced[kept, default: 0] += 1 }
    }

    /// A rejected postback answered 400 but not stored at all (`free-space-floor`).
    func rejectedNotStored(_ reason: String) {
        state.withLock { $0.rejectedNotStored[reason, default: 0] += 1 }
    }

    /// A request refused with 429: its client already had `per_ip_connection_limit` requests in progress.
    func clientLimited() {
        state.withLock { $0.clientLimited += 1 }
    }

    /// A postback to quarantine answered 503 (not stored): the quarantine's daily budget or the free-space floor.
    func quarantineNotStored(_ reason: String) {
        state.withLock { $0.quarantineNotStored[reason, default: 0] += 1 }
    }

    /// Gauges read at scrape time.
    struct Gauges {
        var ready: Bool
        var storageHealthy: [StoreLayout.Spool: Bool]
        var dedupKeys: Int
        var openConnections: Int
    }

    func render(_ gauges: Gauges) -> MetricsPage {
        let state = state.withLock { $0 }
        var page = MetricsPage()
        page.family("postback_http_requests_total", .counter, help: "HTTP requests answered, by route and status code.") {
            $0.samples(state.requests) { ["route": $0.route.rawValue, "code": String($0.code)] }
        }
        page.family(
            "postback_http_library_responses_total", .counter,
            help:
                "Answers libmicrohttpd made itself (malformed request, request line or headers too large, …), by status code; not in postback_http_requests_total."
        ) { $0.samples(label: "code", state.libraryResponses) }
        page.family(
            "postback_request_duration_seconds", .histogram, help: "Time from a complete postback request to its response."
        ) { $0.histogram(state.requestDuration) }
        page.family(
            "postback_verdicts_total", .counter,
            help:
                "Verifier verdicts, by protocol, version, status and environment (production or development, from the key; none when no key applies)."
        ) {
            $0.samples(state.verdicts) {
                ["protocol": $0.protocolName, "version": $0.version, "status": $0.status, "environment": $0.environment]
            }
        }
        page.family(
            "postback_duplicates_total", .counter,
            help: "Verified postbacks whose dedup key was already stored (answered 200, not stored again)."
        ) { $0.samples(label: "protocol", state.duplicates) }
        page.family(
            "postback_policy_rejections_total", .counter,
            help: "Verified postbacks rejected by configuration (ad network not accepted, development not allowed)."
        ) { $0.samples(label: "reason", state.policyRejections) }
        page.family(
            "postback_flags_total", .counter,
            help:
                "Values not taken as sent (they never change the verdict), by field and action (normalized, dropped, unrecognized)."
        ) {
            $0.samples(state.flags) { ["field": $0.field.rawValue, "action": $0.action.rawValue] }
        }
        page.family(
            "postback_unrecognized_members_total", .counter,
            help:
                "Verified AdAttributionKit postbacks carrying a JWS claim or header member this release does not know (counted all the same), by field (jws-claim, jws-header) and member name; names after the first \(Self.unknownMemberLabelLimit) share member=\"other\"."
        ) {
            $0.samples(state.unknownMembers) { ["field": $0.field.rawValue, "member": $0.member] }
        }
        page.family(
            "postback_conflicting_copies_total", .counter,
            help:
                "Copies of a stored postback (a duplicate key) whose unsigned values differ from the stored copy's, by route and field (conversion-value, coarse-conversion-value, country-code, ad-interaction-type); the stored copy is kept."
        ) {
            $0.samples(state.conflictingCopies) { ["route": $0.route.rawValue, "field": $0.field.rawValue] }
        }
        page.family(
            "postback_conflicts_not_stored_total", .counter,
            help:
                "Conflicting copies counted but whose evidence was not written to raw/conflicts/, by reason (daily-budget: the day's or the client's share is spent; free-space-floor)."
        ) { $0.samples(label: "reason", state.conflictsNotStored) }
        page.family(
            "postback_quarantined_total", .counter,
            help:
                "Postbacks answered 200 and kept in raw/unverifiable/ (never counted), by reason; usually Apple shipped something new."
        ) {
            for reason in QuarantineReason.allCases { $0.sample(["reason": reason.rawValue], state.quarantined[reason] ?? 0) }
        }
        page.family("postback_fsync_duration_seconds", .histogram, help: "Duration of each group commit's fdatasync.") {
            $0.histogram(state.fsync)
        }
        page.family("postback_group_commit_records", .histogram, help: "Records covered by one group commit.") {
            $0.histogram(state.batchSize)
        }
        page.family(
            "postback_verification_batch_postbacks", .histogram,
            help: "Postbacks whose signatures one verifying thread checked together (one shared modular inversion)."
        ) { $0.histogram(state.verificationBatch) }
        func perSpool(_ name: String, _ kind: MetricsPage.Kind, _ help: String, _ value: (StoreLayout.Spool) -> Int) {
            page.family(name, kind, help: help) {
                for spool in StoreLayout.Spool.allCases { $0.sample(["spool": spool.rawValue], value(spool)) }
            }
        }
        perSpool("postback_spool_bytes_total", .counter, "Bytes appended (and synced) to the spool, by spool.") {
            state.spoolBytes[$0] ?? 0
        }
        perSpool("postback_spool_records_total", .counter, "Records appended (and synced) to the spool, by spool.") {
            state.spoolRecords[$0] ?? 0
        }
        perSpool("postback_spool_segments_opened_total", .counter, "Segment files created, by spool.") {
            state.segmentsOpened[$0] ?? 0
        }
        perSpool("postback_storage_errors_total", .counter, "Failed writes or syncs, by spool.") { state.storageErrors[$0] ?? 0 }
        perSpool(
            "postback_spool_segments_vanished_total", .counter,
            "Open segments found deleted or replaced under the receiver (closed and begun anew before the next reply), by spool."
        ) { state.segmentsVanished[$0] ?? 0 }
        perSpool("postback_storage_healthy", .gauge, "1 while the spool takes writes, 0 after a failure until it recovers.") {
            gauges.storageHealthy[$0] == true ? 1 : 0
        }
        page.family("postback_dedup_keys", .gauge, help: "Dedup keys in the index (stored postbacks of every writer).") {
            $0.sample(gauges.dedupKeys)
        }
        page.family("postback_open_connections", .gauge, help: "Open HTTP connections.") { $0.sample(gauges.openConnections) }
        page.family(
            "postback_connections_timed_out_total", .counter,
            help: "Connections closed for being too slow, by phase (idle, headers, body)."
        ) { $0.samples(label: "phase", state.timedOutConnections) }
        page.family(
            "postback_connections_refused_total", .counter,
            help:
                "Connections closed at the connection limit, by reason (silent-shed: the oldest connection that had sent no request; slow-reader-shed: the one whose reply waited longest for its client to read it; over-limit: the new one)."
        ) { $0.samples(label: "reason", state.refusedConnections) }
        page.family(
            "postback_http_requests_aborted_total", .counter,
            help: "Requests whose reply did not reach the client, by reason (client-left, timeout, error, shutdown)."
        ) { $0.samples(label: "reason", state.abortedRequests) }
        page.family(
            "postback_rejected_bodies_reduced_total", .counter,
            help:
                "Rejected records stored without their whole body, by what was kept (hash: over the daily budget; prefix: body over the size limit)."
        ) { $0.samples(label: "kept", state.rejectedBodiesReduced) }
        page.family(
            "postback_rejected_not_stored_total", .counter,
            help:
                "Rejected postbacks answered 400 but not stored, by reason (free-space-floor: the disk space is kept for verified postbacks)."
        ) { $0.samples(label: "reason", state.rejectedNotStored) }
        page.family(
            "postback_quarantine_not_stored_total", .counter,
            help:
                "Postbacks this release cannot check yet, answered 503 (500 where AdAttributionKit may come; retry later) instead of quarantined: the quarantine's daily budget is spent or the disk is at its free-space floor."
        ) { $0.samples(label: "reason", state.quarantineNotStored) }
        page.family(
            "postback_client_limited_total", .counter,
            help:
                "Requests answered 429 (500 where AdAttributionKit may come): the client address (behind trusted_proxies, the forwarded one) already had per_ip_connection_limit requests in progress."
        ) { $0.sample(state.clientLimited) }
        page.family("postback_ready", .gauge, help: "1 when /readyz answers 200.") { $0.sample(gauges.ready ? 1 : 0) }
        return page
    }
}
