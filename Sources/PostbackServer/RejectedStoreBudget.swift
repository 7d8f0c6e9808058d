import Basics
import Locking
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps the rejected spool from taking the disk the verified postbacks need. Anyone can send junk,
/// and every rejection is stored for audits; so per UTC day, rejected records may take
/// `rejectedBytesPerDay`: whole bodies (up to `rejectedBodyKeepBytes`, a prefix beyond that) until
/// 7/8 of it, then only each body's hash and size, and at the budget nothing more. One client (see
/// `ClientAddress`; one spelling per address, an IPv6 client is its /64: `IPAddress.client`) gets whole bodies for `rejectedBytesPerClientPerDay` only, so a single
/// flooder cannot spend the budget that records everyone else's rejections. And none is written
/// while the data directory's free space is below `reservedFreeBytes`. Every cut is counted.
final class RejectedStoreBudget: Sendable {
    enum Decision: Equatable {
        case store
        /// Store the hash-only form of the record.
        case storeHashOnly
        case skip(reason: String)
    }

    private let configuration: ServerConfiguration
    /// Bytes of rejected records accepted for the day (this receiver's, including what it found on
    /// disk for that day at start).
    private let spent: Locked<Spent>

    private struct Spent {
        var day: UTCDay
        var bytes: Int
        /// Whole-record bytes by client address, this day. At most `maximumClients` entries; later
        /// clients share the entry "" (so the map is bounded whatever the addresses).
        var byClient: [String: Int] = [:]
    }

    static let maximumClients = 65_536

    /// - Parameter spool: the spool whose records it admits (`rejected`, or `unverifiable`, which gets a
    ///   budget of its own: anyone can send a body claiming an unknown version).
    init(
        configuration: ServerConfiguration, layout: StoreLayout, spool: StoreLayout.Spool = .rejected,
        today: UTCDay = UTCTimestamp.now().day
    ) {
        self.configuration = configuration
        var bytes = 0
        if let segments = try? layout.segments(spool, day: today) {
            for segment in segments {
                var info = stat()
                if stat(segment.path, &info) == 0 { bytes += Int(info.st_size) }
            }
        }
        spent = Locked(Spent(day: today, bytes: bytes))
    }

    /// Whether a rejected record of `wholeBytes` (or `hashOnlyBytes()` in its hash-only form; nil when
    /// the record has none) may be written on `day`; what is admitted is counted against the day's budget.
    func admit(wholeBytes: Int, day: UTCDay, client: String, hashOnlyBytes: (() -> Int)?) -> Decision {
        let budget = configuration.rejectedBytesPerDay
        let decision = spent.withLock { spent -> Decision in
            if day != spent.day { spent = Spent(day: day, bytes: 0) }
            let client = IPAddress.client(client, ipv6PrefixLength: configuration.clientIPv6PrefixLength)
            let key = spent.byClient[client] != nil || spent.byClient.count < Self.maximumClients ? client : ""
            let clientBytes = spent.byClient[key] ?? 0
            if spent.bytes + wholeBytes <= budget - budget / 8,
                clientBytes + wholeBytes <= configuration.rejectedBytesPerClientPerDay
            {
                spent.bytes += wholeBytes
                spent.byClient[key] = clientBytes + wholeBytes
                return .store
            }
            guard let hashOnlyBytes = hashOnlyBytes?() else { return .skip(reason: "daily-budget") }
            if spent.bytes + hashOnlyBytes <= budget {
                spent.bytes += hashOnlyBytes
                return .storeHashOnly
            }
            return .skip(reason: "daily-budget")
        }
        if decision != .skip(reason: "daily-budget"), freeBytes() < configuration.reservedFreeBytes + wholeBytes {
            return .skip(reason: "free-space-floor")
        }
        return decision
    }

    private func freeBytes() -> Int {
        var info = statvfs()
        guard statvfs(configuration.dataDirectory, &info) == 0 else { return 0 }
        return Int(clamping: UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize)).partialValue)
    }
}
