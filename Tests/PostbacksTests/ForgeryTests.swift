import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// 10,000 seeded mutations of Apple's verifying examples. A mutation that still verifies must carry
/// exactly the original signed content (same signed message or JWS signing input, same signature):
/// changing an unsigned field or JSON whitespace is no forgery. Anything else verifying is.
@Suite struct ForgeryTests {
    static let mutationCount = 10_000

    struct Original {
        let name: String
        let body: [UInt8]
        let signedContent: [UInt8]
    }

    static func signedContent(_ postback: Postback) -> [UInt8] {
        switch postback {
        case .skadnetwork(let skan): return skan.signedMessage() + [0] + skan.attributionSignature
        case .adAttributionKit(let aak): return aak.jws.signingInput + [0] + aak.jws.signature
        }
    }

    static func originals() throws -> [Original] {
        try Fixtures.appleVectorNames().filter { !$0.hasPrefix("negative_") }.map { name in
            let body = try Fixtures.appleVector(name)
            return Original(name: name, body: body, signedContent: signedContent(try Postback(body: body)))
        }
    }

    @Test func noMutationOfAnAppleExampleIsAcceptedAsAForgery() throws {
        let originals = try Self.originals()
        let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))
        for original in originals { #expect(verifier.verify(body: original.body).isVerified, "\(original.name)") }
        var random = SplitMix64(seed: 20_261_202)
        var forgeries: [String] = []
        var stillVerifiedBenign = 0
        var byKind: [String: Int] = [:]
        for index in 0..<Self.mutationCount {
            let original = originals[index % originals.count]
            let (kind, body) = try Mutator.mutate(original.body, random: &random)
            byKind[kind, default: 0] += 1
            let result = verifier.verify(body: body)
            guard result.isVerified, let postback = result.postback else { continue }
            if Self.signedContent(postback) == original.signedContent {
                stillVerifiedBenign += 1
            } else {
                forgeries.append("\(original.name) \(kind): \(String(decoding: body, as: UTF8.self))")
            }
        }
        #expect(forgeries.isEmpty, "accepted forgeries:\n\(forgeries.prefix(5).joined(separator: "\n"))")
        #expect(byKind.values.reduce(0, +) == Self.mutationCount)
        #expect(byKind.count >= 8, "every kind of mutation was tried: \(byKind)")
        // Benign ones exist (unsigned fields), but they must be the minority.
        #expect(stillVerifiedBenign < Self.mutationCount / 5)
    }
}

