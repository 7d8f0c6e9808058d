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

    /// `,"crc32":"`, the member's start after the covered bytes (their last is the comma).
    private static let memberStart: [UInt8] = Array(",\"crc32\":\"".utf8)
    /// From the comma to the end: `,"crc32":"` + 8 hex digits + `"}`.
    static let tailLength = 20

    /// Ends `object`, a JSON object's bytes (`}` last, no newline), with the member.
    package static func seal(_ object: inout [UInt8]) {
        precondition(object.last == UInt8(ascii: "}"), "a JSON object")
        object.removeLast()
        object.append(UInt8(ascii: ","))
        let crc = object.withUnsafeBytes { CRC32.checksum($0) }
        object.append(contentsOf: memberStart.dropFirst())
        for shift in stride(from: 28, through: 0, by: -4) {
            let digit = UInt8(truncatingIfNeeded: crc >> UInt32(shift)) & 0x0F
            object.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
        }
        object.append(UInt8(ascii: "\""))
        object.append(UInt8(ascii: "}"))
    }

    /// Whether `line` (without its newline) ends with the member, and if so whether it matches.
    package static func verdict(_ line: UnsafeRawBufferPointer) -> Verdict {
        let count = line.count
        guard count >= tailLength + 1 else { return .absent }
        let tail = count - tailLength
        for (offset, byte) in memberStart.enumerated() where line[tail + offset] != byte { return .absent }
        guard line[count - 2] == UInt8(ascii: "\""), line[count - 1] == UInt8(ascii: "}") else { return .mismatch }
        var stored: UInt32 = 0
        for position in (tail + memberStart.count)..<(count - 2) {
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
}
