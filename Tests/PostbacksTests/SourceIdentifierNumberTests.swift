import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// Issue 24 item 5: a signed `source-identifier` sent as a JSON number whose decimal text is the
/// signed text is the same signed message: it verifies, flagged `normalized`. A number whose text is
/// not the signed text (`0042` sent as `42`) is another message: invalid signature, as signed.
@Suite struct SourceIdentifierNumberTests {
    /// Apple's own 4.0 examples: `"5239"` and `"39"`, sent as numbers.
    @Test(arguments: [
        ("skan-4.0_apple-doc_web-ad-tier-high.json", "5239"), ("skan-4.0_apple-doc_web-ad-tier-low.json", "39"),
    ])
    func applesExampleWithANumberVerifies(vector: String, digits: String) throws {
        var body = try EditableBody(try Fixtures.appleVector(vector))
        #expect(body["source-identifier"] == "\"\(digits)\"")
        body["source-identifier"] = digits
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.environment == .production)
        #expect(result.flags.map(\.summary) == ["source-identifier \(digits) normalized (number read as the digits it signs)"])
        #expect(result.quarantineReason == nil)
        #expect(result.postback?.attribution.sourceIdentifier == digits)
    }

    static func skan4(sourceIdentifier: String) throws -> [UInt8] {
        var postback = SKAdNetworkTestPostback(version: "4.0", transactionID: "sid-number-\(sourceIdentifier)")
        postback.sourceIdentifier = sourceIdentifier
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = true
        postback.postbackSequenceIndex = 0
        return try TestKeys.signer256.sign(postback)
    }

    @Test func leadingZerosAreNotTheSignedText() throws {
        var body = try EditableBody(try Self.skan4(sourceIdentifier: "0042"))
        body["source-identifier"] = "42"
        #expect(TestKeys.devVerifier.verify(body: body.bytes).status == .invalidSignature)
        var same = try EditableBody(try Self.skan4(sourceIdentifier: "4242"))
        same["source-identifier"] = "4242"
        #expect(TestKeys.devVerifier.verify(body: same.bytes).status == .verified)
    }

    @Test(arguments: ["42.0", "4.2e1", "-42"])
    func numbersThatAreNotDigitsStayMalformed(json: String) throws {
        var body = try EditableBody(try Self.skan4(sourceIdentifier: "42"))
        body["source-identifier"] = json
        #expect(TestKeys.devVerifier.verify(body: body.bytes).status == .malformed)
    }

    @Test func adAttributionKitClaimAsANumberVerifies() throws {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "sid-number-aak")
        postback.sourceIdentifierAsNumber = true
        postback.sourceIdentifier = "4321"
        let result = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(postback))
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.flags.map(\.summary) == ["source-identifier 4321 normalized (number read as the digits it signs)"])
        #expect(result.postback?.attribution.sourceIdentifier == "4321")
    }
}
