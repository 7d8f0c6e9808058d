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
    /// Streams the segment's bytes to `receive` as they arrive.
    func fetch(_ name: String, size: Int, receive: @escaping (UnsafeRawBufferPointer) -> Void) throws(AggregationError)
}

/// One segment's bytes as they arrive: the scanner reads while the download runs.
final class SegmentStream: @unchecked Sendable {
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var headOffset = 0
    private var finished = false
    private var failure: AggregationError? = nil

    func append(_ chunk: UnsafeRawBufferPointer) {
        let copy = [UInt8](chunk)
        condition.lock()
        chunks.append(copy)
        condition.signal()
        condition.unlock()
    }

    func finish(_ error: AggregationError?) {
        condition.lock()
        finished = true
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// Copies up to `target.count` bytes into `target`, waiting for them; 0 at the end.
    func read(into target: UnsafeMutableRawBufferPointer) throws(AggregationError) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while head == chunks.count && !finished { condition.wait() }
        if head == chunks.count {
            if let failure { throw failure }
            return 0
        }
        var copied = 0
        while copied < target.count && head < chunks.count {
            let count = min(target.count - copied, chunks[head].count - headOffset)
            chunks[head].withUnsafeBytes { source in
                target.baseAddress!.advanced(by: copied).copyMemory(
                    from: source.baseAddress!.advanced(by: headOffset), byteCount: count)
            }
            copied += count
            headOffset += count
            if headOffset == chunks[head].count {
                chunks[head] = []  // read: its memory goes back now
                head += 1
                headOffset = 0
            }
        }
        return copied
    }
}

/// Downloads a day's segments on `source.connections` threads ahead of the scanners, in the order
/// the scanners take them, holding at most `window` segments (downloading, waiting or being
/// scanned) in memory: memory is bounded by `window` × the largest segment, and nothing is written
/// to disk. A scanner reads a segment while it is still downloading.
///
/// A download thread takes a slot before it claims the next segment, so the slots are always held by
/// the lowest unscanned segments and the scanner waiting for the next one can never be starved.
final class SegmentPrefetch: @unchecked Sendable {
    private let condition = NSCondition()
    private let tasks: [SegmentTask]
    private let window: Int
    private var streams: [Int: SegmentStream] = [:]
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

    /// The bytes of `tasks[position]` as they download; call `release()` when it is scanned.
    func take(_ position: Int) throws(AggregationError) -> SegmentStream {
        condition.lock()
        defer { condition.unlock() }
        while streams[position] == nil && failure == nil { condition.wait() }
        if let stream = streams.removeValue(forKey: position) { return stream }
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
            let stream = SegmentStream()
            streams[position] = stream
            condition.broadcast()
            condition.unlock()
            do {
                try fetcher.fetch(tasks[position].name, size: tasks[position].size) { stream.append($0) }
                stream.finish(nil)
            } catch {
                stream.finish(error)
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
