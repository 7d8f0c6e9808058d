package import Dispatch

/// A part of `postback serve` with a lifecycle, in the shape of hummingbird's services: its own
/// module's `start` makes and starts it (reading its own settings), the receiver renders its metrics
/// on every scrape of `/metrics`, and a `ServiceGroup` drains and stops it in the group's order.
package protocol Service: AnyObject, Sendable {
    /// Takes no more work in and finishes what it holds until `deadline` (what is left stays for the
    /// next start, and the service says so in its log).
    func drain(until deadline: DispatchTime)
    /// Stops its threads and releases what it holds; after `drain`.
    func stop()
    /// Its metric families as Prometheus text ("" for none).
    func renderMetrics() -> String
}

/// The services of one process and the order they stop in: stage after stage, the services of a
/// stage drain together until the stage's deadline (none drains when it has no time), then stop in
/// the order given. `serve`: the receiver first, so nothing more is stored, then shipping and
/// forwarding, which deliver what the receiver's shutdown sealed.
package final class ServiceGroup: Sendable {
    package struct Stage: Sendable {
        package let services: [any Service]
        /// How long the stage's services may drain, from the moment the stage begins.
        package let seconds: Double
        /// Called before the stage drains (to log it), not when it has no time to.
        package let beforeDraining: @Sendable () -> Void

        package init(_ services: [any Service], seconds: Double, beforeDraining: @escaping @Sendable () -> Void = {}) {
            self.services = services
            self.seconds = seconds
            self.beforeDraining = beforeDraining
        }
    }

    private let stages: [Stage]

    package init(_ stages: [Stage]) { self.stages = stages.filter { !$0.services.isEmpty } }

    /// Drains and stops every stage in order.
    package func shutdown() {
        for stage in stages {
            if stage.seconds > 0 {
                stage.beforeDraining()
                let deadline = DispatchTime.now() + stage.seconds
                let services = stage.services
                DispatchQueue.concurrentPerform(iterations: services.count) { services[$0].drain(until: deadline) }
            }
            for service in stage.services { service.stop() }
        }
    }
}
