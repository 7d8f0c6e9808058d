internal import COpenSSL

/// An ECDSA private key: the ad network's own key for signing its ad impressions
/// (`postback impression sign`, docs/impressions.md), and test keys for minting postbacks in tests,
/// samples and benchmarks.
///
/// Nothing in the receiving path signs; Apple's private keys are, of course, not ours. Error messages
/// never quote the key: `CryptoError` names the operation and OpenSSL's error codes only.
package final class ECDSAPrivateKey: @unchecked Sendable {
    // @unchecked Sendable: as for ECDSAPublicKey, the EVP_PKEY is immutable after init and each signing
    // call takes its own EVP_PKEY_CTX from the pool.
    private let key: EVPKey
    private let signContexts: ContextPool<OpaquePointer>

    package let curve: Curve
    /// The matching public key.
    package let publicKey: ECDSAPublicKey

    /// Generates a fresh key on `curve`.
    package convenience init(generatingOn curve: Curve) throws {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError(.library, "EVP_PKEY_CTX_new_from_name(EC)")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_group_name(context, curve.openSSLGroupName) == 1,
            EVP_PKEY_generate(context, &generated) == 1,
            let key = generated
        else { throw CryptoError(.library, "generating a \(curve.rawValue) key") }
        try self.init(owning: EVPKey(taking: key))
    }

    /// Reads a PEM `PRIVATE KEY` (PKCS #8) or `EC PRIVATE KEY` block.
    package convenience init(pemRepresentation pem: String) throws {
        try self.init(owning: EVPKey(privateKeyPEM: pem))
    }

    /// If this throws, `key` is freed with its last holder, like any other.
    /// - Parameter encodePublicHalf: makes the public half's DER SubjectPublicKeyInfo (tests make it fail).
    init(
        owning key: EVPKey,
        encodePublicHalf: (EVPKey) throws -> [UInt8] = ECDSAPublicKey.subjectPublicKeyInfo
    ) throws {
        self.curve = try ECDSAPublicKey.checkedCurve(of: key.pointer, public: false)
        self.publicKey = try ECDSAPublicKey(derRepresentation: try encodePublicHalf(key))
        self.key = key
        self.signContexts = ContextPool {
            guard let context = EVP_PKEY_CTX_new(key.pointer, nil) else { return nil }
            guard EVP_PKEY_sign_init(context) == 1 else {
                EVP_PKEY_CTX_free(context)
                return nil
            }
            return context
        }
    }

    /// PKCS #8 PEM.
    package var pemRepresentation: String {
        PEM.write { bio in PEM_write_bio_PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil) }
    }

    /// A DER ECDSA signature over SHA-256(`message`), as SKAdNetwork sends it.
    package func derSignature(for message: some Collection<UInt8>) throws -> [UInt8] {
        let digest = SHA256.hash(message)
        var signature = [UInt8](repeating: 0, count: 16 + 2 * (curve.coordinateByteCount + 4))
        var length = signature.count
        let ok = signContexts.withContext { context in
            digest.withUnsafeBytes { digestBytes in
                EVP_PKEY_sign(
                    context, &signature, &length,
                    digestBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), digestBytes.count)
            }
        }
        guard ok == 1 else { throw CryptoError(.library, "EVP_PKEY_sign") }
        signature.removeLast(signature.count - length)
        return signature
    }

    /// A raw `r ‖ s` signature over SHA-256(`message`), as a JWS ES256 signature.
    package func rawSignature(for message: some Collection<UInt8>) throws -> [UInt8] {
        let der = try derSignature(for: message)
        guard let raw = ECDSASignature.rawFromDER(der, curve: curve) else {
            throw CryptoError(.library, "OpenSSL produced a DER signature we cannot take apart", drainingErrorQueue: false)
        }
        return raw
    }
}
