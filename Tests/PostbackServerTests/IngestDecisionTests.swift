import Basics
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

/// The receiver's reply rules over verdicts, without a socket or a store: `IngestDecision.decide`
/// and the reply for each outcome of storing. The expected bodies are written out here from
/// docs/serve.md's replies, never made by the code under test.
@Suite struct IngestDecisionTests {
    static let development = VerificationPolicy(allowsDevelopment: true, testKeys: [TestPostbacks.trusted])
    static let open = AcceptancePolicy(allowsDevelopment: true, adNetworkIDs: nil)

    static func decide(
        _ body: [UInt8], verifying policy: VerificationPolicy = development, acceptance: AcceptancePolicy = open
    ) -> IngestDecision {
        IngestDecision.decide(PostbackVerifier(policy: policy).verify(body: body), body: body, acceptance: acceptance)
    }

    @Test func aVerifiedPostbackIsStoredAndAnsweredByTheWritersOutcome() {
        let decision = Self.decide(TestPostbacks.skan4(transactionID: "d-accept-1", conversionValue: 3))
        #expect(decision == .accept(dedupKey: "d-accept-1:0/development", configuredSpelling: nil))
        #expect(decision.spool == .postbacks)
        let stored = decision.reply(after: .stored)
        #expect(stored.status == 200)
        #expect(stored.contentType == "application/json")
        #expect(stored.text == #"{"status":"stored","dedup_key":"d-accept-1:0/development"}"# + "\n")
        #expect(
            decision.reply(after: .duplicate(stored: .unknown)).text
                == #"{"status":"duplicate","dedup_key":"d-accept-1:0/development"}"# + "\n")
    }

