import AggregateSchema
import Basics
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// What a day's conflict evidence (`raw/conflicts/`, `ConflictRecord`) holds, for the manifest:
/// copies of stored postbacks that came with other unsigned values (issue 24). One row per app, ad
/// network (lower-cased, as the aggregates group them) and field that disagreed; a copy that
/// disagreed on two fields is in two rows, and once in `conflicting_copies`. The stored copies are
/// counted as usual; nothing here changes a count.
struct ConflictSummary: Sendable {
    struct Row: Hashable, Comparable, Sendable {
        let appID: Int64
        let adNetworkID: String
        let field: String

        static func < (lhs: Row, rhs: Row) -> Bool {
            (lhs.appID, lhs.adNetworkID, lhs.field) < (rhs.appID, rhs.adNetworkID, rhs.field)
        }
    }

    var copies: [Row: Int] = [:]
    /// Conflict records read (each a copy that disagreed on at least one field).
    var records = 0
    /// Lines that are not readable conflict records: not counted.
    var unreadableLines = 0
    /// Conflict records by their dedup key's hash, for `conflicting_copies` in the row of the key's
    /// first copy (when that copy is one of the day's; else only the manifest counts it).
    var keyHashes: [Hash128: UInt32] = [:]

    static func read(layout: StoreLayout, day: UTCDay) throws -> ConflictSummary {
        var summary = ConflictSummary()
        let segments: [StoreLayout.Segment]
        do {
            segments = try layout.segments(.conflicts, day: day)
        } catch {
            throw AggregationError.system(
                SystemCallError(operation: "listing the conflict evidence", path: error.path, errorNumber: error.errorNumber))
        }
        for segment in segments {
            let bytes: [UInt8]
            do { bytes = try FileBytes.read(path: segment.path, limit: 1 << 30) } catch {
                throw AggregationError.system(
                    SystemCallError(operation: "reading the conflict evidence", path: segment.path, errorNumber: EIO))
            }
            for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: true) {
                guard let record = try? ConflictRecord(line: Array(line)) else {
                    summary.unreadableLines += 1
                    continue
                }
                summary.records += 1
                summary.keyHashes[Hash128.of(Array(record.dedupKey.utf8)), default: 0] += 1
                for difference in record.differences {
                    let row = Row(
                        appID: record.storedAttribution.appID, adNetworkID: record.storedAttribution.adNetworkID.asciiLowercased,
                        field: difference.field.rawValue)
                    summary.copies[row, default: 0] += 1
                }
            }
        }
        return summary
    }

    /// `"conflicting_copies": N, "conflicts": [{"app_id", "ad_network_id", "field", "copies"}]` in a fixed
    /// order, and `conflicts_unreadable_lines`.
    func write(into json: inout JSONWriter) {
        json.field(DayManifestKey.conflictingCopies, records)
        json.key(DayManifestKey.conflicts)
        json.beginArray()
        for row in copies.keys.sorted() {
            json.beginObject()
            json.field(ManifestConflictKey.appID, row.appID)
            json.field(ManifestConflictKey.adNetworkID, row.adNetworkID)
            json.field(ManifestConflictKey.field, row.field)
            json.field(ManifestConflictKey.copies, copies[row]!)
            json.endObject()
        }
        json.endArray()
        json.field(DayManifestKey.conflictsUnreadableLines, unreadableLines)
    }
}
