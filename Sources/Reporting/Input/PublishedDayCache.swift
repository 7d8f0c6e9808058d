import AggregateSchema
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
        /// The rows' places by their (app, ad network), in file order: a scope's rows are found
        /// without testing every row of the day.
        let placesByOwner: [Owner: [Int]]
        let bytes: Int

        init(manifest: FileIdentity, filePath: String, file: FileIdentity, header: [String], rows: [[String?]]) {
            self.manifest = manifest
            self.filePath = filePath
            self.file = file
            self.header = header
            self.rows = rows
            var places: [Owner: [Int]] = [:]
            if let app = header.firstIndex(of: AggregateColumn.field(.appID).name),
                let network = header.firstIndex(of: AggregateColumn.field(.adNetworkID).name)
            {
                for (index, row) in rows.enumerated() {
                    places[Owner(app: row[app], network: row[network]), default: []].append(index)
                }
            }
            placesByOwner = places
            bytes = Self.estimate(header: header, rows: rows) + places.count * 64 + rows.count * 8
        }

        /// The places of the rows whose owner `scope` admits, in file order; nil when the header has
        /// no app or network column (the caller's test then refuses the day).
        func places(admittedBy scope: DataScope) -> [Int]? {
            guard !placesByOwner.isEmpty || rows.isEmpty else { return nil }
            if scope.isEverything { return Array(rows.indices) }
            var chosen: [Int] = []
            for (owner, places) in placesByOwner where scope.admits(app: owner.app, network: owner.network) {
                chosen += places
            }
            return chosen.sorted()
        }

        /// The memory the rows hold, as Swift lays them out: an array per row (its header and the
        /// allocator's), 16 bytes per field, and a heap buffer (header, UTF-8, rounded to 16) for
        /// each value longer than the 15 bytes a string holds inline.
        static func estimate(header: [String], rows: [[String?]]) -> Int {
            var total = 64 + header.reduce(0) { $0 + 16 + $1.utf8.count }
            for row in rows {
                total += 48 + 16 * row.count
                for case let value? in row where value.utf8.count > 15 { total += 48 + (value.utf8.count + 15) / 16 * 16 }
            }
            return total
        }
    }

    /// Who a row belongs to.
    struct Owner: Hashable, Sendable {
        let app: String?
        let network: String?
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
