package import Basics
import Dispatch
import Foundation
import Locking
import PostbackCrypto
package import Postbacks
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Appends records to one spool (`raw/postbacks` or `raw/rejected`) with group commit, and says when
/// each record is durable.
///
/// One thread owns the open segments. Callers `submit` a record and get its outcome through a
/// completion, called on that thread. The thread takes every record waiting at that moment, appends
/// them with one write per segment and covers them all with one `fdatasync`; records that arrive
/// meanwhile form the next batch. So there is no timer: the batch is as large as the load makes it.
///
/// Dedup (postbacks spool only): a record whose key is already stored completes as `.duplicate`
/// without being written; two copies in one batch are written once, the first one submitted wins.
/// Keys enter the index only once their record is synced.
///
/// Failure (the fsyncgate rule): if a write or sync fails, every record of the batch fails, the open
/// segments are cut back to their last synced length and abandoned, and the writer turns unhealthy:
/// every later record fails at once, without touching the disk, until a probe write and sync in the
/// spool directory succeeds (tried every `probeInterval`). Then it opens a fresh segment. A failed
/// sync is never retried and taken as success.
package final class SpoolWriter: Sendable {
    package enum Outcome: Sendable, Equatable {
        /// Written and synced.
        case stored
        /// The same dedup key is already stored (or was stored by this batch's first copy), with
        /// the stored copy's unsigned values (`.unknown` when the index has none for it).
        case duplicate(stored: UnsignedValues)
        /// Not durable; the reason says why.
        case failed(String)
    }

    /// What the writer reports, for metrics and logs. Called on the writer thread.
    package enum Event: Sendable {
        case committed(records: Int, bytes: Int, syncSeconds: Double)
        case openedSegment(path: String)
        case failed(StorageError)
        case recovered
        /// An open segment was deleted or replaced under the writer (its directory removed, the file
        /// renamed or unlinked): it was closed, and the next record goes to a new one.
        case segmentVanished(path: String)
        /// A segment was sealed but its seal (`SegmentSeals`) could not be recorded: readers take it as
        /// it is, unchecked. Storage for postbacks is unaffected.
        case sealNotRecorded(path: String, error: StorageError)
    }

    package struct Configuration: Sendable {
        package var layout: StoreLayout
        package var spool: StoreLayout.Spool
        package var writerID: String
        /// A segment is closed and a new one begun before an append would take it past this size.
        package var segmentBytes: Int
        /// The sequence number of the first segment this writer creates (see `SpoolRecovery`).
        package var firstSequence: Int
        package var storage: any SpoolStorage
        /// How often an unhealthy writer tries storage again.
        package var probeInterval: Double
        /// Under load (the last batch held more than one record), how long to let a batch gather
        /// before syncing it: fewer, larger syncs for a fraction of a millisecond of latency. A lone
        /// record is never held back.
        package var gatherSeconds: Double
        /// A segment open this long is sealed (closed; the next record opens a new one), so that
        /// shipping (`SpoolDelivery`) never waits long for a quiet segment; nil: only size and day seal.
        package var segmentMaxAgeSeconds: Double?

        package init(
            layout: StoreLayout, spool: StoreLayout.Spool, writerID: String, segmentBytes: Int = 128 << 20,
            firstSequence: Int = 1, storage: any SpoolStorage = POSIXSpoolStorage(), probeInterval: Double = 0.2,
            gatherSeconds: Double = 0, segmentMaxAgeSeconds: Double? = nil
        ) {
            self.layout = layout
            self.spool = spool
            self.writerID = writerID
            self.segmentBytes = segmentBytes
            self.firstSequence = firstSequence
            self.storage = storage
            self.probeInterval = probeInterval
            self.gatherSeconds = gatherSeconds
            self.segmentMaxAgeSeconds = segmentMaxAgeSeconds
        }
    }

    package typealias Completion = @Sendable (Outcome) -> Void

    struct Entry: Sendable {
        let line: [UInt8]
        let day: UTCDay
        let dedupKey: String?
        let values: UnsignedValues
        let completion: Completion
    }

    struct Queue {
        var entries: [Entry] = []
        var closing = false
    }

    let configuration: Configuration
    private let queue = Locked(Queue())
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let healthy = Atomic<Bool>(true)
    private let storedKeys = Atomic<Int>(0)
    /// The open segments' paths and identities, for `vanishedSegments()` from other threads.
    private let openSegments = Locked<[String: FileIdentity]>([:])
    /// Set by `vanishedSegments()` when it found one: the writer thread then replaces it at once.
    private let checkRequested = Atomic<Bool>(false)
    private let openPaths = Locked(Set<String>())

    /// Starts the writer thread.
    /// - Parameters:
    ///   - dedupIndex: the keys already stored (from `SpoolRecovery`); nil for a spool without dedup.
    ///   - recentIndex: instead, keys kept for the newest days only (the quarantine's).
    ///   - events: called on the writer thread after each commit, segment, failure and recovery.
    package init(
        configuration: Configuration, dedupIndex: DedupIndex?, recentIndex: RecentDedupIndex? = nil,
        events: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.configuration = configuration
        storedKeys.store(dedupIndex?.count ?? recentIndex?.count ?? 0, ordering: .relaxed)
        let worker = Worker(owner: self, index: dedupIndex, recent: recentIndex, events: events)
        let thread = Thread { worker.run() }
        thread.name = "spool-\(configuration.spool.rawValue)"
        thread.start()
    }

    /// False from a storage failure until storage takes writes again.
    package var isHealthy: Bool { healthy.load(ordering: .acquiring) }

    /// How many dedup keys are stored (recovered plus written since).
    package var dedupKeyCount: Int { storedKeys.load(ordering: .relaxed) }

    /// Open segments that are no longer at their path (deleted, or replaced by another file). When
    /// there is one, the writer thread is woken to close it, so a later record is not acknowledged
    /// from a file nobody can read; `/readyz` reports them meanwhile.
    package func vanishedSegments() -> [String] {
        let vanished = openSegments.withLock { $0 }.filter { FileIdentity(path: $0.key) != $0.value }.map(\.key).sorted()
        if !vanished.isEmpty {
            checkRequested.store(true, ordering: .relaxed)
            wakeup.signal()
        }
        return vanished
    }

    /// Whether `path` is a segment this writer may still append to. A path is marked open before its
    /// file is created and unmarked after it is closed, so a caller that lists the spool first and
    /// asks here second never takes a segment in progress for a sealed one.
    package func isOpen(_ path: String) -> Bool { openPaths.withLock { $0.contains(path) } }

    /// Queues one encoded record (a JSON line with its newline) for the partition of `day`.
    /// `completion` is called exactly once, on the writer thread (or at once, when unhealthy or closed).
    /// - Parameter values: the record's unsigned values, kept with its key (compared with later copies).
    package func submit(
        line: [UInt8], day: UTCDay, dedupKey: String?, values: UnsignedValues = .unknown,
        completion: @escaping Completion
    ) {
        guard isHealthy else {
            completion(.failed("storage is unavailable since an earlier write or sync failed"))
            return
        }
        let accepted = queue.withLock { queue in
            guard !queue.closing else { return false }
            queue.entries.append(Entry(line: line, day: day, dedupKey: dedupKey, values: values, completion: completion))
            return true
        }
        guard accepted else {
            completion(.failed("the writer is shutting down"))
            return
        }
        wakeup.signal()
    }

    /// Commits what is queued, closes the segments and stops the thread. Later submits fail.
    package func close() {
        let first = queue.withLock { queue in
            defer { queue.closing = true }
            return !queue.closing
        }
        guard first else { return }
        wakeup.signal()
        finished.wait()
    }

    // MARK: The writer thread

    fileprivate func take() -> (entries: [Entry], closing: Bool) {
        queue.withLock { queue in
            defer { queue.entries.removeAll(keepingCapacity: true) }
            return (queue.entries, queue.closing)
        }
    }

    fileprivate func waitForWork(timeout seconds: Double?) {
        if let seconds {
            _ = wakeup.wait(timeout: .now() + seconds)
        } else {
            wakeup.wait()
        }
    }

    fileprivate func setHealthy(_ value: Bool) { healthy.store(value, ordering: .releasing) }

    fileprivate func setStoredKeys(_ count: Int) { storedKeys.store(count, ordering: .relaxed) }

    fileprivate func didFinish() { finished.signal() }

    fileprivate func markOpen(_ path: String, _ open: Bool) {
        openPaths.withLock { paths in
            if open { paths.insert(path) } else { paths.remove(path) }
        }
    }

    fileprivate func publishOpenSegments(_ segments: [String: FileIdentity]) { openSegments.withLock { $0 = segments } }

    fileprivate func takeCheckRequest() -> Bool { checkRequested.exchange(false, ordering: .relaxed) }
}

