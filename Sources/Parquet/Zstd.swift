import CZstd

/// zstd (de)compression of page bodies: the only code that calls libzstd.
enum Zstd {
    /// Level 3, zstd's default: a good ratio at CSV-writing speed (levels above it cost far more time).
    static let level: Int32 = 3

    /// `input` compressed as one zstd frame (with its content size, so readers can size their buffer).
    static func compress(_ input: [UInt8]) -> [UInt8] {
        let bound = ZSTD_compressBound(input.count)
        var output = [UInt8](repeating: 0, count: bound)
        let written = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { source in
                ZSTD_compress(out.baseAddress, bound, source.baseAddress, source.count, level)
            }
        }
        // Only a too-small destination (impossible with compressBound) or memory exhaustion fail.
        precondition(ZSTD_isError(written) == 0, "ZSTD_compress: \(String(cString: ZSTD_getErrorName(written)))")
        output.removeSubrange(written...)
        return output
    }

    /// A page body of `size` bytes (its header says how large it is).
    static func decompress(_ input: [UInt8], size: Int) throws(ParquetError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        let written = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { source in ZSTD_decompress(out.baseAddress, size, source.baseAddress, source.count) }
        }
        guard ZSTD_isError(written) == 0, written == size else { throw .unsupported("a zstd page that does not decompress") }
        return output
    }
}
