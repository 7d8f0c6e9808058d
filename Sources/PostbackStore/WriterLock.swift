package import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive `flock` (`FileLock`) on `DATA/raw/_writers/<writer-id>.lock`, held while a receiver
/// writes, so two processes with the same writer id can never append to the same segments.
package final class WriterLock: Sendable {
    package var path: String { lock.path }
    private let lock: FileLock

    package static func path(layout: StoreLayout, writerID: String) -> String {
        "\(layout.root)/raw/_writers/\(writerID).lock"
    }

    /// - Throws: `StoreError` (`invalidWriterID`, `writerIDInUse`), or the `SystemCallError` of the lock file.
    package init(layout: StoreLayout, writerID: String) throws {
        guard StoreLayout.isValidWriterID(writerID) else { throw StoreError.invalidWriterID(writerID) }
        let path = Self.path(layout: layout, writerID: writerID)
        try DurableFile.makeDirectories(String(path[..<path.lastIndex(of: "/")!]))
        guard let lock = try FileLock(path: path) else {
            throw StoreError.writerIDInUse(writerID, root: layout.root, lockFile: path)
        }
        self.lock = lock
        // For whoever looks at the file: the holder's pid.
        let note = Array("\(getpid())\n".utf8)
        _ = ftruncate(lock.descriptor, 0)
        _ = note.withUnsafeBytes { pwrite(lock.descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Unlocks (closes the file); later calls do nothing.
    package func release() { lock.release() }
}
