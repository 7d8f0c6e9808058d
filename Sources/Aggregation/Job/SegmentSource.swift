package import Basics
import Foundation
package import PostbackStore

/// Where the job reads spool segments from when they are not files under `--data` (an object
/// store): it lists a day's segments and fetches each one's bytes. The job's results depend only on
/// the segments' names and bytes, so a run over a source is byte-identical to a run over the same
/// segments on disk.
package protocol SegmentSource: Sendable {
    /// The segment file names (`part-<writer>-<seq>.jsonl`) of one spool partition, with their sizes.
    func segments(_ spool: StoreLayout.Spool, day: UTCDay) throws(AggregationError) -> [(fileName: String, size: Int)]
    /// Something that fetches whole segments by name (`raw/<spool>/dt=…/part-…`), used by one
    /// download thread at a time (one connection each).
    func makeFetcher() throws(AggregationError) -> any SegmentFetcher
    /// How many segments are downloaded at once.
    var connections: Int { get }
}

package protocol SegmentFetcher {
    func fetch(_ name: String, size: Int) throws(AggregationError) -> [UInt8]
}

/// Downloads a day's segments on `source.connections` threads ahead of the scanners, in the order
/// the scanners take them, holding at most `window` segments (downloading, waiting or being
/// scanned) in memory: memory is bounded by `window` × the largest segment, and nothing is written
/// to disk.
///
/// A download thread takes a slot before it claims the next segment, so the slots are always held by
/// the lowest unscanned segments and the scanner waiting for the next one can never be starved.
final class SegmentPrefetch: @unchecked Sendable {
    private let condition = NSCondition()
    private let tasks: [SegmentTask]
    private let window: Int
    private var fetched: [Int: [UInt8]] = [:]
    private var failure: AggregationError? = nil
    private var nextToClaim = 0
    private var slotsHeld = 0
    private var runningThreads = 0
    private var stopped = false

    /// - Parameter tasks: in the order the scanners take them.
    init(source: any SegmentSource, tasks: [SegmentTask], window: Int) {
        self.tasks = tasks
        self.window = max(1, window)
        let threads = max(1, min(source.connections, tasks.count))
        runningThreads = threads
        for _ in 0..<threads {
            let thread = Thread { [self] in download(source) }
            thread.name = "segment-download"
            thread.start()
        }
    }

    /// The bytes of `tasks[position]`, waiting for its download; call `release()` when it is scanned.
    func take(_ position: Int) throws(AggregationError) -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while fetched[position] == nil && failure == nil { condition.wait() }
        if let bytes = fetched.removeValue(forKey: position) { return bytes }
        throw failure!
    }

    /// One taken segment is scanned: its slot goes to the next download.
    func release() {
        condition.lock()
        slotsHeld -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the downloads and waits for their threads (a failed day must not leave them running).
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while runningThreads > 0 { condition.wait() }
        condition.unlock()
    }

    private func download(_ source: any SegmentSource) {
        defer {
            condition.lock()
            runningThreads -= 1
            condition.broadcast()
            condition.unlock()
        }
        let fetcher: any SegmentFetcher
        do { fetcher = try source.makeFetcher() } catch {
            fail(error)
            return
        }
        while true {
            condition.lock()
            while !stopped && failure == nil && nextToClaim < tasks.count && slotsHeld >= window { condition.wait() }
            guard !stopped, failure == nil, nextToClaim < tasks.count else {
                condition.unlock()
                return
            }
            let position = nextToClaim
            nextToClaim += 1
            slotsHeld += 1
            condition.unlock()
            do {
                let bytes = try fetcher.fetch(tasks[position].name, size: tasks[position].size)
                condition.lock()
                fetched[position] = bytes
                condition.broadcast()
                condition.unlock()
            } catch {
                fail(error)
                return
            }
        }
    }

    private func fail(_ error: AggregationError) {
        condition.lock()
        if failure == nil { failure = error }
        condition.broadcast()
        condition.unlock()
    }
}
