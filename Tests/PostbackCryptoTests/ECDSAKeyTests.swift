import Foundation
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
        let good = try ECDSAPrivateKey(generatingOn: .p256).publicKey.derRepresentation
        var offCurve = good
        offCurve[offCurve.count - 1] ^= 0x01  // y changed: the point is no longer on P-256.
        let refused: [(String, () throws -> ECDSAPublicKey)] = [
            ("empty", { try ECDSAPublicKey(derRepresentation: []) }),
            ("an INTEGER", { try ECDSAPublicKey(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x00]) }),
            ("no PEM block", { try ECDSAPublicKey(pemRepresentation: "not a key") }),
            ("a byte after the key", { try ECDSAPublicKey(derRepresentation: good + [0]) }),
            ("off the curve", { try ECDSAPublicKey(derRepresentation: offCurve) }),
        ]
        for (name, make) in refused {
            let error = #expect(throws: CryptoError.self, "\(name)") { _ = try make() }
            #expect(error?.code == .invalidKey, "\(name)")
        }
    }

    @Test func encryptedPrivateKeysAreRefusedAsSuch() throws {
        let pem = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"
        let error = #expect(throws: CryptoError.self) { _ = try ECDSAPrivateKey(pemRepresentation: pem) }
        #expect(error?.code == .encryptedKey)
        let plain = #expect(throws: CryptoError.self) { _ = try ECDSAPrivateKey(pemRepresentation: "not a key") }
        #expect(plain?.code == .invalidKey)
    }

    /// Valid keys on curves Apple does not use, made with `openssl ecparam -genkey`.
    static let foreignCurveKeys = [
        (
            "secp256k1",
            "MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEA9OlflmbPVZuJ41/5nD9mWFuMHvJHc9k3PCpG5YZluPUHE8k02ZqRppN5KAbENXoKNRzBcEJ/yBY4RJEtA33YQ=="
        ),
        (
            "brainpoolP256r1",
            "MFowFAYHKoZIzj0CAQYJKyQDAwIIAQEHA0IABJYJy5bmpxPN+hr1z6j0nGdKmUaFLq52UC0Dr3nxbUsZqL/Ruf33K9gFIHiZCZijTaAUCCYDwdC4Ha7/gg+qIrc="
        ),
        (
            "secp384r1",
            "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE+Gn9VpSH9Px1lALCh55uoS9wp4MJ/f7w8F/fvD57R2s8lSGD1zWI5ucHHgLSkNQkgcs0HK9DQti7fp7xvyn8YImHdLcf+6w321xp90fPAbQaXp9vQyVH+Bll8Gf7FAD2"
        ),
    ]

    @Test func keysOnOtherCurvesOfTheSameSizeAreRefused() throws {
        // Only the curve's identity counts: a 256-bit secp256k1 key must not pass for P-256.
        for (name, base64) in Self.foreignCurveKeys {
            let der = try #require(Data(base64Encoded: base64), "\(name)")
            let error = #expect(throws: CryptoError.self, "\(name)") { try ECDSAPublicKey(derRepresentation: Array(der)) }
            #expect(error?.code == .unsupportedCurve, "\(name)")
        }
        let p256 = try ECDSAPrivateKey(generatingOn: .p256).publicKey
        #expect(try ECDSAPublicKey(derRepresentation: p256.derRepresentation).curve == .p256)
        // P-256 spelled out as explicit parameters is still P-256: OpenSSL matches it to the named curve.
        let explicitP256 = try #require(
            Data(
                base64Encoded:
                    "MIIBSzCCAQMGByqGSM49AgEwgfcCAQEwLAYHKoZIzj0BAQIhAP////8AAAABAAAAAAAAAAAAAAAA////////////////MFsEIP////8AAAABAAAAAAAAAAAAAAAA///////////////8BCBaxjXYqjqT57PrvVV2mIa8ZR0GsMxTsPY7zjw+J9JgSwMVAMSdNgiG5wSTamZ44ROdJreBn36QBEEEaxfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpZP40Li/hp/m47n60p8D54WK84zV2sxXs7LtkBoN79R9QIhAP////8AAAAA//////////+85vqtpxeehPO5ysL8YyVRAgEBA0IABIxQzQjWAmQhIdUsucE4CGneCVsxDZRmFPE3VRPvJwjkaxgWSvGfIOrZGV1hNZ48bdMkHuFAZSmG0N8zCf0NxKw="
            ))
        #expect(try ECDSAPublicKey(derRepresentation: Array(explicitP256)).curve == .p256)
        let p192 = try ECDSAPrivateKey(generatingOn: .p192).publicKey
        #expect(try ECDSAPublicKey(derRepresentation: p192.derRepresentation).curve == .p192)
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
