package import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive `flock` (`FileLock`) on `DATA/raw/_writers/<writer-id>.lock`, held while a receiver
/// writes, so two processes with the same writer id can never append to the same segments.
package final class WriterLock: Sendable {
    /// Why the lock was not taken; the server's start-up prints the description.
    package enum LockError: Error, CustomStringConvertible {
        case invalidWriterID(String)
        case heldByAnotherReceiver(writerID: String, root: String, path: String)
        case system(SystemCallError)

        package var description: String {
            switch self {
            case .invalidWriterID(let writerID): return "writer id '\(writerID)' must be 1–64 letters, digits, '.', '_' or '-'"
            case .heldByAnotherReceiver(let writerID, let root, let path):
                return "another receiver with writer id '\(writerID)' is using \(root) (\(path) is locked); "
                    + "give each receiver sharing a store its own --writer-id (writer_id in the config)"
            case .system(let error): return error.description
            }
        }
    }

    package var path: String { lock.path }
    private let lock: FileLock

    package static func path(layout: StoreLayout, writerID: String) -> String {
        "\(layout.root)/raw/_writers/\(writerID).lock"
    }

    package init(layout: StoreLayout, writerID: String) throws(LockError) {
        guard StoreLayout.isValidWriterID(writerID) else { throw .invalidWriterID(writerID) }
        let path = Self.path(layout: layout, writerID: writerID)
        do throws(SystemCallError) {
            try DurableFile.makeDirectories(String(path[..<path.lastIndex(of: "/")!]))
        } catch {
            throw .system(error)
        }
        do throws(FileLock.Failure) {
            lock = try FileLock(path: path)
        } catch {
            switch error {
            case .heldElsewhere: throw .heldByAnotherReceiver(writerID: writerID, root: layout.root, path: path)
            case .system(let failure): throw .system(failure)
            }
        }
        // For whoever looks at the file: the holder's pid.
        let note = Array("\(getpid())\n".utf8)
        _ = ftruncate(lock.descriptor, 0)
        _ = note.withUnsafeBytes { pwrite(lock.descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Unlocks (closes the file); later calls do nothing.
    package func release() { lock.release() }
}
