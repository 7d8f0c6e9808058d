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
