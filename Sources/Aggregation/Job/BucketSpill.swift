import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// The dedup entries of one worker, partitioned by the top bits of the key hash into bucket files,
/// so that all copies of a key meet in one bucket and a bucket fits in memory whatever the day's size.
final class BucketSpill {
    static let bufferEntries = 4096

    let directory: String
    let worker: Int
    let bucketCount: Int
    private let shift: UInt64
    /// `bucketCount` buffers of `bufferEntries` entries, and their fill counts (manually managed:
    /// this is on the per-postback path).
    private let storage: UnsafeMutablePointer<DedupEntry>
    private let counts: UnsafeMutablePointer<Int>
    private let descriptors: UnsafeMutablePointer<Int32>

    /// `bucketCount` must be a power of two.
    init(directory: String, worker: Int, bucketCount: Int) {
        precondition(bucketCount > 0 && bucketCount & (bucketCount - 1) == 0)
        self.directory = directory
        self.worker = worker
        self.bucketCount = bucketCount
        shift = UInt64(64 - bucketCount.trailingZeroBitCount)
        storage = .allocate(capacity: bucketCount * Self.bufferEntries)
        counts = .allocate(capacity: bucketCount)
        counts.initialize(repeating: 0, count: bucketCount)
        descriptors = .allocate(capacity: bucketCount)
        descriptors.initialize(repeating: -1, count: bucketCount)
    }

    deinit {
        for bucket in 0..<bucketCount where descriptors[bucket] >= 0 { close(descriptors[bucket]) }
        storage.deallocate()
        counts.deallocate()
        descriptors.deallocate()
    }

    func path(bucket: Int) -> String { "\(directory)/w\(worker)-b\(bucket).bin" }

    @inline(__always)
    func append(_ entry: DedupEntry) throws(AggregationError) {
        let bucket = bucketCount == 1 ? 0 : Int(entry.hashHigh >> shift)
        let filled = counts[bucket]
        storage[bucket * Self.bufferEntries + filled] = entry
        counts[bucket] = filled + 1
        if filled + 1 == Self.bufferEntries { try flush(bucket) }
    }

    /// Writes out every buffered entry and closes the files; call once, after the last append.
    func finish() throws(AggregationError) {
        for bucket in 0..<bucketCount where counts[bucket] > 0 { try flush(bucket) }
        for bucket in 0..<bucketCount where descriptors[bucket] >= 0 {
            close(descriptors[bucket])
            descriptors[bucket] = -1
        }
    }

    private func flush(_ bucket: Int) throws(AggregationError) {
        let path = path(bucket: bucket)
        if descriptors[bucket] < 0 {
            descriptors[bucket] = try AggregationError.onFailure { () throws(SystemCallError) in try FileDescriptorIO.create(path)
            }
        }
        let bytes = UnsafeRawBufferPointer(
            start: storage + bucket * Self.bufferEntries, count: counts[bucket] * MemoryLayout<DedupEntry>.stride)
        let fd = descriptors[bucket]
        try AggregationError.onFailure { () throws(SystemCallError) in try FileDescriptorIO.writeAll(bytes, to: fd, path: path) }
        counts[bucket] = 0
    }

    /// Reads back one bucket file (empty if the worker wrote nothing there).
    static func read(path: String) throws(AggregationError) -> [DedupEntry] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return [] }
            throw .system(SystemCallError(operation: "open", path: path, errorNumber: errno))
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .system(SystemCallError(operation: "stat", path: path, errorNumber: errno)) }
        let count = Int(status.st_size) / MemoryLayout<DedupEntry>.stride
        var entries = [DedupEntry](
            repeating: DedupEntry(hashHigh: 0, hashLow: 0, receivedAt: 0, order: 0, row: 0, flags: 0), count: count)
        let failure: SystemCallError? = entries.withUnsafeMutableBytes { bytes in
            do throws(SystemCallError) { try FileDescriptorIO.readFully(fd, into: bytes, path: path) } catch { return error }
            return nil
        }
        if let failure { throw .system(failure) }
        return entries
    }
}
