import Basics
import Dispatch
import Foundation
import Locking
import PostbackCrypto
package import PostbackStore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Delivers one writer's sealed spool segments to one destination, in the background: never on the
/// ingestion path, never holding a lock the HTTP threads or spool writers take.
///
/// Each pass lists the writer's segments in the local spools (oldest day first, then sequence),
/// skips those still open (`isOpen`, asked after listing, so a segment created meanwhile is never
/// mistaken for a sealed one) and those the ledger says are delivered, and delivers the rest one at a
/// time: hash, `deliver`, record in the ledger (fdatasync). The first failure ends the pass; the next
/// one waits per `Backoff`. Passes otherwise run every `scanIntervalSeconds` (and at `wake()`).
///
/// The backlog is the local spool itself, so it is bounded by the disk (when the disk fills, the
/// receiver's `/readyz` goes not-ready, as without delivery); `/metrics` shows it. With
/// `localRetentionSeconds`, a delivered segment is removed locally once it is that old; an
/// undelivered one never is.
package final class SpoolDeliveryWorker: Sendable {
    package struct Configuration: Sendable {
        package var layout: StoreLayout
        package var writerID: String
        package var spools: [StoreLayout.Spool]
        /// Whether the writer may still append to a segment (`SpoolWriter.isOpen`).
        package var isOpen: @Sendable (String) -> Bool
        package var scanIntervalSeconds: Double
        package var backoff: Backoff
        /// Delivered segments older than this are removed locally; nil keeps them.
        package var localRetentionSeconds: Double?

        package init(
            layout: StoreLayout, writerID: String, spools: [StoreLayout.Spool] = StoreLayout.Spool.allCases,
            isOpen: @escaping @Sendable (String) -> Bool, scanIntervalSeconds: Double = 2, backoff: Backoff = Backoff(),
            localRetentionSeconds: Double? = nil
        ) {
            self.layout = layout
            self.writerID = writerID
            self.spools = spools
            self.isOpen = isOpen
            self.scanIntervalSeconds = scanIntervalSeconds
            self.backoff = backoff
            self.localRetentionSeconds = localRetentionSeconds
        }
    }

    /// What happened, for logs. Called on the worker thread.
    package enum Event: Sendable {
        case delivered(SealedSegment)
        /// The first failure after a success (or at start): the destination is unreachable or refusing.
        case destinationDown(String)
        /// The first success after `destinationDown`.
        case destinationUp
        case conflict(SealedSegment, String)
        /// The segment's bytes match none of its seals (`SegmentSeals`): damaged at rest since it was
        /// written. Never delivered (the far side would hold the damage), kept local, and not retried.
        case damaged(SealedSegment, String)
        case removedLocally(String)
        /// A local problem (listing, hashing, the ledger): retried like a destination failure.
        case localProblem(String)
    }

    /// A snapshot for `/metrics`.
    package struct Status: Sendable, Equatable {
        package var pendingSegments: [StoreLayout.Spool: Int] = [:]
        package var pendingBytes: [StoreLayout.Spool: Int] = [:]
        /// Age of the oldest sealed segment not yet delivered; 0 when none.
        package var oldestPendingSeconds = 0.0
        package var deliveredSegments: [StoreLayout.Spool: Int] = [:]
        package var deliveredBytes: [StoreLayout.Spool: Int] = [:]
        package var failures = 0
        /// Failed attempts since the last one that delivered something: what the backoff waits by.
        package var consecutiveFailures = 0
        package var conflicts = 0
        package var damagedSegments = 0
        package var removedLocally = 0
        /// False from a failed attempt until the next success.
        package var destinationUp = true
        package var lastError: String?
        /// False until the first pass listed the spool: the pending figures mean nothing before.
        package var scanned = false
        /// Passes begun and ended since start, and whether the last one ended with nothing left to
        /// deliver (`deliverPending(within:)` waits for a pass begun after its call).
        package var passesStarted = 0
        package var passesFinished = 0
        package var lastPassDeliveredAll = false
    }

    package let destination: any DeliveryDestination
    private let configuration: Configuration
    private let state = Locked(Status())
    private let stopping = Atomic<Bool>(false)
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let passEnded = DispatchSemaphore(value: 0)

    /// Opens the ledger (an error here means the data directory is unusable) and starts the thread.
    package init(
        configuration: Configuration, destination: any DeliveryDestination,
        events: @escaping @Sendable (Event) -> Void = { _ in }
    ) throws(StorageError) {
        self.configuration = configuration
        self.destination = destination
        let ledger = try DeliveryLedger(
            path: DeliveryLedger.path(
                root: configuration.layout.root, destination: destination.name,
                writerID: configuration.writerID))
        let pass = DeliveryPass(owner: self, ledger: ledger, events: events)
        let thread = Thread { pass.run() }
        thread.name = "deliver-\(destination.name)"
        thread.start()
    }

    package var status: Status { state.withLock { $0 } }

    /// Starts a pass now (tests; after a segment is sealed).
    package func wake() { wakeup.signal() }

    /// At shutdown, once the writer has sealed its last segments: wakes the worker and waits until a
    /// pass begun after this call has delivered everything pending, or `seconds` have passed (a
    /// failed pass is retried about once a second meanwhile, backoff notwithstanding). True when
    /// nothing is left. The worker keeps running: `stop()` after.
    package func deliverPending(within seconds: Double) -> Bool {
        let requested = status.passesStarted
        let deadline = DispatchTime.now() + seconds
        wake()
        while true {
            _ = passEnded.wait(timeout: deadline)  // signalled at the end of every pass, also earlier ones
            let current = status
            let answered = current.passesFinished > requested
            if answered, current.lastPassDeliveredAll { return true }
            if DispatchTime.now() >= deadline { return false }
            if answered {
                // It failed: retry in a second rather than after the backoff (the process is about to exit).
                let now = DispatchTime.now().uptimeNanoseconds
                let left = deadline.uptimeNanoseconds > now ? Double(deadline.uptimeNanoseconds - now) / 1e9 : 0
                Thread.sleep(forTimeInterval: min(1, left))
                wake()
            }
        }
    }

    /// Stops after the delivery in progress (if any); returns when the thread is done. What is not
    /// delivered stays pending in the local spool for the next start.
    package func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wakeup.signal()
        finished.wait()
    }

    /// The Prometheus text for `/metrics` (families `postback_delivery_*`, label `destination`).
    package func renderMetrics() -> String {
        var page = MetricsPage()
        Self.renderMetrics(destination: destination.name, spools: configuration.spools, status: status, into: &page)
        return page.text
    }

    static func renderMetrics(destination name: String, spools: [StoreLayout.Spool], status: Status, into page: inout MetricsPage)
    {
        func family(_ metric: String, _ kind: MetricsPage.Kind, _ help: String, perSpool: [StoreLayout.Spool: Int]) {
            page.family(metric, kind, help: help) {
                for spool in spools { $0.sample(["destination": name, "spool": spool.rawValue], perSpool[spool] ?? 0) }
            }
        }
        func family(_ metric: String, _ kind: MetricsPage.Kind, _ help: String, value: Double) {
            page.family(metric, kind, help: help) { $0.sample(["destination": name], value) }
        }
        // Before the first listing the backlog is unknown: no sample rather than a false 0.
        if status.scanned {
            family(
                "postback_delivery_pending_segments", .gauge, "Sealed segments not yet delivered.",
                perSpool: status.pendingSegments)
            family(
                "postback_delivery_pending_bytes", .gauge, "Bytes of sealed segments not yet delivered.",
                perSpool: status.pendingBytes)
            family(
                "postback_delivery_oldest_pending_seconds", .gauge,
                "Age of the oldest sealed segment not yet delivered (0: none).",
                value: status.oldestPendingSeconds.rounded())
        }
        family(
            "postback_delivery_segments_total", .counter, "Segments delivered and recorded in the ledger since start.",
            perSpool: status.deliveredSegments)
        family("postback_delivery_bytes_total", .counter, "Bytes delivered since start.", perSpool: status.deliveredBytes)
        family(
            "postback_delivery_errors_total", .counter, "Failed delivery attempts (retried with backoff).",
            value: Double(status.failures))
        family(
            "postback_delivery_conflicts", .gauge, "Segments the destination holds with different bytes (never overwritten).",
            value: Double(status.conflicts))
        family(
            "postback_delivery_damaged_segments", .gauge,
            "Sealed segments not delivered because their bytes no longer match their seal (damaged at rest).",
            value: Double(status.damagedSegments))
        family(
            "postback_delivery_local_removed_total", .counter, "Delivered segments removed locally after the retention time.",
            value: Double(status.removedLocally))
        family(
            "postback_delivery_destination_up", .gauge, "1 unless the last delivery attempt failed.",
            value: status.destinationUp ? 1 : 0)
    }

    fileprivate var isStopping: Bool { stopping.load(ordering: .acquiring) }
    fileprivate func sleep(_ seconds: Double) { _ = wakeup.wait(timeout: .now() + seconds) }
    fileprivate func update(_ body: (inout Status) -> Void) { state.withLock { body(&$0) } }
    fileprivate func didFinish() { finished.signal() }
    fileprivate func passDidEnd() { passEnded.signal() }
    fileprivate var settings: Configuration { configuration }
}

