import Dispatch
import Foundation

/// Work in progress that shutdown waits for: a count, and a thread that can sleep until it drops to
/// zero, woken by the last `leave` (a condition variable, not a polling loop). Once `close`d, no
/// new work is let in (`enterIfOpen` says false), while what is already in may finish.
final class InProgress: @unchecked Sendable {
    // @unchecked Sendable: `count` and `closed` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var count = 0
    private var closed = false

    /// Counts one more piece of work, whether or not closed.
    func enter() {
        condition.lock()
        count += 1
        condition.unlock()
    }

    /// Counts one more piece of work unless closed; false when closed (the work must not start).
    func enterIfOpen() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        count += 1
        return true
    }

    func leave() {
        condition.lock()
        count -= 1
        if count == 0 { condition.broadcast() }
        condition.unlock()
    }

    var isOpen: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !closed
    }

    /// From now on `enterIfOpen` refuses.
    func close() {
        condition.lock()
        closed = true
        condition.unlock()
    }

    /// Sleeps until nothing is in progress or `deadline` passed; true when nothing is.
    func waitUntilNone(deadline: DispatchTime) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while count > 0 {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline.uptimeNanoseconds,
                condition.wait(until: Date(timeIntervalSinceNow: Double(deadline.uptimeNanoseconds - now) / 1e9))
            else { break }
        }
        return count == 0
    }
}
