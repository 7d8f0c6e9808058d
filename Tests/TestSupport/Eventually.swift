import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Polls `condition` until it holds or `seconds` pass: for what a server does on its own time
/// (a watchdog pass, a delivery), so a loaded host (sanitizers, CI) waits longer instead of failing.
package func eventually(_ seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}

/// Polls `condition` for as long as `progress` keeps growing, failing only after `stall` seconds
/// without growth: for work whose length scales with the host (a sanitizer build parses 100,000
/// lines many times slower than a release one), where any fixed deadline is either too short there
/// or too long to notice a stuck loader here.
package func eventually(
    stallingAfter stall: Double = 20, progress: () throws -> Double, _ condition: () throws -> Bool
) rethrows -> Bool {
    var best = try progress()
    var deadline = Date().addingTimeInterval(stall)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
        let now = try progress()
        if now > best {
            best = now
            deadline = Date().addingTimeInterval(stall)
        }
    }
    return try condition()
}