    @Test func aRecordNotMadeDurableIsAnswered500() {
        for body in [TestPostbacks.skan4(transactionID: "d-failed-1", conversionValue: 1), Array("{".utf8)] {
            let reply = Self.decide(body).reply(after: .failed("fdatasync failed"))
            #expect(reply.status == 500)
            #expect(reply.contentType == "application/problem+json")
            #expect(
                reply.text
                    == #"{"type":"urn:postback:problem:storage-unavailable","title":"The postback could not be stored durably; retry later","status":500,"detail":"fdatasync failed"}"#
                    + "\n")
        }
    }

    @Test func aMalformedBodyIsRefusedWithItsVerdict() {
        let decision = Self.decide(Array(#"{"version":"4.0","ad-network-id":"x"#.utf8))
        guard case .reject(let rejection) = decision else {
            Issue.record("not a rejection: \(decision)")
            return
        }
        #expect(rejection.status == .malformed)
        #expect(rejection.setting == nil)
        #expect(decision.spool == .rejected)
        let reply = decision.reply(after: .stored)
        #expect(reply.status == 400)
        #expect(reply.contentType == "application/problem+json")
        #expect(
            reply.text.hasPrefix(
                #"{"type":"urn:postback:problem:malformed","title":"The body is not a valid postback","status":400,"detail":""#))
        #expect(reply.text.hasSuffix(#","verdict":"malformed"}"# + "\n"))
        // Past the rejected store's budget nothing is kept, and the answer is the same.
        #expect(decision.replyNotStored(route: .skadnetwork, why: "daily-budget").text == reply.text)
    }

    @Test func aForgedSignatureIsRefused() {
        let good = String(decoding: TestPostbacks.skan4(transactionID: "d-forged-1", conversionValue: 1), as: UTF8.self)
        let forged = Array(good.replacing(#""source-identifier":"1234""#, with: #""source-identifier":"1235""#).utf8)
        let reply = Self.decide(forged).reply(after: .stored)
        #expect(reply.status == 400)
        #expect(reply.text.contains(#""type":"urn:postback:problem:invalid-signature""#))
        #expect(reply.text.contains(#""title":"The postback's signature does not verify""#))
        #expect(reply.text.contains(#""verdict":"invalid-signature""#))
    }

    @Test func developmentPostbacksAreRefusedByTheSettingWhereNotAllowed() throws {
        // Apple's own AdAttributionKit example, signed with apple-development-identifier/1. A receiver
        // without allow_development does not trust the key at all:
        let body = try ReplayTests.apple("aak_apple-doc_developer-settings_apple-development-identifier-1.json")
        let refusing = AcceptancePolicy(allowsDevelopment: false, adNetworkIDs: nil)
        guard case .reject(let untrusted) = Self.decide(body, verifying: VerificationPolicy(), acceptance: refusing) else {
            Issue.record("a development key is taken where development postbacks are not allowed")
            return
        }
        #expect(untrusted.status == .untrustedKey)
        #expect(untrusted.setting == nil)
        // A verdict that verified (reverify's case, or a test key) is refused by the setting itself.
        let decision = Self.decide(body, verifying: VerificationPolicy(allowsDevelopment: true), acceptance: refusing)
        guard case .reject(let rejection) = decision else {
            Issue.record("not a rejection: \(decision)")
            return
        }
        #expect(rejection.setting == .development)
        #expect(rejection.status == .verified)
        #expect(rejection.reason.contains("apple-development-identifier/1"))
        let reply = decision.reply(after: .stored)
        #expect(reply.status == 400)
        #expect(reply.text.contains(#""type":"urn:postback:problem:not-accepted-development""#))
        #expect(reply.text.contains(#""title":"Development postbacks are not accepted here""#))
        #expect(reply.text.contains(#""verdict":"verified","dedup_key":""#))
        guard case .accept = Self.decide(body, verifying: VerificationPolicy(allowsDevelopment: true)) else {
            Issue.record("refused where development postbacks are allowed")
            return
        }
    }

    @Test func otherAdNetworksAreRefusedAndCaseIsIgnored() {
        let acceptance = AcceptancePolicy(allowsDevelopment: true, adNetworkIDs: ["kbd757ywx3.skadnetwork"])
        let upper = TestPostbacks.skan4(
            transactionID: "d-net-1", conversionValue: 1, adNetworkID: "KBD757YWX3.skadnetwork")
        #expect(
            Self.decide(upper, acceptance: acceptance)
                == .accept(dedupKey: "d-net-1:0/development", configuredSpelling: "kbd757ywx3.skadnetwork"))
        let other = TestPostbacks.skan4(transactionID: "d-net-2", conversionValue: 1, adNetworkID: "KBD757YWX4.skadnetwork")
        let decision = Self.decide(other, acceptance: acceptance)
        guard case .reject(let rejection) = decision else {
            Issue.record("not a rejection: \(decision)")
            return
        }
        #expect(rejection.setting == .adNetwork)
        #expect(rejection.reason.contains(#""KBD757YWX4.skadnetwork""#))
        let reply = decision.reply(after: .stored)
        #expect(reply.text.contains(#""type":"urn:postback:problem:not-accepted-ad-network""#))
        #expect(reply.text.contains(#""title":"Postback for an ad network this receiver does not accept""#))
    }

    @Test func anUnknownVersionIsQuarantinedUnderItsBytes() throws {
        let body = try TestPostbacks.signer.sign(SKAdNetworkTestPostback.v4(transactionID: "d-quarantine-1", version: "5.0"))
        let decision = Self.decide(body)
        guard case .quarantine(let reason, let key, let dedupKey, let detail) = decision else {
            Issue.record("not quarantined: \(decision)")
            return
        }
        #expect(reason == .unknownVersion)
        // Nothing vouches for an unverified body's claims: it is keyed by its bytes.
        #expect(key == "sha256:" + SHA256.hash(body).description)
        #expect(dedupKey == nil)
        #expect(detail.contains("5.0"))
        #expect(decision.spool == .unverifiable)
        #expect(
            decision.reply(after: .stored).text
                == #"{"status":"quarantined","quarantine":"unknown-version"}"# + "\n")
        #expect(
            decision.reply(after: .duplicate(stored: .unknown)).text
                == #"{"status":"duplicate","quarantine":"unknown-version"}"# + "\n")
    }

    /// Past the quarantine's budget nothing is acknowledged: 503 with Retry-After where any answer but
    /// 200 is retried, 500 where AdAttributionKit may arrive (its devices retry after a 500).
    @Test func aFullQuarantineAsksForARetry() throws {
        let decision = Self.decide(
            try TestPostbacks.signer.sign(SKAdNetworkTestPostback.v4(transactionID: "d-quarantine-2", version: "5.0")))
        let skadnetwork = decision.replyNotStored(route: .skadnetwork, why: "daily-budget")
        #expect(skadnetwork.status == 503)
        #expect(skadnetwork.headers.map(\.name) == ["Retry-After"])
        #expect(skadnetwork.headers.map(\.value) == ["3600"])
        #expect(
            skadnetwork.text
                == #"{"type":"urn:postback:problem:quarantine-full","title":"Not stored; retry later","status":503,"detail":"the quarantine for postbacks this release cannot check yet is full for today (daily-budget); retry later"}"#
                + "\n")
        #expect(decision.replyNotStored(route: .appAttribution, why: "daily-budget").status == 500)
    }

    /// A verified postback quarantined for a value we cannot place is keyed by its signed dedup key;
    /// one under an unknown kid by its bytes; a development key not allowed is refused, not quarantined.
    @Test func quarantineKeysAreSignedKeysOrBytes() throws {
        var known = AdAttributionKitTestPostback(postbackIdentifier: "d-key-1")
        known.conversionType = "install"
        let unplaced = Self.decide(try TestPostbacks.signer.sign(known))
        guard case .quarantine(let reason, let key, _, let detail) = unplaced else {
            Issue.record("not quarantined: \(unplaced)")
            return
        }
        #expect(reason == .unrecognizedSignedValue)
        #expect(key == "d-key-1:0/development")
        #expect(detail.contains("conversion-type"))

        var newKid = AdAttributionKitTestPostback(postbackIdentifier: "d-key-2")
        newKid.keyID = "apple-cas-identifier/7"
        let body = try TestPostbacks.signer.sign(newKid)
        let production = VerificationPolicy()
        guard case .quarantine(.unknownKeyID, let bytesKey, _, _) = Self.decide(body, verifying: production) else {
            Issue.record("not quarantined as an unknown kid")
            return
        }
        #expect(bytesKey == "sha256:" + SHA256.hash(body).description)
        newKid.keyID = "apple-development-identifier/0"
        let refused = Self.decide(
            try TestPostbacks.signer.sign(newKid), verifying: production,
            acceptance: AcceptancePolicy(allowsDevelopment: false, adNetworkIDs: nil))
        guard case .reject = refused else {
            Issue.record("a development key not allowed is quarantined: \(refused)")
            return
        }
    }
}
