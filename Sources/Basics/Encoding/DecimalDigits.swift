/// An integer's decimal digits appended to bytes, without making a `String` first: JSON output and
/// signed strings write integers by the thousand.
package enum DecimalDigits {
    package static func append(_ value: Int64, to bytes: inout [UInt8]) {
        // Written backwards into a buffer on the stack, then appended in one copy. 24 bytes hold
        // Int64.min's 19 digits and its sign.
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &buffer) { digits in
            var position = digits.count
            var magnitude = value.magnitude
            repeat {
                position -= 1
                digits[position] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                position -= 1
                digits[position] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[position...]))
        }
    }
}
