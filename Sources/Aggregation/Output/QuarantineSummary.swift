import AggregateSchema
import Basics
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// What a day's quarantine (`raw/unverifiable/`) holds, for the manifest: postbacks that are not
/// counted because this release cannot check or read them yet, one row per reason and the value
/// that caused it (an unknown version or kid, or a signed value we do not know yet with its raw text).
/// Verified postbacks with an unrecognized signed value are kept apart here, never folded into known
/// values; `postback reverify` moves them into the counted spool once a release knows the value.
///
/// Copies are counted once per `QuarantineKey` (Apple retries; so do devices after a 500): a
/// verified record's signed dedup key, else its body's SHA-256, as the receiver dedups them.
struct QuarantineSummary: Sendable, Equatable {
    struct Row: Hashable, Comparable, Sendable {
        let quarantine: String
        let postbackProtocol: String
        let version: String
        let environment: String
        /// `version`, `kid`, or the flagged field (`conversion-type`, `jws-claim`, …).
        let field: String
        /// The value as sent (at most 64 bytes, as the flag keeps it).
        let raw: String

        static func < (lhs: Row, rhs: Row) -> Bool {
            (lhs.quarantine, lhs.postbackProtocol, lhs.version, lhs.environment, lhs.field, lhs.raw)
                < (rhs.quarantine, rhs.postbackProtocol, rhs.version, rhs.environment, rhs.field, rhs.raw)
        }
    }

    var postbacks: [Row: Int] = [:]
    /// Lines of the quarantine that are not readable records (torn or corrupt): not counted.
    var unreadableLines = 0

    /// Reads every quarantine segment of `day` under `layout`.
    static func read(layout: StoreLayout, day: UTCDay) throws -> QuarantineSummary {
        var summary = QuarantineSummary()
        let segments: [StoreLayout.Segment]
        do {
            segments = try layout.segments(.unverifiable, day: day)
        } catch {
            throw AggregationError.system(
                SystemCallError(operation: "listing the quarantine partition", path: error.path, errorNumber: error.errorNumber))
        }
        var seenKeys = Set<String>()
        for segment in segments {
            do {
                let reader = try SegmentReader(path: segment.path)
                while let entry = try reader.next() {
                    guard case .record(let record, _) = entry else {
                        summary.unreadableLines += 1
                        continue
                    }
                    let key = QuarantineKey.make(status: record.status, dedupKey: record.dedupKey, body: record.body)
                    if !seenKeys.insert(key).inserted { continue }
                    for row in rows(of: record) { summary.postbacks[row, default: 0] += 1 }
                }
            } catch {
                throw AggregationError.system(
                    SystemCallError(operation: "reading the quarantine (\(error.message))", path: error.path, errorNumber: EIO))
            }
        }
        return summary
    }

    /// One row per unrecognized value (a postback with two new values appears under both), or one
    /// for an unknown version or kid.
    static func rows(of record: SpoolRecord) -> [Row] {
        let reason = record.quarantine ?? .unknownVersion
        func row(_ field: String, _ raw: String) -> Row {
            Row(
                quarantine: reason.rawValue, postbackProtocol: record.postbackProtocol?.rawValue ?? "",
                version: record.version ?? "", environment: record.environment?.rawValue ?? "", field: field, raw: raw)
        }
        switch reason {
        case .unknownVersion: return [row("version", record.version ?? "")]
        case .unknownKeyID: return [row("kid", record.keyName ?? "")]
        case .unrecognizedSignedValue:
            let flagged = record.flags.filter { $0.action == .unrecognized }.map { row($0.field.rawValue, $0.raw) }
            return flagged.isEmpty ? [row("", "")] : flagged
        }
    }

    /// `"quarantined": [{"quarantine", "protocol", "version", "environment", "field", "raw", "postbacks"}]`
    /// in a fixed order, so a rerun writes the same bytes.
    func write(into json: inout JSONWriter) {
        typealias Key = ManifestQuarantinedKey
        json.key(DayManifestKey.quarantined)
        json.beginArray()
        for row in postbacks.keys.sorted() {
            json.beginObject()
            json.field(Key.quarantine, row.quarantine)
            json.field(Key.postbackProtocol, row.postbackProtocol)
            json.field(Key.version, row.version)
            json.field(Key.environment, row.environment)
            json.field(Key.field, row.field)
            json.field(Key.raw, row.raw)
            json.field(Key.postbacks, postbacks[row]!)
            json.endObject()
        }
        json.endArray()
        json.field(DayManifestKey.quarantineUnreadableLines, unreadableLines)
    }
}
