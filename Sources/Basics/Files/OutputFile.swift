#if canImport(Glibc)
    import Glibc
#endif

/// A work file appended to in large writes.
package final class OutputFile {
    let path: String
    private let fd: Int32
    private var pending: [UInt8] = []
    package private(set) var bytesWritten = 0
    package var pendingBytes: Int { pending.count }

    package init(path: String) throws(SystemCallError) {
        self.path = path
        fd = try FileDescriptorIO.create(path)
        pending.reserveCapacity(1 << 20)
    }

    deinit { Glibc.close(fd) }

    package func append(_ bytes: [UInt8]) throws(SystemCallError) {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 20 { try flush() }
    }

    package func flush() throws(SystemCallError) {
        try pending.withBytes { (bytes) throws(SystemCallError) in try FileDescriptorIO.writeAll(bytes, to: fd, path: path) }
        bytesWritten += pending.count
        pending.removeAll(keepingCapacity: true)
    }

    package func close() throws(SystemCallError) { try flush() }
}
