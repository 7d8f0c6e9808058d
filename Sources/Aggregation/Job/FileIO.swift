import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// The few raw file operations the job needs, with the job's error type.
enum FileIO {
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws(AggregationError) {
        do { try FileDescriptorIO.writeAll(bytes, to: fd, path: path) } catch { throw .system(error) }
    }

    /// Reads `path` from start to end in chunks of up to 1 MiB.
    static func forEachChunk(of path: String, _ body: (UnsafeRawBufferPointer) throws(AggregationError) -> Void)
        throws(AggregationError)
    {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system(SystemCallError(operation: "open", path: path, errorNumber: errno)) }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let got: Int
            do { got = try FileDescriptorIO.read(fd, into: &chunk, path: path) } catch { throw .system(error) }
            if got == 0 { return }
            try chunk.withBytes { (bytes) throws(AggregationError) in try body(UnsafeRawBufferPointer(rebasing: bytes[0..<got])) }
        }
    }

    static func create(_ path: String) throws(AggregationError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(SystemCallError(operation: "create", path: path, errorNumber: errno)) }
        return fd
    }
}
