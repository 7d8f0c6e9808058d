package import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// A failed storage call: which operation, on which path, and the errno.
package typealias StorageError = SystemCallError

/// The file operations the spool writer makes, behind a protocol so tests can inject faults
/// (a failing write or fdatasync, a full disk) deterministically, also when they run as root.
package protocol SpoolStorage: Sendable {
    /// Creates `directory` and missing parents, making each creation durable.
    func makeDirectories(_ directory: String) throws(StorageError)
    /// Creates a new, empty segment file (never an existing one) and returns its descriptor.
    func createSegment(_ path: String) throws(StorageError) -> Int32
    /// Appends all of `bytes`.
    func append(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StorageError)
    /// fdatasync.
    func sync(_ descriptor: Int32, path: String) throws(StorageError)
    /// fsync of a directory, after a file was created in it.
    func syncDirectory(_ directory: String) throws(StorageError)
    /// Cuts a segment back to `length` (best effort: used to drop bytes whose sync failed).
    func truncate(_ descriptor: Int32, to length: Int)
    func close(_ descriptor: Int32)
    /// Writes, syncs and removes a small file in `directory`: succeeds only when storage takes writes again.
    func probe(_ directory: String) throws(StorageError)
}

/// The real thing: POSIX calls on the local file system.
package struct POSIXSpoolStorage: SpoolStorage {
    package init() {}

    package func makeDirectories(_ directory: String) throws(StorageError) {
        try DurableFile.makeDirectories(directory)
    }

    package func createSegment(_ path: String) throws(StorageError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, mode_t(DurableFile.dataFileMode))
        guard fd >= 0 else { throw StorageError(operation: "create", path: path, errorNumber: errno) }
        return fd
    }

    package func append(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StorageError) {
        try FileDescriptorIO.writeAll(bytes, to: descriptor, path: path)
    }

    package func sync(_ descriptor: Int32, path: String) throws(StorageError) {
        guard fdatasync(descriptor) == 0 else { throw StorageError(operation: "fdatasync", path: path, errorNumber: errno) }
    }

    package func syncDirectory(_ directory: String) throws(StorageError) {
        try DurableFile.syncDirectory(directory)
    }

    package func truncate(_ descriptor: Int32, to length: Int) {
        _ = ftruncate(descriptor, off_t(length))
    }

    package func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    package func probe(_ directory: String) throws(StorageError) {
        try makeDirectories(directory)
        let path = "\(directory)/.probe-\(getpid())"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StorageError(operation: "create", path: path, errorNumber: errno) }
        defer {
            Glibc.close(fd)
            unlink(path)
        }
        // A few KiB, so a full disk shows up here rather than on the next real append.
        try append([UInt8](repeating: 0x0A, count: 4096), to: fd, path: path)
        try sync(fd, path: path)
    }
}
