/// A 128-bit hash of a byte string (MurmurHash3 x64/128, Austin Appleby's public-domain design).
///
/// Used for dedup keys, where a collision would drop a genuine postback: with 128 bits the chance
/// over a billion keys is about 10⁻²¹, and the dedup spill files stay at 16 bytes a key whatever the
/// key's length. Not a cryptographic hash; the keys it sees are signed identifiers, not attacker
/// choices made to collide (an attacker cannot mint signed identifiers).
package struct Hash128: Sendable, Hashable, Comparable {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    package static func < (lhs: Hash128, rhs: Hash128) -> Bool {
        lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
    }

    package static func of(_ bytes: some Collection<UInt8>) -> Hash128 {
        if let hash = bytes.withContiguousStorageIfAvailable({ of(UnsafeRawBufferPointer($0)) }) { return hash }
        return Array(bytes).withUnsafeBytes { of($0) }
    }

    package static func of(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> Hash128 {
        let c1: UInt64 = 0x87C3_7B91_1142_53D5
        let c2: UInt64 = 0x4CF5_AD43_2745_937F
        var h1 = seed
        var h2 = seed
        let count = bytes.count
        let blocks = count / 16
        for block in 0..<blocks {
            var k1 = bytes.loadUnaligned(fromByteOffset: block * 16, as: UInt64.self).littleEndian
            var k2 = bytes.loadUnaligned(fromByteOffset: block * 16 + 8, as: UInt64.self).littleEndian
            k1 = (k1 &* c1).rotatedLeft(31) &* c2
            h1 ^= k1
            h1 = (h1.rotatedLeft(27) &+ h2) &* 5 &+ 0x52DC_E729
            k2 = (k2 &* c2).rotatedLeft(33) &* c1
            h2 ^= k2
            h2 = (h2.rotatedLeft(31) &+ h1) &* 5 &+ 0x3849_5AB5
        }
        var k1: UInt64 = 0
        var k2: UInt64 = 0
        let tail = blocks * 16
        let remaining = count - tail
        // The reference reads the tail byte by byte into two little-endian words; the same words, loaded whole.
        if remaining >= 8 {
            k1 = bytes.loadUnaligned(fromByteOffset: tail, as: UInt64.self).littleEndian
            for index in stride(from: count - 1, through: tail + 8, by: -1) {
                k2 |= UInt64(bytes[index]) << UInt64((index - tail - 8) * 8)
            }
        } else {
            for index in stride(from: count - 1, through: tail, by: -1) {
                k1 |= UInt64(bytes[index]) << UInt64((index - tail) * 8)
            }
        }
        if count - tail > 8 {
            k2 = (k2 &* c2).rotatedLeft(33) &* c1
            h2 ^= k2
        }
        if count - tail > 0 {
            k1 = (k1 &* c1).rotatedLeft(31) &* c2
            h1 ^= k1
        }
        h1 ^= UInt64(count)
        h2 ^= UInt64(count)
        h1 &+= h2
        h2 &+= h1
        h1 = finalMix(h1)
        h2 = finalMix(h2)
        h1 &+= h2
        h2 &+= h1
        return Hash128(high: h1, low: h2)
    }

    private static func finalMix(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k &*= 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k &*= 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }
}

extension UInt64 {
    @inline(__always) func rotatedLeft(_ count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}
