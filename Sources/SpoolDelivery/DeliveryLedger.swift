import Basics
import Foundation
package import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// The durable record of what one destination holds: one line per delivered segment,
/// `<relative path>\t<size>\t<sha256 hex>\n`, appended and fdatasync'ed after the destination
/// confirmed it; a destination that moves a segment record by record (the partner forwarder) also
/// appends `at\t<relative path>\t<offset>\n` lines (the bytes before `offset` are delivered), before anything (local retention) relies on it. A torn last line (a crash during
/// the append) is ignored: that segment is delivered again, which destinations accept (idempotent).
///
/// Lives at `DATA/raw/_delivery/<destination>/<writer>.ledger` (next to `raw/_writers/`, outside every
/// spool, so readers of `raw/postbacks/` never see it); one file per writer, so receivers sharing a
/// data directory never append to the same file.
package final class DeliveryLedger {
    package let path: String
    private var delivered: Set<String> = []
    /// Partly delivered segments: the offset from which to resume (`at` lines; the last one wins).
    private var offsets: [String: Int] = [:]
    private var descriptor: Int32 = -1
    private let storage = POSIXSpoolStorage()

    package static func path(root: String, destination: String, writerID: String) -> String {
        "\(root)/raw/_delivery/\(destination)/\(writerID).ledger"
    }

    /// Loads the ledger (none yet is an empty one). A ledger that exists but cannot be read is an
    /// error: taking it for empty would only re-deliver, but it hides a broken disk.
    package init(path: String) throws(StorageError) {
        self.path = path
        let fd = try DurableFile.openLines(path)
        descriptor = fd
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = try FileDescriptorIO.read(fd, into: &buffer, at: bytes.count, path: path)
            if got == 0 { break }
            bytes += buffer[..<got]
        }
        let parsed = Self.parse(bytes)
        delivered = parsed.delivered
        offsets = parsed.offsets
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// A ledger's contents: delivered segments and resume offsets of partly delivered ones (a torn
    /// last line is ignored).
    package static func parse(_ bytes: [UInt8]) -> (delivered: Set<String>, offsets: [String: Int]) {
        var delivered: Set<String> = []
        var offsets: [String: Int] = [:]
        var lineStart = 0
        for (position, byte) in bytes.enumerated() where byte == 0x0A {
            let line = bytes[lineStart..<position]
            let fields = line.split(separator: 0x09, omittingEmptySubsequences: false)
            if fields.count == 3, fields[0].elementsEqual("at".utf8), let offset = Int(String(decoding: fields[2], as: UTF8.self))
            {
                offsets[String(decoding: fields[1], as: UTF8.self)] = offset
            } else if let tab = line.firstIndex(of: 0x09) {
                delivered.insert(String(decoding: line[..<tab], as: UTF8.self))
            }
            lineStart = position + 1
        }
        for path in delivered { offsets[path] = nil }
        return (delivered, offsets)
    }

    package var count: Int { delivered.count }

    package func contains(_ relativePath: String) -> Bool { delivered.contains(relativePath) }

    /// Records a confirmed delivery durably (write and fdatasync) before returning.
    package func record(_ segment: SealedSegment, sha256Hex: String) throws(StorageError) {
        let line = Array("\(segment.relativePath)\t\(segment.size)\t\(sha256Hex)\n".utf8)
        try storage.append(line, to: descriptor, path: path)
        try storage.sync(descriptor, path: path)
        delivered.insert(segment.relativePath)
        offsets[segment.relativePath] = nil
    }

    /// Where delivery of a partly delivered segment resumes (0: from the start).
    package func resumeOffset(_ relativePath: String) -> Int { offsets[relativePath] ?? 0 }

    /// Records durably that the bytes of `relativePath` before `offset` are delivered.
    package func recordProgress(_ relativePath: String, offset: Int) throws(StorageError) {
        try storage.append(Array("at\t\(relativePath)\t\(offset)\n".utf8), to: descriptor, path: path)
        try storage.sync(descriptor, path: path)
        offsets[relativePath] = offset
    }
}
