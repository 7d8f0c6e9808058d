import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// A store opened for writing by one writer id, as a receiver needs it: the writer lock held, the
/// spool directories made, the spools recovered (the dedup index of every stored key, the next
/// segment numbers) and a group-commit writer running for each spool.
///
/// `open` is the whole start-up of the store, in the order that keeps it safe: the lock first (no
/// other process with this writer id appends meanwhile), then recovery, then the writers. It refuses
/// a store with a segment it cannot read, since that segment's dedup keys would be unknown.
package final class WritableStore: Sendable {
    /// The writers' settings (see `SpoolWriter.Configuration`).
    package struct Options: Sendable {
        package var segmentBytes: Int
        package var commitGatherSeconds: Double
        package var segmentMaxAgeSeconds: Double?
        /// The spool's file operations; tests pass one that injects faults.
        package var storage: any SpoolStorage
        /// Keys stored elsewhere (other receivers' segments in a shared bucket), added to the recovered
        /// dedup index before the writers start.
        package var additionalDedupKeys: (@Sendable (StoreLayout) -> [String])?

        package init(
            segmentBytes: Int = 128 << 20, commitGatherSeconds: Double = 0, segmentMaxAgeSeconds: Double? = nil,
            storage: any SpoolStorage = POSIXSpoolStorage(), additionalDedupKeys: (@Sendable (StoreLayout) -> [String])? = nil
        ) {
            self.segmentBytes = segmentBytes
            self.commitGatherSeconds = commitGatherSeconds
            self.segmentMaxAgeSeconds = segmentMaxAgeSeconds
            self.storage = storage
            self.additionalDedupKeys = additionalDedupKeys
        }
    }

    /// What recovery found, for the start-up log.
    package struct Recovered: Sendable {
        package let segments: Int
        package let records: Int
        package let dedupKeys: Int
        package let seconds: Double
    }

    package let layout: StoreLayout
    package let writerID: String
    package let recovered: Recovered
    package let postbacks: SpoolWriter
    package let rejected: SpoolWriter
    /// Quarantine: postbacks that cannot be judged or counted yet.
    package let unverifiable: SpoolWriter
    /// Evidence of copies that disagree with the stored copy's unsigned values (`ConflictRecord`).
    package let conflicts: SpoolWriter
    private let lock: WriterLock

    /// Opens `dataDirectory` for `writerID`.
    /// - Parameters:
    ///   - damaged: called for each damaged line recovery skipped (a torn tail, a line that is not a
    ///     record), also when opening then fails.
    ///   - events: each writer's events, with its spool (called on that writer's thread).
    package static func open(
        dataDirectory: String, writerID: String, options: Options = Options(),
        damaged: (SpoolRecovery.Damage) -> Void = { _ in },
        events: @escaping @Sendable (StoreLayout.Spool, SpoolWriter.Event) -> Void = { _, _ in }
    )
        throws -> WritableStore
    {
        let layout = StoreLayout(root: dataDirectory)
        let lock = try WriterLock(layout: layout, writerID: writerID)
        for spool in StoreLayout.Spool.allCases {
            do {
                try options.storage.makeDirectories(layout.spoolDirectory(spool))
            } catch {
                throw StoreError.dataDirectoryNotUsable(dataDirectory, error)
            }
        }
        let started = DispatchTime.now().uptimeNanoseconds
        var recovery: SpoolRecovery
        do {
            recovery = try SpoolRecovery.scan(layout: layout, writerID: writerID)
        } catch {
            throw StoreError.notRecoverable(error)
        }
        recovery.damage.forEach(damaged)
        guard recovery.unreadable.isEmpty else { throw StoreError.unreadableSegments(recovery.unreadable) }
        SegmentSeals.sealLeftOpen(layout: layout, writerID: writerID)
        let recovered = Recovered(
            segments: recovery.segmentsScanned, records: recovery.recordsScanned, dedupKeys: recovery.dedupIndex.count,
            seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        if let additionalDedupKeys = options.additionalDedupKeys {
            for key in additionalDedupKeys(layout) { recovery.dedupIndex.insert(key) }
        }

        // The scan's per-segment key lists, freed now, stay in glibc's heap unless handed back: a
        // receiver would hold some 2.7 times its dedup index for good (docs/benchmarks.md).
        returnFreedHeap()

        func writer(_ spool: StoreLayout.Spool, index: DedupIndex?, recent: RecentDedupIndex? = nil) -> SpoolWriter {
            let configuration = SpoolWriter.Configuration(
                layout: layout, spool: spool, writerID: writerID, segmentBytes: options.segmentBytes,
                firstSequence: recovery.nextSequence[spool] ?? 1, storage: options.storage,
                gatherSeconds: options.commitGatherSeconds, segmentMaxAgeSeconds: options.segmentMaxAgeSeconds)
            return SpoolWriter(configuration: configuration, dedupIndex: index, recentIndex: recent) { event in
                events(spool, event)
            }
        }
        return WritableStore(
            layout: layout, writerID: writerID, recovered: recovered, lock: lock,
            postbacks: writer(.postbacks, index: recovery.dedupIndex),
            rejected: writer(.rejected, index: nil),
            unverifiable: writer(.unverifiable, index: nil, recent: recovery.quarantineIndex),
            conflicts: writer(.conflicts, index: nil))
    }

    private init(
        layout: StoreLayout, writerID: String, recovered: Recovered, lock: WriterLock,
        postbacks: SpoolWriter, rejected: SpoolWriter, unverifiable: SpoolWriter, conflicts: SpoolWriter
    ) {
        self.layout = layout
        self.writerID = writerID
        self.recovered = recovered
        self.lock = lock
        self.postbacks = postbacks
        self.rejected = rejected
        self.unverifiable = unverifiable
        self.conflicts = conflicts
    }

    package var writers: [SpoolWriter] { [postbacks, rejected, unverifiable, conflicts] }

    /// Whether a writer may still append to this segment (shipping takes only sealed ones).
    package func isSegmentOpen(_ path: String) -> Bool { writers.contains { $0.isOpen(path) } }

    /// Commits what is queued, closes the segments (every acknowledged record is already synced) and
    /// stops the writers. Then another process may open the store with this writer id.
    package func close() {
        for writer in writers { writer.close() }
        lock.release()
    }
}

/// glibc's `malloc_trim(0)`: gives the heap's free pages back to the system. Looked up at run time,
/// since Swift's Glibc module does not declare it (`malloc.h`); without glibc, nothing.
private func returnFreedHeap() {
    #if canImport(Glibc)
        typealias MallocTrim = @convention(c) (Int) -> Int32
        // RTLD_DEFAULT: the process's global symbols.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        }
    #endif
}
