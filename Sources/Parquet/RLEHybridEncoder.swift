/// Parquet's RLE / bit-packing hybrid (Encodings.md, "Run Length Encoding / Bit-Packing Hybrid"):
/// definition levels and dictionary indices. A value repeated 8 times or more becomes an RLE run
/// (`varint(count << 1)`, then the value in ⌈width / 8⌉ little-endian bytes); everything else goes
/// into bit-packed runs of groups of 8 values (`varint(groups << 1 | 1)`, then the values packed
/// least significant bit first). Only the last bit-packed run may be padded (with zeros): a reader
/// stops at the page's value count.
enum RLEHybridEncoder {
    /// The bits needed for values up to `maximum` (0 for 0).
    static func bitWidth(forMaximum maximum: Int) -> Int { maximum == 0 ? 0 : Int.bitWidth - maximum.leadingZeroBitCount }

    /// Appends `values` (each < 2^`bitWidth`) encoded with `bitWidth` bits.
    static func encode(_ values: [UInt32], bitWidth: Int, into out: inout [UInt8]) {
        precondition((0...32).contains(bitWidth))
        values.withUnsafeBufferPointer { values in
            // The pending literals are always values[literalStart..<index]: a run that completes their
            // last group gives them its first values, which come right after them.
            var literalStart = 0
            var index = 0
            while index < values.count {
                let value = values[index]
                var end = index + 1
                while end < values.count && values[end] == value { end += 1 }
                var run = end - index
                var literalEnd = index
                let pending = index - literalStart
                if run >= 8 && pending % 8 != 0 {
                    // Complete the pending literal group from the run first: only a whole group of 8
                    // may precede a run.
                    let take = 8 - pending % 8
                    literalEnd += take
                    run -= take
                }
                if run >= 8 {
                    flushLiterals(
                        UnsafeBufferPointer(rebasing: values[literalStart..<literalEnd]), bitWidth: bitWidth, into: &out)
                    appendRun(value, count: run, bitWidth: bitWidth, into: &out)
                    literalStart = end
                }
                index = end
            }
            flushLiterals(UnsafeBufferPointer(rebasing: values[literalStart...]), bitWidth: bitWidth, into: &out)
        }
    }

    /// One RLE run: `value` `count` times (what `encode` writes for 8 or more equal values).
    static func appendRun(_ value: UInt32, count: Int, bitWidth: Int, into out: inout [UInt8]) {
        ParquetBytes.appendULEB128(UInt64(count) << 1, to: &out)
        appendValue(value, bitWidth: bitWidth, into: &out)
    }

    private static func appendValue(_ value: UInt32, bitWidth: Int, into out: inout [UInt8]) {
        for byte in 0..<(bitWidth + 7) / 8 { out.append(UInt8(truncatingIfNeeded: value >> UInt32(8 * byte))) }
    }

    /// One bit-packed run of `literals`, padded with zeros to whole groups of 8.
    private static func flushLiterals(_ literals: UnsafeBufferPointer<UInt32>, bitWidth: Int, into out: inout [UInt8]) {
        guard !literals.isEmpty else { return }
        let groups = (literals.count + 7) / 8
        ParquetBytes.appendULEB128(UInt64(groups) << 1 | 1, to: &out)
        appendBitPacked(literals, padding: groups * 8 - literals.count, bitWidth: bitWidth, into: &out)
    }

    /// `values` packed with `bitWidth` bits each, least significant bit first (also PLAIN BOOLEAN, width 1).
    static func appendBitPacked(_ values: [UInt32], bitWidth: Int, into out: inout [UInt8]) {
        values.withUnsafeBufferPointer { appendBitPacked($0, padding: 0, bitWidth: bitWidth, into: &out) }
    }

    /// `values`, then `padding` zeros, packed with `bitWidth` bits each.
    private static func appendBitPacked(
        _ values: UnsafeBufferPointer<UInt32>, padding: Int, bitWidth: Int, into out: inout [UInt8]
    ) {
        guard bitWidth > 0 else { return }
        out.reserveCapacity(out.count + ((values.count + padding) * bitWidth + 7) / 8)
        var accumulator: UInt64 = 0
        var bits = 0
        func pack(_ value: UInt32) {
            accumulator |= UInt64(value) << UInt64(bits)
            bits += bitWidth
            while bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator >>= 8
                bits -= 8
            }
        }
        for value in values { pack(value) }
        for _ in 0..<padding { pack(0) }
        if bits > 0 { out.append(UInt8(truncatingIfNeeded: accumulator)) }
    }
}
