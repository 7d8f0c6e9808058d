import Basics
import Dispatch
import Foundation
import Locking
import PostbackCrypto
import Postbacks

/// `postback impression sign | verify`: the ad network's side, before any postback exists
/// (docs/impressions.md).
enum ImpressionCommand {
    static let usage = """
        usage: postback impression sign --key KEY.pem [--kid KID] [--jobs N] [PATH|-]
               postback impression verify --key PUBLIC.pem... [--json] [--explain] [--jobs N] [PATH|-]...

        Signs ad impressions with the ad network's own P-256 key, or checks them with its public
        key as the device does (docs/impressions.md). Input is JSON Lines, one impression a line
        (standard input without PATH): an object with "version" is a SKAdNetwork impression
        (version, ad-network-id, campaign-id or source-identifier, itunes-item-id, nonce,
        source-app-id or source-domain, fidelity-type, timestamp); without "version" it holds
        AdAttributionKit claims (impression-identifier, publisher-item-identifier, impression-type,
        ad-network-identifier, source-identifier, timestamp, advertised-item-identifier, and
        optionally eligible-for-re-engagement).

        sign      writes each impression as signed, plus "signature" (Base64 DER, SKAdNetwork) or
                  "jws" (compact JWS, ES256); a line that is not an impression is named with its
                  line number on stderr and skipped
          --key KEY.pem   the ad network's private key (PKCS #8 or SEC1 PEM, P-256); refused unless
                          readable by its owner only (chmod 600)
          --kid KID       the JWS kid (default: each impression's ad-network-identifier, as Apple asks)
          --jobs N        signing threads (default: one per core)
        verify    one verdict per impression: verified, invalid-signature, malformed (naming the
                  field), untrusted-key (no key for the JWS kid) or unsupported-version
          --key PEM       the ad network's public key; KID=PEM picks it by JWS kid; repeatable, for
                          key rotation (a SKAdNetwork impression verifies with any of them)
          --json          one JSON object per impression, with the exact signed string
          --explain       also print the signed values and the exact signed string
          --jobs N        worker threads (default: one per core)

        Exit status: 0 every impression signed (sign) or verified (verify), 1 some line was refused or
        did not verify, 2 usage, key or I/O error.
        """

