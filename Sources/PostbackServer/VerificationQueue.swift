import Foundation

/// Postbacks whose body is in, waiting for their signature check, and the threads that check them
/// (the receiver's one threading mode).
///
/// An HTTP thread suspends the postback's connection and queues it here. A verifying thread takes
/// the postbacks waiting at that moment and checks them together (`PostbackIngest.ingest(_:)`), so
/// their P-256 signatures share one modular inversion: s⁻¹ mod n is about 40% of a signature check
/// done alone. No thread ever waits for a batch to fill: a lone postback is taken at once and
/// checked alone. Batches form only when postbacks arrive faster than they are checked, that is
/// under load, where the saving is worth having.
final class VerificationQueue: @unchecked Sendable {
    // @unchecked Sendable: `pending`, `idle` and `stopping` are only touched with `condition` locked.
    /// A postback and where its answer goes (`PostbackIngest.ingest(_:)` takes whole batches of them).
    typealias Job = PostbackIngest.Job

    /// At most this many postbacks in one batch: beyond it the shared inversion saves next to
    /// nothing more, and the first postbacks' replies would wait for the whole batch's checks.
    static let maximumBatch = 32

    private let condition = NSCondition()
    private var pending: [Job] = []
    /// Verifying threads asleep on `condition`.
    private var idle = 0
    private var stopping = false
    private let finished = DispatchGroup()
    private let consumer: any Consumer

    /// What a verifying thread hands each batch to: `PostbackIngest` (the tests' recorders too).
    protocol Consumer: AnyObject, Sendable {
        func ingest(_ jobs: [Job])
    }

    /// Starts `threads` verifying threads; `consumer` gets each batch, in arrival order.
    init(threads: Int, consumer: any Consumer) {
        self.consumer = consumer
        for index in 0..<max(1, threads) {
            finished.enter()
            let thread = Thread { [self] in
                run()
                finished.leave()
            }
            thread.name = "verify-\(index)"
            thread.start()
        }
    }

    func submit(_ job: Job) {
        condition.lock()
        pending.append(job)
        if idle > 0 { condition.signal() }
        condition.unlock()
    }

    /// Lets the threads check what is still queued, then ends them. Returns when they have ended.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        finished.wait()
    }

    private func run() {
        while let batch = nextBatch() { consumer.ingest(batch) }
    }

    /// The next batch, or nil once stopping with nothing left. Leaves a share of the queue for each
    /// thread that is idle, so a burst is checked on every core, not all on the thread that woke first.
    private func nextBatch() -> [Job]? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty {
            if stopping { return nil }
            idle += 1
            condition.wait()
            idle -= 1
        }
        let share = (pending.count + idle) / (idle + 1)
        let count = min(share, Self.maximumBatch)
        let batch: [Job]
        if count == pending.count {
            // The whole queue (the usual case): handed over as it is, without copying it.
            batch = pending
            pending = []
        } else {
            batch = Array(pending.prefix(count))
            pending.removeFirst(count)
        }
        // More left than this thread takes: wake another thread for them.
        if !pending.isEmpty, idle > 0 { condition.signal() }
        return batch
    }
}
