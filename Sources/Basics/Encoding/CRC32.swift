import CCRC32

/// CRC-32 as zlib computes it (ISO-HDLC, the reflected IEEE 802.3 polynomial): the same function as
/// Python's `zlib.crc32` and Spark SQL's `crc32`, so every reader of the spool checks a line alike.
/// Computed in C (`CCRC32`): folded with carry-less multiplication where the CPU has it, zlib otherwise.
package enum CRC32 {
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress else { return 0 }
        return postback_crc32(base, bytes.count)
    }
}
