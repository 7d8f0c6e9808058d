import Basics

/// The decoded rows of published day tables, kept in memory for `PublishedRows` so that a day read
/// once is not read, checked (SHA-256 against its manifest) and parsed again for every request.
///
/// An entry is keyed by table and day and holds the identity (device, inode, size, modification and
/// change times) of the day's manifest and of the table's file as they were when the file was checked
/// against the manifest. Every lookup compares both identities with the files' current ones: a
/// re-published day (the job renames a new manifest into place) is read again, never served stale.
///
/// The rows are the whole day, unscoped. They never leave this module: only `PublishedRows` reads
/// them, and it hands its caller only the rows its scope and filters admit, as it does when reading
/// the file.
///
/// Bounded: the entries' estimated size (`maximumBytes`) is kept by evicting the least recently
/// used; a day larger than the whole bound is read and not kept.
package final class PublishedDayCache: Sendable {
    /// The default bound, 256 MiB: 30 days of 20,000 postbacks a day of `campaign_daily` take about
    /// 100 MiB.
    package static let defaultMaximumBytes = 256 << 20

    /// One day's table as it was read: its header and every row, before any scope.
    final class Day: Sendable {
        let manifest: FileIdentity
        let filePath: String
        let file: FileIdentity
        let header: [String]
        let rows: [[String?]]
        let bytes: Int

        init(manifest: FileIdentity, filePath: String, file: FileIdentity, header: [String], rows: [[String?]]) {
            self.manifest = manifest
            self.filePath = filePath
            self.file = file
            self.header = header
            self.rows = rows
            bytes = Self.estimate(header: header, rows: rows)
        }

        /// An over-estimate of the memory the rows hold: an array per row, 16 bytes per field, and
        /// each value's UTF-8 (small strings live inline, so this counts them twice).
        static func estimate(header: [String], rows: [[String?]]) -> Int {
            var total = 64 + header.reduce(0) { $0 + 16 + $1.utf8.count }
            for row in rows {
                total += 48 + 16 * row.count
                for value in row { total += value?.utf8.count ?? 0 }
            }
            return total
        }
    }

    struct Key: Hashable, Sendable {
        let root: String
        let table: String
        let day: Int
    }

    private let days: ByteBoundedCache<Key, Day>

    package var maximumBytes: Int { days.maximumBytes }

    package init(maximumBytes: Int = defaultMaximumBytes) {
        days = ByteBoundedCache(maximumBytes: maximumBytes)
    }

    /// The bytes held, the entries, and the lookups that found a current entry or not.
    package var statistics: (bytes: Int, entries: Int, hits: Int, misses: Int) { days.statistics }

    /// The entry of `key` if the manifest (`manifest`, its current identity) and the file it was read
    /// from are still the ones at their paths.
    func day(_ key: Key, manifest: FileIdentity) -> Day? {
        days.value(key) { $0.manifest == manifest && FileIdentity(path: $0.filePath) == $0.file }
    }

    func keep(_ day: Day, as key: Key) { days.keep(day, as: key, bytes: day.bytes) }
}
