internal import COpenSSL

/// An EVP_PKEY this program owns, freed by `deinit` when the last holder lets go: the key object, and
/// the pool's factory closure that captures it. Wrapped the moment OpenSSL hands the pointer over, so
/// an initializer that throws half way (before the key object owns it) cannot leak it.
final class EVPKey: @unchecked Sendable {
    // EVP_PKEY is read-only after construction; see ECDSAPublicKey.
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }
}

extension EVPKey {
    /// Reads a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo).
    convenience init(publicKeyPEM pem: String) throws {
        self.init(taking: try PEM.read(pem, what: "PUBLIC KEY") { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) })
    }

    /// Reads a PEM `PRIVATE KEY` (PKCS #8) or `EC PRIVATE KEY` block.
    /// An encrypted key (`ENCRYPTED PRIVATE KEY`, PKCS #8 EncryptedPrivateKeyInfo, or a SEC1 block
    /// with `Proc-Type: 4,ENCRYPTED`) is refused as such (`CryptoError.Code.encryptedKey`); OpenSSL is
    /// given a passphrase callback that declines, so it never prompts on a terminal.
    convenience init(privateKeyPEM pem: String) throws {
        if PEM.isEncryptedPrivateKey(pem) { throw CryptoError.encryptedKey }
        self.init(
            taking: try PEM.read(pem, what: "PRIVATE KEY") { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil) }
        )
    }
}
