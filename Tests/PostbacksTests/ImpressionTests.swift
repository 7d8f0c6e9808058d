import Basics
import Foundation
import PostbackCrypto
import Testing

@testable import Postbacks

/// Signing and checking ad impressions (docs/impressions.md): Apple's field orders per version,
/// Apple's rules on the values, and the verifier's strictness.
@Suite struct ImpressionTests {
    static let key = try! ECDSAPrivateKey(generatingOn: .p256)
    static let signer = try! ImpressionSigner(key: key)
    static let verifier = ImpressionVerifier(keys: [ImpressionKey(name: "test", key: key.publicKey)])

    static func json(_ text: String) -> JSONObject {
        guard case .object(let object) = try! StrictJSONParser.parse(Array(text.utf8)) else { fatalError() }
        return object
    }

    static func signed(_ line: String) throws -> String {
        var out = JSONWriter()
        try signer.signRecord(Array(line.utf8), to: &out)
        return String(decoding: out.bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    static func verdict(_ line: String) -> ImpressionVerdict { verifier.verify(Array(line.utf8)) }

    static let nonce = "68483ef6-0934-4e29-a4a8-c1cbb0f8c2c7"

    /// One impression per version and kind, and Apple's template for its signed string, copied from
    /// the page that documents it (`+ '\u2063' +` between the names).
    static let cases: [(line: String, template: String)] = [
        (
            #"{"version":"1.0","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"\#(nonce)","timestamp":1594406341}"#
                .replacingOccurrences(of: "1594406341", with: "1594406341000"),
            "ad-network-id + campaign-id + itunes-item-id + nonce + timestamp"
        ),
        (
            #"{"version":"2.0","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-app-id":1234567891,"timestamp":1594406341000}"#,
            "version + ad-network-id + campaign-id + itunes-item-id + nonce + source-app-id + timestamp"
        ),
        (
            #"{"version":"2.1","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-app-id":1234567891,"timestamp":1594406341000}"#,
            "version + ad-network-id + campaign-id + itunes-item-id + nonce + source-app-id + timestamp"
        ),
        (
            #"{"version":"2.2","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-app-id":1234567891,"fidelity-type":0,"timestamp":1594406341000}"#,
            "version + ad-network-id + campaign-id + itunes-item-id + nonce + source-app-id + fidelity-type + timestamp"
        ),
        (
            #"{"version":"3.0","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-app-id":1234567891,"fidelity-type":1,"timestamp":1594406341000}"#,
            "version + ad-network-id + campaign-id + itunes-item-id + nonce + source-app-id + fidelity-type + timestamp"
        ),
        (
            #"{"version":"4.0","ad-network-id":"example123.skadnetwork","source-identifier":5239,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-app-id":1234567891,"fidelity-type":1,"timestamp":1594406341000}"#,
            "version + ad-network-id + source-identifier + itunes-item-id + nonce + source-app-id + fidelity-type + timestamp"
        ),
        (
            #"{"version":"4.0","ad-network-id":"example123.skadnetwork","source-identifier":5239,"itunes-item-id":525463029,"nonce":"\#(nonce)","source-domain":"example.com","fidelity-type":1,"timestamp":1594406341000}"#,
            // SKAdNetwork for Web Ads writes the names with underscores.
            "version + ad_network_id + source_identifier + itunes_item_id + nonce + source_domain + fidelity_type + timestamp"
        ),
    ]

    @Test(arguments: 0..<cases.count) func signedStringFollowsApplesOrder(index: Int) throws {
        let (line, template) = Self.cases[index]
        let impression = try SKAdNetworkImpression(parsing: Self.json(line))
        let names = template.components(separatedBy: " + ").map { $0.replacingOccurrences(of: "_", with: "-") }
        #expect(impression.signedFields.map(\.name) == names)
        // The values are the record's own, in that order, joined with U+2063.
        let object = Self.json(line)
        let values: [String] = names.map { name in
            switch object[name] {
            case .string(let text)?: return text
            case .number(let number)?: return number.text
            default: return "?"
            }
        }
        #expect(impression.signedMessage == Array(values.joined(separator: "\u{2063}").utf8))
        let verdict = Self.verdict(try Self.signed(line))
        #expect(verdict.status == .verified, "\(verdict.reason ?? "")")
        #expect(verdict.signedString == values.joined(separator: "\u{2063}"))
    }

    /// The fast path (`PlainImpressionReader`) reads every case as the full parser does, and of each
    /// case mutated byte by byte (each byte replaced, dropped, doubled) it accepts nothing the full
    /// parser reads otherwise or refuses.
    @Test func plainReaderAgreesWithTheFullParser() throws {
        func fast(_ bytes: [UInt8]) -> SKAdNetworkImpression? { bytes.withUnsafeBytes(PlainImpressionReader.read) }
        func full(_ bytes: [UInt8]) -> SKAdNetworkImpression? {
            guard case .object(let object)? = try? StrictJSONParser.parse(bytes) else { return nil }
            return try? SKAdNetworkImpression(parsing: object)
        }
        var accepted = 0
        var mutants = 0
        let replacements: [UInt8] = Array(#"0 9"-,:{}\aAeE.+"#.utf8) + [0x00, 0x7F, 0xC3, 0x0A]
        for (line, _) in Self.cases {
            let bytes = Array(line.utf8)
            let read = try #require(fast(bytes), "the plain form takes the fast path: \(line)")
            #expect(read == full(bytes))
            let spaced = Array(line.replacingOccurrences(of: ",", with: " ,\t").replacingOccurrences(of: ":", with: ": ").utf8)
            #expect(fast(spaced) == full(spaced) && fast(spaced) != nil)
            for index in bytes.indices {
                var variants = [Array(bytes[..<index] + bytes[(index + 1)...]), Array(bytes[...index] + bytes[index...])]
                for replacement in replacements where replacement != bytes[index] {
                    var changed = bytes
                    changed[index] = replacement
                    variants.append(changed)
                }
                for variant in variants {
                    mutants += 1
                    guard let plain = fast(variant) else { continue }
                    accepted += 1
                    #expect(plain == full(variant), "\(String(decoding: variant, as: UTF8.self))")
                }
            }
        }
        #expect(mutants > 30_000 && accepted > 1_000, "\(accepted) of \(mutants) mutants read")
        // An upper-case nonce is read and lower-cased, as the full parser does.
        let upper = Array(Self.cases[4].line.replacingOccurrences(of: Self.nonce, with: Self.nonce.uppercased()).utf8)
        #expect(fast(upper)?.nonce == Self.nonce && fast(upper) == full(upper))
    }

    @Test func kinds() throws {
        let kinds = try Self.cases.map { try SKAdNetworkImpression(parsing: Self.json($0.line)).kind }
        #expect(
            kinds == [
                .storeKitRendered, .storeKitRendered, .storeKitRendered, .viewThrough, .storeKitRendered, .storeKitRendered,
                .webAd,
            ])
    }

    @Test func nonceIsSignedLowerCase() throws {
        let upper = Self.cases[5].line.replacingOccurrences(of: Self.nonce, with: Self.nonce.uppercased())
        let impression = try SKAdNetworkImpression(parsing: Self.json(upper))
        #expect(impression.nonce == Self.nonce)
        #expect(try Self.signed(upper).contains(Self.nonce))
        // A signature made over the upper-case nonce is what Apple warns about: it does not verify.
        let wrong = Base64.encode(
            try Self.key.derSignature(
                for: SKAdNetworkPostback.join(
                    impression.signedFields.map { $0.name == "nonce" ? $0.value.uppercased() : $0.value })),
            alphabet: .standard)
        var line = Self.cases[5].line
        line.removeLast()
        #expect(Self.verdict(line + ",\"signature\":\"\(wrong)\"}").status == .invalidSignature)
    }

    @Test(arguments: [
        ("\"ad-network-id\":\"example123.skadnetwork\"", "\"ad-network-id\":\"Example123.skadnetwork\"", "must be lower-case"),
        ("\"timestamp\":1594406341000", "\"timestamp\":1594406341", "looks like seconds"),
        ("\"nonce\":\"\(nonce)\"", "\"nonce\":\"not-a-uuid\"", "must be a UUID"),
        ("\"source-identifier\":5239", "\"source-identifier\":\"5239\"", "must be an integer"),
        ("\"source-identifier\":5239", "\"campaign-id\":5", "campaign-id is not part of a 4.0 impression"),
        ("\"fidelity-type\":1", "\"fidelity-type\":2", "fidelity-type must be from 0 to 1"),
        ("\"fidelity-type\":1", "\"fidelity-type\":1.0", "must be an integer"),
        ("\"source-app-id\":1234567891", "\"source-app-id\":-1", "from 0"),
        ("\"source-app-id\":1234567891,", "", "source-app-id is required"),
        ("\"source-app-id\":1234567891", "\"source-app-id\":1,\"source-domain\":\"a.com\"", "both given"),
        ("\"version\":\"4.0\"", "\"version\":\"5.0\"", "no documented impression signature"),
        ("\"version\":\"4.0\"", "\"version\":4.0", "version must be a string"),
        ("\"timestamp\":1594406341000", "\"timestamp\":1594406341000,\"timestamp\":1594406341001", "duplicate"),
        ("\"itunes-item-id\":525463029", "\"itunes-item-id\":525463029,\"itunes-item\":1", "not a member"),
        ("\"nonce\":\"\(nonce)\"", "\"nonce\":\"\(nonce)\\u2063\"", "U+2063"),
    ])
    func malformedSKAdNetworkImpressions(from: String, to: String, reason: String) throws {
        let line = Self.cases[5].line.replacingOccurrences(of: from, with: to)
        #expect(line != Self.cases[5].line)
        #expect(throws: PostbackRejection.self) { try Self.signed(line) }
        let verdict = Self.verdict(line.dropLast() + ",\"signature\":\"MEQCIA==\"}")
        #expect(verdict.status != .verified)
        #expect(verdict.reason?.contains(reason) == true, "\(verdict.reason ?? "")")
    }

    @Test func olderVersionsRefuseNewerFields() {
        let line = Self.cases[1].line.replacingOccurrences(of: "\"timestamp\"", with: "\"fidelity-type\":1,\"timestamp\"")
        #expect(Self.verdict(line).reason?.contains("fidelity-type is not part of a 2.0 impression") == true)
        let web = Self.cases[4].line.replacingOccurrences(of: "\"source-app-id\":1234567891", with: "\"source-domain\":\"a.com\"")
        #expect(Self.verdict(web).reason?.contains("web ads are 4.0") == true)
        let viewThroughWeb = Self.cases[6].line.replacingOccurrences(of: "\"fidelity-type\":1", with: "\"fidelity-type\":0")
        #expect(Self.verdict(viewThroughWeb).reason?.contains("web ad must be 1") == true)
    }

    /// Every signed value changed, one at a time, and the order changed: the signature no longer verifies.
    @Test(arguments: 0..<cases.count) func mutationsFail(index: Int) throws {
        let signedLine = try Self.signed(Self.cases[index].line)
        #expect(Self.verdict(signedLine).isVerified)
        let object = Self.json(signedLine)
        for member in object.members where member.key != "signature" && member.key != "version" {
            let changed: String
            switch member.value {
            case .number(let number):
                let value = Int64(number.text)!
                let other =
                    member.key == "fidelity-type" ? 1 - value : (member.key == "campaign-id" ? value % 100 + 1 : value + 1)
                changed = "\"\(member.key)\":\(other)"
            case .string(let text):
                let other = member.key == "nonce" ? "00000000" + text.dropFirst(8) : text + "x"
                changed = "\"\(member.key)\":\"\(other)\""
            default: continue
            }
            let original: String
            if case .string(let text) = member.value {
                original = "\"\(member.key)\":\"\(text)\""
            } else if case .number(let number) = member.value {
                original = "\"\(member.key)\":\(number.text)"
            } else {
                continue
            }
            let mutated = signedLine.replacingOccurrences(of: original, with: changed)
            // A web ad's fidelity type can only be 1: changed, it is refused before the signature.
            let expected: VerificationStatus =
                member.key == "fidelity-type" && object["source-domain"] != nil ? .malformed : .invalidSignature
            #expect(Self.verdict(mutated).status == expected, "\(member.key) changed")
        }
        // Another version's order over the same values.
        let impression = try SKAdNetworkImpression(parsing: object, extraMembers: ["signature"])
        var fields = impression.signedFields.map(\.value)
        fields.swapAt(fields.count - 2, fields.count - 3)
        let swapped = Base64.encode(try Self.key.derSignature(for: SKAdNetworkPostback.join(fields)), alphabet: .standard)
        guard case .string(let signature)? = object["signature"] else {
            Issue.record("no signature")
            return
        }
        #expect(Self.verdict(signedLine.replacingOccurrences(of: signature, with: swapped)).status == .invalidSignature)
    }

    static let aakLine =
        #"{"impression-identifier":"7aa9f8cc-5689-4c02-b963-22ca22136015","publisher-item-identifier":0,"impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","source-identifier":5239,"timestamp":1679790422446,"advertised-item-identifier":1108187390}"#

    @Test func adAttributionKitImpression() throws {
        let signedLine = try Self.signed(Self.aakLine)
        let verdict = Self.verdict(signedLine)
        #expect(verdict.status == .verified, "\(verdict.reason ?? "")")
        #expect(verdict.kind == .adAttributionKit)
        guard case .string(let jws)? = Self.json(signedLine)["jws"] else {
            Issue.record("no jws")
            return
        }
        let parsed = try CompactJWS(parsing: jws)
        #expect(parsed.headerJSON == #"{"alg":"ES256","kid":"example.adattributionkit"}"#)
        #expect(parsed.signature.count == 64)
        #expect(!jws.contains("="))
        #expect(parsed.payloadJSON == Self.aakLine)
        // Only the JWS is needed; claims beside it must be the signed ones.
        #expect(Self.verdict("{\"jws\":\"\(jws)\"}").isVerified)
        let edited = signedLine.replacingOccurrences(of: "\"source-identifier\":5239", with: "\"source-identifier\":5230")
        #expect(Self.verdict(edited).reason?.contains("differs from the signed claim") == true)
        // Another key, another kid.
        let other = ImpressionVerifier(keys: [
            ImpressionKey(name: "old", keyID: "example.adattributionkit", key: try ECDSAPrivateKey(generatingOn: .p256).publicKey)
        ])
        #expect(other.verify(Array(signedLine.utf8)).status == .invalidSignature)
        let elsewhere = ImpressionVerifier(keys: [ImpressionKey(name: "k", keyID: "another", key: Self.key.publicKey)])
        #expect(elsewhere.verify(Array(signedLine.utf8)).status == .untrustedKey)
    }

    /// Apple documents one `impression-type` for a JWS impression, `app-impression`: `sign` refuses
    /// `web-impression` (web ads are SKAdNetwork 4.0 impressions), and `verify` refuses a JWS that
    /// carries it, signed by a key it trusts.
    @Test func webImpressionIsRefusedBySignAndVerify() throws {
        let line = Self.aakLine.replacingOccurrences(of: "app-impression", with: "web-impression")
        do {
            _ = try Self.signed(line)
            Issue.record("web-impression was signed")
        } catch let rejection as PostbackRejection {
            #expect(rejection.reason.contains("impression-type \"web-impression\" is not app-impression"), "\(rejection.reason)")
        }
        let impression = AdAttributionKitImpression(
            impressionIdentifier: "7aa9f8cc-5689-4c02-b963-22ca22136015", publisherItemIdentifier: 0,
            impressionType: "web-impression", adNetworkIdentifier: "example.adattributionkit", sourceIdentifier: 5239,
            timestamp: 1_679_790_422_446, advertisedItemIdentifier: 1_108_187_390)
        let jws = try ImpressionSigner(key: Self.key).compactJWS(for: impression)
        let verdict = Self.verdict("{\"jws\":\"\(jws)\"}")
        #expect(!verdict.isVerified)
        #expect(verdict.reason?.contains("is not app-impression") == true, "\(verdict.reason ?? "")")
    }

    @Test func adAttributionKitKidAndReengagement() throws {
        let signer = try ImpressionSigner(key: Self.key, keyID: "rotation-2")
        let line = Self.aakLine.dropLast() + ",\"eligible-for-re-engagement\":true}"
        var out = JSONWriter()
        try signer.signRecord(Array(line.utf8), to: &out)
        let verifier = ImpressionVerifier(keys: [
            ImpressionKey(name: "old", keyID: "rotation-1", key: try ECDSAPrivateKey(generatingOn: .p256).publicKey),
            ImpressionKey(name: "new", keyID: "rotation-2", key: Self.key.publicKey),
        ])
        let verdict = verifier.verify(out.bytes.dropLast().map { $0 })
        #expect(verdict.status == .verified)
        #expect(verdict.keyName == "new")
    }

    @Test(arguments: [
        ("\"impression-type\":\"app-impression\"", "\"impression-type\":\"click\"", "impression-type"),
        (
            "\"ad-network-identifier\":\"example.adattributionkit\"", "\"ad-network-identifier\":\"Example.adattributionkit\"",
            "lower-case"
        ),
        ("\"timestamp\":1679790422446", "\"timestamp\":1679790422", "milliseconds"),
        ("\"source-identifier\":5239", "\"source-identifier\":52390", "from 0 to 9999"),
        ("\"publisher-item-identifier\":0", "\"publisher-item-identifier\":\"0\"", "must be an integer"),
        (
            "\"advertised-item-identifier\":1108187390", "\"advertised-item-identifier\":1108187390,\"marketplace\":1",
            "not a member"
        ),
    ])
    func malformedAdAttributionKitImpressions(from: String, to: String, reason: String) {
        let line = Self.aakLine.replacingOccurrences(of: from, with: to)
        #expect(line != Self.aakLine)
        #expect(throws: PostbackRejection.self) { try Self.signed(line) }
    }

    /// Apple's example compact JWS ("Generating JWS impressions"): its header and payload read with
    /// the impression rules, and its signing input is the first two segments exactly. (Apple does not
    /// publish the example's key, so the signature itself cannot be checked.)
    @Test func applesExampleJWSParses() {
        let jws =
            "eyJraWQiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhbGciOiJFUzI1NiJ9.eyJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZXhhbXBsZS5hZGF0dHJpYnV0aW9ua2l0IiwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24iLCJlbGlnaWJsZS1mb3ItcmUtZW5nYWdlbWVudCI6dHJ1ZSwidGltZXN0YW1wIjoxNzE5NTk5OTU3MjM5LCJwdWJsaXNoZXItaXRlbS1pZGVudGlmaWVyIjo1ODM4NDkyLCJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiI1NDRCOEZBRC0wQUQ1LTQ0MzQtOThCMi0zMjcxMTNBRjg0REIiLCJzb3VyY2UtaWRlbnRpZmllciI6NTIzOX0.zxQ_HcpB7pK6lWOms4LZ8uK3sZu_0S-bPR0My7UY4QlEAYFP-wp5eN1WuHOmNwoPD5cgazpwA3o5xq-fhfpOEQ"
        let verdict = Self.verdict("{\"jws\":\"\(jws)\"}")
        #expect(verdict.status == .invalidSignature)
        #expect(verdict.signedString == jws.split(separator: ".").prefix(2).joined(separator: "."))
        #expect(verdict.signedFields.first?.value == #"{"kid":"example.adattributionkit","alg":"ES256"}"#)
    }

    @Test func onlyP256Keys() throws {
        #expect(throws: PostbackRejection.self) { try ImpressionSigner(key: try ECDSAPrivateKey(generatingOn: .p192)) }
    }
}
