import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// The distinct dedup-key hashes of one day, sorted, 16 bytes each: how a later day's run learns
/// which postbacks were already received on an earlier day (its lookback) without keeping them in
/// memory. A bucket reads only the hash range it owns, found by binary search.
final class KeyFile {
    static let recordBytes = 16

    let path: String
    private let fd: Int32
    let count: Int

    init(path: String) throws(AggregationError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system(SystemCallError(operation: "open", path: path, errorNumber: errno)) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let number = errno
            close(fd)
            throw .system(SystemCallError(operation: "stat", path: path, errorNumber: number))
        }
        count = Int(status.st_size) / Self.recordBytes
    }

    deinit { close(fd) }

    /// The hashes whose high word lies in `range`, in order.
    func hashes(highIn range: ClosedRange<UInt64>) throws(AggregationError) -> [Hash128] {
        let first = try lowerBound(range.lowerBound)
        let last = range.upperBound == UInt64.max ? count : try lowerBound(range.upperBound + 1)
        guard last > first else { return [] }
        var words = [UInt64](repeating: 0, count: (last - first) * 2)
        try words.withMutableBytes { (bytes) throws(AggregationError) in try readFully(into: bytes, at: first * Self.recordBytes)
        }
        return (0..<(last - first)).map { Hash128(high: words[2 * $0], low: words[2 * $0 + 1]) }
    }

    /// Index of the first record whose high word is at least `high`.
    private func lowerBound(_ high: UInt64) throws(AggregationError) -> Int {
        var low = 0
        var upper = count
        while low < upper {
            let middle = (low + upper) / 2
            var word: UInt64 = 0
            try withMutableBytes(of: &word) { (bytes) throws(AggregationError) in
                try readFully(into: bytes, at: middle * Self.recordBytes)
            }
            if word < high { low = middle + 1 } else { upper = middle }
        }
        return low
    }

    private func readFully(into bytes: UnsafeMutableRawBufferPointer, at offset: Int) throws(AggregationError) {
        try AggregationError.onFailure { () throws(SystemCallError) in
            try FileDescriptorIO.readFully(fd, into: bytes, at: offset, path: path)
        }
    }

    /// Appends sorted hashes to an open file descriptor.
    static func write(_ hashes: [Hash128], to fd: Int32, path: String) throws(AggregationError) {
        var words: [UInt64] = []
        words.reserveCapacity(hashes.count * 2)
        for hash in hashes {
            words.append(hash.high)
            words.append(hash.low)
        }
        try AggregationError.onFailure { () throws(SystemCallError) in
            try words.withBytes { (bytes) throws(SystemCallError) in try FileDescriptorIO.writeAll(bytes, to: fd, path: path) }
        }
    }
}
