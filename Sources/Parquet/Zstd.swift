import CZstd

/// zstd (de)compression of page bodies: the only code that calls libzstd.
enum Zstd {
    /// Level 3, zstd's default: a good ratio at CSV-writing speed (levels above it cost far more time).
    static let level: Int32 = 3

    /// A compression context for one file's pages: `ZSTD_compress` would set one up (hundreds of KiB
    /// of tables) for every page. Not shared between threads.
    final class Compressor {
        private let context: OpaquePointer

        init() {
            guard let context = ZSTD_createCCtx() else { preconditionFailure("ZSTD_createCCtx: out of memory") }
            self.context = context
        }

        deinit { ZSTD_freeCCtx(context) }

        /// `input` compressed as one zstd frame (with its content size, so readers can size their buffer).
        func compress(_ input: [UInt8]) -> [UInt8] {
            let bound = ZSTD_compressBound(input.count)
            var failure = 0
            let output = [UInt8](unsafeUninitializedCapacity: bound) { buffer, initialized in
                let written = input.withUnsafeBytes { source in
                    ZSTD_compressCCtx(context, buffer.baseAddress, bound, source.baseAddress, source.count, Zstd.level)
                }
                // Only a too-small destination (impossible with compressBound) or memory exhaustion fail.
                if ZSTD_isError(written) != 0 { failure = written } else { initialized = written }
            }
            precondition(failure == 0, "ZSTD_compressCCtx: \(String(cString: ZSTD_getErrorName(failure)))")
            return output
        }
    }

    /// A page body of `size` bytes (its header says how large it is).
    static func decompress(_ input: [UInt8], size: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        let written = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { source in ZSTD_decompress(out.baseAddress, size, source.baseAddress, source.count) }
        }
        guard ZSTD_isError(written) == 0, written == size else {
            throw ParquetError.unsupported("a zstd page that does not decompress")
        }
        return output
    }
}
