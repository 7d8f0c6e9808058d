import Postbacks
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DATA/raw/_writers/<writer-id>.lock`, held while a receiver writes, so two
/// processes with the same writer id can never append to the same segments.
///
/// The lock belongs to the open file description: it is released by `release()`, by `deinit`, or
/// when the process dies (also on `kill -9`), so a crashed writer never leaves a stale lock behind.
public final class WriterLock: Sendable {
    public struct LockError: Error, CustomStringConvertible {
        public let description: String
    }

    public let path: String
    private let fd: Int32
    private let released = Atomic<Bool>(false)

    public static func path(layout: StoreLayout, writerID: String) -> String {
        "\(layout.root)/raw/_writers/\(writerID).lock"
    }

    public init(layout: StoreLayout, writerID: String) throws(LockError) {
        guard StoreLayout.isValidWriterID(writerID) else {
            throw LockError(description: "writer id '\(writerID)' must be 1–64 letters, digits, '.', '_' or '-'")
        }
        path = Self.path(layout: layout, writerID: writerID)
        let directory = String(path[..<path.lastIndex(of: "/")!])
        do {
            try DurableFile.makeDirectories(directory)
        } catch {
            throw LockError(description: "cannot create \(directory): \(error)")
        }
        // Opened and locked into a local first: once `fd` is set, a throw would run `deinit`, which
        // closes it a second time, maybe another thread's file or socket by then.
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw LockError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            Glibc.close(descriptor)
            if number == EWOULDBLOCK {
                throw LockError(description: "another receiver with writer id '\(writerID)' is using \(layout.root) (\(path) is locked); "
                    + "give each receiver sharing a store its own --writer-id (writer_id in the config)")
            }
            throw LockError(description: "cannot lock \(path): \(String(cString: strerror(number)))")
        }
        fd = descriptor
        // For whoever looks at the file: the holder's pid.
        let note = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = note.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    /// Unlocks (closes the file); later calls do nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(fd)
    }

    deinit { release() }
}