/// Makes one mutation of a postback body, choosing among the attacks of reliability.md §2.1 and §5.1.
enum Mutator {
    static func mutate(_ body: [UInt8], random: inout SplitMix64) throws -> (kind: String, body: [UInt8]) {
        var edited = try EditableBody(body)
        let isJWS = edited["jws-string"] != nil
        let choice = Int(random.next() % 9)
        switch choice {
        case 0:  // a bit flip anywhere in the raw bytes
            var bytes = body
            let bit = Int(random.next() % UInt64(bytes.count * 8))
            bytes[bit / 8] ^= UInt8(1 << (bit % 8))
            return ("raw bit flip", bytes)
        case 1:  // a bit flip in the decoded signature, re-encoded canonically
            if isJWS {
                var parts = jwsParts(edited)
                var signature = try #require(Base64.decode(parts[2], alphabet: .url).value)
                let bit = Int(random.next() % UInt64(signature.count * 8))
                signature[bit / 8] ^= UInt8(1 << (bit % 8))
                parts[2] = Base64.encode(signature, alphabet: .url)
                edited["jws-string"] = quoted(parts.joined(separator: "."))
            } else {
                let text = unquoted(edited["attribution-signature"]!)
                var signature = try #require(Base64.decode(text, alphabet: .standard).value)
                let bit = Int(random.next() % UInt64(signature.count * 8))
                signature[bit / 8] ^= UInt8(1 << (bit % 8))
                edited["attribution-signature"] = quoted(Base64.encode(signature, alphabet: .standard))
            }
            return ("signature bit flip", edited.bytes)
        case 2:  // an altered signed value
            if isJWS {
                var parts = jwsParts(edited)
                var payload = try EditableBody(try #require(Base64.decode(parts[1], alphabet: .url).value))
                let key = payload.members[Int(random.next() % UInt64(payload.members.count))].key
                payload[key] = altered(payload[key]!, random: &random)
                parts[1] = Base64.encode(payload.bytes, alphabet: .url)
                edited["jws-string"] = quoted(parts.joined(separator: "."))
            } else {
                let signed = signedKeys(edited)
                let key = signed[Int(random.next() % UInt64(signed.count))]
                edited[key] = altered(edited[key]!, random: &random)
            }
            return ("altered signed field", edited.bytes)
        case 3:  // a field shifted across a U+2063 into its neighbour
            if isJWS {
                var parts = jwsParts(edited)
                var payload = try EditableBody(try #require(Base64.decode(parts[1], alphabet: .url).value))
                let strings = payload.members.filter { $0.json.hasPrefix("\"") }
                let target = strings[Int(random.next() % UInt64(strings.count))].key
                payload[target] = quoted(unquoted(payload[target]!) + "\\u2063x")
                parts[1] = Base64.encode(payload.bytes, alphabet: .url)
                edited["jws-string"] = quoted(parts.joined(separator: "."))
            } else {
                let signed = signedKeys(edited)
                let index = Int(random.next() % UInt64(signed.count - 1))
                let (left, right) = (signed[index], signed[index + 1])
                let moved = unquoted(edited[right]!)
                edited[left] = quoted(unquoted(edited[left]!) + (random.next() % 2 == 0 ? "\u{2063}" : "\\u2063") + moved)
                edited[right] = nil
            }
            return ("field shift across U+2063", edited.bytes)
        case 4 where isJWS:  // another kid
            let kids = [
                "apple-cas-identifier/0", "apple-development-identifier/0", "apple-development-identifier/1",
                "apple-cas-identifier/1", "",
            ]
            return (
                "swapped kid",
                replaceHeader(edited, #"{"kid":"\#(kids[Int(random.next() % UInt64(kids.count))])","alg":"ES256"}"#)
            )
        case 5 where isJWS:  // another alg
            let algs = ["none", "None", "HS256", "ES384", "ES512", "ES256K", "EdDSA", "es256", "ES256 ", "RS256", ""]
            return (
                "alg not ES256",
                replaceHeader(
                    edited,
                    #"{"kid":"apple-development-identifier\/1","alg":"\#(algs[Int(random.next() % UInt64(algs.count))])"}"#)
            )
        case 6 where isJWS:  // an extra header member
            let extras = [
                #""jwk":{"kty":"EC","crv":"P-256"}"#, #""jku":"https://evil.example/k"#, #""x5c":["MII"]"#, #""crit":["b64"]"#,
                #""typ":"JWT""#, #""b64":false"#, #""cty":"x""#,
            ]
            return (
                "extra header member",
                replaceHeader(
                    edited,
                    #"{"kid":"apple-development-identifier\/1","alg":"ES256",\#(extras[Int(random.next() % UInt64(extras.count))])}"#
                )
            )
        case 4, 5, 6:  // SKAdNetwork: another version string keeps the layout but changes the message
            let versions = ["\"1.0\"", "\"2.0\"", "\"2.1\"", "\"2.2\"", "\"3.0\"", "\"4.0\"", "\"4\"", "\"3\"", "\"5.0\""]
            edited["version"] = versions[Int(random.next() % UInt64(versions.count))]
            return ("swapped version", edited.bytes)
        case 7:  // a Base64 variant of the same signature bytes
            if isJWS {
                var parts = jwsParts(edited)
                let segment = Int(random.next() % 3)
                let variants = [
                    parts[segment] + "=", parts[segment] + "==",
                    parts[segment].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                        + (parts[segment].contains("-") || parts[segment].contains("_") ? "" : "+"),
                    " " + parts[segment], parts[segment] + "\\n", lastCharacterBumped(parts[segment]),
                ]
                parts[segment] = variants[Int(random.next() % UInt64(variants.count))]
                edited["jws-string"] = quoted(parts.joined(separator: "."))
            } else {
                let text = unquoted(edited["attribution-signature"]!)
                let trimmed = text.replacingOccurrences(of: "=", with: "")
                let variants = [
                    trimmed, text + "=",
                    text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                        + (text.contains("+") || text.contains("/") ? "" : "-"),
                    " " + text, text + "\\n", "\\n" + text, paddingBitsBumped(text),
                ]
                edited["attribution-signature"] = quoted(variants[Int(random.next() % UInt64(variants.count))])
            }
            return ("base64 variant", edited.bytes)
        default:  // a duplicate key that a lax parser would resolve differently
            let key = edited.members[Int(random.next() % UInt64(edited.members.count))].key
            var text = String(decoding: edited.bytes.dropLast(), as: UTF8.self)
            text += ",\"\(key)\":\(altered(edited[key]!, random: &random))}"
            return ("duplicate key", Array(text.utf8))
        }
    }

    static func signedKeys(_ body: EditableBody) -> [String] {
        guard case .skadnetwork(let skan)? = try? Postback(body: body.bytes) else { return [] }
        let names = Set(skan.signedFields().map(\.name))
        return body.members.map(\.key).filter { names.contains($0) }
    }

    static func jwsParts(_ body: EditableBody) -> [String] {
        unquoted(body["jws-string"]!).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    static func replaceHeader(_ body: EditableBody, _ header: String) -> [UInt8] {
        var body = body
        var parts = jwsParts(body)
        parts[0] = Base64.encode(Array(header.utf8), alphabet: .url)
        body["jws-string"] = quoted(parts.joined(separator: "."))
        return body.bytes
    }

    /// A different value of a similar kind.
    static func altered(_ json: String, random: inout SplitMix64) -> String {
        if json == "true" { return "false" }
        if json == "false" { return "true" }
        if let number = Int64(json) { return String(number + 1 + Int64(random.next() % 7)) }
        var characters = Array(unquoted(json))
        if characters.isEmpty { return "\"x\"" }
        let index = Int(random.next() % UInt64(characters.count))
        let replacement: Character =
            characters[index] == "0" ? "1" : characters[index].isUppercase ? Character(characters[index].lowercased()) : "0"
        characters[index] = replacement
        return quoted(String(characters))
    }

    static func quoted(_ text: String) -> String { "\"\(text)\"" }

    static func unquoted(_ json: String) -> String { String(json.dropFirst().dropLast()) }

    static func lastCharacterBumped(_ text: String) -> String {
        guard let last = text.last, let value = last.asciiValue else { return text + "A" }
        return String(text.dropLast()) + String(UnicodeScalar(value == UInt8(ascii: "z") ? UInt8(ascii: "a") : value + 1))
    }

    /// Same bytes, but with non-zero unused bits in the last character before the padding.
    static func paddingBitsBumped(_ text: String) -> String {
        guard text.hasSuffix("=") else { return lastCharacterBumped(text) }
        let core = text.trimmingTrailing("=")
        return lastCharacterBumped(core) + String(repeating: "=", count: text.count - core.count)
    }
}

extension String {
    fileprivate func trimmingTrailing(_ character: Character) -> String {
        var copy = self
        while copy.last == character { copy.removeLast() }
        return copy
    }
}
