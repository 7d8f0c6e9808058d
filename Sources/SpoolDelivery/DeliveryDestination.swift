package import PostbackStore

/// One sealed spool segment: closed by its writer, so its bytes never change again.
package struct SealedSegment: Sendable, Equatable {
    /// The local file.
    package let path: String
    /// Its path relative to the store root (`raw/postbacks/dt=…/part-<writer>-<seq>.jsonl`): the
    /// object key under an object store's prefix, and the ledger's name for it.
    package let relativePath: String
    package let spool: StoreLayout.Spool
    package let size: Int
    /// Seconds since the epoch of its last change (when it was sealed, near enough).
    package let modifiedAt: Double

    package init(path: String, relativePath: String, spool: StoreLayout.Spool, size: Int, modifiedAt: Double) {
        self.path = path
        self.relativePath = relativePath
        self.spool = spool
        self.size = size
        self.modifiedAt = modifiedAt
    }
}

/// Why a delivery did not happen: a closed `code` (wait and retry, or a conflict an operator resolves),
/// the message, and the wait the destination asked for. The delivery machinery's one error.
package struct DeliveryFailure: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// The destination is down, slow or refusing (also wrong credentials or a missing bucket:
        /// nothing is lost by waiting for an operator). Retried with backoff.
        case retry
        /// The destination already holds different data under this segment's name. Never
        /// overwritten; skipped until restart, the local file kept, an error logged and counted.
        case conflict
    }

    package let code: Code
    package let description: String
    /// The destination asked for at least this wait (HTTP `Retry-After`); the backoff waits longer if it is longer.
    package let retryAfterSeconds: Double?

    package init(_ code: Code, _ description: String, retryAfterSeconds: Double? = nil) {
        self.code = code
        self.description = description
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// Where sealed spool data goes. The delivery machinery (`SpoolDeliveryWorker`: what is pending,
/// the durable ledger, backoff with jitter, metrics, local retention) is shared; a destination only
/// moves one segment and says when the far side holds it durably.
///
/// Contract: `deliver` returns only once the destination has durably accepted the whole segment, and
/// is idempotent: a crash after the far side accepted but before the ledger recorded it calls
/// `deliver` again with the same bytes, which must succeed without duplicating anything (an object
/// store compares checksums; a partner forwarder sends records with their dedup keys). It is called
/// from the worker's one thread only.
package protocol DeliveryDestination: AnyObject, Sendable {
    /// Names the ledger file and the metrics label: short, `[a-z0-9_-]`, stable across restarts.
    var name: String { get }
    /// `sha256` is the segment's SHA-256 (computed once by the worker, streamed from the file).
    /// - Throws: `DeliveryFailure` for a conflict or a wait the destination asks for; any other error
    ///   (the client's, a file's) is retried with backoff, its message logged.
    func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws
}

/// A destination that moves a segment record by record and can resume inside it (the partner
/// forwarder): the worker hands it the segment's durable cursor instead of calling `deliver`.
package protocol ResumableDeliveryDestination: DeliveryDestination {
    /// Delivers the segment from `cursor.offset` on, advancing the cursor (durably) as it goes.
    func deliver(_ segment: SealedSegment, from cursor: SegmentCursor) throws
}

/// The durable position inside one segment (an `at` line of the ledger). Used from the worker thread only.
package final class SegmentCursor {
    private let ledger: DeliveryLedger
    package let relativePath: String
    package private(set) var offset: Int
    /// True once the worker is asked to stop: a long segment is left at its cursor, not finished.
    package let isStopping: () -> Bool

    init(ledger: DeliveryLedger, relativePath: String, isStopping: @escaping () -> Bool) {
        self.ledger = ledger
        self.relativePath = relativePath
        self.offset = ledger.resumeOffset(relativePath)
        self.isStopping = isStopping
    }

    /// Records (write and fdatasync) that every byte before `offset` is delivered.
    package func advance(to offset: Int) throws {
        guard offset > self.offset else { return }
        do {
            try ledger.recordProgress(relativePath, offset: offset)
        } catch {
            throw DeliveryFailure(.retry, "recording the delivery cursor: \(error)")
        }
        self.offset = offset
    }
}
