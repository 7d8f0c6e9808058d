package import Basics
package import PostbackCrypto
package import Reporting

/// One token of the numbers API as the tokens file keeps it: its name, what it may read (a
/// `DataScope`), until when, and a salted SHA-256 of its secret, never the secret itself.
///
/// A token is written `pbk_<id>_<secret>`: `id` (16 hex digits) finds its line, `secret` (64 hex
/// digits, 256 bits from OpenSSL's generator) is what it proves. The file holds
/// `sha256 = SHA-256(salt ":" secret)` with a random salt per token, compared in constant time.
package struct APIToken: Sendable, Equatable {
    package var name: String
    package var id: String
    /// Hex: 16 random bytes.
    package var salt: String
    /// Hex SHA-256 of the salt, `:` and the secret.
    package var sha256: String
    package var scope: DataScope
    /// The last day (UTC) it is accepted; nil: no expiry.
    package var expires: UTCDay?
    package var created: UTCDay
    /// When it was revoked; a revoked token is refused.
    package var revoked: UTCDay?

    static let prefix = "pbk_"
    static let idDigits = 16
    static let secretDigits = 64

    /// A new token: the record to store and the text to print once.
    /// - Throws: `CryptoError` if OpenSSL's generator fails.
    package static func mint(name: String, scope: DataScope, expires: UTCDay?, today: UTCDay) throws(CryptoError) -> (
        record: APIToken, text: String
    ) {
        let id = Hex.encode(try SecretBytes.random(count: idDigits / 2))
        let secret = Hex.encode(try SecretBytes.random(count: secretDigits / 2))
        let salt = Hex.encode(try SecretBytes.random(count: 16))
        let record = APIToken(
            name: name, id: id, salt: salt, sha256: digest(salt: salt, secret: secret), scope: scope, expires: expires,
            created: today, revoked: nil)
        return (record, "\(prefix)\(id)_\(secret)")
    }

    /// The id and secret of a presented token; nil when it is not shaped like one.
    static func parts(of text: String) -> (id: String, secret: String)? {
        let utf8 = Array(text.utf8)
        let prefixBytes = Array(prefix.utf8)
        let length = prefixBytes.count + idDigits + 1 + secretDigits
        guard utf8.count == length, Array(utf8[..<prefixBytes.count]) == prefixBytes,
            utf8[prefixBytes.count + idDigits] == UInt8(ascii: "_")
        else { return nil }
        let id = utf8[prefixBytes.count..<(prefixBytes.count + idDigits)]
        let secret = utf8[(prefixBytes.count + idDigits + 1)...]
        func isHex(_ bytes: ArraySlice<UInt8>) -> Bool {
            bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        guard isHex(id), isHex(secret) else { return nil }
        return (String(decoding: id, as: UTF8.self), String(decoding: secret, as: UTF8.self))
    }

    static func digest(salt: String, secret: String) -> String {
        SHA256.hash(Array("\(salt):\(secret)".utf8)).description
    }

    /// Whether `secret` is this token's, compared in constant time (`SecretBytes.constantTimeEquals`).
    func proves(secret: String) -> Bool {
        SecretBytes.constantTimeEquals(Array(Self.digest(salt: salt, secret: secret).utf8), Array(sha256.utf8))
    }

    /// Names are what the audit log and `token list` show: letters, digits, `.`, `_`, `-`, `@`, 1–64.
    package static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "@")
            }
    }
}
