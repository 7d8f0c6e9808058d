import Testing
@testable import Postbacks

/// Each rule of the strict parser, with the reason a user would read.
@Suite struct FieldRuleTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let edit: String
        let key: String
        let json: String?
        let status: VerificationStatus
        let reasonContains: String
        var testDescription: String { edit }
    }

    static let skanCases: [Case] = [
        Case(edit: "conversion-value 64", key: "conversion-value", json: "64", status: .malformed, reasonContains: "conversion-value must be 0–63"),
        Case(edit: "conversion-value -1", key: "conversion-value", json: "-1", status: .malformed, reasonContains: "conversion-value must be 0–63"),
        Case(edit: "conversion-value as string", key: "conversion-value", json: "\"20\"", status: .malformed, reasonContains: "conversion-value must be an integer"),
        Case(edit: "coarse and fine together", key: "coarse-conversion-value", json: "\"low\"", status: .malformed, reasonContains: "both present"),
        Case(edit: "postback-sequence-index 3", key: "postback-sequence-index", json: "3", status: .malformed, reasonContains: "postback-sequence-index must be 0–2"),
        Case(edit: "source-identifier 5 digits", key: "source-identifier", json: "\"12345\"", status: .malformed, reasonContains: "2 to 4 digits"),
        Case(edit: "source-identifier 1 digit", key: "source-identifier", json: "\"1\"", status: .malformed, reasonContains: "2 to 4 digits"),
        Case(edit: "source-identifier with letter", key: "source-identifier", json: "\"12a4\"", status: .malformed, reasonContains: "2 to 4 digits"),
        Case(edit: "fidelity-type 2", key: "fidelity-type", json: "2", status: .malformed, reasonContains: "fidelity-type must be 0–1"),
        Case(edit: "redownload as string", key: "redownload", json: "\"true\"", status: .malformed, reasonContains: "JSON boolean"),
        Case(edit: "did-win as 1", key: "did-win", json: "1", status: .malformed, reasonContains: "JSON boolean"),
        Case(edit: "app-id negative", key: "app-id", json: "-525463029", status: .malformed, reasonContains: "must not be negative"),
        Case(edit: "app-id 2^63", key: "app-id", json: "9223372036854775808", status: .malformed, reasonContains: "too large"),
        Case(edit: "app-id leading-zero string", key: "app-id", json: "\"0525463029\"", status: .malformed, reasonContains: "leading zero"),
        Case(edit: "app-id with exponent", key: "app-id", json: "5.25463029e8", status: .malformed, reasonContains: "must be an integer"),
        Case(edit: "app-id digit string (allowed)", key: "app-id", json: "\"525463029\"", status: .verified, reasonContains: ""),
        Case(edit: "app-id missing", key: "app-id", json: nil, status: .malformed, reasonContains: "app-id is required"),
        Case(edit: "transaction-id empty", key: "transaction-id", json: "\"\"", status: .malformed, reasonContains: "empty string"),
        Case(edit: "ad-network-id with U+202E", key: "ad-network-id", json: "\"com.example\\u202e\"", status: .malformed, reasonContains: "U+202E"),
        Case(edit: "ad-network-id with NUL", key: "ad-network-id", json: "\"com.example\\u0000\"", status: .malformed, reasonContains: "U+0000"),
        Case(edit: "ad-network-id with zero-width space", key: "ad-network-id", json: "\"com.exa\\u200bmple\"", status: .malformed, reasonContains: "U+200B"),
        Case(edit: "ad-network-id lower-cased", key: "ad-network-id", json: "\"com.example\"", status: .verified, reasonContains: ""),
        Case(edit: "ad-network-id upper-cased", key: "ad-network-id", json: "\"COM.EXAMPLE\"", status: .invalidSignature, reasonContains: "does not verify"),
        Case(edit: "source-app-id with source-domain", key: "source-app-id", json: "1234", status: .malformed, reasonContains: "both present"),
        Case(edit: "country-code three letters", key: "country-code", json: "\"USA\"", status: .malformed, reasonContains: "two letters"),
        Case(edit: "unknown version", key: "version", json: "\"5.0\"", status: .unsupportedVersion, reasonContains: "no documented signature layout"),
        Case(edit: "version 4 without .0", key: "version", json: "\"4\"", status: .unsupportedVersion, reasonContains: "\"4\""),
        Case(edit: "version as number", key: "version", json: "4.0", status: .malformed, reasonContains: "version must be a string"),
        Case(edit: "signature not Base64", key: "attribution-signature", json: "\"not base64!\"", status: .malformed, reasonContains: "not valid Base64"),
        Case(edit: "signature non-canonical trailing bits", key: "attribution-signature",
             json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxr=\"",
             status: .malformed, reasonContains: "non-canonical"),
        Case(edit: "signature without padding", key: "attribution-signature",
             json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo\"",
             status: .malformed, reasonContains: "multiple of 4"),
        Case(edit: "signature in url alphabet", key: "attribution-signature",
             json: "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z_AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo-7zfP_1Bxo=\"",
             status: .malformed, reasonContains: "not in the Base64 alphabet"),
        Case(edit: "unknown extra keys ignored", key: "adjust-tracker", json: "{\"nested\":[1,2,{\"x\":null}]}", status: .verified, reasonContains: ""),
        Case(edit: "null optional conversion value", key: "conversion-value", json: "null", status: .verified, reasonContains: ""),
    ]

    @Test(arguments: skanCases) func skadnetworkFieldRule(_ rule: Case) throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json"))
        body[rule.key] = rule.json
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == rule.status, "\(result.reason ?? "verified")")
        if rule.status != .verified {
            #expect(result.reason?.contains(rule.reasonContains) == true, "reason: \(result.reason ?? "none")")
        }
    }

    @Test func nonWinningPostbackWithSourceAppIDIsMalformed() throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-3.0_apple-doc_nonwinning.json"))
        body["source-app-id"] = "1234567891"
        let result = PostbackVerifier().verify(body: body.bytes)
        #expect(result.status == .malformed)
        #expect(result.reason?.contains("non-winning") == true)
        #expect(result.postbackProtocol == .skadnetwork)
        #expect(result.version == "3.0")
    }

    @Test func campaignIDOutsideAppleRangeIsMalformed() throws {
        var body = try EditableBody(try Fixtures.appleVector("skan-3.0_apple-doc_winning.json"))
        body["campaign-id"] = "101"
        #expect(PostbackVerifier().verify(body: body.bytes).reason?.contains("campaign-id must be 1–100") == true)
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
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","jku":"https://evil.example/keys"}"#, .malformed, "\"jku\" is not allowed"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","x5c":["MIIB"]}"#, .malformed, "\"x5c\" is not allowed"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","typ":"JWT"}"#, .malformed, "\"typ\" is not allowed"),
        (#"{"kid":"apple-cas-identifier/0","alg":"ES256","kid":"x"}"#, .malformed, "duplicate key"),
        (#"{"kid":"../../dev/null","alg":"ES256"}"#, .untrustedKey, "is not one of Apple's keys"),
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
        let result = TestKeys.devVerifier.verify(body: try Self.aakBody(header: #"{"kid":"apple-cas-identifier\/0","alg":"ES256"}"#))
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
            (segments[0] + "." + segments[1] + "." + segments[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "+", .malformed, "base64url"),
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

    @Test func adAttributionKitClaimAndOuterRules() throws {
        let cases: [((inout AdAttributionKitTestPostback) -> Void, String)] = [
            ({ $0.conversionType = "install" }, "conversion-type must be one of"),
            ({ $0.sourceIdentifier = "12345" }, "2 to 4 digits"),
            ({ $0.postbackSequenceIndex = 3 }, "postback-sequence-index must be 0–2"),
            ({ $0.adInteractionType = "hover" }, "ad-interaction-type must be one of"),
            ({ $0.conversionValue = 64 }, "conversion-value must be 0–63"),
            ({ $0.conversionValue = 1; $0.coarseConversionValue = "low" }, "both present"),
            ({ $0.coarseConversionValue = "extreme" }, "coarse-conversion-value must be one of"),
            ({ $0.adNetworkID = "evil\u{2063}.adattributionkit" }, "U+2063"),
        ]
        for (edit, reason) in cases {
            let result = TestKeys.devVerifier.verify(body: try Self.aakBody(edit: edit))
            #expect(result.status == .malformed)
            #expect(result.reason?.contains(reason) == true, "reason: \(result.reason ?? "none")")
            #expect(result.postbackProtocol == .adattributionkit)
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
