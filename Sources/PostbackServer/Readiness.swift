import Basics
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// What `/readyz` (and the `postback_ready` gauge) says: ready when the store takes writes, it is not
/// full or read-only, and the receiver is not shutting down.
struct Readiness: Sendable {
    let store: WritableStore
    let dataDirectory: String
    let bodyLimitBytes: Int

    /// Why the receiver is not ready; none when ready. Besides the writers' health (which a failed
    /// write or sync turns off), one `statvfs` per call notices a full or read-only store while idle,
    /// before a postback fails on it, so a load balancer can move traffic away in time.
    func problems(shuttingDown: Bool) -> [String] {
        var problems: [String] = []
        if shuttingDown { problems.append("shutting down") }
        if !store.postbacks.isHealthy { problems.append("postbacks spool is not writable") }
        if !store.rejected.isHealthy { problems.append("rejected spool is not writable") }
        if !store.unverifiable.isHealthy { problems.append("unverifiable spool is not writable") }
        // Asking also makes the writer replace them at once, so the next scrape is ready again.
        for path in store.writers.flatMap({ $0.vanishedSegments() }) {
            problems.append("open segment \(path) was deleted or replaced; a new one is being started")
        }
        var info = statvfs()
        if statvfs(dataDirectory, &info) != 0 {
            problems.append(
                "data directory cannot be examined: \(SystemCallError(operation: "statvfs", path: dataDirectory, errorNumber: errno))"
            )
        } else {
            if info.f_flag & UInt(ST_RDONLY) != 0 { problems.append("data directory is on a read-only file system") }
            // Room for at least two records of the largest accepted body, plus their metadata.
            let available = UInt64(info.f_bavail) * UInt64(info.f_frsize)
            if available < UInt64(2 * bodyLimitBytes + 65_536) {
                problems.append("data directory is full (\(available) bytes available)")
            }
        }
        return problems
    }
}
