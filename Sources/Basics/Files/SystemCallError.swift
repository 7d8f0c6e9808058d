#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call: the operation, the path it was made on, and `errno`. Every module reports
/// system failures in this one shape, so messages read alike and callers branch on `errorNumber`.
/// A file the program refuses after the calls succeeded (a directory where a file was asked for, a
/// file over its size limit, text that is not UTF-8) takes the same shape with the `errno` that names
/// it (`EISDIR`, `EFBIG`, `EILSEQ`) and its own words in `detail`.
package struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    package let operation: String
    package let path: String
    package let errorNumber: Int32
    /// The program's own words for a refusal, said instead of the operation and `strerror`.
    package let detail: String?

    package init(operation: String, path: String, errorNumber: Int32, detail: String? = nil) {
        self.operation = operation
        self.path = path
        self.errorNumber = errorNumber
        self.detail = detail
    }

    /// "PATH: OPERATION failed: REASON", and what to do about it where the error number says.
    package var description: String { "\(path): \(reason)" }

    /// The message without the path, for errors that put the path in front themselves.
    package var message: String { reason }

    /// The message without the path: `detail`, or the operation, `strerror` and a remedy.
    package var reason: String {
        if let detail { return detail }
        return "\(operation) failed: \(String(cString: strerror(errorNumber)))" + (remedy.map { " (\($0))" } ?? "")
    }

    /// What the user can do, for the failures whose cause is outside the program.
    package var remedy: String? {
        switch errorNumber {
        case ENOSPC, EDQUOT: return "free space on that file system, or point the path elsewhere"
        case EACCES, EPERM: return "check that this user may use that path"
        case EROFS: return "that file system is mounted read-only"
        case EMFILE, ENFILE: return "raise the open-file limit (ulimit -n, or LimitNOFILE= in the service unit)"
        default: return nil
        }
    }
}

/// read(2), pread(2) and write(2) with EINTR retried and short writes completed: the one place
/// those loops live.
package enum FileDescriptorIO {
    /// One read into `buffer`, at `offset` when given (pread): the byte count, 0 at end of file.
    package static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int? = nil,
        path: String
    ) throws(SystemCallError) -> Int {
        while true {
            let got =
                offset.map { pread(fd, buffer.baseAddress, buffer.count, off_t($0)) }
                ?? Glibc.read(fd, buffer.baseAddress, buffer.count)
            if got >= 0 { return got }
            if errno != EINTR { throw SystemCallError(operation: "read", path: path, errorNumber: errno) }
        }
    }

    /// Fills all of `buffer`, from `offset` when given; end of file first is EIO (the file is shorter
    /// than its caller knows it to be).
    package static func readFully(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int? = nil,
        path: String
    ) throws(SystemCallError) {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            let got = try read(fd, into: rest, at: offset.map { $0 + done }, path: path)
            if got == 0 { throw SystemCallError(operation: "read", path: path, errorNumber: EIO) }
            done += got
        }
    }

    /// One read into `buffer` from index `start` on, at `offset` when given (pread): the byte count, 0 at
    /// end of file.
    package static func read(
        _ fd: Int32, into buffer: inout [UInt8], from start: Int = 0, at offset: Int? = nil,
        path: String
    ) throws(SystemCallError) -> Int {
        // `withUnsafeMutableBytes` rethrows as `any Error`; a Result keeps the error typed.
        var outcome: Result<Int, SystemCallError>!
        buffer.withUnsafeMutableBytes { bytes in
            outcome = Result { () throws(SystemCallError) -> Int in
                try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: bytes[start...]), at: offset, path: path)
            }
        }
        return try outcome.get()
    }

    /// Calls `body` with each chunk read from `fd`'s current offset to the end of the file.
    package static func forEachChunk(
        of fd: Int32, path: String, chunkSize: Int = 1 << 20,
        _ body: (UnsafeRawBufferPointer) throws(SystemCallError) -> Void
    ) throws(SystemCallError) {
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let got = try read(fd, into: &chunk, path: path)
            if got == 0 { return }
            try chunk.withBytes { (bytes) throws(SystemCallError) in try body(UnsafeRawBufferPointer(rebasing: bytes[..<got])) }
        }
    }

    /// Opens `path` and calls `body` with each chunk of it, start to end.
    package static func forEachChunk(
        ofFile path: String, _ body: (UnsafeRawBufferPointer) throws(SystemCallError) -> Void
    ) throws(SystemCallError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
        defer { close(fd) }
        try forEachChunk(of: fd, path: path, body)
    }

    /// Creates (or truncates) a work file readable by its owner only; the descriptor is the caller's to close.
    package static func create(_ path: String) throws(SystemCallError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCallError(operation: "create", path: path, errorNumber: errno) }
        return fd
    }

    /// Writes all of `bytes`.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemCallError(operation: "write", path: path, errorNumber: errno)
            }
            offset += written
        }
    }

    package static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(SystemCallError) {
        var outcome: Result<Void, SystemCallError>!
        bytes.withUnsafeBytes { buffer in
            outcome = Result { () throws(SystemCallError) in try writeAll(buffer, to: fd, path: path) }
        }
        try outcome.get()
    }
}
