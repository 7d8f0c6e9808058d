import PostbackTesting
import Testing

@testable import Basics
@testable import Postbacks

/// The word-at-a-time scans against the obvious byte loop: every byte value at every position of a
/// word and of the tail, behind runs of plain ASCII, plus random buffers with borrows to spill.
@Suite struct ByteScanTests {
    static func isStringSpecial(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80
    }

    static func isToEscape(_ byte: UInt8) -> Bool { isStringSpecial(byte) || byte == 0x7F }

    static func naiveFirst(_ bytes: [UInt8], from start: Int, where flagged: (UInt8) -> Bool) -> Int {
        bytes[start...].firstIndex(where: flagged) ?? bytes.count
    }

    static func check(_ bytes: [UInt8], from start: Int = 0) {
        bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            #expect(
                ByteScan.firstStringSpecial(base, from: start, end: bytes.count)
                    == naiveFirst(bytes, from: start, where: isStringSpecial),
                "firstStringSpecial \(bytes) from \(start)")
            #expect(
                ByteScan.firstToEscape(base, from: start, end: bytes.count) == naiveFirst(bytes, from: start, where: isToEscape),
                "firstToEscape \(bytes) from \(start)")
            let printable = bytes[start...].allSatisfy { $0 >= 0x20 && $0 < 0x7F }
            #expect(
                ByteScan.isPrintableASCII(UnsafeBufferPointer(rebasing: buffer[start...])) == printable,
                "isPrintableASCII \(bytes) from \(start)")
        }
    }

    @Test func everyByteValueAtEveryPosition() {
        for length in [1, 7, 8, 9, 16, 21] {
            for position in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = UInt8(value)
                    Self.check(bytes)
                    if position > 0 { Self.check(bytes, from: 1) }
                }
            }
        }
    }

    @Test func borrowsSpillingPastARealHitDoNotMoveIt() {
        // A control byte below a byte just above a threshold: the subtraction's borrow flags the
        // higher byte too; the scan must still report the lower one.
        for low in [UInt8(0x00), 0x1F, 0x22, 0x5C, 0x7F, 0x80] {
            for high in [UInt8(0x20), 0x21, 0x23, 0x5D, 0x7E, 0x01] {
                for position in 0..<7 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: 16)
                    bytes[position] = low
                    bytes[position + 1] = high
                    Self.check(bytes)
                }
            }
        }
    }

    @Test func randomBuffers() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 40)
            // Mostly printable ASCII, with an occasional byte from anywhere.
            let bytes = (0..<length).map { _ -> UInt8 in
                let roll = generator.next()
                return roll % 11 == 0 ? UInt8(truncatingIfNeeded: roll >> 8) : UInt8(0x20 + (roll >> 8) % 0x5F)
            }
            Self.check(bytes, from: length > 0 ? Int(generator.next() % UInt64(length)) : 0)
        }
    }
}
