package import Basics
import Foundation
import Locking
package import PostbackClient
package import PostbackStore
import Postbacks

/// The dedup keys other receivers shipped to a bucket this receiver shares (`shared_dedup_days`).
///
/// A receiver's live dedup index is built at start-up from its local spool. Receivers behind one load
/// balancer that share a bucket but not a directory would otherwise not know each other's keys: a
/// device's retry that lands on another receiver would be stored twice (the nightly job still counts
/// it once). So at start-up a shipping receiver also reads every `raw/postbacks/` segment in the
/// bucket for the last `days` UTC days, except those also on its local disk (recovery has read them),
/// and adds their keys. That covers its own segments removed locally after `local_retention_hours`
/// too. Keys that other receivers store *after* this start-up are not seen live (docs/serve.md).
package enum SharedDedupKeys {
    package struct Loaded: Sendable {
        /// The keys of verified postbacks, in no particular order (the index ignores repeats).
        package var keys: [String] = []
        package var objectsRead = 0
        package var bytesRead = 0
        /// Objects skipped because the same segment is on local disk.
        package var objectsLocal = 0
    }

    /// Objects downloaded at once: one request at a time leaves a loopback or LAN link mostly idle.
    package static let parallelDownloads = 4

    /// The UTC days `days` covers, ending with the day `now` falls in.
    package static func window(days: Int, now: UTCTimestamp = .now()) -> [UTCDay] {
        let today = now.day
        return (0..<max(0, days)).reversed().map { today.adding(days: -$0) }
    }

    /// Lists and reads the bucket's `raw/postbacks/dt=<day>/` segments for `days`. Each object is
    /// streamed and split into lines (bounded memory: a chunk and one line at a time); a last line
    /// without its newline is not a record (sealed segments end with one) and is skipped.
    package static func load(client: S3Client, layout: StoreLayout, days: [UTCDay]) throws -> Loaded {
        var loaded = Loaded()
        var remote: [String] = []
        for day in days {
            for object in try client.list(relativePrefix: "raw/postbacks/dt=\(day)/") where object.relativeKey.hasSuffix(".jsonl")
            {
                if FileManager.default.fileExists(atPath: layout.root + "/" + object.relativeKey) {
                    loaded.objectsLocal += 1
                } else {
                    remote.append(object.relativeKey)
                }
            }
        }
        let results = Locked(loaded)
        try client.forEachKey(remote, connections: parallelDownloads) { reader, key in
            // A line longer than the spool allows holds no key (recovery reports it as damage).
            var lines = LineSplitter(maximumLineBytes: SegmentReader.maximumLineBytes, chunkBytes: 1 << 20)
            var objectKeys: [String] = []
            var bytesRead = 0
            _ = try reader.get(relativeKey: key) { chunk in
                bytesRead += chunk.count
                lines.feed(chunk) { line in
                    if let bytes = line.bytes, let key = SpoolRecovery.dedupKey(ofLine: Array(bytes)) { objectKeys.append(key) }
                }
                return true
            }
            results.withLock {
                $0.keys += objectKeys
                $0.objectsRead += 1
                $0.bytesRead += bytesRead
            }
        }
        return results.withLock { $0 }
    }
}