/// A file's device and inode: a path whose identity changed (or that is gone) is no longer the file
/// a descriptor writes to.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    init?(descriptor: Int32) {
        var info = stat()
        // A file unlinked from every directory is gone, even though its descriptor still writes.
        guard fstat(descriptor, &info) == 0, info.st_nlink > 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The state only the writer thread touches: open segments, the dedup index, the next sequence number.
/// Confined to that one thread, hence `@unchecked Sendable` (it crosses into the thread once).
private final class Worker: @unchecked Sendable {
    struct OpenSegment {
        let descriptor: Int32
        let path: String
        let day: UTCDay
        var size = 0
        var syncedSize = 0
        /// What `path` named when the segment was created (nil if it could not be read).
        var identity: FileIdentity? = nil
        let openedAt = DispatchTime.now().uptimeNanoseconds
        /// Every byte written, for the seal: hashed as it is written, never read back.
        let hasher = SHA256Hasher()
    }

    let owner: SpoolWriter
    let configuration: SpoolWriter.Configuration
    let storage: any SpoolStorage
    let events: @Sendable (SpoolWriter.Event) -> Void
    var index: DedupIndex?
    /// The quarantine's keys, of the newest days only (`RecentDedupIndex`).
    var recent: RecentDedupIndex?
    var segments: [UTCDay: OpenSegment] = [:]
    var nextSequence: Int
    var knownDirectories: Set<String> = []
    var nextProbe: UInt64 = 0
    var lastBatchSize = 0
    /// The open segments differ from what `publishSegments` last told the owner.
    var segmentsChanged = false
    lazy var seals = SegmentSeals.Recorder(
        root: configuration.layout.root, spool: configuration.spool, writerID: configuration.writerID)

