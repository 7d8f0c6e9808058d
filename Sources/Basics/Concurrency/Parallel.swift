import Dispatch
import Locking
import Synchronization

/// Runs numbered tasks on a fixed number of worker threads, each worker pulling the next task
/// number until none are left. `body` gets (worker, task); a worker's state may be indexed by the
/// worker number without locking because one worker runs one task at a time. The first error stops
/// the remaining tasks and is rethrown.
package enum Parallel {
    package static func run<Failure: Error>(
        workers: Int, tasks: Int, _ body: (_ worker: Int, _ task: Int) throws(Failure) -> Void
    ) throws(Failure) {
        guard tasks > 0 else { return }
        let next = Atomic<Int>(0)
        let failure = Locked<Failure?>(nil)
        let workerCount = max(1, min(workers, tasks))
        withoutActuallyEscaping(body) { body in
            let shared = UncheckedBox(body)
            DispatchQueue.concurrentPerform(iterations: workerCount) { worker in
                while failure.withLock({ $0 == nil }) {
                    let task = next.add(1, ordering: .relaxed).oldValue
                    guard task < tasks else { return }
                    do throws(Failure) {
                        try shared.value(worker, task)
                    } catch {
                        let caught = UncheckedBox(error)
                        failure.withLock { if $0 == nil { $0 = caught.value } }
                    }
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }
}

/// Carries a value into other threads. Safe where used: `Parallel.run` hands each worker its own
/// slots of the state the closure touches (indexed by worker number) and joins all workers before
/// returning, and a day's table handed to a background writer is no longer touched by the caller.
package struct UncheckedBox<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// A place for one parallel task's result (one object per task, so tasks never write the same
/// variable).
package final class ResultSlot<Value>: @unchecked Sendable {
    package var value: Value?
    package init() {}
}
