package import Basics
package import Postbacks

/// The set of dedup keys already stored, in memory, compact enough for tens of millions of keys.
///
/// Keys are `<identifier>:<sequence index>` (`Postback.dedupKey`). Apple's identifiers are UUIDs, which
/// are packed into 16 bytes plus the index and letter case: exact, so no two keys can collide. Any other
/// key (a relay that rewrote the id, a test) is kept as its string. Not thread-safe: one owner (the
/// spool writer's thread) uses it.
///
/// Each key keeps the stored copy's unsigned values (`UnsignedValues`, 4 bytes), so a later copy
/// that disagrees can be told apart from a plain retry (issue 24): a dictionary's 4-byte value per
/// bucket, measured at 8 bytes more per key than a set (resident memory, 2 million UUID keys with
/// reserved capacity: 50.9 → 59.0 bytes a key), some 80 MB per 10 million keys.
package struct DedupIndex: Sendable {
    private struct PackedKey: Hashable, Sendable {
        let high: UInt64
        let low: UInt64
        /// Bits 0–7: the sequence index; bit 8: upper-case hex.
        let tag: UInt16
    }

    /// A quarantine key of a body that did not verify (`QuarantineKey`: `sha256:` and 64 lower-case
    /// hex digits), packed into its 32 bytes: some 50 bytes a key in place of the string's 190.
    private struct PackedDigest: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
                && lhs.words.3 == rhs.words.3
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    private var packed: [PackedKey: UInt32] = [:]
    private var digests: [PackedDigest: UInt32] = [:]
    private var others: [String: UInt32] = [:]

    package init() {}

    package var count: Int { packed.count + digests.count + others.count }

    /// Makes room for `count` keys up front (recovery knows how many it will insert), sparing the
    /// rehashes of a set that grows one key at a time.
    package mutating func reserveCapacity(_ count: Int) { packed.reserveCapacity(count) }

    package func contains(_ key: String) -> Bool { storedValues(key) != nil }

    /// The unsigned values stored with `key`, or nil when the key is not stored.
    package func storedValues(_ key: String) -> UnsignedValues? {
        let raw: UInt32?
        if let packedKey = Self.pack(key) {
            raw = packed[packedKey]
        } else if let digest = Self.packDigest(key) {
            raw = digests[digest]
        } else {
            raw = others[key]
        }
        return raw.map { UnsignedValues(raw: $0) }
    }

    /// Adds `key` with the stored copy's unsigned values; returns false (and keeps the first values)
    /// when it was already there.
    @discardableResult
    package mutating func insert(_ key: String, values: UnsignedValues = .unknown) -> Bool {
        if let packedKey = Self.pack(key) {
            guard packed[packedKey] == nil else { return false }
            packed[packedKey] = values.raw
            return true
        }
        if let digest = Self.packDigest(key) {
            guard digests[digest] == nil else { return false }
            digests[digest] = values.raw
            return true
        }
        guard others[key] == nil else { return false }
        others[key] = values.raw
        return true
    }

    /// `sha256:` and 64 lower-case hex digits (`QuarantineKey`); any other spelling stays a string.
    private static func packDigest(_ key: String) -> PackedDigest? {
        var key = key
        return key.withUTF8 { utf8 -> PackedDigest? in
            guard utf8.count == 71, utf8.starts(with: "sha256:".utf8) else { return nil }
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            for index in 0..<64 {
                let byte = utf8[7 + index]
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
                default: return nil
                }
                switch index / 16 {
                case 0: words.0 = words.0 << 4 | UInt64(nibble)
                case 1: words.1 = words.1 << 4 | UInt64(nibble)
                case 2: words.2 = words.2 << 4 | UInt64(nibble)
                default: words.3 = words.3 << 4 | UInt64(nibble)
                }
            }
            return PackedDigest(words: words)
        }
    }

    /// `8-4-4-4-12` hex digits, all lower or all upper case, then `:` and 1–3 decimal digits (< 256).
    private static func pack(_ key: String) -> PackedKey? {
        var key = key
        return key.withUTF8 { utf8 -> PackedKey? in
            guard utf8.count >= 38, utf8.count <= 40, utf8[36] == UInt8(ascii: ":") else { return nil }
            var high: UInt64 = 0
            var low: UInt64 = 0
            var nibbles = 0
            var sawLower = false
            var sawUpper = false
            for index in 0..<36 {
                let byte = utf8[index]
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"):
                    nibble = byte - UInt8(ascii: "a") + 10
                    sawLower = true
                case UInt8(ascii: "A")...UInt8(ascii: "F"):
                    nibble = byte - UInt8(ascii: "A") + 10
                    sawUpper = true
                default: return nil
                }
                if nibbles < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
                nibbles += 1
            }
            // Mixed case has no canonical packing; keep such keys as strings.
            guard !(sawLower && sawUpper) else { return nil }
            var sequence = 0
            for index in 37..<utf8.count {
                let byte = utf8[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                sequence = sequence * 10 + Int(byte - UInt8(ascii: "0"))
            }
            // Leading zeros ("01") would pack like "1": keep those as strings too.
            guard sequence < 256, utf8.count == 38 || utf8[37] != UInt8(ascii: "0") else { return nil }
            return PackedKey(high: high, low: low, tag: UInt16(sequence) | (sawUpper ? 0x100 : 0))
        }
    }
}

/// The quarantine's dedup index: the keys of the newest `days` UTC days (by the day a copy was
/// received) only. A device's retry comes within hours, and a second quarantined copy costs nothing
/// but disk (the nightly job counts each key once; `reverify` moves every copy, and the nightly job
/// keeps the first); keeping every day's keys would let anyone grow the receiver's memory without
/// bound, since anyone can send a body to quarantine. So a day's keys are dropped once a copy of a
/// later day past the window arrives, and restart reads only the window's segments.
package struct RecentDedupIndex: Sendable {
    /// Today and yesterday (UTC).
    package static let quarantineDays = 2

    package let days: Int
    private var byDay: [UTCDay: DedupIndex] = [:]

    package init(days: Int = quarantineDays) { self.days = days }

    package var count: Int { byDay.values.reduce(0) { $0 + $1.count } }

    /// The first day whose keys are kept when `newest` is the latest day seen.
    package static func firstKeptDay(newest: UTCDay, days: Int = quarantineDays) -> UTCDay { newest.adding(days: 1 - days) }

    package func storedValues(_ key: String) -> UnsignedValues? {
        for index in byDay.values { if let values = index.storedValues(key) { return values } }
        return nil
    }

    /// Adds `key` (received on `day`); a day before the window is not kept.
    @discardableResult
    package mutating func insert(_ key: String, values: UnsignedValues = .unknown, day: UTCDay) -> Bool {
        guard storedValues(key) == nil else { return false }
        if let newest = byDay.keys.max(), day < Self.firstKeptDay(newest: newest, days: days) { return false }
        byDay[day, default: DedupIndex()].insert(key, values: values)
        expire(newest: day)
        return true
    }

    /// Drops the keys of days before the window that ends on `newest` (when it is the latest day).
    package mutating func expire(newest: UTCDay) {
        let first = Self.firstKeptDay(newest: max(newest, byDay.keys.max() ?? newest), days: days)
        for day in byDay.keys where day < first { byDay[day] = nil }
    }
}
