import PostbackCrypto
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// Changing anything that is signed must stop a postback from verifying.
@Suite struct MutationTests {
    /// Valid bodies to mutate: every self-signed layout plus Apple's production examples.
    static func validBodies() throws -> [(name: String, body: [UInt8], verifier: PostbackVerifier)] {
        var bodies: [(String, [UInt8], PostbackVerifier)] = []
        for layout in SelfSignedVectorTests.skanLayouts {
            let p192 = ["1.0", "2.0"].contains(layout.postback.version ?? "1.0")
            bodies.append(
                (layout.name, try (p192 ? TestKeys.signer192 : TestKeys.signer256).sign(layout.postback), TestKeys.devVerifier))
        }
        for name in try Fixtures.appleVectorNames() where name.hasPrefix("skan-") {
            bodies.append((name, try Fixtures.appleVector(name), PostbackVerifier()))
        }
        return bodies
    }

    /// Raw JSON replacements for a member, chosen to stay well-typed so the *signature* is what fails.
    static func replacements(for key: String, current json: String) -> [String] {
        switch key {
        case "redownload", "did-win": return [json == "true" ? "false" : "true"]
        case "fidelity-type": return [json == "1" ? "0" : "1"]
        case "postback-sequence-index": return [json == "0" ? "1" : "0"]
        case "campaign-id": return [json == "42" ? "43" : "42", "\"\(json)0\""]
        case "app-id", "source-app-id": return [json + "1", json == "0" ? "1" : "0"]
        case "version": return []  // changing it changes the layout; covered by typeChanges
        default:
            guard json.hasPrefix("\"") else { return [] }
            let inner = String(json.dropFirst().dropLast())
            return [
                "\"\(inner)x\"",
                "\"\(inner.uppercased() == inner ? inner.lowercased() : inner.uppercased())\"",
                "\"\(inner.dropLast())\"",
            ].filter { $0 != json && $0 != "\"\"" }
        }
    }

    @Test func changingAnySignedFieldNeverVerifies() throws {
        var tried = 0
        for (name, body, verifier) in try Self.validBodies() {
            #expect(verifier.verify(body: body).status == .verified, "\(name) must verify before mutation")
            guard case .skadnetwork(let skan) = try Postback(body: body) else { continue }
            let signedNames = Set(skan.signedFields().map(\.name))
            let original = try EditableBody(body)
            for (key, json) in original.members where signedNames.contains(key) {
                for replacement in Self.replacements(for: key, current: json) {
                    var mutated = original
                    mutated[key] = replacement
                    let result = verifier.verify(body: mutated.bytes)
                    #expect(result.status != .verified, "\(name): \(key) \(json) → \(replacement) still verified")
                    tried += 1
                }
            }
        }
        #expect(tried > 150)
    }

    @Test func addingOrDroppingAnOptionalSignedFieldNeverVerifies() throws {
        var tried = 0
        for (name, body, verifier) in try Self.validBodies() {
            guard case .skadnetwork(let skan) = try Postback(body: body), skan.version >= .v2_0 else { continue }
            var mutated = try EditableBody(body)
            if mutated["source-app-id"] != nil {
                mutated["source-app-id"] = nil
            } else if mutated["source-domain"] != nil {
                mutated["source-domain"] = nil
            } else if skan.didWin != false {
                mutated["source-app-id"] = "1234567891"
            } else {
                continue
            }
            #expect(verifier.verify(body: mutated.bytes).status != .verified, "\(name)")
            tried += 1
        }
        #expect(tried > 10)
    }

    /// Spec / reliability finding 6: drop `source-domain` and smuggle it into `redownload` after a
    /// U+2063; a lax verifier that stringifies values would rebuild the original message.
    @Test func fieldShiftedAcrossTheSeparatorIsRejected() throws {
        var forged = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        forged["source-domain"] = nil
        forged["redownload"] = "\"false\\u2063example.com\""
        let result = PostbackVerifier().verify(body: forged.bytes)
        #expect(result.status == .malformed)
        #expect(result.reason?.contains("redownload") == true)

        // The same shift inside string fields: a U+2063, raw or escaped, is refused wherever it appears.
        for (key, value) in [
            ("ad-network-id", "com.example\u{2063}5239"), ("transaction-id", "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30\u{2063}false"),
        ] {
            for spelling in [value, value.replacingOccurrences(of: "\u{2063}", with: "\\u2063")] {
                var shifted = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
                shifted[key] = "\"\(spelling)\""
                let verdict = PostbackVerifier().verify(body: shifted.bytes)
                #expect(verdict.status == .malformed)
                #expect(verdict.reason?.contains("U+2063") == true, "\(verdict.reason ?? "")")
            }
        }
    }

