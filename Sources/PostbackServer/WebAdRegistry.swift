import Basics
import Dispatch
import Foundation
import Locking
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// The web ads the ad network registered (`web_ads`), which `get-signed-payload` answers for.
///
/// The file is JSON Lines, one web ad per line in the form `postback impression sign` takes
/// (`version` 4.0 or later, `ad-network-id`, `source-identifier`, `itunes-item-id`, `nonce`,
/// `source-domain`, `fidelity-type` 1, `timestamp`): the values the ad server chose when it served
/// the link, whose `attributionSourceNonce` is the nonce in Base64URL. Ads are found by nonce.
///
/// The file is read whole at start (a bad line refuses the start). After that a loader thread, never
/// a request, looks at it every `pollInterval`: bytes appended since the last look are read and their
/// complete lines added (a line still being written waits for its newline; a bad line is skipped and
/// counted); a file replaced (another inode) or truncated (smaller than what was read) is read anew
/// into a new table that replaces the old one only when every line of it reads. A request only looks
/// a nonce up in the table as it stands: it never waits for the file.
///
/// Memory is bounded per ad and in all: each ad is kept compactly (its nonce as 16 bytes, its
/// domain and network id shared between ads, numbers as numbers; about 120 bytes with the table's
/// share), and at most `limit` ads (`web_ads_limit`) are kept: past it, the ads registered first
/// expire, counted in `expired` (`postback_web_ads_expired_total`).
final class WebAdRegistry: Sendable {
    let path: String
    let limit: Int
    private let log: ServerLog?

    /// A registered web ad, without what every web ad has (`fidelity-type` 1) or what the key holds (the nonce).
    struct Ad: Sendable {
        let adNetworkID: String
        let sourceDomain: String
        let itunesItemID: Int64
        let timestamp: Int64
        let sourceIdentifier: Int16
        let version: SKAdNetworkVersion
    }

    /// A nonce's 16 bytes: the table's key.
    struct Nonce: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        /// From the lower-case dashed UUID form (what `ParsedImpression` and `WebAdRequest` give).
        init?(_ uuid: String) {
            var high: UInt64 = 0
            var low: UInt64 = 0
            var digits = 0
            for byte in uuid.utf8 where byte != UInt8(ascii: "-") {
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                if digits < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
                digits += 1
            }
            guard digits == 32 else { return nil }
            self.high = high
            self.low = low
        }

