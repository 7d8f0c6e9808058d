import PostbackCrypto
import PostbackTesting
import Testing

@testable import Basics
@testable import Postbacks

/// Every version and layout, signed with a key made in the test (Apple's private keys being Apple's).
/// The signer builds its message from its own table of Apple's orders, independent of the verifier's.
@Suite struct SelfSignedVectorTests {
    struct Layout: CustomTestStringConvertible, Sendable {
        let name: String
        let postback: SKAdNetworkTestPostback
        var testDescription: String { name }
    }

    static let skanLayouts: [Layout] = {
        func make(_ name: String, _ version: String?, _ edit: (inout SKAdNetworkTestPostback) -> Void) -> Layout {
            var postback = SKAdNetworkTestPostback(
                version: version,
                transactionID: "3f1d2c4b-0000-4000-8000-\(String(name.hashValue & 0xFFFFFF, radix: 16).leftPadded(to: 12))")
            if version == "4.0" {
                postback.sourceIdentifier = "5239"
                postback.postbackSequenceIndex = 0
            } else {
                postback.campaignID = 42
            }
            if version != nil && version != "1.0" { postback.redownload = false }
            if ["2.2", "3.0", "4.0"].contains(version ?? "") { postback.fidelityType = 1 }
            if ["3.0", "4.0"].contains(version ?? "") { postback.didWin = true }
            edit(&postback)
            return Layout(name: name, postback: postback)
        }
        return [
            make("1.0 without version field", nil) { _ in },
            make("1.0 with version \"1.0\" and a stray redownload", "1.0") { $0.redownload = true },
            make("2.0 with source-app-id", "2.0") {
                $0.sourceAppID = 1_234_567_891
                $0.conversionValue = 7
            },
            make("2.0 without source-app-id", "2.0") { _ in },
            make("2.1 with source-app-id", "2.1") { $0.sourceAppID = 1_234_567_891 },
            make("2.1 without source-app-id", "2.1") { $0.redownload = true },
            make("2.2 view-through", "2.2") {
                $0.fidelityType = 0
                $0.sourceAppID = 99
            },
            make("2.2 without source-app-id", "2.2") { _ in },
            make("3.0 winning", "3.0") {
                $0.sourceAppID = 1_234_567_891
                $0.conversionValue = 20
            },
            make("3.0 non-winning", "3.0") { $0.didWin = false },
            make("4.0 4-digit source id, source-app-id, fine", "4.0") {
                $0.sourceAppID = 1_234_567_891
                $0.conversionValue = 63
            },
            make("4.0 3-digit source id, source-domain", "4.0") {
                $0.sourceIdentifier = "239"
                $0.sourceDomain = "example.com"
                $0.conversionValue = 0
            },
            make("4.0 2-digit source id, coarse, no source", "4.0") {
                $0.sourceIdentifier = "39"
                $0.coarseConversionValue = "low"
            },
            make("4.0 leading-zero source id", "4.0") { $0.sourceIdentifier = "0042" },
            make("4.0 sequence 1 coarse", "4.0") {
                $0.sourceIdentifier = "39"
                $0.postbackSequenceIndex = 1
                $0.coarseConversionValue = "medium"
            },
            make("4.0 sequence 2 null value", "4.0") {
                $0.sourceIdentifier = "39"
                $0.postbackSequenceIndex = 2
            },
            make("4.0 non-winning", "4.0") {
                $0.didWin = false
                $0.sourceIdentifier = "12"
            },
            make("4.0 redownload with country code", "4.0") {
                $0.redownload = true
                $0.countryCode = "US"
                $0.coarseConversionValue = "high"
            },
            make("4.0 upper-case ad network id", "4.0") { $0.adNetworkID = "KBD757YWX3.skadnetwork" },
        ]
    }()

