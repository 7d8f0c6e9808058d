#if canImport(Glibc)
    import Glibc
#endif

/// Which file is at a path, as `stat` sees it: a file replaced (renamed over) or rewritten differs in
/// one of these. What the caches of published files key their entries by.
package struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
    package let device: UInt64
    package let inode: UInt64
    package let size: Int64
    /// Modification and status-change times, in nanoseconds.
    package let modified: Int64
    package let changed: Int64

    /// Nil when there is no file at `path` (or it cannot be stat'ed).
    package init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        changed = Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
    }

    package var description: String { "\(device):\(inode):\(size):\(modified):\(changed)" }
}
