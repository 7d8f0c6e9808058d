package import Basics
import Foundation
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Where everything lives under a data directory. One partition key, `dt` (the UTC day), fixed order:
///
///     DATA/raw/postbacks/dt=YYYY-MM-DD/part-<writer-id>-<seq>.jsonl     verified postbacks
///     DATA/raw/rejected/dt=YYYY-MM-DD/part-<writer-id>-<seq>.jsonl      refused, with reasons
///     DATA/raw/unverifiable/dt=YYYY-MM-DD/part-<writer-id>-<seq>.jsonl  quarantined: answered 200, never counted
///     DATA/agg/postback_detail_daily/dt=YYYY-MM-DD/part-00000.csv
///     DATA/agg/campaign_daily/dt=YYYY-MM-DD/part-00000.csv       (and publisher_daily, country_daily)
///     DATA/agg/campaign_events_daily/dt=YYYY-MM-DD/part-00000.csv
///     DATA/agg/campaign_daily_development/dt=YYYY-MM-DD/part-00000.csv
///     DATA/agg/_manifests/dt=YYYY-MM-DD.json
///
/// Each receiver writes only files named with its own writer id, so several can share one store.
/// Sequence numbers are zero-padded so that names sort in write order.
package struct StoreLayout: Sendable {
    package enum Spool: String, Sendable, CaseIterable {
        case postbacks
        case rejected
        /// Postbacks we cannot judge or count yet (an unknown SKAdNetwork version or AdAttributionKit
        /// `kid`, a signed value we do not know): kept with their reason until `postback reverify`.
        case unverifiable
        /// Evidence of copies of stored postbacks that carried other unsigned values (issue 24,
        /// `ConflictRecord`), within a daily byte budget; never postbacks.
        case conflicts
    }

    package let root: String

    package init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    package func spoolDirectory(_ spool: Spool) -> String { "\(root)/raw/\(spool.rawValue)" }

    package func partition(_ spool: Spool, day: UTCDay) -> String { "\(spoolDirectory(spool))/dt=\(day)" }

    package static func segmentName(writer: String, sequence: Int) -> String {
        "part-\(writer)-\(String(sequence).leftPaddedWithZeros(to: 6)).jsonl"
    }

    package func aggregateDirectory(table: String, day: UTCDay) -> String { "\(root)/agg/\(table)/dt=\(day)" }

    /// A table's file of a day: `part-00000.csv`, or `.parquet` with `extension: "parquet"`.
    package func aggregateFile(table: String, day: UTCDay, extension: String = "csv") -> String {
        aggregateDirectory(table: table, day: day) + "/part-00000." + `extension`
    }

    package var manifestDirectory: String { "\(root)/agg/_manifests" }

    package func manifest(day: UTCDay) -> String { "\(manifestDirectory)/dt=\(day).json" }

    /// Writer ids go into file names: letters, digits, `.`, `_` and `-`, at most 64, not starting with `.`.
    package static func isValidWriterID(_ id: String) -> Bool {
        guard (1...64).contains(id.utf8.count), id.utf8.first != UInt8(ascii: ".") else { return false }
        return id.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
    }

    /// A directory of the store exists but cannot be listed (permissions, I/O error). Never read as
    /// "empty": the receiver would lose dedup keys, and the nightly job would publish empty days.
    package typealias ListingError = SystemCallError

    /// The days that have a partition in `spool`, ascending (none when the spool does not exist yet).
    package func days(_ spool: Spool) throws(ListingError) -> [UTCDay] {
        let names = try Self.entries(of: spoolDirectory(spool))
        return names.compactMap { name in name.hasPrefix("dt=") ? UTCDay(String(name.dropFirst(3))) : nil }.sorted()
    }

    /// A segment file found in a partition.
    package struct Segment: Sendable, Comparable {
        package let path: String
        package let writer: String
        package let sequence: Int

        package static func < (lhs: Segment, rhs: Segment) -> Bool {
            (lhs.writer, lhs.sequence) < (rhs.writer, rhs.sequence)
        }
    }

    /// The segments of one day, sorted by writer then sequence. Files not named like segments
    /// (temporary files, editor backups) are ignored.
    package func segments(_ spool: Spool, day: UTCDay) throws(ListingError) -> [Segment] {
        let directory = partition(spool, day: day)
        let names = try Self.entries(of: directory)
        return names.compactMap { name in
            Self.parseSegmentName(name).map { Segment(path: "\(directory)/\(name)", writer: $0.writer, sequence: $0.sequence) }
        }
        .sorted()
    }

    /// The names in `directory`; none if it does not exist.
    package static func entries(of directory: String) throws(ListingError) -> [String] {
        guard let stream = opendir(directory) else {
            let code = errno
            if code == ENOENT { return [] }
            throw ListingError(operation: "opendir", path: directory, errorNumber: code)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                let code = errno
                if code != 0 { throw ListingError(operation: "readdir", path: directory, errorNumber: code) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    package static func parseSegmentName(_ name: String) -> (writer: String, sequence: Int)? {
        guard name.hasPrefix("part-"), name.hasSuffix(".jsonl") else { return nil }
        let stem = name.dropFirst(5).dropLast(6)
        guard let dash = stem.lastIndex(of: "-"), let sequence = Int(stem[stem.index(after: dash)...]) else { return nil }
        let writer = String(stem[..<dash])
        return isValidWriterID(writer) ? (writer, sequence) : nil
    }
}

extension String {
    func leftPaddedWithZeros(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
