#if canImport(Glibc)
    import Glibc
#endif

/// Reading small files (keys, configuration, schemas) whole, with errors that name the file.
package enum FileBytes {
    package struct ReadError: Error, CustomStringConvertible {
        package let path: String
        package let message: String
        package var description: String { "\(path): \(message)" }

        init(path: String, message: String) {
            self.path = path
            self.message = message
        }

        init(_ error: SystemCallError) { self.init(path: error.path, message: error.reason) }
    }

    /// The file's bytes, refusing anything larger than `limit`. `-` reads standard input.
    package static func read(path: String, limit: Int = 16 << 20) throws(ReadError) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(SystemCallError(operation: "open", path: path, errorNumber: errno)) }
        defer { if fd != 0 { close(fd) } }
        var status = stat()
        if fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            throw ReadError(path: path, message: "is a directory")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count: Int
            do {
                count = try FileDescriptorIO.read(fd, into: &chunk, path: path)
            } catch {
                throw ReadError(error)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { throw ReadError(path: path, message: "larger than the \(limit)-byte limit") }
        }
    }

    /// The file as UTF-8 text.
    package static func readText(path: String, limit: Int = 16 << 20) throws(ReadError) -> String {
        let bytes = try read(path: path, limit: limit)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ReadError(path: path, message: "is not valid UTF-8 text")
        }
        return text
    }
}
