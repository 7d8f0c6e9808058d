import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// The rule that protects the user: the signature decides authenticity, unsigned fields never veto
/// it. Each case is one of Apple's signed examples (real signatures) with one field changed the way
/// real senders and relays do.
@Suite struct UnsignedFieldTests {
    struct Edit: CustomTestStringConvertible, Sendable {
        let vector: String
        let key: String
        let json: String?
        /// "field action" of the one flag expected.
        let flag: String
        var testDescription: String { "\(vector): \(key) = \(json ?? "absent")" }
    }

    static let skan40 = "skan-4.0_apple-doc_web-ad-tier-high.json"
    static let skan30 = "skan-3.0_apple-doc_winning.json"
    static let skan22 = "skan-2.2_apple-doc.json"
    static let aak = "aak_apple-doc_developer-settings_apple-development-identifier-1.json"

    static let edits: [Edit] = [
        Edit(vector: skan40, key: "coarse-conversion-value", json: "\"HIGH\"", flag: "coarse-conversion-value normalized"),
        Edit(vector: skan40, key: "conversion-value", json: "64", flag: "conversion-value dropped"),
        Edit(vector: skan40, key: "conversion-value", json: "\"63\"", flag: "conversion-value normalized"),
        Edit(vector: skan30, key: "conversion-value", json: "\"63\"", flag: "conversion-value normalized"),
        Edit(vector: skan22, key: "conversion-value", json: "-3", flag: "conversion-value dropped"),
        Edit(vector: skan40, key: "country-code", json: "\"USA\"", flag: "country-code dropped"),
        Edit(vector: skan30, key: "country-code", json: "\"us\"", flag: "country-code normalized"),
        Edit(vector: skan40, key: "fidelity-type", json: "\"1\"", flag: "fidelity-type normalized"),
        Edit(vector: skan30, key: "did-win", json: "\"true\"", flag: "did-win normalized"),
        Edit(vector: skan40, key: "postback-sequence-index", json: "\"0\"", flag: "postback-sequence-index normalized"),
        Edit(vector: skan22, key: "redownload", json: "\"true\"", flag: "redownload normalized"),
        Edit(vector: skan22, key: "coarse-conversion-value", json: "\"low\"", flag: "coarse-conversion-value dropped"),
        Edit(vector: aak, key: "ad-interaction-type", json: "\"CLICK\"", flag: "ad-interaction-type normalized"),
        Edit(vector: aak, key: "ad-interaction-type", json: "\"engaged-view\"", flag: "ad-interaction-type dropped"),
        Edit(vector: aak, key: "coarse-conversion-value", json: "\"HIGH\"", flag: "coarse-conversion-value normalized"),
        Edit(vector: aak, key: "country-code", json: "\"USA\"", flag: "country-code dropped"),
        Edit(vector: aak, key: "conversion-value", json: "64", flag: "conversion-value dropped"),
    ]

