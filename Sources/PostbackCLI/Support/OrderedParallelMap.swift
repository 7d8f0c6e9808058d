import Dispatch
import Locking
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a transform on batches on exactly `workers` threads and hands the results to `deliver` in
/// submission order.
///
/// Each worker thread makes its own transform once (`makeTransform(worker)`), so per-thread state
/// such as a signing key and its OpenSSL contexts is never shared: two threads bumping one object's
/// reference count or one pool's lock on every record cost a measurable share of a signature.
///
/// The caller (one thread) submits batches; `submit` blocks once `maximumInFlight` batches are
/// queued, running or waiting to be delivered, so memory stays bounded however large the input is.
/// Delivery happens on worker threads, one batch at a time, in order.
final class OrderedParallelMap<Input: Sendable, Output: Sendable>: Sendable {
    private struct State {
        var queue: [(sequence: Int, input: Input)] = []
        var queueStart = 0
        var closed = false
        var nextToDeliver = 0
        var finished: [Int: Output] = [:]
    }

    private let deliver: @Sendable (Output) -> Void
    private let slots: DispatchSemaphore
    private let queued = DispatchSemaphore(value: 0)
    private let threads = Locked<[pthread_t]>([])
    private let state = Locked(State())
    private let submitted = Atomic<Int>(0)
    private let workers: Int

    /// - Parameters:
    ///   - workers: threads, each running one batch at a time (`--jobs`).
    ///   - maximumInFlight: batches submitted and not yet delivered; default twice the workers.
    ///   - makeTransform: called once on each worker thread with its number (0..<workers).
    init(
        workers: Int, maximumInFlight: Int? = nil,
        makeTransform: @escaping @Sendable (_ worker: Int) -> (Input) -> Output,
        deliver: @escaping @Sendable (Output) -> Void
    ) {
        self.workers = max(1, workers)
        self.deliver = deliver
        self.slots = DispatchSemaphore(value: max(self.workers, maximumInFlight ?? 2 * self.workers))
        for worker in 0..<self.workers {
            let thread = JoinableThread.start { [self] in
                let transform = makeTransform(worker)
                while let (sequence, input) = next() { finish(sequence, transform(input)) }
            }
            threads.withLock { $0.append(thread) }
        }
    }

    /// The same transform on every worker, for work with no per-thread state.
    convenience init(
        workers: Int, maximumInFlight: Int? = nil, transform: @escaping @Sendable (Input) -> Output,
        deliver: @escaping @Sendable (Output) -> Void
    ) {
        self.init(workers: workers, maximumInFlight: maximumInFlight, makeTransform: { _ in transform }, deliver: deliver)
    }

    func submit(_ input: Input) {
        slots.wait()
        let sequence = submitted.add(1, ordering: .relaxed).oldValue
        state.withLock { $0.queue.append((sequence, input)) }
        queued.signal()
    }

    /// Waits until every submitted batch has been delivered, then stops the workers and joins them.
    /// Call once, after the last `submit`. Joining, not just waiting for their last batch, means a
    /// worker's thread-local state (OpenSSL's per-thread random generators, the SHA-256 context) is
    /// freed before this returns, so nothing of it is still being torn down when the process exits.
    func waitUntilDone() {
        state.withLock { $0.closed = true }
        for _ in 0..<workers { queued.signal() }
        for thread in threads.withLock({ threads in
            defer { threads = [] }
            return threads
        }) { pthread_join(thread, nil) }
    }

    /// The next batch for a worker, or nil once the input is closed and drained.
    private func next() -> (Int, Input)? {
        queued.wait()
        return state.withLock { state -> (Int, Input)? in
            guard state.queueStart < state.queue.count else { return nil }
            let item = state.queue[state.queueStart]
            state.queueStart += 1
            if state.queueStart == state.queue.count {
                state.queue.removeAll(keepingCapacity: true)
                state.queueStart = 0
            }
            return item
        }
    }

    private func finish(_ sequence: Int, _ output: Output) {
        let delivered = state.withLock { state in
            state.finished[sequence] = output
            var delivered = 0
            while let ready = state.finished.removeValue(forKey: state.nextToDeliver) {
                deliver(ready)
                state.nextToDeliver += 1
                delivered += 1
            }
            return delivered
        }
        // A batch keeps its slot until it is delivered, not just computed: finished batches
        // waiting behind a slow one count against the limit too, so memory stays bounded.
        for _ in 0..<delivered { slots.signal() }
    }
}

/// A thread that `pthread_join` can wait for (Foundation's `Thread` cannot be joined).
enum JoinableThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    static func start(_ run: @escaping @Sendable () -> Void) -> pthread_t {
        let context = Unmanaged.passRetained(Body(run)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(created == 0, "pthread_create failed (\(created))")
        return thread
    }
}

/// A flag any thread may set.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
