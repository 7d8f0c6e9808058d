#if canImport(Glibc)
    import Glibc
#endif

/// Replacing a file so that a crash leaves either the old or the new content, never a mix, and the
/// new content survives power loss once `write` returns.
///
/// The recipe is write temp → fsync(temp) → rename → fsync(directory). Foundation's
/// `Data.write(options: .atomic)` skips the directory fsync on Linux, so the rename can be lost.
package enum DurableFile {
    package typealias WriteError = SystemCallError

    /// The mode of every data file the product writes (spool segments, seals, ledgers, aggregates,
    /// manifests, reports): its owner's only, whatever the umask.
    package static let dataFileMode: UInt32 = 0o600

    package static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = dataFileMode) throws(WriteError) {
        let staged = try StagedFile(replacing: path, mode: mode)
        try staged.append(bytes)
        try staged.commit()
    }

    /// Where `write` stages `path`: a hidden name in the same directory, so that readers listing the
    /// directory (Spark, DuckDB globs) never pick up a half-written file.
    static func temporaryPath(for path: String) -> String {
        let (directory, name) = split(path)
        return "\(directory)/.\(name).tmp-\(getpid())"
    }

    /// Removes temporary files a crashed writer of `path` left behind.
    package static func removeStaleTemporaries(for path: String) {
        let (directory, name) = split(path)
        guard let listing = opendir(directory) else { return }
        defer { closedir(listing) }
        let prefix = ".\(name).tmp-"
        while let entry = readdir(listing) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if entryName.hasPrefix(prefix) { unlink("\(directory)/\(entryName)") }
        }
    }

    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// fsyncs the directory that holds `path`, making a create or rename in it durable.
    package static func syncDirectory(containing path: String) throws(WriteError) {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        try syncDirectory(directory.isEmpty ? "/" : directory)
    }

    package static func syncDirectory(_ directory: String) throws(WriteError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw WriteError(operation: "open directory", path: directory, errorNumber: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw WriteError(operation: "fsync directory", path: directory, errorNumber: errno) }
    }

    /// Creates `directory` and any missing parents (mode 0755), and fsyncs the parent of each
    /// component, also of one that was already there: a process killed between its `mkdir` and that
    /// fsync leaves the directory in the page cache only, and its entry (with every segment later
    /// written below it) would vanish in a power cut (issue 28, `scripts/power-loss`). An fsync of a
    /// directory with nothing unsynced costs next to nothing.
    package static func makeDirectories(_ directory: String) throws(WriteError) {
        var path = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            let parent = path.isEmpty ? "/" : path
            path += "/" + component
            guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
                throw WriteError(operation: "mkdir", path: path, errorNumber: errno)
            }
            try syncDirectory(parent)
        }
    }

    /// Opens (creating it and its directories, durably) an append-only file of lines for appending,
    /// with a torn last line cut off (`cutTornLine`): the ledgers, seals and dead letters.
    package static func openLines(_ path: String) throws(WriteError) -> Int32 {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        try makeDirectories(directory)
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, mode_t(dataFileMode))
        guard fd >= 0 else { throw WriteError(operation: "open", path: path, errorNumber: errno) }
        do throws(WriteError) {
            try syncDirectory(directory)  // the file's name, if this created it
            try cutTornLine(fd, path: path)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Cuts a torn last line off an append-only file of lines (open for writing), so that the next
    /// append starts a clean line. A crash between a write and its fdatasync, or a power cut that kept
    /// part of an unsynced write, leaves one: a last line without its newline, or a complete last line
    /// with zeros where a page of it was not written (a disk keeps an unsynced write page by page, so
    /// the lost part of a line reads as NUL bytes, which no line of ours contains: JSON escapes them).
    /// Appended to, it would stay in the file as a line no reader can parse. Nothing relies on it:
    /// every writer writes a line in one call and syncs it before acting on it, so only the last line
    /// can be unsynced. Returns the number of bytes cut.
    @discardableResult
    package static func cutTornLine(_ fd: Int32, path: String) throws(WriteError) -> Int {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw WriteError(operation: "fstat", path: path, errorNumber: errno) }
        let size = Int(status.st_size)
        let end = try lineStart(before: size, in: fd, path: path).start
        // The last complete line, up to its newline at `end - 1`: cut too when a page of it was lost.
        var keep = end
        if end > 0 {
            let last = try lineStart(before: end - 1, in: fd, path: path)
            if last.holdsNUL { keep = last.start }
        }
        guard keep < size else { return 0 }
        guard ftruncate(fd, off_t(keep)) == 0, fdatasync(fd) == 0 else {
            throw WriteError(operation: "truncate a torn last line", path: path, errorNumber: errno)
        }
        return size - keep
    }

    /// Where the line holding byte `position - 1` starts (just after the last newline before
    /// `position`, 0 if none), and whether its bytes before `position` hold a NUL; read backwards a
    /// page at a time.
    private static func lineStart(before position: Int, in fd: Int32, path: String) throws(WriteError) -> (
        start: Int, holdsNUL: Bool
    ) {
        var end = position
        var holdsNUL = false
        var chunk = [UInt8](repeating: 0, count: 4096)
        while end > 0 {
            let start = max(0, end - chunk.count)
            let got = try FileDescriptorIO.read(fd, into: &chunk, at: start, path: path)
            let piece = chunk[..<min(got, end - start)]
            if let newline = piece.lastIndex(of: 0x0A) {
                return (start + newline + 1, holdsNUL || piece[(newline + 1)...].contains(0))
            }
            holdsNUL = holdsNUL || piece.contains(0)
            end = start
        }
        return (0, holdsNUL)
    }
}

