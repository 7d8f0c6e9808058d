/// Word-at-a-time scans over runs of plain ASCII, the bulk of every postback.
///
/// Eight bytes are tested at once with the classic bit tricks ("has a zero byte", "has a byte less
/// than n"). A flag can spill into higher bytes of a word through a borrow, but the lowest flagged
/// byte is always a real hit, so `trailingZeroBitCount / 8` gives the exact position.
package enum ByteScan {
    /// The position of the first `"`, `\`, control (< 0x20) or non-ASCII byte in `base[start..<end]`,
    /// or `end` if there is none: where a JSON string scanner has to look closer.
    @inlinable
    package static func firstStringSpecial(_ base: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        firstFlagged(base, from: start, end: end, word: stringSpecials) { byte in
            byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80
        }
    }

    /// Like `firstStringSpecial`, and also stopping at DEL (0x7F): where JSON output has to escape.
    @inlinable
    package static func firstToEscape(_ base: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        firstFlagged(
            base, from: start, end: end,
            word: { stringSpecials($0) | zeroBytes($0 ^ 0x7F7F_7F7F_7F7F_7F7F) & 0x8080_8080_8080_8080 }
        ) { byte in
            byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x7F
        }
    }

    @inlinable @inline(__always)
    static func firstFlagged(
        _ base: UnsafePointer<UInt8>, from start: Int, end: Int,
        word flags: (UInt64) -> UInt64, byte isFlagged: (UInt8) -> Bool
    ) -> Int {
        var position = start
        while position + 8 <= end {
            let found = flags(UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self).littleEndian)
            if found != 0 { return position + found.trailingZeroBitCount >> 3 }
            position += 8
        }
        while position < end {
            if isFlagged(base[position]) { return position }
            position += 1
        }
        return end
    }

    /// The position of the first `,` or newline in `base[start..<end]`, or `end`: where an unquoted
    /// CSV field ends.
    @inlinable @inline(__always)
    package static func firstFieldEnd(_ base: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        firstFlagged(
            base, from: start, end: end,
            word: { (zeroBytes($0 ^ 0x2C2C_2C2C_2C2C_2C2C) | zeroBytes($0 ^ 0x0A0A_0A0A_0A0A_0A0A)) & 0x8080_8080_8080_8080 }
        ) { byte in byte == UInt8(ascii: ",") || byte == 0x0A }
    }

    /// Whether every byte is printable ASCII (0x20–0x7E): no control, no DEL, nothing non-ASCII.
    @inlinable
    package static func isPrintableASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return firstFlagged(base, from: 0, end: bytes.count, word: nonPrintables) { $0 < 0x20 || $0 >= 0x7F } == bytes.count
    }

    /// Whether every byte is ASCII (< 0x80), eight at a time.
    @inlinable
    package static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return firstFlagged(base, from: 0, end: bytes.count, word: { $0 & 0x8080_8080_8080_8080 }) { $0 >= 0x80 } == bytes.count
    }

    /// High bit set in each byte of `word` (and possibly above it) that is `"`, `\`, < 0x20 or >= 0x80.
    @inlinable
    package static func stringSpecials(_ word: UInt64) -> UInt64 {
        let quote = word ^ 0x2222_2222_2222_2222
        let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
        return (zeroBytes(quote) | zeroBytes(backslash) | lessThan0x20(word) | word) & 0x8080_8080_8080_8080
    }

    /// High bit set for bytes < 0x20, 0x7F (DEL) or >= 0x80.
    @inlinable
    package static func nonPrintables(_ word: UInt64) -> UInt64 {
        (zeroBytes(word ^ 0x7F7F_7F7F_7F7F_7F7F) | lessThan0x20(word) | word) & 0x8080_8080_8080_8080
    }

    @inlinable
    static func zeroBytes(_ word: UInt64) -> UInt64 { (word &- 0x0101_0101_0101_0101) & ~word }

    @inlinable
    static func lessThan0x20(_ word: UInt64) -> UInt64 { (word &- 0x2020_2020_2020_2020) & ~word }
}
