import Basics
import Dispatch
import Locking
import PostbackCLI
import Testing

/// `serve`'s shutdown order: stage after stage; a stage's services drain together until one
/// deadline, then stop in the order given; a stage without time only stops.
@Suite struct ServiceGroupTests {
    final class Recording: Service {
        let name: String
        let events: Locked<[String]>
        let deadlines: Locked<[String: DispatchTime]>
        /// Drains until its deadline instead of at once (a destination that is down).
        let drainsUntilDeadline: Bool

        init(_ name: String, events: Locked<[String]>, deadlines: Locked<[String: DispatchTime]>, slow: Bool = false) {
            self.name = name
            self.events = events
            self.deadlines = deadlines
            self.drainsUntilDeadline = slow
        }

        func drain(until deadline: DispatchTime) {
            events.withLock { $0.append("drain \(name)") }
            deadlines.withLock { $0[name] = deadline }
            if drainsUntilDeadline { _ = DispatchSemaphore(value: 0).wait(timeout: deadline) }
            events.withLock { $0.append("drained \(name)") }
        }

        func stop() { events.withLock { $0.append("stop \(name)") } }

        func renderMetrics() -> String { "" }
    }

    @Test func stagesDrainTogetherThenStopInOrder() {
        let events = Locked<[String]>([])
        let deadlines = Locked<[String: DispatchTime]>([:])
        let announced = Locked(0)
        func service(_ name: String, slow: Bool = false) -> Recording {
            Recording(name, events: events, deadlines: deadlines, slow: slow)
        }
        let group = ServiceGroup([
            .init([service("receiver")], seconds: 5),
            .init([service("shipping", slow: true), service("forwarding")], seconds: 0.2) { announced.withLock { $0 += 1 } },
            .init([service("signing")], seconds: 0),
        ])
        let started = DispatchTime.now()
        group.shutdown()
        let all = events.withLock { $0 }
        #expect(Array(all.prefix(3)) == ["drain receiver", "drained receiver", "stop receiver"])
        #expect(Array(all.suffix(3)) == ["stop shipping", "stop forwarding", "stop signing"], "\(all)")
        // Both drained before either stopped, and the fast one did not wait for the slow one.
        let delivery = Array(all[3..<7])
        #expect(Set(delivery) == ["drain shipping", "drained shipping", "drain forwarding", "drained forwarding"])
        #expect(delivery.firstIndex(of: "drained forwarding")! < delivery.firstIndex(of: "drained shipping")!)
        #expect(!all.contains("drain signing"), "a stage without time only stops")
        #expect(announced.withLock { $0 } == 1)
        let (shipping, forwarding) = deadlines.withLock { ($0["shipping"]!, $0["forwarding"]!) }
        #expect(shipping == forwarding, "one deadline for the stage")
        #expect(shipping.uptimeNanoseconds - started.uptimeNanoseconds >= 200_000_000)
        #expect(shipping.uptimeNanoseconds - started.uptimeNanoseconds < 2_000_000_000)
    }
}
