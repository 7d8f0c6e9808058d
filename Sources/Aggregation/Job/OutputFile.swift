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

    package init(path: String) throws(AggregationError) {
        self.path = path
        fd = try FileIO.create(path)
        pending.reserveCapacity(1 << 20)
    }

    deinit { Glibc.close(fd) }

    package func append(_ bytes: [UInt8]) throws(AggregationError) {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 20 { try flush() }
    }

    package func flush() throws(AggregationError) {
        try pending.withBytes { (bytes) throws(AggregationError) in try FileIO.writeAll(bytes, to: fd, path: path) }
        bytesWritten += pending.count
        pending.removeAll(keepingCapacity: true)
    }

    package func close() throws(AggregationError) { try flush() }
}
