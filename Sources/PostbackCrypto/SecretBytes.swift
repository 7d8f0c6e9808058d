internal import COpenSSL

/// Secrets made and compared through OpenSSL: random bytes from its CSPRNG (`RAND_bytes`), and a
/// comparison whose time does not depend on where two byte strings differ (`CRYPTO_memcmp`), so a
/// caller that checks a presented secret against a stored hash leaks nothing by timing.
package enum SecretBytes {
    /// `count` bytes from OpenSSL's CSPRNG.
    /// - Throws: `CryptoError` when the generator cannot be seeded (it never returns weak bytes).
    package static func random(count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        // RAND_bytes takes an int: a count over Int32.max is refused before calling C.
        guard count >= 0, count <= Int(Int32.max) else {
            throw CryptoError(.library, "random bytes: count out of range", drainingErrorQueue: false)
        }
        let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard status == 1 else { throw CryptoError(.library, "RAND_bytes") }
        return bytes
    }

    /// True when `lhs` and `rhs` hold the same bytes. Lengths are compared first (they are not
    /// secret: every stored hash has the same length); the bytes in constant time.
    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0 }
        }
    }
}
