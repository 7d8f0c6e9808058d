import CZlib

/// CRC-32 as zlib computes it (ISO-HDLC, the IEEE 802.3 polynomial): the same function as Python's
/// `zlib.crc32` and Spark SQL's `crc32`, so every reader of the spool checks a line alike. Debian's
/// zlib computes it at about 4 GB/s here. The only code that calls zlib.
package enum CRC32 {
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard var next = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
        var crc: UInt = 0
        var left = bytes.count
        while left > 0 {  // zlib takes a 32-bit length
            let chunk = min(left, 1 << 30)
            crc = crc32(crc, next, UInt32(chunk))
            next += chunk
            left -= chunk
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}
