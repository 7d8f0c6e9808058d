import Basics
import Foundation
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (SIGINT) or SIGTERM during `postback aggregate`: says which days were published and which
/// were not, removes the job's work files, and exits 130 (143 for SIGTERM). Each day is published
/// whole or not at all (tables, then the manifest, each renamed into place), so the days not
/// published keep what they had before; rerunning them is all that is needed.
final class AggregateInterrupt: Sendable {
    /// Takes SIGINT and SIGTERM for the rest of the process: blocked here, before the job starts any
    /// thread (they inherit the mask), and waited for on a thread of its own. A day counts as
    /// published by this run when its manifest was renamed into place since the run started (the
    /// job publishes a day before it says so, so the files are what is asked).
    init(days: [UTCDay], store: String, io: CommandIO) {
        let layout = StoreLayout(root: store)
        let workDirectory = store + "/agg/_work"
        var started = timespec()
        clock_gettime(CLOCK_REALTIME, &started)
        let since = started
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let waitedFor = signals
        let thread = Thread {
            var set = waitedFor
            var received: Int32 = 0
            sigwait(&set, &received)
            let done = Set(days.filter { Self.modified(layout.manifest(day: $0), since: since) })
            let missing = days.filter { !done.contains($0) }
            io.printError(
                "postback aggregate: interrupted (\(received == SIGINT ? "SIGINT" : "SIGTERM")): "
                    + (done.isEmpty ? "no day was published" : "published \(Self.list(days.filter(done.contains)))")
                    + (missing.isEmpty
                        ? "" : "; not published: \(Self.list(missing)) (they keep what was published before; run them again)"))
            try? FileManager.default.removeItem(atPath: workDirectory)
            _exit(received == SIGINT ? 130 : 143)
        }
        thread.name = "aggregate-interrupt"
        thread.start()
    }

    /// True when `path` exists and was last changed at or after `since`.
    private static func modified(_ path: String, since: timespec) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        let changed = status.st_mtim
        return (changed.tv_sec, changed.tv_nsec) >= (since.tv_sec, since.tv_nsec)
    }

    private static func list(_ days: [UTCDay]) -> String {
        days.count > 6
            ? "\(days[0]) … \(days[days.count - 1]) (\(days.count) days)" : days.map(\.description).joined(separator: ", ")
    }
}