/// The worker thread's own state (ledger, conflicts, failure count): touched by that thread only.
private final class DeliveryPass: @unchecked Sendable {
    let owner: SpoolDeliveryWorker
    let ledger: DeliveryLedger
    let events: @Sendable (SpoolDeliveryWorker.Event) -> Void
    var conflicts: Set<String> = []
    /// Segments found damaged (they match none of their seals): skipped like conflicts.
    var damaged: Set<String> = []
    /// The seals of the days this pass has looked at (`SegmentSeals`), by day.
    var seals: [UTCDay: [String: [SegmentSeals.Seal]]] = [:]
    var consecutiveFailures = 0
    var reportedDown = false
    /// The destination's last `Retry-After`, honoured by the next wait.
    var retryAfter: Double?

    init(owner: SpoolDeliveryWorker, ledger: DeliveryLedger, events: @escaping @Sendable (SpoolDeliveryWorker.Event) -> Void) {
        self.owner = owner
        self.ledger = ledger
        self.events = events
    }

    func run() {
        let configuration = owner.settings
        while !owner.isStopping {
            owner.update { $0.passesStarted += 1 }
            let succeeded = pass(configuration)
            owner.update { status in
                status.passesFinished += 1
                status.lastPassDeliveredAll = succeeded && (status.pendingSegments.values.reduce(0, +) == 0)
            }
            owner.passDidEnd()
            if owner.isStopping { break }
            owner.sleep(
                succeeded
                    ? configuration.scanIntervalSeconds
                    : max(configuration.backoff.delay(afterFailures: consecutiveFailures), retryAfter ?? 0))
            retryAfter = nil
        }
        owner.didFinish()
    }

