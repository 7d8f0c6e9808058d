package import Basics
import Dispatch
import Foundation

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
                together(services.count) { services[$0].drain(until: deadline) }
            }
            for service in stage.services { service.stop() }
        }
    }
}

/// Runs `body(0)` … `body(count - 1)` each on a thread of its own and returns when all have: unlike
/// `DispatchQueue.concurrentPerform`, which on a busy host may run them one after another, each
/// waits for its own deadline at the same time as the others.
func together(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            body(index)
            done.leave()
        }.start()
    }
    done.wait()
}
