#if canImport(Glibc)
    import Glibc
#endif

/// Reading small files (keys, configuration, schemas) whole, with errors that name the file.
package enum FileBytes {
    /// What reading a file throws: the failed call, or the file refused (`EISDIR`, `EFBIG`, `EILSEQ`).
    package typealias ReadError = SystemCallError

    /// The file's bytes, refusing anything larger than `limit`. `-` reads standard input.
    package static func read(path: String, limit: Int = 16 << 20) throws(ReadError) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError(operation: "open", path: path, errorNumber: errno) }
        defer { if fd != 0 { close(fd) } }
        var status = stat()
        if fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            throw SystemCallError(operation: "read", path: path, errorNumber: EISDIR, detail: "is a directory")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = try FileDescriptorIO.read(fd, into: &chunk, path: path)
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit {
                throw SystemCallError(
                    operation: "read", path: path, errorNumber: EFBIG, detail: "larger than the \(limit)-byte limit")
            }
        }
    }

    /// The file as UTF-8 text.
    package static func readText(path: String, limit: Int = 16 << 20) throws(ReadError) -> String {
        let bytes = try read(path: path, limit: limit)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SystemCallError(operation: "read", path: path, errorNumber: EILSEQ, detail: "is not valid UTF-8 text")
        }
        return text
    }
}
