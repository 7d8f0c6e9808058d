package import Basics

/// The checksum that ends a spool line from record format 3 on: a last member `"crc32":"<8 lower-case
/// hex>"` holding the CRC-32 (`CRC32`, zlib's) of every byte of the line before `"crc32"`, from the
/// opening `{` through the comma. It catches what a parse cannot: a flipped bit that leaves valid
/// JSON (a conversion value's digit, a date), on a local disk or in a copy in a bucket.
///
/// A line that ends with the member is checked whatever its format; a format 3 line must end with
/// it, so a flip in the member's own name or quotes is caught too (the format digit it depends on is
/// covered). Lines of formats 1 and 2 have none and read as before.
package enum SpoolChecksum {
    /// What a line's end says about its bytes.
    package enum Verdict: Sendable, Equatable {
        /// The line does not end with the member.
        case absent
        /// It does, and the CRC matches.
        case valid
        /// It does, and the CRC (or its text) does not match: the line is damaged.
        case mismatch
    }

    /// From the comma to the end: `,"crc32":"` + 8 hex digits + `"}`.
    static let tailLength = 20

    /// Ends `object`, a JSON object's bytes (`}` last, no newline), with the member.
    package static func seal(_ object: inout [UInt8]) {
        precondition(object.last == UInt8(ascii: "}"), "a JSON object")
        object[object.count - 1] = UInt8(ascii: ",")
        let crc = object.withUnsafeBytes { CRC32.checksum($0) }
        object.append(contentsOf: memberTemplate)
        let digits = object.count - 10
        object.withUnsafeMutableBufferPointer { line in
            for index in 0..<8 {
                let digit = UInt8(truncatingIfNeeded: crc >> UInt32(28 - 4 * index)) & 0x0F
                line[digits + index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
            }
        }
    }

    /// What follows the comma, its eight digits still to be filled in.
    private static let memberTemplate: [UInt8] = Array("\"crc32\":\"00000000\"}".utf8)

    /// Whether `line` (without its newline) ends with the member, and if so whether it matches. Read
    /// for every line the nightly job counts: the member's start is compared as two words.
    package static func verdict(_ line: UnsafeRawBufferPointer) -> Verdict {
        let count = line.count
        guard count >= tailLength + 1, let base = line.baseAddress else { return .absent }
        let tail = count - tailLength
        guard base.loadUnaligned(fromByteOffset: tail, as: UInt64.self) == memberWord,
            base.loadUnaligned(fromByteOffset: tail + 8, as: UInt16.self) == memberEnd
        else { return .absent }
        guard line[count - 2] == UInt8(ascii: "\""), line[count - 1] == UInt8(ascii: "}") else { return .mismatch }
        var stored: UInt32 = 0
        for position in (tail + 10)..<(count - 2) {
            let byte = line[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return .mismatch
            }
            stored = stored << 4 | UInt32(digit)
        }
        let covered = UnsafeRawBufferPointer(rebasing: line[..<(tail + 1)])
        return CRC32.checksum(covered) == stored ? .valid : .mismatch
    }

    /// `,"crc32":"`, the member's start after the covered bytes (their last is the comma), as a
    /// little-endian word (`,"crc32"`) and half-word (`:"`): literals, so no lazy global is checked.
    private static let memberWord: UInt64 = 0x2232_3363_7263_222C
    private static let memberEnd: UInt16 = 0x223A
}
