import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive, non-blocking `flock` on a file. The lock belongs to the open file description: it
/// is released by `release()`, by `deinit`, or when the process dies (also on `kill -9`), so a
/// crashed holder never leaves a stale lock behind.
package final class FileLock: Sendable {
    package let path: String
    package let descriptor: Int32
    private let released = Atomic<Bool>(false)

    /// Nil when another open file description holds the lock (another process, or another lock here):
    /// an outcome the caller names, not a failure.
    package init?(path: String) throws(SystemCallError) {
        self.path = path
        // Opened and locked into a local first: once `descriptor` is set, a throw would run `deinit`,
        // which would close the number a second time, maybe another thread's file or socket by then.
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode_t(DurableFile.dataFileMode))
        guard opened >= 0 else { throw SystemCallError(operation: "open lock file", path: path, errorNumber: errno) }
        guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            Glibc.close(opened)
            if number == EWOULDBLOCK { return nil }
            throw SystemCallError(operation: "flock", path: path, errorNumber: number)
        }
        descriptor = opened
    }

    /// Unlocks (closes the file); later calls do nothing.
    package func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(descriptor)
    }

    deinit { release() }
}