    /// One pass; false if it stopped at a failure.
    private func pass(_ configuration: SpoolDeliveryWorker.Configuration) -> Bool {
        seals.removeAll()  // a segment sealed since the last pass has its seal in the files now
        let pending: [SealedSegment]
        var delivered: [SealedSegment] = []
        var newest: Set<String> = []
        do {
            (pending, delivered, newest) = try scan(configuration)
        } catch {
            fail("listing the spool: \(error)", local: true)
            return false
        }
        publishPending(pending)
        var remaining = pending
        while !remaining.isEmpty, !owner.isStopping {
            let segment = remaining.removeFirst()
            guard let digest = hash(segment.path) else {
                fail("\(segment.path): cannot read the segment to deliver it", local: true)
                return false
            }
            if let sealed = seals(of: segment, root: configuration.layout.root),
                !sealed.contains(SegmentSeals.Seal(size: segment.size, sha256: digest.description))
            {
                damaged.insert(segment.relativePath)
                owner.update { $0.damagedSegments = damaged.count }
                events(
                    .damaged(
                        segment,
                        "its \(segment.size) bytes (SHA-256 \(digest.description.prefix(16))…) are not the \(sealed[0].size) sealed "
                            + "(SHA-256 \(sealed[0].sha256.prefix(16))…)"))
                publishPending(remaining)
                continue
            }
            // A resumable destination's cursor: a failure after it moved still made progress.
            var cursor: SegmentCursor?
            var cursorStart = 0
            do {
                if let resumable = owner.destination as? any ResumableDeliveryDestination {
                    let segmentCursor = SegmentCursor(
                        ledger: ledger, relativePath: segment.relativePath, isStopping: { [owner] in owner.isStopping })
                    cursor = segmentCursor
                    cursorStart = segmentCursor.offset
                    try resumable.deliver(segment, from: segmentCursor)
                } else {
                    try owner.destination.deliver(segment, sha256: digest.bytes)
                }
            } catch {
                // A destination's own failures say retry or conflict; anything else is worth a retry.
                let error = error as? DeliveryFailure ?? DeliveryFailure(.retry, "\(error)")
                if error.code == .conflict {
                    conflicts.insert(segment.relativePath)
                    owner.update { $0.conflicts = conflicts.count }
                    events(.conflict(segment, error.description))
                    publishPending(remaining)
                    continue
                }
                if let cursor, cursor.offset > cursorStart {
                    // Delivered some before failing (a flaky link, one request in a batch): the
                    // destination is up, so the wait starts again from the shortest instead of
                    // growing towards the maximum while postbacks keep going through.
                    consecutiveFailures = 0
                }
                fail(error.description, local: false)
                retryAfter = error.retryAfterSeconds
                return false
            }
            do {
                try ledger.record(segment, sha256Hex: digest.description)
            } catch {
                fail("recording the delivery: \(error)", local: true)
                return false
            }
            consecutiveFailures = 0
            if reportedDown {
                reportedDown = false
                events(.destinationUp)
            }
            owner.update { status in
                status.destinationUp = true
                status.consecutiveFailures = 0
                status.deliveredSegments[segment.spool, default: 0] += 1
                status.deliveredBytes[segment.spool, default: 0] += segment.size
            }
            events(.delivered(segment))
            delivered.append(segment)
            publishPending(remaining)
        }
        if let retention = configuration.localRetentionSeconds {
            // The newest segment of each spool stays: start-up takes the next sequence number from
            // the local files, and a reused name would collide with a delivered object.
            removeOld(delivered.filter { !newest.contains($0.path) }, olderThan: retention)
        }
        return true
    }

