/// A small, fast, seedable generator (Steele, Lea & Flood's SplitMix64). Not for secrets.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A random version-4 UUID in lower case.
    package mutating func uuid() -> String {
        var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: next()) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        func hex(_ range: Range<Int>) -> String { Hex.encode(bytes[range]) }
        return hex(0..<4) + "-" + hex(4..<6) + "-" + hex(6..<8) + "-" + hex(8..<10) + "-" + hex(10..<16)
    }
}
