import CCRC32
import PostbackTesting
import Testing

@testable import Basics

/// The spool lines' CRC-32: the folded path against zlib's own loop over every length up to 2 KiB
/// and random contents and alignments, both against a bit-by-bit reference, and the folding
/// constants derived from the polynomial.
@Suite struct CRC32Tests {
    @Test func theFoldedPathAgreesWithZlibAndTheReference() {
        #expect(postback_crc32_folds() == 1, "this CPU should take the folded path (PCLMULQDQ), or it is not tested here")
        var random = SplitMix64(seed: 0x4352_4333_32)
        let buffer = (0..<4200).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        var disagreements: [String] = []
        buffer.withUnsafeBytes { bytes in
            for count in 0...2100 {
                for offset in [0, 1, 7, 13] {
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
                    let folded = CRC32.checksum(slice)
                    let zlib = postback_crc32_zlib(slice.baseAddress!, slice.count)
                    if folded != zlib { disagreements.append("\(count) bytes at \(offset): \(folded) vs \(zlib)") }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count): \(disagreements.prefix(3))")
        // Both against the definition, bit by bit, on a few lengths around the folding steps.
        for count in [0, 1, 15, 16, 63, 64, 65, 79, 80, 127, 128, 129, 1000, 4096] {
            let bytes = Array(buffer.prefix(count))
            #expect(bytes.withUnsafeBytes { CRC32.checksum($0) } == Self.reference(bytes), "\(count) bytes")
        }
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926, "the check value")
        // All zeros and all ones are where a folding mistake shows least in random data.
        for byte: UInt8 in [0x00, 0xFF] {
            let bytes = [UInt8](repeating: byte, count: 1500)
            #expect(bytes.withUnsafeBytes { CRC32.checksum($0) } == Self.reference(bytes))
        }
    }

    @Test func theFoldingConstantsFollowFromThePolynomial() {
        var constants = [UInt64](repeating: 0, count: 7)
        postback_crc32_constants(&constants)
        let polynomial: UInt64 = 0x1_04C1_1DB7
        /// x^n mod P, bit-reflected in 32 bits, shifted left by one (the paper's form).
        func folding(_ n: Int) -> UInt64 {
            var remainder: UInt64 = 1
            for _ in 0..<n {
                remainder <<= 1
                if remainder & (1 << 32) != 0 { remainder ^= polynomial }
            }
            return reflected(remainder, bits: 32) << 1
        }
        // µ = floor(x^64 / P), by long division over GF(2).
        var dividend = [Bool](repeating: false, count: 65)
        dividend[64] = true
        var quotient: UInt64 = 0
        for degree in stride(from: 64, through: 32, by: -1) where dividend[degree] {
            quotient |= 1 << UInt64(degree - 32)
            for bit in 0...32 where polynomial >> UInt64(bit) & 1 == 1 { dividend[degree - 32 + bit].toggle() }
        }
        let expected = [
            folding(4 * 128 + 32), folding(4 * 128 - 32), folding(128 + 32), folding(128 - 32), folding(64),
            reflected(polynomial, bits: 33), reflected(quotient, bits: 33),
        ]
        #expect(constants == expected, "\(constants.map { String($0, radix: 16) }) vs \(expected.map { String($0, radix: 16) })")
    }

    private func reflected(_ value: UInt64, bits: Int) -> UInt64 {
        (0..<bits).reduce(0) { result, bit in result | ((value >> UInt64(bit)) & 1) << UInt64(bits - 1 - bit) }
    }

    /// CRC-32 one bit at a time (the reflected polynomial 0xEDB88320).
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
