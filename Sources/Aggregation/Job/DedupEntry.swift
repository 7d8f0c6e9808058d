/// One copy of a postback on its way through dedup: 40 bytes, written to bucket files as is.
///
/// Copies are ordered by dedup-key hash, then `receivedAt`, then `order` (the segment's place in
/// the day's sorted segment list and the line's byte offset), so "the first received copy" is the
/// same on every run however threads interleaved.
struct DedupEntry {
    var hashHigh: UInt64
    var hashLow: UInt64
    var receivedAt: Int64
    var order: UInt64
    /// Row id, local to the worker that wrote the entry.
    var row: UInt32
    var flags: UInt32

    static let developmentFlag: UInt32 = 1
    /// The stored record has flags (a value normalized or dropped): counted in `flagged_postbacks`.
    static let flaggedFlag: UInt32 = 2

    var isDevelopment: Bool { flags & Self.developmentFlag != 0 }
    var isFlagged: Bool { flags & Self.flaggedFlag != 0 }

    static func order(segment: Int, offset: Int) -> UInt64 { UInt64(segment) << 40 | UInt64(offset) & 0xFF_FFFF_FFFF }

    /// Sorts by `precedes` (`Introsort`; the standard library's stable sort through a closure cost
    /// five times as much here). Entries are never equal (order is unique per copy), so stability
    /// does not matter.
    static func sort(_ entries: inout [DedupEntry]) {
        entries.withUnsafeMutableBufferPointer { Introsort.sort($0, by: precedes) }
    }

    @inline(__always)
    static func precedes(_ a: DedupEntry, _ b: DedupEntry) -> Bool {
        if a.hashHigh != b.hashHigh { return a.hashHigh < b.hashHigh }
        if a.hashLow != b.hashLow { return a.hashLow < b.hashLow }
        if a.receivedAt != b.receivedAt { return a.receivedAt < b.receivedAt }
        return a.order < b.order
    }
}
