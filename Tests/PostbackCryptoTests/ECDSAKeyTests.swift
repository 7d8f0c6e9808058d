import PostbackCrypto
import Testing

@Suite struct ECDSAKeyTests {
    @Test(arguments: Curve.allCases) func signsAndVerifiesWithAFreshKey(curve: Curve) throws {
        let key = try ECDSAPrivateKey(generatingOn: curve)
        let message = Array("4.0\u{2063}com.example".utf8)
        let der = try key.derSignature(for: message)
        #expect(key.publicKey.isValidSignature(derSignature: der, for: message))
        #expect(!key.publicKey.isValidSignature(derSignature: der, for: message + [0]))

        let raw = try key.rawSignature(for: message)
        #expect(raw.count == 2 * curve.coordinateByteCount)
        #expect(key.publicKey.isValidSignature(rawSignature: raw, for: message))
        #expect(!key.publicKey.isValidSignature(rawSignature: raw.dropLast(), for: message))
        #expect(!key.publicKey.isValidSignature(rawSignature: [0] + raw, for: message))
    }

    @Test func rejectsAllZeroRawSignature() throws {
        // CVE-2022-21449 ("psychic signatures"): r = s = 0 must never verify.
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        #expect(!key.publicKey.isValidSignature(rawSignature: [UInt8](repeating: 0, count: 64), for: [1, 2, 3]))
    }

    @Test func roundTripsPEM() throws {
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        let reloaded = try ECDSAPrivateKey(pemRepresentation: key.pemRepresentation)
        #expect(reloaded.publicKey.derRepresentation == key.publicKey.derRepresentation)
        let publicOnly = try ECDSAPublicKey(pemRepresentation: key.publicKey.pemRepresentation)
        #expect(publicOnly.derRepresentation == key.publicKey.derRepresentation)
        #expect(key.publicKey.pemRepresentation.hasPrefix("-----BEGIN PUBLIC KEY-----"))
    }

    @Test func rejectsBadKeyMaterial() throws {
        #expect(throws: CryptoError.self) { try ECDSAPublicKey(derRepresentation: []) }
        #expect(throws: CryptoError.self) { try ECDSAPublicKey(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x00]) }
        #expect(throws: CryptoError.self) { try ECDSAPublicKey(pemRepresentation: "not a key") }
        let good = try ECDSAPrivateKey(generatingOn: .p256).publicKey.derRepresentation
        #expect(throws: CryptoError.self) { try ECDSAPublicKey(derRepresentation: good + [0]) }
        var offCurve = good
        offCurve[offCurve.count - 1] ^= 0x01  // y changed: the point is no longer on P-256.
        #expect(throws: CryptoError.self) { try ECDSAPublicKey(derRepresentation: offCurve) }
    }

    @Test func corruptDERMakesOpenSSLReturnAnErrorThatCountsAsInvalid() throws {
        // A DER length that runs past the end makes EVP_PKEY_verify return -1, not 0; it must read as false.
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        var der = try key.derSignature(for: [1])
        der[1] = 0x7F
        #expect(!key.publicKey.isValidSignature(derSignature: der, for: [1]))
        #expect(!key.publicKey.isValidSignature(derSignature: [], for: [1]))
        // A good signature still verifies afterwards: the error queue was cleared.
        #expect(key.publicKey.isValidSignature(derSignature: try key.derSignature(for: [1]), for: [1]))
    }

    @Test func sha256MatchesKnownDigest() {
        #expect(SHA256.hash(Array("abc".utf8)).description == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let hasher = SHA256Hasher()
        hasher.update(Array("a".utf8))
        hasher.update(Array("bc".utf8))
        #expect(hasher.finalize() == SHA256.hash(Array("abc".utf8)))
    }
}
