import Foundation
import PostbackCrypto
import TestSupport
import Testing

@testable import Postbacks

/// Apple's published postbacks: the golden vectors.
@Suite struct AppleVectorTests {
    /// Every published example that is not named `negative_*` verifies with Apple's key.
    @Test func everyPositiveAppleExampleVerifies() throws {
        let names = try Fixtures.appleVectorNames().filter { !$0.hasPrefix("negative_") }
        #expect(names.count >= 7)
        let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))
        for name in names {
            let result = verifier.verify(body: try Fixtures.appleVector(name))
            #expect(result.status == .verified, "\(name): \(result.reason ?? "")")
            let expectedKey =
                name.hasPrefix("aak_")
                ? "apple-development-identifier/1" : name.hasPrefix("skan-") ? "apple-skadnetwork-p256" : "?"
            #expect(result.keyName == expectedKey, "\(name)")
            #expect(result.environment == (name.hasPrefix("aak_") ? .development : .production), "\(name)")
        }
    }

    /// Published examples that are known not to verify, each failing for its own reason (spec §6.2).
    @Test func everyNegativeAppleExampleFailsForTheRightReason() throws {
        let expected: [String: VerificationStatus] = [
            // A hand-edited illustration: kid apple-cas-identifier/0, but the signature is not Apple's.
            "negative_aak_apple-doc_cas0-illustrative.json": .invalidSignature,
            // The 2020 placeholder signature, reused in MMP docs: P-192, does not verify.
            "negative_skan-1.0_apple-doc-2020-placeholder.json": .invalidSignature,
            // The 4.0 high-tier example with a garbage signature.
            "negative_skan-4.0_bad-signature.json": .invalidSignature,
        ]
        let names = try Fixtures.appleVectorNames().filter { $0.hasPrefix("negative_") }
        #expect(Set(names) == Set(expected.keys), "every negative vector needs an expected verdict")
        let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))
        for name in names {
            let result = verifier.verify(body: try Fixtures.appleVector(name))
            #expect(result.status == expected[name], "\(name): \(result.status) \(result.reason ?? "")")
        }
    }

    @Test func developmentExampleIsUntrustedWithoutAllowDev() throws {
        let body = try Fixtures.appleVector("aak_apple-doc_developer-settings_apple-development-identifier-1.json")
        let result = PostbackVerifier().verify(body: body)
        #expect(result.status == .untrustedKey)
        #expect(result.reason?.contains("--allow-dev") == true)
    }

    /// The messages we build for Apple's examples are exactly the ones in spec §3.2.
    @Test(arguments: [
        (
            "skan-2.1_whisk-skadnetwork-testdata.json",
            "2.1⁣com.example⁣42⁣525463029⁣6aafb7a5-0170-41b5-bbe4-fe71dedf1e28⁣true⁣1234567891"
        ),
        ("skan-2.2_apple-doc.json", "2.2⁣com.example⁣42⁣525463029⁣6aafb7a5-0170-41b5-bbe4-fe71dedf1e28⁣true⁣1234567891⁣1"),
        (
            "skan-3.0_apple-doc_winning.json",
            "3.0⁣example123.skadnetwork⁣42⁣525463029⁣6aafb7a5-0170-41b5-bbe4-fe71dedf1e28⁣true⁣1234567891⁣1⁣true"
        ),
        (
            "skan-3.0_apple-doc_nonwinning.json",
            "3.0⁣example123.skadnetwork⁣42⁣525463029⁣f9ac267a-a889-44ce-b5f7-0166d11461f0⁣true⁣1⁣false"
        ),
        (
            "skan-4.0_apple-doc_web-ad-tier-high.json",
            "4.0⁣com.example⁣5239⁣525463029⁣6aafb7a5-0170-41b5-bbe4-fe71dedf1e30⁣false⁣example.com⁣1⁣true⁣0"
        ),
        (
            "skan-4.0_apple-doc_web-ad-tier-low.json",
            "4.0⁣com.example⁣39⁣525463029⁣6aafb7a5-0170-41b5-bbe4-fe71dedf1e31⁣false⁣example.com⁣1⁣true⁣0"
        ),
    ])
    func signedMessageMatchesTheSpec(name: String, message: String) throws {
        #expect(message.unicodeScalars.contains("\u{2063}"))
        guard case .skadnetwork(let skan) = try Postback(body: try Fixtures.appleVector(name)) else {
            Issue.record("\(name) is not SKAdNetwork")
            return
        }
        #expect(skan.signedMessage() == Array(message.utf8))
    }

    /// The negative checks of spec §6.3: near-miss messages for a genuine signature all fail.
    @Test func nearMissMessagesFailAgainstAGenuineSignature() throws {
        let body = try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")
        let skan = try #require(try Postback(body: body).skadnetwork)
        let key = AppleKeyring.shared[.skadnetworkP256]
        #expect(key.isValidSignature(derSignature: skan.attributionSignature, for: skan.signedMessage()))
        var values = skan.signedFields().map(\.value)
        let variants: [[String]] = [
            values.map { $0 == "false" ? "0" : $0 == "true" ? "1" : $0 },  // booleans as 1/0
            values.map { $0 == "true" ? "True" : $0 == "false" ? "False" : $0 },  // Python's str(bool)
            values.filter { $0 != "example.com" },  // dropping source-domain
            values + ["63"],  // appending conversion-value
            {
                var v = values
                v[0] = "4"
                return v
            }(),  // version "4" instead of "4.0"
            {
                var v = values
                v.insert("", at: 6)
                return v
            }(),  // an empty element
        ]
        for variant in variants {
            #expect(!key.isValidSignature(derSignature: skan.attributionSignature, for: SKAdNetworkPostback.join(variant)))
        }
        // U+200B instead of U+2063.
        let zeroWidth = Array(values.joined(separator: "\u{200B}").utf8)
        #expect(!key.isValidSignature(derSignature: skan.attributionSignature, for: zeroWidth))
        values.removeAll()
    }

    @Test func unsignedConversionValueChangeStillVerifies() throws {
        // The reason the first copy must win (spec §7.9): conversion values are not signed.
        var body = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        body["conversion-value"] = "1"
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == .verified)
        let skan = try #require(result.postback?.skadnetwork)
        #expect(skan.conversionValue == 1)
    }
}

