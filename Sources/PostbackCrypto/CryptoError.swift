internal import COpenSSL

/// A failure inside OpenSSL or in key material handed to it.
///
/// Signature checks never throw: a signature that does not verify is a `false` result. Errors are for
/// things that are wrong with the *setup*: a key that does not parse, a curve we do not support, an
/// allocation that failed.
package struct CryptoError: Error, CustomStringConvertible, Sendable {
    /// What we were doing, e.g. "parsing SubjectPublicKeyInfo".
    package let operation: String
    /// OpenSSL's error queue at the time of failure, most recent last, formatted by `ERR_error_string_n`.
    package let openSSLErrors: [String]

    init(_ operation: String, drainingErrorQueue: Bool = true) {
        self.operation = operation
        self.openSSLErrors = drainingErrorQueue ? CryptoError.drainErrorQueue() : []
    }

    /// A private key protected by a passphrase, which the program cannot use.
    static let encryptedKey = CryptoError(encryptedKeyOperation, drainingErrorQueue: false)
    private static let encryptedKeyOperation = "the key is encrypted (a passphrase-protected PEM block)"

    /// Whether this is the refusal of an encrypted private key (`ECDSAPrivateKey(pemRepresentation:)`).
    package var isEncryptedKey: Bool { operation == Self.encryptedKeyOperation && openSSLErrors.isEmpty }

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
