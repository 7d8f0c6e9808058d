#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DATA/agg/.lock`, so two aggregation runs never write the same
/// partitions or clear each other's work directory. Released when the object goes away (or the
/// process dies: the kernel drops flocks with the descriptor).
final class StoreLock {
    private let fd: Int32

    init(path: String) throws(AggregationError) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw .io(path: path, operation: "open lock file", errorNumber: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            close(fd)
            if number == EWOULDBLOCK { throw .locked(path: path) }
            throw .io(path: path, operation: "flock", errorNumber: number)
        }
    }

    deinit { close(fd) }
}