    private func fail(_ message: String, local: Bool) {
        consecutiveFailures += 1
        owner.update { [consecutiveFailures] status in
            status.failures += 1
            status.consecutiveFailures = consecutiveFailures
            status.lastError = message
            if !local { status.destinationUp = false }
        }
        if local {
            events(.localProblem(message))
        } else if !reportedDown {
            reportedDown = true
            events(.destinationDown(message))
        }
    }

    private func publishPending(_ pending: [SealedSegment]) {
        let now = Date().timeIntervalSince1970
        owner.update { status in
            status.scanned = true
            status.pendingSegments = [:]
            status.pendingBytes = [:]
            for segment in pending {
                status.pendingSegments[segment.spool, default: 0] += 1
                status.pendingBytes[segment.spool, default: 0] += segment.size
            }
            status.oldestPendingSeconds = pending.map { max(0, now - $0.modifiedAt) }.max() ?? 0
        }
    }

    /// Sealed segments of this writer: (not yet delivered, oldest first; delivered and still local;
    /// the paths of each spool's highest-numbered segment).
    private func scan(_ configuration: SpoolDeliveryWorker.Configuration) throws(StoreLayout.ListingError)
        -> ([SealedSegment], [SealedSegment], Set<String>)
    {
        var pending: [(day: String, segment: SealedSegment, sequence: Int)] = []
        var delivered: [SealedSegment] = []
        var highest: [StoreLayout.Spool: (sequence: Int, path: String)] = [:]
        let root = configuration.layout.root
        for spool in configuration.spools {
            for day in try configuration.layout.days(spool) {
                for found in try configuration.layout.segments(spool, day: day) where found.writer == configuration.writerID {
                    if found.sequence > highest[spool]?.sequence ?? 0 { highest[spool] = (found.sequence, found.path) }
                    let relative = String(found.path.dropFirst(root.count + 1))
                    if conflicts.contains(relative) || damaged.contains(relative) { continue }
                    var info = stat()
                    guard stat(found.path, &info) == 0 else { continue }
                    let segment = SealedSegment(
                        path: found.path, relativePath: relative, spool: spool, size: Int(info.st_size),
                        modifiedAt: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
                    if ledger.contains(relative) {
                        delivered.append(segment)
                    } else if !configuration.isOpen(found.path) {
                        pending.append(("\(day)", segment, found.sequence))
                    }
                }
            }
        }
        pending.sort { ($0.day, $0.segment.spool.rawValue, $0.sequence) < ($1.day, $1.segment.spool.rawValue, $1.sequence) }
        return (pending.map(\.segment), delivered, Set(highest.values.map(\.path)))
    }

    /// The seals recorded for `segment`, or nil when it has none (written before seals existed, or
    /// left open by a crash): the day's seal files are read once per pass.
    private func seals(of segment: SealedSegment, root: String) -> [SegmentSeals.Seal]? {
        let parts = segment.relativePath.split(separator: "/")
        guard parts.count == 4, parts[2].hasPrefix("dt="), let day = UTCDay(String(parts[2].dropFirst(3))) else { return nil }
        if seals[day] == nil { seals[day] = SegmentSeals.load(root: root, day: day) }
        return seals[day]?[segment.relativePath]
    }

    private func hash(_ path: String) -> SHA256.Digest? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let hasher = SHA256Hasher()
        do { try FileDescriptorIO.forEachChunk(of: fd, path: path) { hasher.update($0) } } catch { return nil }
        return hasher.finalize()
    }

    private func removeOld(_ delivered: [SealedSegment], olderThan retention: Double) {
        let now = Date().timeIntervalSince1970
        for segment in delivered where now - segment.modifiedAt >= retention {
            if unlink(segment.path) == 0 {
                owner.update { $0.removedLocally += 1 }
                events(.removedLocally(segment.path))
            }
        }
    }
}
