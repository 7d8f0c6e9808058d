import Basics
import Foundation
package import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Postbacks a partner refused (a 4xx other than 408/429) or that were too old to forward: kept with
/// why, durably, so that nothing verified is dropped silently.
///
/// `DATA/raw/_delivery/forward-<name>/dead-letters/<writer>.jsonl`, one JSON line per postback:
/// `dead_at`, `reason` (`refused` or `too-old`), `status` and `answer` (the partner's, first 2 KiB),
/// `segment` and `offset` (where the record is in the spool), `idempotency_key`, and `record` (the
/// spool record itself, so a dead letter outlives local retention). Appended and fdatasync'ed before
/// the destination's cursor moves past the postback.
///
/// `forward retry-dead-letters` re-sends them and appends `<file>\t<line offset>` to
/// `<writer>.resolved` for each one the partner accepted (append-only: the receiver may be appending
/// dead letters at the same time).
package struct DeadLetterSpool: Sendable {
    package let directory: String
    package let writerID: String
    private let storage = POSIXSpoolStorage()

    package init(root: String, destination: String, writerID: String) {
        directory = "\(root)/raw/_delivery/\(destination)/dead-letters"
        self.writerID = writerID
    }

    package var path: String { "\(directory)/\(writerID).jsonl" }

    package enum Reason: String, Sendable {
        case refused
        case tooOld = "too-old"
    }

    /// One dead letter as read back.
    package struct Entry: Sendable {
        /// The dead-letter file and the line's offset in it: the entry's identity.
        package let file: String
        package let offset: Int
        /// Offsets of later lines in the same file for the same postback (same idempotency key): a crash
        /// or power cut after a dead letter was synced but before the cursor moved past it writes it
        /// again. One entry stands for all of them, and resolving it resolves them all.
        package var repeats: [Int] = []
        package let reason: String
        package let status: Int?
        package let answer: String?
        package let idempotencyKey: String
        package let record: SpoolRecord
    }

    /// Appends one dead letter durably (write, fdatasync) before returning.
    package func append(
        record: SpoolRecord, recordLine: [UInt8], reason: Reason, status: Int?, answer: String?,
        segment: String, offset: Int
    ) throws(StorageError) {
        var line = JSONWriter()
        line.beginObject()
        line.field("dead_at", UTCTimestamp.now().description)
        line.field("reason", reason.rawValue)
        line.field("status", status)
        line.field("answer", answer)
        line.field("segment", segment)
        line.field("offset", offset)
        line.field("idempotency_key", ForwardSender.idempotencyKey(record))
        line.key("record")
        line.value(rawJSON: recordLine)
        line.endObject()
        try appendLine(line.bytes, to: path)
    }

    /// Marks one entry as delivered after all (by `forward retry-dead-letters`).
    package func markResolved(_ entry: Entry) throws(StorageError) {
        let name = String(entry.file.split(separator: "/").last ?? "")
        for offset in [entry.offset] + entry.repeats {
            try appendLine(Array("\(name)\t\(offset)".utf8), to: "\(directory)/\(writerID).resolved")
        }
    }

    private func appendLine(_ bytes: [UInt8], to file: String) throws(StorageError) {
        let fd = try DurableFile.openLines(file)
        defer { Glibc.close(fd) }
        try storage.append(bytes + [0x0A], to: fd, path: file)
        try storage.sync(fd, path: file)
    }

    /// Every dead letter of every writer in `directory` not yet resolved, oldest first per file.
    /// Lines that cannot be read are returned in `problems` (never silently skipped).
    package static func unresolved(root: String, destination: String) -> (entries: [Entry], problems: [String]) {
        let directory = "\(root)/raw/_delivery/\(destination)/dead-letters"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var resolved: Set<String> = []
        for name in names where name.hasSuffix(".resolved") {
            let text = (try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") { resolved.insert(String(line)) }
        }
        var entries: [Entry] = []
        var problems: [String] = []
        for name in names where name.hasSuffix(".jsonl") {
            let file = "\(directory)/\(name)"
            guard let data = FileManager.default.contents(atPath: file) else {
                problems.append("\(file): cannot read")
                continue
            }
            let bytes = [UInt8](data)
            var entryByKey: [String: Int] = [:]  // idempotency key → index in `entries`, this file
            var start = 0
            // A torn append: a last line without its newline, or with NUL bytes where a power cut lost
            // a page of it (`DurableFile.cutTornLine` cuts it before the next append). Not a dead letter yet.
            let lastNewline = bytes.lastIndex(of: 0x0A)
            while start < bytes.count {
                guard let end = bytes[start...].firstIndex(of: 0x0A) else { break }
                let line = Array(bytes[start..<end])
                defer { start = end + 1 }
                if end == lastNewline, line.contains(0) { break }
                if resolved.contains("\(name)\t\(start)") { continue }
                guard case .object(let object)? = try? StrictJSONParser.parse(line, keys: SpoolRecord.internedKeys),
                    case .object? = object["record"],
                    let recordStart = line.firstRange(of: Array("\"record\":".utf8))?.upperBound,
                    let record = try? SpoolRecord(line: Array(line[recordStart..<(line.count - 1)]))
                else {
                    problems.append("\(file): line at byte \(start) is not a dead letter")
                    continue
                }
                func text(_ key: String) -> String? {
                    if case .string(let value)? = object[key] { return value } else { return nil }
                }
                var status: Int?
                if case .number(let number)? = object["status"] { status = number.int64Value.map(Int.init) }
                let key = text("idempotency_key") ?? ForwardSender.idempotencyKey(record)
                if let earlier = entryByKey[key] {
                    entries[earlier].repeats.append(start)
                    continue
                }
                entryByKey[key] = entries.count
                entries.append(
                    Entry(
                        file: file, offset: start, reason: text("reason") ?? "?", status: status, answer: text("answer"),
                        idempotencyKey: key, record: record))
            }
        }
        return (entries, problems)
    }
}