    @Test(arguments: skanLayouts) func skadnetworkLayoutVerifies(layout: Layout) throws {
        let version = layout.postback.version ?? "1.0"
        let signer = ["1.0", "2.0"].contains(version) ? TestKeys.signer192 : TestKeys.signer256
        let body = try signer.sign(layout.postback)
        let result = TestKeys.devVerifier.verify(body: body)
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.environment == .development, "test keys never count as production")
        #expect(result.keyName == (signer.key.curve == .p192 ? "test:p192.pem" : "test:p256.pem"))
        #expect(result.version == version)
        #expect(
            result.dedupKey == "\(layout.postback.transactionID):\(layout.postback.postbackSequenceIndex ?? 0)/development",
            "a development key never shares a production key (issue 24)")

        // Without --allow-dev the same body is checked against Apple's key only, and fails.
        let production = PostbackVerifier().verify(body: body)
        #expect(production.status == .invalidSignature)
        #expect(production.keyName == (signer.key.curve == .p192 ? "apple-skadnetwork-p192" : "apple-skadnetwork-p256"))
    }

    @Test func curveMismatchedTestKeyIsNotTried() throws {
        // A 2.0 postback must be P-192: a P-256 signature over the right message does not verify.
        var postback = SKAdNetworkTestPostback(version: "2.0", transactionID: "a")
        postback.campaignID = 1
        postback.redownload = false
        let body = try TestKeys.signer256.sign(postback)
        #expect(TestKeys.devVerifier.verify(body: body).status == .invalidSignature)
    }

    // MARK: AdAttributionKit

    @Test(arguments: ["download", "redownload", "re-engagement", "reengagement"])
    func adAttributionKitConversionTypesVerify(conversionType: String) throws {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "85546EB7-FD39-44BC-8990-C98A4AC36A49")
        postback.conversionType = conversionType
        postback.postbackSequenceIndex = conversionType == "download" ? 0 : 1
        postback.coarseConversionValue = "medium"
        postback.publisherItemID = 0
        let result = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(postback))
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.environment == .development)
        let aak = try #require(result.postback?.adAttributionKit)
        #expect(aak.conversionType?.rawValue == (conversionType == "reengagement" ? "re-engagement" : conversionType))
        #expect(aak.coarseConversionValue == .medium)
        #expect(result.dedupKey == "85546EB7-FD39-44BC-8990-C98A4AC36A49:\(postback.postbackSequenceIndex)/development")
    }

    @Test(arguments: ["apple-cas-identifier/0", "apple-development-identifier/0", "apple-development-identifier/1"])
    func adAttributionKitKeyIDsSelectKeysAndEnvironment(kid: String) throws {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "f3c5f0e0-0000-4000-8000-000000000001")
        postback.keyID = kid
        let body = try TestKeys.signer256.sign(postback)
        // Signed with our key: with dev allowed the test key verifies it, as development.
        let allowed = TestKeys.devVerifier.verify(body: body)
        #expect(allowed.status == .verified)
        #expect(allowed.environment == .development)
        // Production policy: Apple's production kid is checked (and fails); dev kids are refused outright.
        let production = PostbackVerifier().verify(body: body)
        #expect(production.status == (kid == "apple-cas-identifier/0" ? .invalidSignature : .untrustedKey))
    }

    @Test func adAttributionKitLargeItemIdentifiers() throws {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "id-1")
        postback.advertisedItemID = 10_738_027_756  // above 2^32, as in Apple's example
        postback.publisherItemID = 9_007_199_254_740_993  // 2^53 + 1: must not go through Double
        let result = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(postback))
        guard case .adAttributionKit(let aak)? = result.postback else {
            Issue.record("not parsed: \(result.reason ?? "")")
            return
        }
        #expect(result.status == .verified)
        #expect(aak.advertisedItemID == 10_738_027_756)
        #expect(aak.publisherItemID == 9_007_199_254_740_993)
    }

    // MARK: Test mode

    /// A real test-mode postback (source-app-id 0) is signed without that field (spec §10).
    @Test func testModePostbackSignedWithoutZeroSourceAppIDVerifies() throws {
        var postback = SKAdNetworkTestPostback(version: "2.2", transactionID: "tm-1")
        postback.campaignID = 42
        postback.redownload = false
        postback.fidelityType = 0
        postback.conversionValue = 0
        let signedWithout = try TestKeys.signer256.sign(postback)  // no source-app-id in the message
        var body = try EditableBody(signedWithout)
        body["source-app-id"] = "0"
        let result = TestKeys.devVerifier.verify(body: body.bytes)
        #expect(result.status == .verified)
        #expect(result.isTestMode)
        #expect(result.environment == .development)
    }

    @Test func testModePostbackSignedWithTheZeroAlsoVerifies() throws {
        var postback = SKAdNetworkTestPostback(version: "3.0", transactionID: "tm-2")
        postback.campaignID = 42
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = true
        postback.sourceAppID = 0
        let result = TestKeys.devVerifier.verify(body: try TestKeys.signer256.sign(postback))
        #expect(result.status == .verified)
        #expect(result.isTestMode)  // a source-app-id of 0 marks test traffic however it was signed
        #expect(result.environment == .development)
    }
}
