internal import COpenSSL

/// A failure inside OpenSSL or in key material handed to it: a closed `code` to branch on, what we were
/// doing (`operation`), and OpenSSL's error queue at the time.
///
/// Signature checks never throw: a signature that does not verify is a `false` result. Errors are for
/// things that are wrong with the *setup*: a key that does not parse, a curve we do not support, an
/// allocation that failed.
package struct CryptoError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, for callers to branch on; the message is for people.
    package enum Code: Sendable, Hashable {
        /// The bytes or text are not a key this module reads (no PEM block, bad DER, not an EC key, a
        /// point off its curve, explicit curve parameters).
        case invalidKey
        /// A well-formed EC key on a curve other than P-192 and P-256.
        case unsupportedCurve
        /// A private key protected by a passphrase, which the program cannot use.
        case encryptedKey
        /// OpenSSL failed at something that does not depend on its input (allocation, encoding, signing).
        case library
        /// The kernel refused a process setting (`prctl`).
        case system
    }

    package let code: Code
    /// What we were doing, e.g. "parsing SubjectPublicKeyInfo".
    package let operation: String
    /// OpenSSL's error queue at the time of failure, most recent last, formatted by `ERR_error_string_n`.
    package let openSSLErrors: [String]

    init(_ code: Code, _ operation: String, drainingErrorQueue: Bool = true) {
        self.code = code
        self.operation = operation
        self.openSSLErrors = drainingErrorQueue ? CryptoError.drainErrorQueue() : []
    }

    /// A private key protected by a passphrase, which the program cannot use.
    static let encryptedKey = CryptoError(
        .encryptedKey, "the key is encrypted (a passphrase-protected PEM block)", drainingErrorQueue: false)

    package var description: String {
        openSSLErrors.isEmpty ? operation : "\(operation): \(openSSLErrors.joined(separator: "; "))"
    }

    /// Empties this thread's OpenSSL error queue. Failed verifications leave entries there; left alone
    /// they would pile up and later be blamed on an unrelated call.
    static func drainErrorQueue() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages
    }
}
