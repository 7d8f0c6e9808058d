public import PostbackStore

/// One sealed spool segment: closed by its writer, so its bytes never change again.
public struct SealedSegment: Sendable, Equatable {
    /// The local file.
    public let path: String
    /// Its path relative to the store root (`raw/postbacks/dt=…/part-<writer>-<seq>.jsonl`): the
    /// object key under an object store's prefix, and the ledger's name for it.
    public let relativePath: String
    public let spool: StoreLayout.Spool
    public let size: Int
    /// Seconds since the epoch of its last change (when it was sealed, near enough).
    public let modifiedAt: Double

    public init(path: String, relativePath: String, spool: StoreLayout.Spool, size: Int, modifiedAt: Double) {
        self.path = path
        self.relativePath = relativePath
        self.spool = spool
        self.size = size
        self.modifiedAt = modifiedAt
    }
}

/// Why a delivery did not happen.
public struct DeliveryFailure: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The destination is down, slow or refusing (also wrong credentials or a missing bucket:
        /// nothing is lost by waiting for an operator). Retried with backoff.
        case retry
        /// The destination already holds different data under this segment's name. Never
        /// overwritten; skipped until restart, the local file kept, an error logged and counted.
        case conflict
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
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
public protocol DeliveryDestination: AnyObject, Sendable {
    /// Names the ledger file and the metrics label: short, `[a-z0-9_-]`, stable across restarts.
    var name: String { get }
    /// `sha256` is the segment's SHA-256 (computed once by the worker, streamed from the file).
    func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws(DeliveryFailure)
}
