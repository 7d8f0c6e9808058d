import Testing

@testable import PostbackCrypto

/// An initializer that takes an OpenSSL key and then throws must not leak the key. Each step that can
/// throw after the key was taken is made to throw here; the key must be gone afterwards (and
/// LeakSanitizer, in scripts/sanitizers, sees the EVP_PKEY itself).
@Suite struct KeyOwnershipTests {
    struct InjectedFailure: Error {}

    /// Runs `initializer` on a fresh key that only it holds; returns whether the key was freed after
    /// the initializer threw (true) — it must throw.
    private func keyIsFreed(afterThrowing initializer: (EVPKey) throws -> Void, pem: String, isPrivate: Bool) throws -> Bool {
        weak var released: EVPKey?
        try {
            let key = isPrivate ? try EVPKey(privateKeyPEM: pem) : try EVPKey(publicKeyPEM: pem)
            released = key
            #expect(throws: (any Error).self) { try initializer(key) }
        }()
        return released == nil
    }

    @Test func aPublicKeyWhoseEncodingFailsIsFreed() throws {
        let pem = try ECDSAPrivateKey(generatingOn: .p256).publicKey.pemRepresentation
        #expect(
            try keyIsFreed(
                afterThrowing: { key in
                    _ = try ECDSAPublicKey(owning: key, curve: .p256, encode: { _ in throw InjectedFailure() })
                }, pem: pem, isPrivate: false))
    }

    @Test func aPrivateKeyWhosePublicHalfFailsIsFreed() throws {
        let pem = try ECDSAPrivateKey(generatingOn: .p256).pemRepresentation
        // The public half cannot be encoded.
        #expect(
            try keyIsFreed(
                afterThrowing: { key in
                    _ = try ECDSAPrivateKey(owning: key, encodePublicHalf: { _ in throw InjectedFailure() })
                }, pem: pem, isPrivate: true))
        // The public half is encoded but is not a key.
        #expect(
            try keyIsFreed(
                afterThrowing: { key in
                    _ = try ECDSAPrivateKey(owning: key, encodePublicHalf: { _ in [0x30, 0x00] })
                }, pem: pem, isPrivate: true))
    }

    @Test func aPublicKeyPassedAsPrivateIsRefusedAndFreed() throws {
        let pem = try ECDSAPrivateKey(generatingOn: .p256).publicKey.pemRepresentation
        #expect(try keyIsFreed(afterThrowing: { key in _ = try ECDSAPrivateKey(owning: key) }, pem: pem, isPrivate: false))
    }

    @Test func aKeyThatInitializesIsKeptUntilItsOwnerGoes() throws {
        let pem = try ECDSAPrivateKey(generatingOn: .p256).pemRepresentation
        weak var released: EVPKey?
        var owner: ECDSAPrivateKey? = try {
            let key = try EVPKey(privateKeyPEM: pem)
            released = key
            return try ECDSAPrivateKey(owning: key)
        }()
        #expect(released != nil)
        let message: [UInt8] = [1, 2, 3]
        #expect(owner!.publicKey.isValidSignature(derSignature: try owner!.derSignature(for: message), for: message))
        owner = nil
        #expect(released == nil)
    }
}