    static let syntax = CommandSyntax("impression", usage: usage)
    static let signSyntax = CommandSyntax("impression sign", usage: usage, options: ["--key", "--kid", "--jobs"])
    static let verifySyntax = CommandSyntax(
        "impression verify", usage: usage, flags: ["--json", "--explain"], options: ["--key", "--jobs"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("sign", sign), ("verify", verify)])
    }

    // MARK: sign

    static func sign(_ words: [String], io: CommandIO) -> ExitStatus {
        let signer: ImpressionSigner
        let path: String
        let jobs: Int
        do {
            let arguments = try signSyntax.parse(words)
            guard let keyPath = arguments.value("--key") else { throw CommandError.usage("--key KEY.pem is required") }
            guard arguments.positionals.count <= 1 else {
                throw CommandError.usage("one PATH at most ('-' or none reads standard input)")
            }
            path = arguments.positionals.first ?? "-"
            jobs = try arguments.integer("--jobs", default: ProcessInfoCores.count, in: 1...256)
            let key = try PrivateKeyFile.load(keyPath)
            if let kid = arguments.value("--kid"), kid.isEmpty || UnicodeSafety.firstControlOrInvisible(in: kid) != nil {
                throw CommandError.usage("--kid must be non-empty printable text")
            }
            do {
                signer = try ImpressionSigner(key: key, keyID: arguments.value("--kid"))
            } catch {
                throw CommandError.usage("--key \(keyPath): \(error.reason)")
            }
        } catch {
            return signSyntax.finish(error, io: io)
        }
        let counts = Locked((signed: 0, refused: 0, failed: false))
        do {
            try forEachBatch(path: path, jobs: jobs, io: io) { worker in
                // Each worker signs with its own copy of the key (and so its own OpenSSL contexts):
                // sharing one costs a reference count and a pool lock bounced between cores per line.
                let signer = worker == 0 ? signer : signer.independentCopy()
                return { batch in
                    var output = JSONWriter(reservingCapacity: batch.count * 400)
                    var errors: [UInt8] = []
                    var signed = 0
                    var refused = 0
                    var failed = false
                    for record in batch {
                        do {
                            if let problem = record.problem {
                                // Empty input is nothing to sign, not a bad line.
                                if record.bytes.isEmpty, problem.hasPrefix("empty input") { continue }
                                throw PostbackRejection(.malformed, problem)
                            }
                            try signer.signRecord(record.bytes, to: &output)
                            signed += 1
                        } catch let rejection as PostbackRejection {
                            refused += 1
                            errors.append(
                                contentsOf:
                                    "postback impression sign: \(VerdictFormatter.printable(record.source)): \(rejection.reason)\n"
                                    .utf8)
                        } catch {
                            failed = true
                            errors.append(
                                contentsOf: "postback impression sign: \(record.source): signing failed: \(error)\n".utf8)
                        }
                    }
                    counts.withLock {
                        $0.signed += signed
                        $0.refused += refused
                        $0.failed = $0.failed || failed
                    }
                    return (output.bytes, errors)
                }
            }
        } catch {
            io.printError("postback impression sign: \(error)")
            return .usageOrIOError
        }
        let (signed, refused, failed) = counts.withLock { $0 }
        if refused > 0 {
            io.printError("postback impression sign: \(signed) signed, \(refused) refused")
        }
        if failed { return .usageOrIOError }
        return refused > 0 ? .failure : .success
    }

    // MARK: verify

    static func verify(_ words: [String], io: CommandIO) -> ExitStatus {
        let verifier: ImpressionVerifier
        let paths: [String]
        let jobs: Int
        let json: Bool
        let explain: Bool
        do {
            let arguments = try verifySyntax.parse(words)
            let keyValues = arguments.values("--key")
            guard !keyValues.isEmpty else { throw CommandError.usage("--key PUBLIC.pem is required") }
            verifier = ImpressionVerifier(keys: try keyValues.map(loadPublicKey))
            paths = arguments.positionals.isEmpty ? ["-"] : arguments.positionals
            jobs = try arguments.integer("--jobs", default: ProcessInfoCores.count, in: 1...256)
            json = arguments.has("--json")
            explain = arguments.has("--explain")
        } catch {
            return verifySyntax.finish(error, io: io)
        }
        let tally = Locked(VerdictTally())
        let started = DispatchTime.now()
        var hadIOError = false
        for path in paths {
            do {
                try forEachBatch(path: path, jobs: jobs, io: io) { _ in
                    { batch in
                        var jsonOutput = JSONWriter(reservingCapacity: json ? batch.count * 300 : 0)
                        var text: [UInt8] = []
                        var counts = VerdictTally()
                        for record in batch {
                            var verdict = verifier.verify(record.bytes)
                            if let problem = record.problem {
                                verdict = ImpressionVerdict(status: .malformed, reason: problem)
                            }
                            counts.byStatus[verdict.status, default: 0] += 1
                            if json {
                                appendJSON(source: record.source, verdict: verdict, to: &jsonOutput)
                            } else {
                                appendText(source: record.source, verdict: verdict, explain: explain, to: &text)
                            }
                        }
                        tally.withLock { $0.add(counts) }
                        return (json ? jsonOutput.bytes : text, [])
                    }
                }
            } catch {
                io.printError("postback impression verify: \(error)")
                hadIOError = true
            }
        }
        let final = tally.withLock { $0 }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let summary = final.summary(seconds: seconds).replacingOccurrences(of: "postback", with: "impression")
        if json { io.printError(summary) } else { io.print(summary) }
        if hadIOError { return .usageOrIOError }
        return final.total > 0 && final.verified == final.total ? .success : .failure
    }

    /// `PEM` or `KID=PEM`: a public key (or a private key's public half; the file must then be
    /// readable by its owner only).
    static func loadPublicKey(_ value: String) throws -> ImpressionKey {
        var keyID: String? = nil
        var path = value
        if !FileManager.default.fileExists(atPath: value), let equals = value.firstIndex(of: "="), equals != value.startIndex {
            keyID = String(value[..<equals])
            path = String(value[value.index(after: equals)...])
        }
        let name = (path.split(separator: "/").last.map(String.init) ?? path) + (keyID.map { " (kid \($0))" } ?? "")
        let text: String
        do {
            text = try FileBytes.readText(path: path, limit: 1 << 20)
        } catch {
            throw CommandError.usage("--key \(error)")
        }
        if text.contains("PRIVATE KEY") {
            return ImpressionKey(name: name, keyID: keyID, key: try PrivateKeyFile.load(path).publicKey)
        }
        do {
            return ImpressionKey(name: name, keyID: keyID, key: try ECDSAPublicKey(pemRepresentation: text))
        } catch {
            throw CommandError.usage("--key \(path): not a P-256 public key in PEM (\(error))")
        }
    }

    static func appendText(source: String, verdict: ImpressionVerdict, explain: Bool, to output: inout [UInt8]) {
        var line = verdict.status.rawValue.padding(to: 20) + VerdictFormatter.printable(source)
        var details: [String] = []
        if let kind = verdict.kind {
            details.append(
                verdict.version.map { "skadnetwork \(VerdictFormatter.printable($0)) \(kind.rawValue)" } ?? kind.rawValue)
        }
        if let key = verdict.keyName { details.append("key \(VerdictFormatter.printable(key))") }
        if !details.isEmpty { line += "  " + details.joined(separator: "  ") }
        if let reason = verdict.reason { line += ": " + reason }
        line += "\n"
        if explain, let signed = verdict.signedString {
            for field in verdict.signedFields {
                line += "    " + field.name.padding(to: 18) + VerdictFormatter.printable(field.value) + "\n"
            }
            line += "    signed string     " + quoted(signed) + "\n"
        }
        output.append(contentsOf: line.utf8)
    }

    static func appendJSON(source: String, verdict: ImpressionVerdict, to json: inout JSONWriter) {
        json.beginObject()
        json.field("source", source)
        json.field("status", verdict.status.rawValue)
        json.field("kind", verdict.kind?.rawValue)
        json.field("version", verdict.version)
        json.field("key", verdict.keyName)
        if let reason = verdict.reason { json.field("reason", reason) }
        json.field("signed_string", verdict.signedString)
        json.endObject()
        json.endLine()
    }

    /// The signed string as a JSON string: U+2063 shows as `\u2063`, so the output is exact and visible.
    static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONWriter.appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\u{2063}", with: "\\u2063")
    }

    /// Reads `path` as records and runs batches on `jobs` threads, each with the work
    /// `makeWork(worker)` made for it, writing each batch's standard output and standard error in
    /// input order.
    static func forEachBatch(
        path: String, jobs: Int, io: CommandIO,
        _ makeWork: @escaping @Sendable (_ worker: Int) -> ([InputRecord]) -> (output: [UInt8], errors: [UInt8])
    ) throws {
        let reader = try RecordReader(path: path, numbersEveryRecord: true)
        let map = OrderedParallelMap<[InputRecord], (output: [UInt8], errors: [UInt8])>(
            workers: jobs, makeTransform: makeWork,
            deliver: { result in
                if !result.output.isEmpty { io.standardOutput.write(result.output) }
                if !result.errors.isEmpty { io.standardError.write(result.errors) }
            })
        var batch: [InputRecord] = []
        batch.reserveCapacity(256)
        var readError: RecordReader.IOError?
        do {
            while let record = try reader.next() {
                batch.append(record)
                if batch.count >= 256 {
                    map.submit(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
        } catch {
            readError = error
        }
        if !batch.isEmpty { map.submit(batch) }
        map.waitUntilDone()
        if let readError { throw readError }
    }
}