    /// Type changes that cannot be rendered as the signed text stay malformed. (The same signed text
    /// in another JSON form, `"1"` for 1 or the number 4.0, verifies: see `sameSignedTextInAnotherFormVerifies`.)
    @Test(arguments: [
        ("redownload", "\"False\""), ("did-win", "1"), ("fidelity-type", "\"01\""), ("fidelity-type", "1.0"),
        ("source-identifier", "5239.0"), ("postback-sequence-index", "\" 0\""), ("app-id", "525463029.0"),
        ("app-id", "5.25463029e8"), ("redownload", "0"), ("did-win", "null"), ("source-domain", "[\"example.com\"]"),
    ])
    func typeChangesAreMalformed(key: String, json: String) throws {
        var mutated = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        mutated[key] = json
        let result = PostbackVerifier().verify(body: mutated.bytes)
        #expect(result.status == .malformed || result.status == .invalidSignature)
        #expect(result.status != .verified)
        if key != "source-domain" || json != "null" {
            #expect(result.status == .malformed, "\(key) = \(json): \(result.reason ?? "")")
        }
    }

    /// The same signed text in another JSON form verifies, with a `normalized` flag naming the field.
    @Test(arguments: [
        ("version", "4.0"), ("redownload", "\"false\""), ("did-win", "\"true\""), ("fidelity-type", "\"1\""),
        ("postback-sequence-index", "\"0\""), ("app-id", "\"525463029\""),
        // Issue 24 item 5: the number 5239 has the signed text "5239".
        ("source-identifier", "5239"),
    ])
    func sameSignedTextInAnotherFormVerifies(key: String, json: String) throws {
        var mutated = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        mutated[key] = json
        let result = PostbackVerifier().verify(body: mutated.bytes)
        #expect(result.status == .verified, "\(key) = \(json): \(result.reason ?? "")")
        #expect(result.flags.map(\.field.rawValue) == [key])
        #expect(result.flags.map(\.action) == [.normalized])
    }

    @Test func everySignatureBitFlipFails() throws {
        let body = try Fixtures.appleVector("skan-3.0_apple-doc_winning.json")
        let skan = try #require(try Postback(body: body).skadnetwork)
        let original = try EditableBody(body)
        for bit in 0..<(skan.attributionSignature.count * 8) {
            var signature = skan.attributionSignature
            signature[bit / 8] ^= UInt8(1 << (bit % 8))
            var mutated = original
            mutated["attribution-signature"] = "\"\(Base64.encode(signature, alphabet: .standard))\""
            #expect(PostbackVerifier().verify(body: mutated.bytes).status == .invalidSignature, "bit \(bit)")
        }
    }

    @Test func jwsMutationsNeverVerify() throws {
        let body = try Fixtures.appleVector("aak_apple-doc_developer-settings_apple-development-identifier-1.json")
        let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))
        #expect(verifier.verify(body: body).status == .verified)
        let original = try EditableBody(body)
        let jws = String(original["jws-string"]!.dropFirst().dropLast())
        var tried = 0
        // Every character of the JWS replaced by another base64url character.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for (index, character) in jws.enumerated() where character != "." {
            var characters = Array(jws)
            characters[index] =
                alphabet[(alphabet.firstIndex(of: character)! + 1 + index % (alphabet.count - 1)) % alphabet.count]
            var mutated = original
            mutated["jws-string"] = "\"\(String(characters))\""
            let r = verifier.verify(body: mutated.bytes)
            #expect(
                r.status != .verified, "position \(index) of \(jws.count) \(character)->\(characters[index]) \(r.keyName ?? "")")
            tried += 1
        }
        #expect(tried > 600)
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
