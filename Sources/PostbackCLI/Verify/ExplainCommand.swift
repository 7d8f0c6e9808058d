import Basics
import Postbacks

/// `postback explain`: everything a user needs to debug a rejected postback.
enum ExplainCommand {
    static let usage = """
        usage: postback explain [--allow-dev] [--trust-key PEM]... PATH

        Prints, for each postback in PATH ('-' for stdin): the parsed fields, the exact signed
        message with its U+2063 separators made visible, the keys tried, the verdict (which the
        signature alone decides) and every flag: a value normalized, dropped or not recognized.

        Exit status: 0 every postback verified, 1 any did not, 2 usage or I/O error.
        """

    static let syntax = CommandSyntax("explain", usage: usage, flags: ["--allow-dev"], options: ["--trust-key"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        let verifier: PostbackVerifier
        do {
            arguments = try syntax.parse(words)
            guard arguments.positionals.count == 1 else { throw CommandError.usage("give exactly one PATH") }
            let testKeys = try TrustKeys.load(arguments.values("--trust-key"))
            if !testKeys.isEmpty, !arguments.has("--allow-dev") {
                throw CommandError.usage("--trust-key keys are test keys; add --allow-dev to accept postbacks they sign")
            }
            verifier = PostbackVerifier(
                policy: VerificationPolicy(allowsDevelopment: arguments.has("--allow-dev"), testKeys: testKeys))
        } catch {
            return syntax.finish(error, io: io)
        }
        var allVerified = true
        do {
            let reader = try RecordReader(path: arguments.positionals[0])
            var first = true
            while let record = try reader.next() {
                if !first { io.print("") }
                first = false
                let explanation = explain(record, verifier: verifier)
                io.print(explanation.text)
                allVerified = allVerified && explanation.verified
            }
        } catch {
            io.printError("postback explain: \(error)")
            return .usageOrIOError
        }
        return allVerified ? .success : .failure
    }

    static func explain(_ record: InputRecord, verifier: PostbackVerifier) -> (text: String, verified: Bool) {
        var out = Lines()
        out.add("source", show(record.source))
        if let problem = record.problem {
            out.add("verdict", "malformed: \(problem)")
            return (out.text, false)
        }
        let postback: Postback
        do {
            postback = try Postback(body: record.bytes)
        } catch {
            if let protocolName = error.postbackProtocol?.rawValue {
                out.add("protocol", protocolName + (error.version.map { " \($0)" } ?? ""))
            }
            out.add("verdict", "\(error.status.rawValue): \(error.reason)")
            if let note = quarantineNote(VerificationResult(rejection: error).quarantineReason) { out.add("receiver", note) }
            if let offset = error.jsonError?.offset { out.block(context(of: record.bytes, at: offset)) }
            return (out.text, false)
        }
        let (result, attempts) = verifier.verifyRecordingAttempts(postback)
        switch postback {
        case .skadnetwork(let skan): describe(skan, into: &out)
        case .adAttributionKit(let aak): describe(aak, into: &out)
        }
        out.section("signature checks")
        if attempts.isEmpty { out.block(["(none: the postback was rejected before any key was tried)"]) }
        for attempt in attempts {
            out.block([
                "\(attempt.isValid ? "valid  " : "invalid")  key \(attempt.keyName), message \(attempt.variant) (\(attempt.message.count) bytes)"
            ])
        }
        out.add("dedup key", show(postback.dedupKey))
        var verdict = result.status.rawValue
        if let environment = result.environment {
            verdict += " (\(environment.rawValue)\(result.isTestMode ? ", test mode" : ""))"
        }
        if let key = result.keyName, result.isVerified { verdict += " with key \(key)" }
        if let reason = result.reason { verdict += ": \(reason)" }
        out.add("verdict", verdict)
        let flags = result.flags
        out.add("flags", flags.isEmpty ? "none" : "\(flags.count) (they never change the verdict)")
        out.block(flags.map { "\($0.action.rawValue.padding(to: 13))\($0.field.rawValue.padding(to: 26))\($0.raw): \($0.note)" })
        if let note = quarantineNote(result.quarantineReason) { out.add("receiver", note) }
        return (out.text, result.isVerified)
    }

    /// What `postback serve` does with a postback it cannot judge or count yet.
    private static func quarantineNote(_ reason: QuarantineReason?) -> String? {
        guard let reason else { return nil }
        return
            "answers 200 and keeps it in raw/unverifiable/ (\(reason.rawValue)), never counted; postback reverify takes it back once a release knows it"
    }

    /// `"com.apple.ads" (Apple Ads)` for networks known by name.
    private static func showNetwork(_ adNetworkID: String, campaignID: Int64? = nil) -> String {
        show(adNetworkID) + (KnownAdNetwork.describe(adNetworkID: adNetworkID, campaignID: campaignID).map { " (\($0))" } ?? "")
    }

    private static func describe(_ skan: SKAdNetworkPostback, into out: inout Lines) {
        out.add("protocol", "skadnetwork \(skan.version.rawValue)\(skan.versionField == nil ? " (no version field)" : "")")
        out.add(
            "key",
            "\(AppleKey(for: skan.version).name) (\(skan.version.curve.rawValue); \(skan.isTestMode ? "test mode: development" : "production"))"
        )
        if let network = KnownAdNetwork.describe(adNetworkID: skan.adNetworkID, campaignID: skan.campaignID) {
            out.add("network", network)
        }
        out.section("signed fields, in signing order")
        let fields = skan.signedFields()
        for (index, field) in fields.enumerated() {
            out.block(["\(String(index + 1).padding(to: 3))\(field.name.padding(to: 26))\(show(field.value))"])
        }
        out.section("unsigned fields (anyone holding the postback can change these)")
        var unsigned: [String] = []
        if let value = skan.conversionValue { unsigned.append("conversion-value".padding(to: 29) + String(value)) }
        if let value = skan.coarseConversionValue { unsigned.append("coarse-conversion-value".padding(to: 29) + value.rawValue) }
        if let value = skan.countryCode { unsigned.append("country-code".padding(to: 29) + show(value)) }
        out.block(unsigned.isEmpty ? ["(none)"] : unsigned)
        let message = skan.signedMessage()
        out.section(
            "signed message (\(fields.count) fields, \(message.count) bytes; \\u2063 marks each U+2063 INVISIBLE SEPARATOR)")
        out.block([visible(message)])
        if skan.isTestMode {
            out.block([
                "test mode (source-app-id 0) variant, without that field:",
                visible(skan.signedMessage(omittingZeroSourceAppID: true)),
            ])
        }
        out.add("signature", "DER, \(skan.attributionSignature.count) bytes: \(Hex.encode(skan.attributionSignature))")
    }

    private static func describe(_ aak: AdAttributionKitPostback, into out: inout Lines) {
        out.add("protocol", "adattributionkit")
        let key = AppleKey(keyID: aak.keyID)
        out.add("key", show(aak.keyID) + (key.map { " (P-256, \($0.environment.rawValue))" } ?? " (not one of Apple's keys)"))
        out.section("JWS header")
        out.block([aak.jws.headerJSON])
        out.section("signed claims (JWS payload)")
        var claims: [(String, String)] = [
            ("impression-type", show(aak.impressionType)),
            ("ad-network-identifier", showNetwork(aak.adNetworkID)),
            ("source-identifier", show(aak.sourceIdentifier)),
            ("advertised-item-identifier", String(aak.advertisedItemID)),
            ("conversion-type", show(aak.conversionTypeText)),
            ("postback-identifier", show(aak.postbackIdentifier)),
            ("did-win", aak.didWin ? "true" : "false"),
            ("postback-sequence-index", String(aak.postbackSequenceIndex)),
        ]
        if let value = aak.marketplaceID { claims.append(("marketplace-identifier", show(value))) }
        if let value = aak.publisherItemID { claims.append(("publisher-item-identifier", String(value))) }
        out.block(claims.map { $0.0.padding(to: 29) + $0.1 })
        out.section("unsigned fields (outside the JWS; anyone holding the postback can change these)")
        var unsigned: [String] = []
        if let value = aak.conversionValue { unsigned.append("conversion-value".padding(to: 29) + String(value)) }
        if let value = aak.coarseConversionValue { unsigned.append("coarse-conversion-value".padding(to: 29) + value.rawValue) }
        if let value = aak.adInteraction { unsigned.append("ad-interaction-type".padding(to: 29) + value.rawValue) }
        if let value = aak.countryCode { unsigned.append("country-code".padding(to: 29) + show(value)) }
        out.block(unsigned.isEmpty ? ["(none)"] : unsigned)
        out.section(
            "signed message (JWS signing input: header and payload segments as received, \(aak.jws.signingInput.count) bytes)")
        out.block([String(decoding: aak.jws.signingInput, as: UTF8.self)])
        out.add("signature", "raw r ‖ s, \(aak.jws.signature.count) bytes: \(Hex.encode(aak.jws.signature))")
    }

    /// The message with separators as `\u2063` and any other control or invisible character escaped.
    static func visible(_ message: [UInt8]) -> String {
        String(decoding: message, as: UTF8.self).unicodeScalars.map { scalar -> String in
            if scalar.value == 0x2063 { return "\\u2063" }
            return UnicodeSafety.isControlOrInvisible(scalar) ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined()
    }

    private static func show(_ text: String) -> String { "\"" + JSONWriter.escapedForMessage(text, limit: 400) + "\"" }

    /// A few bytes either side of a JSON error, with a caret under the offending byte.
    private static func context(of bytes: [UInt8], at offset: Int) -> [String] {
        let start = max(0, offset - 30)
        let end = min(bytes.count, offset + 30)
        guard start < end else { return [] }
        let snippet = bytes[start..<end].map { $0 >= 0x20 && $0 < 0x7F ? Character(UnicodeScalar($0)) : "." }
        return [String(snippet), String(repeating: " ", count: offset - start) + "^"]
    }
}

/// Aligned `label: value` lines with indented blocks.
private struct Lines {
    private var lines: [String] = []

    mutating func add(_ label: String, _ value: String) { lines.append((label + ":").padding(to: 12) + value) }
    mutating func section(_ title: String) { lines.append(title + ":") }
    mutating func block(_ block: [String]) { lines.append(contentsOf: block.map { "  " + $0 }) }

    var text: String { lines.joined(separator: "\n") }
}
