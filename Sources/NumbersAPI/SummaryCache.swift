import Basics
import PostbackCrypto
package import PostbackServer
import PostbackStore
package import Reporting

/// The summaries answered, kept by everything their figures depend on: the scope, the query's range,
/// `compare` and environment, today (UTC), and the identity (`FileIdentity`) of every day manifest,
/// cohort manifest and check file of the store, so a day published or re-published, or spend
/// imported, is answered anew. Bounded in bytes (least recently used first out).
package final class SummaryCache: Sendable {
    struct Key: Hashable, Sendable {
        let scope: DataScope
        let from: UTCDay
        let to: UTCDay
        let comparePrevious: Bool
        let environment: String
        let today: UTCDay
        /// SHA-256 of the store's manifests' names and identities.
        let store: String
    }

    private let replies: ByteBoundedCache<Key, HTTPReply>

    package init(maximumBytes: Int) {
        replies = ByteBoundedCache(maximumBytes: maximumBytes)
    }

    package var statistics: (bytes: Int, entries: Int, hits: Int, misses: Int) { replies.statistics }

    /// The kept answer to `query` under `scope`, or `answer()`'s, kept when it succeeds.
    func answer(
        query: APIQuery, scope: DataScope, dataDirectory: String, today: UTCDay, _ answer: () throws(APIProblem) -> HTTPReply
    ) throws(APIProblem) -> HTTPReply {
        let key = Key(
            scope: scope, from: query.from, to: query.to, comparePrevious: query.comparePrevious,
            environment: query.environment.rawValue, today: today, store: Self.fingerprint(dataDirectory))
        if let kept = replies.value(key) { return kept }
        let reply = try answer()
        replies.keep(reply, as: key, bytes: 256 + reply.body.count)
        return reply
    }

    /// What the figures read besides the day tables (whose manifests list their files' SHA-256).
    static func fingerprint(_ dataDirectory: String) -> String {
        var text = ""
        for directory in ["agg/_manifests", "agg/_cohort_manifests", "agg/_checks"] {
            let path = "\(dataDirectory)/\(directory)"
            // An unlistable directory: a fingerprint no other answer has, so nothing is kept for long.
            guard let names = try? StoreLayout.entries(of: path) else {
                return "unlistable \(UTCTimestamp.now())"
            }
            for name in names.sorted() {
                text += "\(directory)/\(name) \(FileIdentity(path: "\(path)/\(name)")?.description ?? "-")\n"
            }
        }
        return SHA256.hash(Array(text.utf8)).description
    }
}
