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
        var literals: [UInt32] = []
        var index = 0
        while index < values.count {
            let value = values[index]
            var end = index + 1
            while end < values.count && values[end] == value { end += 1 }
            var run = end - index
            if run >= 8 && literals.count % 8 != 0 {
                // Complete the pending literal group from the run first: only a whole group of 8 may
                // precede a run.
                let take = 8 - literals.count % 8
                for _ in 0..<take { literals.append(value) }
                run -= take
            }
            if run >= 8 {
                flushLiterals(&literals, bitWidth: bitWidth, into: &out)
                appendRun(value, count: run, bitWidth: bitWidth, into: &out)
            } else {
                for _ in 0..<run { literals.append(value) }
            }
            index = end
        }
        flushLiterals(&literals, bitWidth: bitWidth, into: &out)
    }

    /// One RLE run: `value` `count` times (what `encode` writes for 8 or more equal values).
    static func appendRun(_ value: UInt32, count: Int, bitWidth: Int, into out: inout [UInt8]) {
        ParquetBytes.appendULEB128(UInt64(count) << 1, to: &out)
        appendValue(value, bitWidth: bitWidth, into: &out)
    }

    private static func appendValue(_ value: UInt32, bitWidth: Int, into out: inout [UInt8]) {
        for byte in 0..<(bitWidth + 7) / 8 { out.append(UInt8(truncatingIfNeeded: value >> UInt32(8 * byte))) }
    }

    private static func flushLiterals(_ literals: inout [UInt32], bitWidth: Int, into out: inout [UInt8]) {
        guard !literals.isEmpty else { return }
        let groups = (literals.count + 7) / 8
        ParquetBytes.appendULEB128(UInt64(groups) << 1 | 1, to: &out)
        while literals.count < groups * 8 { literals.append(0) }
        appendBitPacked(literals, bitWidth: bitWidth, into: &out)
        literals.removeAll(keepingCapacity: true)
    }

    /// `values` packed with `bitWidth` bits each, least significant bit first (also PLAIN BOOLEAN, width 1).
    static func appendBitPacked(_ values: [UInt32], bitWidth: Int, into out: inout [UInt8]) {
        guard bitWidth > 0 else { return }
        var accumulator: UInt64 = 0
        var bits = 0
        for value in values {
            accumulator |= UInt64(value) << UInt64(bits)
            bits += bitWidth
            while bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator >>= 8
                bits -= 8
            }
        }
        if bits > 0 { out.append(UInt8(truncatingIfNeeded: accumulator)) }
    }
}