@Suite struct KeyFileTests {
    /// `Keys/*.pem` and the compiled-in keys are the same bytes, and every compiled-in key has a file.
    @Test(arguments: AppleKey.allCases) func keyFileMatchesCompiledInKey(key: AppleKey) throws {
        let url = Fixtures.root.appendingPathComponent("Keys/\(key.fileName)")
        let fromFile = try ECDSAPublicKey(pemRepresentation: String(contentsOf: url, encoding: .utf8))
        #expect(fromFile.derRepresentation == AppleKeyring.shared[key].derRepresentation)
        #expect(fromFile.curve == (key == .skadnetworkP192 ? .p192 : .p256))
    }

    @Test func productionKeysAreTheOnesApplePublished() {
        // Spec §3.3: the P-256 point, decoded.
        let der = AppleKeyring.shared[.skadnetworkP256].derRepresentation
        let x = der.suffix(64).prefix(32).map { String(format: "%02x", $0) }.joined()
        #expect(x == "59da7c18f706aa6860cc4163f59da74a941575d6b268f7b814ccea33dc226f5f")
        #expect(AppleKeyring.shared[.casIdentifier0].derRepresentation == der)
        let p192 = AppleKeyring.shared[.skadnetworkP192].derRepresentation
        #expect(
            p192.suffix(48).prefix(24).map { String(format: "%02x", $0) }.joined()
                == "3321c3eb6e6ebec986ab80b8ddc43d0677cddb1b25553e55")
    }
}
