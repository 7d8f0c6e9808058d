#if canImport(Glibc)
import Glibc
#endif

/// The few raw file operations the job needs, with EINTR and short reads and writes handled once.
enum FileIO {
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String) throws(AggregationError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "write", errorNumber: errno)
            }
            offset += written
        }
    }

    /// Reads `path` from start to end in chunks of up to 1 MiB.
    static func forEachChunk(of path: String, _ body: (UnsafeRawBufferPointer) throws(AggregationError) -> Void) throws(AggregationError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errorNumber: errno) }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", errorNumber: errno)
            }
            if got == 0 { return }
            try chunk.withBytes { (bytes) throws(AggregationError) in try body(UnsafeRawBufferPointer(rebasing: bytes[0..<got])) }
        }
    }

    static func create(_ path: String) throws(AggregationError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: path, operation: "create", errorNumber: errno) }
        return fd
    }
}
