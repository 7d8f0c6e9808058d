import Dispatch
import Locking
import Synchronization

/// Runs `transform` on batches on all cores and hands the results to `deliver` in submission order.
///
/// The caller (one thread) submits batches; `submit` blocks once `maximumInFlight` batches are
/// queued, running or waiting to be delivered, so memory stays bounded however large the input is. Delivery happens on worker
/// threads, one batch at a time, in order.
final class OrderedParallelMap<Input: Sendable, Output: Sendable>: Sendable {
    private struct State {
        var nextToDeliver = 0
        var finished: [Int: Output] = [:]
    }

    private let transform: @Sendable (Input) -> Output
    private let deliver: @Sendable (Output) -> Void
    private let slots: DispatchSemaphore
    private let group = DispatchGroup()
    private let state = Locked(State())
    private let submitted = Atomic<Int>(0)
    private let queue = DispatchQueue.global(qos: .userInitiated)

    init(maximumInFlight: Int, transform: @escaping @Sendable (Input) -> Output, deliver: @escaping @Sendable (Output) -> Void) {
        self.transform = transform
        self.deliver = deliver
        self.slots = DispatchSemaphore(value: maximumInFlight)
    }

    func submit(_ input: Input) {
        slots.wait()
        let sequence = submitted.add(1, ordering: .relaxed).oldValue
        group.enter()
        queue.async { [self] in
            let output = transform(input)
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
            group.leave()
        }
    }

    /// Waits until every submitted batch has been delivered.
    func waitUntilDone() { group.wait() }
}

/// A flag any thread may set.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