    init(
        owner: SpoolWriter, index: DedupIndex?, recent: RecentDedupIndex?,
        events: @escaping @Sendable (SpoolWriter.Event) -> Void
    ) {
        self.owner = owner
        self.configuration = owner.configuration
        self.storage = configuration.storage
        self.index = index
        self.recent = recent
        self.events = events
        self.nextSequence = configuration.firstSequence
    }

    func run() {
        while true {
            if owner.isHealthy {
                owner.waitForWork(timeout: secondsUntilNextSeal())
                sealAgedSegments()
                if owner.takeCheckRequest() {
                    replaceVanishedSegments(days: Array(segments.keys))
                }
                if segmentsChanged { publishSegments() }
                if lastBatchSize > 1, configuration.gatherSeconds > 0 { usleep(UInt32(configuration.gatherSeconds * 1e6)) }
                let (batch, closing) = owner.take()
                // An empty take is a leftover wake-up (one per submit), not a sign of low load.
                if !batch.isEmpty {
                    commit(batch)
                    lastBatchSize = batch.count
                }
                if closing {
                    // Submits stop once closing is set; whatever slipped in before is in `batch` or here.
                    let (rest, _) = owner.take()
                    if !rest.isEmpty { commit(rest) }
                    break
                }
            } else {
                owner.waitForWork(timeout: configuration.probeInterval)
                let (batch, closing) = owner.take()
                for entry in batch { entry.completion(.failed("storage is unavailable since an earlier write or sync failed")) }
                if closing { break }
                probeIfDue()
            }
        }
        for segment in segments.values { sealSegment(segment) }
        segments.removeAll()
        owner.didFinish()
    }

