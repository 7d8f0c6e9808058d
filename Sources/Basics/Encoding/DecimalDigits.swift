/// An integer's decimal digits appended to bytes, without making a `String` first: JSON output and
/// signed strings write integers by the thousand.
package enum DecimalDigits {
    package static func append(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 1
        var scratch = magnitude / 10
        while scratch > 0 {
            scratch /= 10
            digits += 1
        }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: digits))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var position = start + digits - 1
            repeat {
                buffer[position] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
                position -= 1
            } while magnitude > 0
        }
    }
}
