package import Basics
package import Dispatch
package import PostbackServer
import SpoolDelivery

/// Shipping or forwarding as a `Service`: its workers (one per destination) deliver, until the
/// deadline, what the receiver's shutdown sealed, each saying in the log whether it delivered
/// everything; `stop` stops them; its metrics are the `postback_delivery_*` (and forwarding's) families.
package final class DeliveryService: Service {
    /// Each destination's name in the log, and its worker.
    let workers: [(name: String, worker: SpoolDeliveryWorker)]
    private let log: ServerLog
    private let render: @Sendable () -> String
    private let stopping: @Sendable () -> Void

    init(
        workers: [(name: String, worker: SpoolDeliveryWorker)], log: ServerLog, render: @escaping @Sendable () -> String,
        stop: @escaping @Sendable () -> Void
    ) {
        self.workers = workers
        self.log = log
        self.render = render
        self.stopping = stop
    }

    /// Delivers what is pending at every destination at once, until `deadline`; what is left is
    /// logged and delivered at the next start.
    package func drain(until deadline: DispatchTime) {
        let now = DispatchTime.now().uptimeNanoseconds
        let seconds = deadline.uptimeNanoseconds > now ? Double(deadline.uptimeNanoseconds - now) / 1e9 : 0
        let workers = workers
        let log = log
        together(workers.count) { index in
            let (name, worker) = workers[index]
            if worker.deliverPending(within: seconds) {
                log.info("every sealed segment delivered before exit", ["destination": .string(name)])
            } else {
                let left = worker.status.pendingSegments.values.reduce(0, +)
                log.warning(
                    "segments not delivered before exit: they stay on local disk and are delivered at the next start",
                    ["destination": .string(name), "segments": .int(left), "within_seconds": .double(seconds)])
            }
        }
    }

    package func stop() { stopping() }

    package func renderMetrics() -> String { render() }
}