/// A file replaced as `DurableFile.write` replaces it (a crash leaves the old content or the new),
/// but written in pieces, so its content never has to be in memory whole: appended to a hidden
/// temporary beside `path`, then `commit()` syncs it, renames it over `path` and syncs the directory.
/// Released without a commit, the temporary is removed and `path` is untouched.
package final class StagedFile {
    package let path: String
    private let temporary: String
    private var fd: Int32
    private var pending: [UInt8] = []
    /// Bytes appended so far.
    package private(set) var size = 0

    package init(replacing path: String, mode: UInt32 = DurableFile.dataFileMode) throws(SystemCallError) {
        self.path = path
        temporary = DurableFile.temporaryPath(for: path)
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode_t(mode))
        guard fd >= 0 else { throw SystemCallError(operation: "open", path: temporary, errorNumber: errno) }
        // The mode asked for, also over a stale temporary a crashed writer left with another.
        fchmod(fd, mode_t(mode))
    }

    deinit {
        if fd >= 0 {
            close(fd)
            unlink(temporary)
        }
    }

    package func append(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        pending.append(contentsOf: bytes)
        size += bytes.count
        if pending.count >= 1 << 20 { try flush() }
    }

    package func append(_ bytes: [UInt8]) throws(SystemCallError) {
        if pending.isEmpty, bytes.count >= 1 << 20 {
            size += bytes.count
            try FileDescriptorIO.writeAll(bytes, to: fd, path: temporary)
            return
        }
        pending.append(contentsOf: bytes)
        size += bytes.count
        if pending.count >= 1 << 20 { try flush() }
    }

    private func flush() throws(SystemCallError) {
        try FileDescriptorIO.writeAll(pending, to: fd, path: temporary)
        pending.removeAll(keepingCapacity: true)
    }

    /// Syncs the content and puts it at `path`, durably.
    package func commit() throws(SystemCallError) {
        try flush()
        guard fsync(fd) == 0 else { throw SystemCallError(operation: "fsync", path: temporary, errorNumber: errno) }
        close(fd)
        fd = -1
        guard rename(temporary, path) == 0 else {
            let number = errno
            unlink(temporary)
            throw SystemCallError(operation: "rename", path: path, errorNumber: number)
        }
        try DurableFile.syncDirectory(containing: path)
    }
}
