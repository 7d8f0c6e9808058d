import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// Each rule of the strict parser, with the reason a user would read.
@Suite struct FieldRuleTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let edit: String
        let key: String
        let json: String?
        let status: VerificationStatus
        /// For a rejection: words of the reason. For a verified postback: the flag, "field action".
        let expected: String
        var testDescription: String { edit }
    }

    /// Edits of Apple's signed 4.0 example (fine value 63, window 0). Unsigned fields are normalized
    /// or dropped, never fatal; signed fields are malformed only when the signed message cannot be built.
    static let skanCases: [Case] = [
        Case(
            edit: "conversion-value 64", key: "conversion-value", json: "64", status: .verified,
            expected: "conversion-value dropped"),
        Case(
            edit: "conversion-value -1", key: "conversion-value", json: "-1", status: .verified,
            expected: "conversion-value dropped"),
        Case(
            edit: "conversion-value as digit string", key: "conversion-value", json: "\"63\"", status: .verified,
            expected: "conversion-value normalized"),
        Case(
            edit: "conversion-value as word", key: "conversion-value", json: "\"high\"", status: .verified,
            expected: "conversion-value dropped"),
        Case(
            edit: "conversion-value 1.5", key: "conversion-value", json: "1.5", status: .verified,
            expected: "conversion-value dropped"),
        Case(
            edit: "coarse and fine together", key: "coarse-conversion-value", json: "\"low\"", status: .verified,
            expected: "coarse-conversion-value dropped"),
        Case(
            edit: "coarse with U+2063", key: "coarse-conversion-value", json: "\"lo\\u2063w\"", status: .verified,
            expected: "coarse-conversion-value dropped"),
        Case(
            edit: "postback-sequence-index 3 (signed, unknown)", key: "postback-sequence-index", json: "3",
            status: .invalidSignature, expected: "does not verify"),
        Case(
            edit: "source-identifier 5 digits (signed)", key: "source-identifier", json: "\"12345\"", status: .invalidSignature,
            expected: "does not verify"),
        Case(
            edit: "fidelity-type 2 (signed)", key: "fidelity-type", json: "2", status: .invalidSignature,
            expected: "does not verify"),
        Case(
            edit: "redownload as string", key: "redownload", json: "\"false\"", status: .verified,
            expected: "redownload normalized"),
        Case(edit: "redownload as True", key: "redownload", json: "\"True\"", status: .malformed, expected: "JSON boolean"),
        Case(edit: "did-win as 1", key: "did-win", json: "1", status: .malformed, expected: "JSON boolean"),
        Case(edit: "app-id negative", key: "app-id", json: "-525463029", status: .malformed, expected: "must not be negative"),
        Case(edit: "app-id 2^63", key: "app-id", json: "9223372036854775808", status: .malformed, expected: "too large"),
        Case(
            edit: "app-id leading-zero string", key: "app-id", json: "\"0525463029\"", status: .malformed,
            expected: "leading zero"),
        Case(
            edit: "app-id with exponent", key: "app-id", json: "5.25463029e8", status: .malformed, expected: "must be an integer"),
        Case(edit: "app-id digit string", key: "app-id", json: "\"525463029\"", status: .verified, expected: "app-id normalized"),
        Case(edit: "app-id missing", key: "app-id", json: nil, status: .malformed, expected: "app-id is required"),
        Case(edit: "transaction-id empty", key: "transaction-id", json: "\"\"", status: .malformed, expected: "empty string"),
        Case(
            edit: "ad-network-id with U+202E", key: "ad-network-id", json: "\"com.example\\u202e\"", status: .malformed,
            expected: "U+202E"),
        Case(
            edit: "ad-network-id with U+2063", key: "ad-network-id", json: "\"com.example\\u2063\"", status: .malformed,
            expected: "U+2063"),
        Case(
            edit: "ad-network-id with NUL", key: "ad-network-id", json: "\"com.example\\u0000\"", status: .malformed,
            expected: "U+0000"),
        Case(
            edit: "ad-network-id with zero-width space", key: "ad-network-id", json: "\"com.exa\\u200bmple\"", status: .malformed,
            expected: "U+200B"),
        Case(edit: "ad-network-id lower-cased", key: "ad-network-id", json: "\"com.example\"", status: .verified, expected: ""),
        Case(
            edit: "ad-network-id upper-cased", key: "ad-network-id", json: "\"COM.EXAMPLE\"", status: .invalidSignature,
            expected: "does not verify"),
        Case(
            edit: "source-app-id with source-domain (signed)", key: "source-app-id", json: "1234", status: .invalidSignature,
            expected: "does not verify"),
        Case(
            edit: "country-code three letters", key: "country-code", json: "\"USA\"", status: .verified,
            expected: "country-code dropped"),
        Case(
            edit: "country-code lower case", key: "country-code", json: "\"us\"", status: .verified,
            expected: "country-code normalized"),
        Case(
            edit: "country-code a number", key: "country-code", json: "840", status: .verified, expected: "country-code dropped"),
        Case(edit: "country-code upper case", key: "country-code", json: "\"US\"", status: .verified, expected: ""),
        Case(
            edit: "unknown version", key: "version", json: "\"5.0\"", status: .unsupportedVersion,
            expected: "no documented signature layout"),
        Case(edit: "version 4 without .0", key: "version", json: "\"4\"", status: .unsupportedVersion, expected: "\"4\""),
        Case(edit: "version as number 4.0", key: "version", json: "4.0", status: .verified, expected: "version normalized"),
        Case(edit: "version as boolean", key: "version", json: "true", status: .malformed, expected: "version must be a string"),
        Case(
            edit: "signature not Base64", key: "attribution-signature", json: "\"not base64!\"", status: .malformed,
            expected: "not valid Base64"),
        Case(
            edit: "signature non-canonical trailing bits", key: "attribution-signature",
            json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxr=\"",
            status: .malformed, expected: "non-canonical"),
        Case(
            edit: "signature without padding", key: "attribution-signature",
            json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo\"",
            status: .malformed, expected: "multiple of 4"),
        Case(
            edit: "signature in url alphabet", key: "attribution-signature",
            json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z_AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo-7zfP_1Bxo=\"",
            status: .malformed, expected: "not in the Base64 alphabet"),
        Case(
            edit: "unknown extra keys ignored", key: "adjust-tracker", json: "{\"nested\":[1,2,{\"x\":null}]}", status: .verified,
            expected: ""),
        Case(edit: "null optional conversion value", key: "conversion-value", json: "null", status: .verified, expected: ""),
    ]

    @Test(arguments: skanCases) func skadnetworkFieldRule(_ rule: Case) throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        body[rule.key] = rule.json
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == rule.status, "\(result.reason ?? "verified")")
        if rule.status == .verified {
            let flags = result.flags.map { "\($0.field.rawValue) \($0.action.rawValue)" }
            #expect(flags == (rule.expected.isEmpty ? [] : [rule.expected]), "flags: \(result.flags.map(\.summary))")
        } else {
            #expect(result.reason?.contains(rule.expected) == true, "reason: \(result.reason ?? "none")")
        }
    }

    /// A signed field changed gives invalid-signature whatever the unsigned fields say: the verdict
    /// names the signature, and the odd unsigned values are still listed as flags.
    @Test func forgedAndOddReadsAsForged() throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        body["source-identifier"] = "\"5238\""
        body["conversion-value"] = "\"sixty\""
        body["country-code"] = "\"USA\""
        body["coarse-conversion-value"] = "\"EXTREME\""
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == .invalidSignature)
        #expect(result.reason?.contains("does not verify") == true)
        #expect(Set(result.flags.map(\.field)) == [.conversionValue, .countryCode, .coarseConversionValue])
    }

    @Test func nonWinningPostbackWithSourceAppIDIsKeptAsSignedAndFlagged() throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-3.0_apple-doc_nonwinning.json"))
        body["source-app-id"] = "1234567891"
        let result = PostbackVerifier().verify(body: body.bytes)
        // Apple did not sign this source-app-id: the message with it does not verify.
        #expect(result.status == .invalidSignature)
        #expect(result.flags.contains { $0.field == .sourceAppID && $0.action == .unrecognized })
        #expect(result.postbackProtocol == .skadnetwork)
        #expect(result.version == "3.0")
    }

    @Test func campaignIDOutsideAppleRangeIsKeptAndFlagged() throws {
        var postback = SKAdNetworkTestPostback(version: "3.0", transactionID: "c1d2e3f4-0000-4000-8000-000000000101")
        postback.campaignID = 101
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = true
        let body = try TestKeys.signer256.sign(postback)
        let result = TestKeys.devVerifier.verify(body: body)
        #expect(result.status == .verified)
        #expect(result.flags.map(\.summary) == ["campaign-id 101 unrecognized (outside Apple's 1–100; kept as signed)"])
        #expect(result.quarantineReason == .unrecognizedSignedValue)
    }

    /// Self-signed SKAdNetwork 4.0 bodies carrying signed values Apple may add: verified, kept as
    /// signed, flagged unrecognized, and quarantined by a receiver.
    @Test func skadnetworkSignedValuesWeDoNotKnowAreKept() throws {
        let cases: [((inout SKAdNetworkTestPostback) -> Void, String)] = [
            ({ $0.sourceIdentifier = "12345" }, #"source-identifier "12345" unrecognized (not 2 to 4 digits; kept as signed)"#),
            ({ $0.postbackSequenceIndex = 3 }, "postback-sequence-index 3 unrecognized (not 0, 1 or 2; kept as signed)"),
            ({ $0.fidelityType = 2 }, "fidelity-type 2 unrecognized (not 0 or 1; kept as signed)"),
            (
                {
                    $0.sourceAppID = 1234
                    $0.sourceDomain = "example.com"
                }, "source-app-id 1234 unrecognized (sent together with source-domain; kept as signed)"
            ),
        ]
        for (edit, flag) in cases {
            var postback = SKAdNetworkTestPostback.v4(
                transactionID: "c1d2e3f4-0000-4000-8000-000000000400", sourceIdentifier: "5239")
            edit(&postback)
            let body = try TestKeys.signer256.sign(postback)
            let result = TestKeys.devVerifier.verify(body: body)
            #expect(result.status == .verified, "\(flag): \(result.reason ?? "")")
            #expect(result.flags.map(\.summary) == [flag])
            #expect(result.quarantineReason == .unrecognizedSignedValue)
            // The value is what was signed: the message carries it verbatim.
            guard case .skadnetwork(let skan)? = result.postback else { continue }
            #expect(skan.signedMessage() == SKAdNetworkPostback.join(skan.signedFields().map(\.value)))
        }
    }

    // MARK: AdAttributionKit

    static func aakBody(header: String? = nil, edit: (inout AdAttributionKitTestPostback) -> Void = { _ in }) throws -> [UInt8] {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b")
        edit(&postback)
        if let header { return try TestKeys.signer256.sign(postback, headerJSON: Array(header.utf8)) }
        return try TestKeys.signer256.sign(postback)
    }

    @Test(arguments: [
        (#"{"kid":"apple-cas-identifier/0","alg":"none"}"#, VerificationStatus.malformed, "alg must be exactly \"ES256\""),
        (#"{"kid":"apple-cas-identifier/0","alg":"None"}"#, .malformed, "alg must be"),
        (#"{"kid":"apple-cas-identifier/0","alg":"HS256"}"#, .malformed, "alg must be"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES384"}"#, .malformed, "alg must be"),
        (#"{"kid":"apple-cas-identifier/0","alg":"es256"}"#, .malformed, "alg must be"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256 "}"#, .malformed, "alg must be"),
        (#"{"kid":"apple-cas-identifier/0"}"#, .malformed, "alg is required"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","crit":["x"],"x":1}"#, .malformed, "\"crit\" is not allowed"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","jwk":{"kty":"EC"}}"#, .malformed, "\"jwk\" is not allowed"),
        (
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","jku":"https://evil.example/keys"}"#, .malformed,
            "\"jku\" is not allowed"
        ),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","x5c":["MIIB"]}"#, .malformed, "\"x5c\" is not allowed"),
        (
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","x5u":"https://evil.example/cert"}"#, .malformed,
            "\"x5u\" is not allowed"
        ),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","kid":"x"}"#, .malformed, "duplicate key"),
        (#"{"kid":"../../dev/null","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
        (#"{"kid":"apple-cas-identifier/1","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
        (#"{"kid":"' OR '1'='1","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
        (#"{"kid":"apple-cas-identifier/0\u202e","alg":"ES256"}"#, .malformed, "U+202E"),
        (#"{"kid":"apple-cas-identifier\/0 ","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
        (#"{"kid":"APPLE-CAS-IDENTIFIER/0","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
        (#"["kid","alg"]"#, .malformed, "must be a JSON object"),
    ])
    func adAttributionKitHeaderRule(header: String, status: VerificationStatus, reasonContains: String) throws {
        let result = TestKeys.devVerifier.verify(body: try Self.aakBody(header: header))
        #expect(result.status == status, "\(result.reason ?? "verified")")
        #expect(result.reason?.contains(reasonContains) == true, "reason: \(result.reason ?? "none")")
    }

    @Test func escapedSlashInKidIsTheSameKid() throws {
        // Apple's genuine header is {"kid":"apple-development-identifier\/1",...}: decode, then compare.
        let result = TestKeys.devVerifier.verify(
            body: try Self.aakBody(header: #"{"kid":"apple-cas-identifier\/0","alg":"ES256"}"#))
        #expect(result.status == .verified)
    }

    @Test func jwsStructureRules() throws {
        let good = try EditableBody(try Self.aakBody())
        let jws = String(good["jws-string"]!.dropFirst().dropLast())
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let zeroSignature = Base64.encode([UInt8](repeating: 0, count: 64), alphabet: .url)
        let short = Base64.encode([UInt8](repeating: 1, count: 63), alphabet: .url)
        let long = Base64.encode([UInt8](repeating: 1, count: 65), alphabet: .url)
        let cases: [(String, VerificationStatus, String)] = [
            (segments[0] + "." + segments[1], .malformed, "exactly 3"),
            (jws + ".extra", .malformed, "exactly 3"),
            (segments[0] + ".." + segments[2], .malformed, "payload segment is empty"),
            (segments[0] + "." + segments[1] + ".", .malformed, "signature segment is empty"),
            (segments[0] + "=." + segments[1] + "." + segments[2], .malformed, "base64url"),
            (
                segments[0] + "." + segments[1] + "."
                    + segments[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "+",
                .malformed, "base64url"
            ),
            (" " + jws, .malformed, "base64url"),
            (segments[0] + "." + segments[1] + "." + zeroSignature, .invalidSignature, "does not verify"),
            (segments[0] + "." + segments[1] + "." + short, .invalidSignature, "exactly 64"),
            (segments[0] + "." + segments[1] + "." + long, .invalidSignature, "exactly 64"),
        ]
        for (text, status, reason) in cases {
            var body = good
            body["jws-string"] = "\"\(text)\""
            let result = TestKeys.devVerifier.verify(body: body.bytes)
            #expect(result.status == status, "\(text.prefix(40))…: \(result.reason ?? "")")
            #expect(result.reason?.contains(reason) == true, "reason: \(result.reason ?? "none")")
        }
    }

    /// typ and cty describe the content only: ignored, the postback verifies with no flag.
    @Test(arguments: [
        #"{"kid":"apple-cas-identifier/0","alg":"ES256","typ":"JWT"}"#,
        #"{"typ":"JOSE","cty":"json","kid":"apple-cas-identifier/0","alg":"ES256"}"#,
    ])
    func typAndCtyHeadersAreIgnored(header: String) throws {
        let result = TestKeys.devVerifier.verify(body: try Self.aakBody(header: header))
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.flags.isEmpty)
    }

    /// Signed values we do not know yet: verified, kept verbatim, flagged unrecognized, quarantined.
    @Test func adAttributionKitSignedValuesWeDoNotKnowAreKept() throws {
        let cases: [((inout AdAttributionKitTestPostback) -> Void, String)] = [
            ({ $0.conversionType = "install" }, "conversion-type \"install\" unrecognized"),
            ({ $0.impressionType = "web-impression" }, "impression-type \"web-impression\" unrecognized"),
            ({ $0.sourceIdentifier = "12345" }, "source-identifier \"12345\" unrecognized"),
            ({ $0.postbackSequenceIndex = 3 }, "postback-sequence-index 3 unrecognized"),
        ]
        for (edit, flag) in cases {
            let result = TestKeys.devVerifier.verify(body: try Self.aakBody(edit: edit))
            #expect(result.status == .verified, "\(flag): \(result.reason ?? "")")
            #expect(result.flags.map(\.summary).contains { $0.hasPrefix(flag) }, "\(result.flags.map(\.summary))")
            #expect(result.quarantineReason == .unrecognizedSignedValue)
        }
        guard
            case .adAttributionKit(let aak)? = TestKeys.devVerifier.verify(
                body: try Self.aakBody { $0.conversionType = "install" }
            ).postback
        else {
            Issue.record("not parsed")
            return
        }
        #expect(aak.conversionType == nil && aak.conversionTypeText == "install")
    }

    /// Issue 24 item 2: a claim Apple may add tomorrow is flagged but never quarantines.
    @Test func adAttributionKitUnknownClaimIsFlaggedAndCounted() throws {
        let result = TestKeys.devVerifier.verify(
            body: try Self.aakBody { $0.extraClaims = [("attribution-window", "{\"days\":2}")] })
        #expect(result.status == .verified, "\(result.reason ?? "")")
        #expect(result.flags.map(\.summary).contains { $0.hasPrefix("jws-claim attribution-window unrecognized") })
        #expect(result.quarantineReason == nil)
    }

    @Test func adAttributionKitSignedClaimRulesThatStayMalformed() throws {
        let cases: [((inout AdAttributionKitTestPostback) -> Void, String)] = [
            ({ $0.adNetworkID = "evil\u{2063}.adattributionkit" }, "U+2063"),
            ({ $0.conversionType = "" }, "empty string"),
            ({ $0.extraClaims = [("did-win", "false")] }, "duplicate key"),
        ]
        for (edit, reason) in cases {
            let result = TestKeys.devVerifier.verify(body: try Self.aakBody(edit: edit))
            #expect(result.status == .malformed)
            #expect(result.reason?.contains(reason) == true, "reason: \(result.reason ?? "none")")
            #expect(result.postbackProtocol == .adattributionkit)
        }
    }

    /// Unsigned outer fields: normalized or dropped, never fatal.
    @Test func adAttributionKitUnsignedFieldsAreNormalizedOrDropped() throws {
        let cases: [((inout AdAttributionKitTestPostback) -> Void, [String])] = [
            ({ $0.adInteractionType = "CLICK" }, ["ad-interaction-type \"CLICK\" normalized (case-folded to click)"]),
            ({ $0.adInteractionType = "engaged-view" }, ["ad-interaction-type \"engaged-view\" dropped (not click or view)"]),
            ({ $0.conversionValue = 64 }, ["conversion-value 64 dropped (out of range 0–63)"]),
            (
                {
                    $0.conversionValue = 1
                    $0.coarseConversionValue = "low"
                },
                [
                    "coarse-conversion-value \"low\" dropped (sent together with conversion-value; Apple sends at most one, the fine value is kept)"
                ]
            ),
            ({ $0.coarseConversionValue = "HIGH" }, ["coarse-conversion-value \"HIGH\" normalized (case-folded to high)"]),
            ({ $0.coarseConversionValue = "extreme" }, ["coarse-conversion-value \"extreme\" dropped (not low, medium or high)"]),
            (
                {
                    $0.postbackSequenceIndex = 1
                    $0.conversionValue = 12
                }, ["conversion-value 12 dropped (only the first postback carries a fine value; postback-sequence-index is 1)"]
            ),
            ({ $0.countryCode = "USA" }, ["country-code \"USA\" dropped (not a two-letter country code)"]),
            ({ $0.countryCode = "fr" }, ["country-code \"fr\" normalized (upper-cased to FR)"]),
        ]
        for (edit, flags) in cases {
            let result = TestKeys.devVerifier.verify(body: try Self.aakBody(edit: edit))
            #expect(result.status == .verified, "\(flags): \(result.reason ?? "")")
            #expect(result.flags.map(\.summary) == flags)
            #expect(result.quarantineReason == nil)
        }
    }

    @Test func unsignedOuterFieldsDoNotAffectTheSignature() throws {
        var body = try EditableBody(try Self.aakBody { $0.conversionValue = 5 })
        body["conversion-value"] = "60"
        body["country-code"] = "\"FR\""
        body["ad-interaction-type"] = "\"view\""
        let result = TestKeys.devVerifier.verify(body: body.bytes)
        #expect(result.status == .verified)
    }

    @Test func bothSignatureKindsAtOnceIsMalformed() throws {
        var body = try EditableBody(try Self.aakBody())
        body["attribution-signature"] = "\"MEUC\""
        #expect(PostbackVerifier().verify(body: body.bytes).reason?.contains("both jws-string") == true)
    }
}