        var shard: Int { Int(truncatingIfNeeded: (high ^ low) & UInt64(Table.shardCount - 1)) }
    }

    /// The ads by nonce, in shards with a lock each: the loader adds a batch to a shard while
    /// requests read the others, and a shard grows (rehashes) without stopping the rest.
    final class Table: Sendable {
        static let shardCount = 64
        let shards: [Locked<[Nonce: Ad]>] = (0..<shardCount).map { _ in Locked([:]) }

        func ad(_ nonce: Nonce) -> Ad? { shards[nonce.shard].withLock { $0[nonce] } }
    }

    /// What the loader keeps between looks; only the loader (and `init`) touch it.
    private struct LoaderState {
        var table = Table()
        /// The file as last read: its inode, and the offset after its last complete line.
        var inode: UInt64 = 0
        var offset: Int64 = 0
        /// The version of a replaced file that did not read, so it is not read (and logged) again.
        var refused: (inode: UInt64, size: Int64)?
        /// The file's mode was last found to let others write it (logged once until it is fixed).
        var modeRefused = false
        /// The nonces in the order they were added, oldest at `head`: the first to expire.
        var order: [Nonce] = []
        var head = 0
        /// Network ids and domains already seen, so ads share one copy.
        var strings: [String: String] = [:]
        var count: Int { order.count - head }
    }

    /// What `/metrics` and tests read.
    struct Status: Sendable {
        var registered = 0
        var expired = 0
        var skippedLines = 0
    }

    private let current: Locked<Table>
    private let loader: Locked<LoaderState>
    private let status: Locked<Status>
    private let pollInterval: Double
    private let stopSignal = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let running = Locked(false)

    /// The most bytes read from the file at once: a large append is taken in pieces.
    static let chunkBytes = 1 << 20
    /// The longest line taken as an ad; a longer one is skipped.
    static let maximumLineBytes = 64 << 10

    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads the file; a file others may write, an unreadable file or a bad line refuses the start
    /// (`ServerError`). Then starts the loader thread (`stop()` ends it).
    init(path: String, limit: Int = 1_000_000, pollInterval: Double = 0.1, log: ServerLog?) throws(ServerError) {
        self.path = path
        self.limit = max(1, limit)
        self.pollInterval = pollInterval
        self.log = log
        var state = LoaderState()
        let status = Locked(Status())
        do {
            try Self.checkMode(path)
            try Self.load(path, into: &state, limit: self.limit, full: true, status: status, log: nil)
        } catch { throw ServerError("web_ads \(error.description)") }
        current = Locked(state.table)
        loader = Locked(state)
        status.withLock { $0.registered = state.count }
        self.status = status
        running.withLock { $0 = true }
        let thread = Thread { [self] in run() }
        thread.name = "web-ads-loader"
        thread.start()
    }

    var count: Int { status.withLock { $0.registered } }
    var currentStatus: Status { status.withLock { $0 } }

    /// The registered web ad with this nonce (lower-case dashed UUID), from the table as it stands.
    func impression(nonce: String) -> SKAdNetworkImpression? {
        guard let key = Nonce(nonce), let ad = current.withLock({ $0 }).ad(key) else { return nil }
        return SKAdNetworkImpression(
            version: ad.version, adNetworkID: ad.adNetworkID, sourceIdentifier: Int64(ad.sourceIdentifier),
            itunesItemID: ad.itunesItemID, nonce: nonce, sourceDomain: ad.sourceDomain, fidelityType: 1,
            timestamp: ad.timestamp)
    }

    /// Ends the loader thread (the server's shutdown); idempotent.
    func stop() {
        guard
            running.withLock({ was in
                defer { was = false }
                return was
            })
        else { return }
        stopSignal.signal()
        stopped.wait()
    }

    private func run() {
        while stopSignal.wait(timeout: .now() + pollInterval) == .timedOut { poll() }
        stopped.signal()
    }

    /// One look at the file: appended lines added, a replaced or truncated file read anew.
    func poll() {
        var info = stat()
        guard stat(path, &info) == 0 else { return }  // renamed away for a moment, or gone: keep the ads
        let inode = UInt64(info.st_ino)
        let size = Int64(info.st_size)
        loader.withLock { state in
            if inode == state.inode, size >= state.offset {
                guard size > state.offset else { return }
                // A file made writable by others since it was read: nothing more is taken from it.
                do { try Self.checkMode(path) } catch {
                    if !state.modeRefused {
                        state.modeRefused = true
                        log?.error(
                            "web ads file not read: the ads read before stay in service",
                            ["path": .string(path), "error": .string(String(describing: error))])
                    }
                    return
                }
                state.modeRefused = false
                do {
                    try Self.load(path, into: &state, limit: limit, full: false, status: status, log: log)
                } catch {
                    log?.error("web ads file not read", ["path": .string(path), "error": .string(String(describing: error))])
                }
            } else {
                if let refused = state.refused, refused.inode == inode, refused.size == size { return }
                var fresh = LoaderState()
                do {
                    try Self.checkMode(path)
                    try Self.load(path, into: &fresh, limit: limit, full: true, status: status, log: nil)
                } catch {
                    // The same bad file is not read (and logged) again until it changes.
                    state.refused = (inode, size)
                    log?.error(
                        "web ads file not re-read: the ads read before stay in service",
                        ["path": .string(path), "error": .string(String(describing: error))])
                    return
                }
                state = fresh
                current.withLock { $0 = fresh.table }
                log?.info("web ads re-read", ["path": .string(path), "ads": .int(fresh.count)])
            }
            let registered = state.count
            status.withLock { $0.registered = registered }
        }
    }

    /// A `web_ads` file its group or others may write is refused, like a group-readable key.
    static func checkMode(_ path: String) throws(ReadError) {
        if let refusal = SigningFileMode.refusal(path, rule: .ownerWritable, what: path) {
            throw ReadError(description: refusal)
        }
    }

    /// Reads the file from `state.offset` (0 for `full`) to its last complete line into
    /// `state.table`. With `full`, any bad line throws (the file is refused as a whole); appended
    /// lines that are bad are skipped, counted and logged.
    private static func load(
        _ path: String, into state: inout LoaderState, limit: Int, full: Bool, status: Locked<Status>?, log: ServerLog?
    ) throws(ReadError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ReadError(description: SystemCallError(operation: "open", path: path, errorNumber: errno).description)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ReadError(description: SystemCallError(operation: "fstat", path: path, errorNumber: errno).description)
        }
        if full {
            state.inode = UInt64(info.st_ino)
            state.offset = 0
        }
        var skipped = 0
        var firstSkipped = ""
        func refuse(_ reason: String, line: Int, full: Bool) throws(ReadError) {
            guard !full else { throw ReadError(description: "\(path):\(line): \(reason)") }
            if skipped == 0 { firstSkipped = reason }
            skipped += 1
        }
        // One line in the log per look, however many lines were skipped.
        defer {
            if skipped > 0 {
                status?.withLock { $0.skippedLines += skipped }
                log?.warning(
                    "web ads lines skipped: the other appended ads are in service",
                    ["path": .string(path), "lines": .int(skipped), "first": .string(firstSkipped)])
            }
        }
        var lineNumberBase = 0  // the line's number in the file (for a full read)
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: chunkBytes)
        var position = state.offset
        var skipping = false  // inside an over-long line
        while true {
            let read = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, chunkBytes, off_t(position)) }
            if read < 0 {
                if errno == EINTR { continue }
                throw ReadError(description: SystemCallError(operation: "read", path: path, errorNumber: errno).description)
            }
            guard read > 0 else { break }
            position += Int64(read)
            var start = 0
            let bytes = chunk[0..<read]
            while let newline = bytes[start...].firstIndex(of: 0x0A) {
                defer { start = newline + 1 }
                lineNumberBase += 1
                if skipping {
                    skipping = false
                    pending.removeAll(keepingCapacity: true)
                    try refuse("a line longer than \(maximumLineBytes) bytes", line: lineNumberBase, full: full)
                    continue
                }
                let line: ArraySlice<UInt8>
                if pending.isEmpty {
                    line = bytes[start..<newline]
                } else {
                    pending.append(contentsOf: bytes[start..<newline])
                    line = pending[...]
                }
                do { try add(line, to: &state, limit: limit, status: status) } catch {
                    try refuse(error.description, line: lineNumberBase, full: full)
                }
                pending.removeAll(keepingCapacity: true)
            }
            if !skipping {
                pending.append(contentsOf: bytes[start...])
                if pending.count > maximumLineBytes {
                    skipping = true
                    pending.removeAll()
                }
            }
            // Only complete lines are taken: the offset stays at the start of an unfinished one
            // (past an over-long one: its rest is skipped as a bad line on the next look).
            state.offset = skipping ? position : position - Int64(pending.count)
            // Appended ads are served as each piece is read, so the count shows them as they come
            // (a large append takes a while on a slow host); a full read is not in service yet.
            if !full {
                let registered = state.count
                status?.withLock { $0.registered = registered }
            }
        }
    }

    /// One line: blank is nothing, a web ad is added (expiring the oldest past `limit`), anything else throws.
    private static func add(
        _ line: ArraySlice<UInt8>, to state: inout LoaderState, limit: Int, status: Locked<Status>?
    ) throws(ReadError) {
        var line = line
        if line.last == 0x0D { line = line.dropLast() }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { return }
        let parsed: ParsedImpression
        do { parsed = try ParsedImpression(record: line) } catch { throw ReadError(description: error.reason) }
        guard case .skadnetwork(let impression) = parsed, impression.kind == .webAd, let domain = impression.sourceDomain,
            let sourceIdentifier = impression.sourceIdentifier, let nonce = Nonce(impression.nonce)
        else {
            throw ReadError(description: "not a web ad (a SKAdNetwork 4.0 impression with source-domain)")
        }
        let table = state.table
        func shared(_ text: String) -> String {
            if let known = state.strings[text] { return known }
            // Sharing saves memory only; past the limit the map starts again rather than grow.
            if state.strings.count >= limit { state.strings.removeAll() }
            state.strings[text] = text
            return text
        }
        let ad = Ad(
            adNetworkID: shared(impression.adNetworkID), sourceDomain: shared(domain), itunesItemID: impression.itunesItemID,
            timestamp: impression.timestamp, sourceIdentifier: Int16(sourceIdentifier), version: impression.version)
        let added = table.shards[nonce.shard].withLock { ads -> Bool in
            guard ads[nonce] == nil else { return false }
            ads[nonce] = ad
            return true
        }
        guard added else { throw ReadError(description: "nonce \(impression.nonce) is registered twice") }
        state.order.append(nonce)
        var expired = 0
        while state.count > limit {
            let oldest = state.order[state.head]
            state.head += 1
            _ = table.shards[oldest.shard].withLock { $0.removeValue(forKey: oldest) }
            expired += 1
        }
        if state.head > 4096, state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
        if expired > 0 { status?.withLock { $0.expired += expired } }
    }
}