    static let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))

    @Test(arguments: edits) func unsignedEditVerifiesWithItsFlag(_ edit: Edit) throws {
        var body = try EditableBody(try Fixtures.appleVector(edit.vector))
        // Apple sends a coarse value instead of a fine one: the example's fine value makes way.
        if edit.key == "coarse-conversion-value", edit.vector != Self.skan22 { body["conversion-value"] = nil }
        body[edit.key] = edit.json
        let result = Self.verifier.verify(body: body.bytes)
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(
            result.flags.map { "\($0.field.rawValue) \($0.action.rawValue)" } == [edit.flag], "\(result.flags.map(\.summary))")
        #expect(result.quarantineReason == nil)
    }

    /// The same bodies with a signed field changed: invalid-signature, whatever the unsigned fields say.
    @Test(arguments: edits) func signedEditIsInvalidWhateverTheUnsignedFieldsSay(_ edit: Edit) throws {
        var body = try EditableBody(try Fixtures.appleVector(edit.vector))
        body[edit.key] = edit.json
        if edit.vector == Self.aak {
            // One byte of the signed payload segment changed (to another valid base64url text).
            let jws = String(body["jws-string"]!.dropFirst().dropLast())
            var parts = jws.split(separator: ".").map(String.init)
            var payload = try #require(Base64.decode(parts[1], alphabet: .url).value)
            let index = payload.firstIndex(of: UInt8(ascii: "3"))!
            payload[index] = UInt8(ascii: "4")
            parts[1] = Base64.encode(payload, alphabet: .url)
            body["jws-string"] = "\"" + parts.joined(separator: ".") + "\""
        } else {
            body["app-id"] = "525463028"
        }
        let result = Self.verifier.verify(body: body.bytes)
        #expect(result.status == .invalidSignature, "\(result.reason ?? "verified")")
        #expect(result.reason?.contains("does not verify") == true)
        #expect(result.flags.contains { "\($0.field.rawValue) \($0.action.rawValue)" == edit.flag || $0.action == .normalized })
    }

    /// A UTF-8 byte-order mark in front of a body is outside the JSON: verified, flagged.
    @Test(arguments: [skan40, skan30, skan22, aak]) func byteOrderMarkIsSkipped(vector: String) throws {
        let body = [0xEF, 0xBB, 0xBF] + (try Fixtures.appleVector(vector))
        let result = Self.verifier.verify(body: body)
        #expect(result.status == .verified)
        #expect(result.flags.map(\.summary) == ["body EF BB BF normalized (UTF-8 byte-order mark skipped)"])
    }

    /// A SKAdNetwork 1.0 postback (self-signed P-192: Apple published no 1.0 example that verifies)
    /// with `"version": null`, as one MMP's forwarding API writes it.
    @Test func nullVersionIsA1_0Postback() throws {
        var postback = SKAdNetworkTestPostback(version: nil, transactionID: "a1b2c3d4-0000-4000-8000-000000000010")
        postback.campaignID = 10
        var body = try EditableBody(try TestKeys.signer192.sign(postback))
        #expect(TestKeys.devVerifier.verify(body: body.bytes).status == .verified)
        body["version"] = "null"
        let result = TestKeys.devVerifier.verify(body: body.bytes)
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.version == "1.0")
        body["campaign-id"] = "11"
        #expect(TestKeys.devVerifier.verify(body: body.bytes).status == .invalidSignature)
    }

    /// SKAdNetwork 4.0, window 1, carrying a fine value: the fine value is dropped, the postback counts.
    @Test func fineValueInALaterWindowIsDropped() throws {
        var postback = SKAdNetworkTestPostback.v4(
            transactionID: "a1b2c3d4-0000-4000-8000-000000000011", sourceIdentifier: "5239", sequenceIndex: 1)
        postback.conversionValue = 42
        let result = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(postback))
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(
            result.flags.map(\.summary) == [
                "conversion-value 42 dropped (only the first postback carries a fine value; postback-sequence-index is 1)"
            ])
        #expect(result.postback?.attribution.fineValue == nil)
    }

    /// Apple: "Nonwinning postbacks don't contain conversion values" (docs/postback-spec.md). A value
    /// on a non-winning postback, fine or coarse, SKAdNetwork or AdAttributionKit, was added on the
    /// way: dropped and flagged; the signature still decides, so the postback verifies and counts.
    @Test func valuesOnNonWinningPostbacksAreDropped() throws {
        var skan = SKAdNetworkTestPostback.v4(
            transactionID: "a1b2c3d4-0000-4000-8000-000000000012", sourceIdentifier: "5239", didWin: false)
        skan.coarseConversionValue = "high"
        let coarse = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(skan))
        #expect(coarse.status == .verified, "\(coarse.reason ?? "")")
        #expect(
            coarse.flags.map(\.summary) == [
                #"coarse-conversion-value "high" dropped (a non-winning postback never carries coarse-conversion-value)"#
            ])
        #expect(coarse.postback?.attribution.coarseValue == nil && coarse.postback?.attribution.didWin == false)

        for (fine, coarse) in [(Int?(7), String?.none), (nil, "medium"), (7, "low")] {
            let body = try FieldRuleTests.aakBody {
                $0.didWin = false
                $0.conversionValue = fine
                $0.coarseConversionValue = coarse
            }
            let result = TestKeys.devVerifier.verify(body: body)
            #expect(result.status == .verified, "\(result.reason ?? "")")
            let attribution = try #require(result.postback?.attribution)
            #expect(attribution.fineValue == nil && attribution.coarseValue == nil && attribution.didWin == false)
            #expect(result.flags.count == [fine != nil, coarse != nil].filter { $0 }.count, "\(result.flags.map(\.summary))")
            #expect(
                result.flags.allSatisfy { $0.action == .dropped && $0.note.contains("non-winning") },
                "\(result.flags.map(\.summary))")
        }
    }

    /// The normalized value is the one aggregation sees.
    @Test func normalizedValuesReachTheAttribution() throws {
        var body = try EditableBody(try Fixtures.appleVector(Self.skan40))
        body["conversion-value"] = nil
        body["coarse-conversion-value"] = "\"Medium\""
        body["country-code"] = "\"de\""
        let attribution = try #require(Self.verifier.verify(body: body.bytes).postback?.attribution)
        #expect(attribution.coarseValue == .medium)
        #expect(attribution.countryCode == "DE")
    }

    /// Apple Ads postbacks (SKAdNetwork 1.0–3.0, `com.apple.ads`, campaign ids 10–40) verify like any
    /// other, and are named.
    @Test(arguments: [("1.0", Int64(10)), ("2.0", 20), ("2.2", 30), ("3.0", 40)])
    func appleAdsPostbacksVerifyLikeAnyOther(version: String, campaignID: Int64) throws {
        var postback = SKAdNetworkTestPostback(
            version: version == "1.0" ? nil : version, transactionID: "a1b2c3d4-0000-4000-8000-0000000000\(campaignID)")
        postback.adNetworkID = "com.apple.ads"
        postback.campaignID = campaignID
        postback.appID = 1_125_517_808
        if version != "1.0" { postback.redownload = false }
        if version >= "2.2" { postback.fidelityType = 1 }
        if version >= "3.0" { postback.didWin = true }
        let signer = version <= "2.0" ? TestKeys.signer192 : TestKeys.signer256
        let result = TestKeys.devVerifier.verify(body: try signer.sign(postback))
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.flags.isEmpty)
        #expect(KnownAdNetwork.describe(adNetworkID: "com.apple.ads", campaignID: campaignID)?.hasPrefix("Apple Ads, ") == true)
    }
}