    private func probeIfDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= nextProbe else { return }
        nextProbe = now + UInt64(configuration.probeInterval * 1e9)
        do {
            try storage.probe(configuration.layout.spoolDirectory(configuration.spool))
            knownDirectories.removeAll()
            owner.setHealthy(true)
            events(.recovered)
        } catch {
            // Still failing: stay unhealthy, try again later.
        }
    }

    private func commit(_ batch: [SpoolWriter.Entry]) {
        var outcomes = [SpoolWriter.Outcome?](repeating: nil, count: batch.count)
        var firstCopy: [String: Int] = [:]
        var laterCopies: [(entry: Int, first: Int)] = []
        var linesByDay: [UTCDay: [Int]] = [:]
        var written: [Int] = []
        for (position, entry) in batch.enumerated() {
            if let key = entry.dedupKey, index != nil || recent != nil {
                if let stored = index?.storedValues(key) ?? recent?.storedValues(key) {
                    outcomes[position] = .duplicate(stored: stored)
                    continue
                }
                if let first = firstCopy[key] {
                    laterCopies.append((position, first))
                    continue
                }
                firstCopy[key] = position
            }
            linesByDay[entry.day, default: []].append(position)
            written.append(position)
        }

        if !written.isEmpty {
            // One stat per open segment per batch: a partition deleted under us must not take the
            // batch into a file no reader will ever see, and then answer 200.
            replaceVanishedSegments(days: Array(linesByDay.keys))
            var rolled: [OpenSegment] = []
            do throws(StorageError) {
                let days = linesByDay.keys.sorted()
                var byteCount = 0
                for day in days {
                    byteCount += try append(linesByDay[day]!.map { batch[$0].line }, day: day, rolled: &rolled)
                }
                let start = DispatchTime.now().uptimeNanoseconds
                for segment in rolled where segment.size != segment.syncedSize {
                    try storage.sync(segment.descriptor, path: segment.path)
                }
                for day in days {
                    try storage.sync(segments[day]!.descriptor, path: segments[day]!.path)
                    segments[day]!.syncedSize = segments[day]!.size
                }
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                // Rolled segments are full and synced: done with them.
                for segment in rolled { sealSegment(segment) }
                rolled.removeAll()
                for position in written {
                    outcomes[position] = .stored
                    if let key = batch[position].dedupKey {
                        index?.insert(key, values: batch[position].values)
                        recent?.insert(key, values: batch[position].values, day: batch[position].day)
                    }
                }
                if let index { owner.setStoredKeys(index.count) }
                if let recent { owner.setStoredKeys(recent.count) }
                closeStaleSegments(newest: days.last!)
                events(.committed(records: written.count, bytes: byteCount, syncSeconds: seconds))
            } catch {
                abandonSegments(rolled)
                owner.setHealthy(false)
                nextProbe = DispatchTime.now().uptimeNanoseconds + UInt64(configuration.probeInterval * 1e9)
                events(.failed(error))
                for position in written { outcomes[position] = .failed(error.description) }
            }
        }
        for (position, first) in laterCopies {
            outcomes[position] = outcomes[first] == .stored ? .duplicate(stored: batch[first].values) : outcomes[first]
        }
        if segmentsChanged { publishSegments() }
        for (position, entry) in batch.enumerated() {
            entry.completion(outcomes[position] ?? .failed("not written"))
        }
    }

    /// Appends `lines` to the day's segment, one write per segment. Before a line would take a
    /// non-empty segment past the size limit, that segment is set aside in `rolled` (to be synced and
    /// closed with the batch) and a new one begun; a record is never split.
    private func append(_ lines: [[UInt8]], day: UTCDay, rolled: inout [OpenSegment]) throws(StorageError) -> Int {
        var segment: OpenSegment
        if let open = segments[day] { segment = open } else { segment = try newSegment(for: day) }
        segments[day] = segment
        var chunk: [UInt8] = []
        // The whole batch's bytes at once (a segment roll is rare): the chunk never grows by copying.
        chunk.reserveCapacity(lines.reduce(0) { $0 + $1.count })
        var total = 0
        for line in lines {
            let pending = segment.size + chunk.count
            if pending > 0, pending + line.count > configuration.segmentBytes {
                try write(chunk, to: &segment)
                rolled.append(segment)
                segments[day] = nil
                segment = try newSegment(for: day)
                segments[day] = segment
                chunk.removeAll(keepingCapacity: true)
            }
            chunk.append(contentsOf: line)
            total += line.count
        }
        try write(chunk, to: &segment)
        segments[day] = segment
        return total
    }

    private func write(_ bytes: [UInt8], to segment: inout OpenSegment) throws(StorageError) {
        guard !bytes.isEmpty else { return }
        // Count the bytes as written first: if the write fails half way, abandoning the segment cuts
        // it back to `syncedSize` anyway.
        segment.size += bytes.count
        try storage.append(bytes, to: segment.descriptor, path: segment.path)
        segment.hasher.update(bytes)
    }

    private func newSegment(for day: UTCDay) throws(StorageError) -> OpenSegment {
        let directory = configuration.layout.partition(configuration.spool, day: day)
        if !knownDirectories.contains(directory) {
            try storage.makeDirectories(directory)
            knownDirectories.insert(directory)
        }
        var attempts = 0
        while true {
            let path = directory + "/" + StoreLayout.segmentName(writer: configuration.writerID, sequence: nextSequence)
            // A number is never reused, not even after a failed create.
            nextSequence += 1
            let descriptor: Int32
            owner.markOpen(path, true)
            do {
                descriptor = try storage.createSegment(path)
            } catch {
                owner.markOpen(path, false)
                attempts += 1
                // A file of that name appeared after start-up (it should not): take the next number.
                if error.errorNumber == EEXIST, attempts < 16 { continue }
                throw error
            }
            do {
                try storage.syncDirectory(directory)
            } catch {
                storage.close(descriptor)
                owner.markOpen(path, false)
                throw error
            }
            events(.openedSegment(path: path))
            segmentsChanged = true
            return OpenSegment(descriptor: descriptor, path: path, day: day, identity: FileIdentity(descriptor: descriptor))
        }
    }

    /// Closes the segments of `days` whose path no longer names the file written (deleted directory,
    /// unlinked or replaced file); the next append re-creates the directory and a new segment. What
    /// was synced into the vanished file before is gone with it: that is the deleter's doing.
    private func replaceVanishedSegments(days: [UTCDay]) {
        var changed = false
        for day in days {
            guard let segment = segments[day] else { continue }
            let current = FileIdentity(descriptor: segment.descriptor).flatMap { open in
                FileIdentity(path: segment.path) == open ? open : nil
            }
            guard current == nil || current != segment.identity else { continue }
            closeSegment(segment)
            segments[day] = nil
            knownDirectories.removeAll()
            changed = true
            events(.segmentVanished(path: segment.path))
        }
        if changed { segmentsChanged = true }
    }

    private func publishSegments() {
        var identities: [String: FileIdentity] = [:]
        for segment in segments.values { if let identity = segment.identity { identities[segment.path] = identity } }
        owner.publishOpenSegments(identities)
        segmentsChanged = false
    }

    /// After a midnight, the previous day's segment is closed once a batch no longer writes to it.
    private func closeStaleSegments(newest: UTCDay) {
        for (day, segment) in segments where day < newest {
            sealSegment(segment)
            segments[day] = nil
            segmentsChanged = true
        }
    }

    /// Closes a segment whose bytes are all synced, for good: from now on they never change. Its
    /// seal is recorded first, so that a reader who sees it closed finds the seal.
    private func sealSegment(_ segment: OpenSegment) {
        if segment.size > 0 {
            do {
                try seals.record(
                    segment.path, day: segment.day,
                    SegmentSeals.Seal(size: segment.size, sha256: segment.hasher.finalize().description))
            } catch {
                events(.sealNotRecorded(path: segment.path, error: error))
            }
        }
        closeSegment(segment)
    }

    /// Closes a segment without a seal (it vanished, or its unsynced bytes were dropped after a failure).
    private func closeSegment(_ segment: OpenSegment) {
        storage.close(segment.descriptor)
        owner.markOpen(segment.path, false)
    }

    /// How long the thread may sleep before the oldest open segment reaches its maximum age.
    private func secondsUntilNextSeal() -> Double? {
        guard let maxAge = configuration.segmentMaxAgeSeconds, let oldest = segments.values.map(\.openedAt).min() else {
            return nil
        }
        let age = Double(DispatchTime.now().uptimeNanoseconds - oldest) / 1e9
        return max(0.001, maxAge - age)
    }

    /// Seals every segment past its maximum age. Between batches all of a segment's bytes are synced.
    private func sealAgedSegments() {
        guard let maxAge = configuration.segmentMaxAgeSeconds else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        for (day, segment) in segments where Double(now - segment.openedAt) / 1e9 >= maxAge {
            sealSegment(segment)
            segments[day] = nil
            segmentsChanged = true
        }
    }

    /// After a failure: drop the unsynced bytes (their requests get 500) and never write here again.
    private func abandonSegments(_ rolled: [OpenSegment]) {
        for segment in Array(segments.values) + rolled {
            // Also when nothing seems unsynced: a partial write leaves bytes `size` may not count.
            storage.truncate(segment.descriptor, to: segment.syncedSize)
            closeSegment(segment)
        }
        segments.removeAll()
        knownDirectories.removeAll()
        publishSegments()
    }
}
