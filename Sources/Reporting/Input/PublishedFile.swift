import AggregateSchema
import Basics
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// A table file a manifest lists, read only when it is the file the manifest describes: its size
/// and SHA-256 are checked first, and the CSV is then parsed through the same descriptor, so the
/// rows read are the bytes checked even if a rerun replaces the file meanwhile. The day tables
/// (`AggregateLoader`) and the cohort tables (`CohortLoader`) are read through it.
enum PublishedFile {
    /// What a manifest says of one file.
    struct Expected {
        let rows: Int
        let bytes: Int
        let sha256: String
    }

    enum Outcome<Value> {
        /// The manifest lists it, but there is no file.
        case missing
        /// The file is not the one the manifest lists (a rerun in progress, a crash between the
        /// renames, a hand edit): nothing of it is used.
        case mismatch
        case read(Value)
    }

    /// Checks the CSV file at `path` against `expected`, then hands `body` a reader positioned at
    /// its first record.
    /// A manifest read and parsed by `parse`, a failed read reported as an I/O error on its path.
    static func manifest<Manifest>(
        at path: String, limit: Int, _ parse: ([UInt8], String) throws(ReportError) -> Manifest
    ) throws(ReportError) -> Manifest {
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: limit)
        } catch {
            throw .io(path: error.path, message: error.message)
        }
        return try parse(bytes, path)
    }

    static func withCSV<Value>(
        at path: String, matching expected: Expected, _ body: (CSVRecordReader) throws(ReportError) -> Value
    ) throws(ReportError) -> Outcome<Value> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return .missing }
            throw .io(path: path, message: SystemCallError(operation: "open", path: path, errorNumber: errno).reason)
        }
        defer { close(fd) }
        let (bytes, digest) = try checksum(fd: fd, path: path)
        guard bytes == expected.bytes, digest == expected.sha256 else { return .mismatch }
        guard lseek(fd, 0, SEEK_SET) == 0 else {
            throw .io(path: path, message: SystemCallError(operation: "seek", path: path, errorNumber: errno).reason)
        }
        return .read(try body(CSVRecordReader(fd: fd, path: path)))
    }

    /// The Parquet file at `path` read whole (a day's or a cohort's table is small), checked against
    /// `expected`, and its rows given as the CSV's text (`PublishedParquet.textRows`).
    static func parquetRows(at path: String, matching expected: Expected) throws(ReportError) -> Outcome<
        (header: [String], rows: [[String?]])
    > {
        var status = stat()
        guard stat(path, &status) == 0 else { return .missing }
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: 1 << 30)
        } catch {
            throw .io(path: error.path, message: error.message)
        }
        guard bytes.count == expected.bytes, SHA256.hash(bytes).description == expected.sha256 else { return .mismatch }
        do {
            return .read(try PublishedParquet.textRows(parquet: bytes))
        } catch {
            throw .malformed(path: path, line: nil, reason: "\(error)")
        }
    }

    /// The file's size and SHA-256 (hex), read through `fd` from its current offset.
    private static func checksum(fd: Int32, path: String) throws(ReportError) -> (Int, String) {
        let hasher = SHA256Hasher()
        var total = 0
        do {
            try FileDescriptorIO.forEachChunk(of: fd, path: path) { chunk in
                hasher.update(chunk)
                total += chunk.count
            }
        } catch {
            throw .io(path: path, message: error.reason)
        }
        return (total, hasher.finalize().description)
    }
}
