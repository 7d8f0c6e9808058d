import Foundation
import PostbackCrypto
import Postbacks
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback verify` and `postback explain`, run in-process with captured output, plus the built
/// binary for stdin and exit codes.
@Suite struct VerifyCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let samples = root.appendingPathComponent("Samples")

    struct Run {
        let status: PostbackCLI.ExitStatus
        let stdout: MemorySink
        let stderr: MemorySink
    }

    func run(_ words: [String]) -> Run {
        let out = MemorySink()
        let err = MemorySink()
        let status = PostbackCommand.run(words, io: CommandIO(standardOutput: out, standardError: err))
        return Run(status: status, stdout: out, stderr: err)
    }

    func sampleFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: Self.samples.path).filter { $0.hasSuffix(".json") }.sorted()
            .map { Self.samples.appendingPathComponent($0).path }
    }

    func temporaryFile(_ content: [UInt8], suffix: String = ".jsonl") throws -> String {
        let path = NSTemporaryDirectory() + "verify-\(UUID().uuidString)\(suffix)"
        try Data(content).write(to: URL(fileURLWithPath: path))
        return path
    }

    func jsonLines(_ sink: MemorySink) throws -> [[String: Any]] {
        try sink.lines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw CocoaError(.coderReadCorrupt)
            }
            return object
        }
    }

    @Test func samplesVerifyWithExitZeroAndTheDocumentedJSONFields() throws {
        let files = try sampleFiles()
        #expect(files.count == 6)
        let result = run(["verify", "--json"] + files)
        #expect(result.status == .success, "\(result.stdout.text)\(result.stderr.text)")
        let objects = try jsonLines(result.stdout)
        #expect(objects.count == files.count)
        for (object, file) in zip(objects, files) {
            #expect(object["source"] as? String == file)
            #expect(object["status"] as? String == "verified")
            #expect(object["protocol"] as? String == "skadnetwork")
            #expect(object["key"] as? String == "apple-skadnetwork-p256")
            #expect(object["environment"] as? String == "production")
            #expect(object["reason"] == nil)
            #expect((object["dedup_key"] as? String)?.hasSuffix(":0") == true)
            #expect(["2.1", "2.2", "3.0", "4.0"].contains(object["version"] as? String ?? ""))
        }
        #expect(result.stderr.text.contains("6 postbacks: 6 verified"))
    }

    @Test func anyFailureGivesExitOneAndAReason() throws {
        let negative = Self.root.appendingPathComponent("Tests/Vectors/apple/negative_skan-4.0_bad-signature.json").path
        let result = run(["verify", "--json", try sampleFiles()[0], negative])
        #expect(result.status == .failure)
        let objects = try jsonLines(result.stdout)
        #expect(objects.last?["status"] as? String == "invalid-signature")
        #expect((objects.last?["reason"] as? String)?.contains("does not verify") == true)
    }

    @Test func jsonLinesGetALineNumberEach() throws {
        let samples = try sampleFiles().map { try Array(Data(contentsOf: URL(fileURLWithPath: $0))) }
        // Compact each pretty sample onto one line.
        let lines = try samples.map { sample -> [UInt8] in
            let object = try JSONSerialization.jsonObject(with: Data(sample))
            return Array(try JSONSerialization.data(withJSONObject: object))
        }
        var content: [UInt8] = []
        for line in lines { content += line + [0x0A] }
        content += Array("{\"version\":\"4.0\"}\n\nnot json\n".utf8)
        let path = try temporaryFile(content)
        let result = run(["verify", "--json", path])
        #expect(result.status == .failure)
        let objects = try jsonLines(result.stdout)
        #expect(
            objects.map { $0["source"] as? String } == (1...lines.count).map { "\(path):\($0)" } + [
                "\(path):\(lines.count + 1)", "\(path):\(lines.count + 3)",
            ])
        #expect(objects.dropLast(2).allSatisfy { $0["status"] as? String == "verified" })
        #expect(objects[lines.count]["status"] as? String == "malformed")
        #expect((objects[lines.count]["reason"] as? String)?.contains("ad-network-id is required") == true)
        #expect((objects.last?["reason"] as? String)?.contains("invalid JSON") == true)
    }

    @Test func developmentNeedsAllowDevAndIsReportedAsDevelopment() throws {
        let file = Self.samples.appendingPathComponent(
            "development/aak_apple-doc_developer-settings_apple-development-identifier-1.json"
        ).path
        let refused = run(["verify", "--json", file])
        #expect(refused.status == .failure)
        #expect(try jsonLines(refused.stdout).first?["status"] as? String == "untrusted-key")
        let allowed = run(["verify", "--json", "--allow-dev", file])
        #expect(allowed.status == .success)
        let object = try jsonLines(allowed.stdout).first
        #expect(object?["environment"] as? String == "development")
        #expect(object?["protocol"] as? String == "adattributionkit")
        #expect(
            object?["dedup_key"] as? String == "85546EB7-FD39-44BC-8990-C98A4AC36A49:0/development",
            "a development key never shares a production key (issue 24)")
    }

    @Test func trustKeyAcceptsGeneratedPostbacksOnlyWithAllowDev() throws {
        let keyPath = NSTemporaryDirectory() + "trust-\(UUID().uuidString).pem"
        let generated = run(["generate", "--key", keyPath, "--create-key", "--count", "30", "--kinds", "2.1,2.2,3.0,4.0,aak"])
        #expect(generated.status == .success, "\(generated.stderr.text)")
        let postbacks = try temporaryFile(Array(generated.stdout.text.utf8))
        let usage = run(["verify", "--trust-key", keyPath, postbacks])
        #expect(usage.status == .usageOrIOError)
        #expect(usage.stderr.text.contains("add --allow-dev"))
        let verified = run(["verify", "--json", "--allow-dev", "--trust-key", keyPath, postbacks])
        #expect(verified.status == .success, "\(verified.stdout.text)")
        let objects = try jsonLines(verified.stdout)
        #expect(objects.count == 30)
        #expect(
            objects.allSatisfy {
                $0["environment"] as? String == "development" && ($0["key"] as? String)?.hasPrefix("test:") == true
            })
        // Without the key, the same file is checked against Apple's keys and fails.
        #expect(run(["verify", postbacks]).status == .failure)
    }

    @Test func appleKeyAsTrustKeyIsRefused() {
        let apple = Self.root.appendingPathComponent("Keys/apple-skadnetwork-p256.pem").path
        let result = run(["verify", "--allow-dev", "--trust-key", apple, "x"])
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.text.contains("is Apple's key"))
    }

    @Test func usageAndIOErrorsExitTwo() throws {
        #expect(run(["verify"]).status == .usageOrIOError)
        #expect(run(["verify", "--bogus", "x"]).status == .usageOrIOError)
        #expect(run(["nonsense"]).status == .usageOrIOError)
        let missing = run(["verify", try sampleFiles()[0], "/nonexistent/postback.json"])
        #expect(missing.status == .usageOrIOError)
        #expect(missing.stderr.text.contains("/nonexistent/postback.json: open failed: No such file or directory"))
        #expect(missing.stdout.text.contains("verified"), "the readable file is still verified")
    }

    @Test func badInputGetsReasonsNotCrashes() throws {
        let cases: [(String, [UInt8], String)] = [
            ("empty", [], "empty input"),
            ("truncated", Array(#"{"version":"4.0","ad-netw"#.utf8), "invalid JSON"),
            ("binary junk", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }, ""),
            ("deep nesting", Array((String(repeating: "[", count: 200_000)).utf8), "deeper than"),
            // A file's byte order mark is skipped (editors add it); what follows is judged as usual.
            ("BOM", [0xEF, 0xBB, 0xBF] + Array(#"{"a":1}"#.utf8), "ad-network-id is required"),
            ("BOM inside", Array(#"{"a":"#.utf8) + [0xEF, 0xBB, 0xBF] + Array("1}".utf8), "invalid JSON"),
        ]
        for (name, content, reason) in cases {
            let result = run(["verify", "--json", try temporaryFile(content)])
            #expect(result.status == .failure, "\(name)")
            let objects = try jsonLines(result.stdout)
            #expect(!objects.isEmpty, "\(name)")
            #expect(objects.allSatisfy { $0["status"] as? String == "malformed" }, "\(name)")
            if !reason.isEmpty { #expect((objects.first?["reason"] as? String)?.contains(reason) == true, "\(name): \(objects)") }
        }
    }

    @Test func hugeSingleLineIsRejectedWithoutBufferingIt() throws {
        // 100 MB on one line, written in chunks; the verifier must report it, not load it.
        let path = NSTemporaryDirectory() + "huge-\(UUID().uuidString).jsonl"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        let chunk = Data(repeating: 0x61, count: 1 << 20)
        try handle.write(contentsOf: Data(#"{"version":"4.0","x":""#.utf8))
        for _ in 0..<100 { try handle.write(contentsOf: chunk) }
        try handle.write(contentsOf: Data("\"}\n".utf8))
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: try sampleFiles()[0])).filter { $0 != 0x0A })
        try handle.close()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = run(["verify", "--json", path])
        let objects = try jsonLines(result.stdout)
        #expect(objects.count == 2)
        #expect((objects.first?["reason"] as? String)?.contains("longer than the 1048576-byte limit") == true)
        #expect(objects.last?["status"] as? String == "verified")
    }

    @Test func humanOutputHasALinePerPostbackAndASummary() throws {
        let result = run(["verify"] + (try sampleFiles()))
        #expect(result.status == .success)
        let lines = result.stdout.lines
        #expect(lines.count == 7)
        #expect(lines.prefix(6).allSatisfy { $0.hasPrefix("verified ") && $0.contains("production") })
        // A run that takes half a second or more (a loaded machine, a debug build) also says how long.
        let summary = try #require(lines.last)
        #expect(
            summary == "6 postbacks: 6 verified"
                || (summary.hasPrefix("6 postbacks: 6 verified in ") && summary.hasSuffix("/s)")), "\(summary)")
    }

    @Test func aLargeFileShowsProgressOnATerminalOnly() throws {
        // 12,000 copies of one Apple postback (about 12 MB, past the 8 MiB threshold), one worker.
        let sample = try Data(contentsOf: Self.samples.appendingPathComponent("skan-4.0_apple-doc_web-ad-tier-low.json"))
        let line = try JSONSerialization.data(withJSONObject: try JSONSerialization.jsonObject(with: sample)) + Data("\n".utf8)
        let path = try temporaryFile(Array(repeating: Array(line), count: max(1, (12 << 20) / line.count)).flatMap { $0 })
        defer { try? FileManager.default.removeItem(atPath: path) }

        let terminal = MemorySink(isTerminal: true)
        let out = MemorySink()
        let status = PostbackCommand.run(
            ["verify", "--jobs", "1", path], io: CommandIO(standardOutput: out, standardError: terminal))
        #expect(status == .success)
        #expect(terminal.text.contains(" postbacks ("), "a progress line with the share of the file read")
        #expect(terminal.text.contains("%)"))
        #expect(terminal.text.hasSuffix("\r\u{1B}[K"), "the progress line is cleared at the end")
        #expect(!out.text.contains("\r"), "progress never reaches standard output")

        let notTerminal = MemorySink()
        _ = PostbackCommand.run(
            ["verify", "--json", "--jobs", "1", path], io: CommandIO(standardOutput: MemorySink(), standardError: notTerminal))
        #expect(!notTerminal.text.contains("\r"), "no progress when stderr is not a terminal")
    }

    @Test func hostileSourceTextIsEscapedInOutput() throws {
        let directory = NSTemporaryDirectory() + "esc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/evil\u{1B}[2K\u{202E}name.json"
        try Data(#"{"a":1}"#.utf8).write(to: URL(fileURLWithPath: path))
        let result = run(["verify", path])
        #expect(!result.stdout.text.contains("\u{1B}"))
        #expect(!result.stdout.text.contains("\u{202E}"))
        #expect(result.stdout.text.contains("\\u001b[2K\\u202ename.json"))
    }

    @Test func explainShowsTheSignedMessageAndVerdict() throws {
        let file = Self.samples.appendingPathComponent("skan-4.0_apple-doc_web-ad-tier-high.json").path
        let result = run(["explain", file])
        #expect(result.status == .success)
        let text = result.stdout.text
        #expect(
            text.contains(
                "4.0\\u2063com.example\\u20635239\\u2063525463029\\u20636aafb7a5-0170-41b5-bbe4-fe71dedf1e30\\u2063false\\u2063example.com\\u20631\\u2063true\\u20630"
            ))
        #expect(text.contains("source-domain"))
        #expect(text.contains("conversion-value             63"))
        #expect(text.contains("valid    key apple-skadnetwork-p256"))
        #expect(text.contains("verdict:    verified (production)"))

        let bad = Self.root.appendingPathComponent("Tests/Vectors/apple/negative_skan-4.0_bad-signature.json").path
        let failed = run(["explain", bad])
        #expect(failed.status == .failure)
        #expect(failed.stdout.text.contains("invalid  key apple-skadnetwork-p256"))
        #expect(failed.stdout.text.contains("verdict:    invalid-signature"))

        let broken = run(["explain", try temporaryFile(Array(#"{"version": "4.0", "app-id": 1,, }"#.utf8), suffix: ".json")])
        #expect(broken.status == .failure)
        #expect(broken.stdout.text.contains("malformed: invalid JSON"))
        #expect(broken.stdout.text.contains("^"))
    }

    /// Apple's example with one signed field changed and odd unsigned fields: explain reads it as
    /// forged (the verdict is the signature's) and still lists every flag.
    @Test func explainReadsForgedAndOddAsForged() throws {
        let original = try Data(contentsOf: Self.samples.appendingPathComponent("skan-4.0_apple-doc_web-ad-tier-high.json"))
        var body = try JSONSerialization.jsonObject(with: original) as! [String: Any]
        body["source-identifier"] = "5238"
        body["country-code"] = "USA"
        body["conversion-value"] = 99
        let file = try temporaryFile(Array(try JSONSerialization.data(withJSONObject: body)), suffix: ".json")
        let result = run(["explain", file])
        #expect(result.status == .failure)
        let text = result.stdout.text
        #expect(text.contains("verdict:    invalid-signature (production): attribution-signature does not verify"), "\(text)")
        #expect(text.contains("flags:      2 (they never change the verdict)"))
        #expect(text.contains(#"dropped      country-code              "USA": not a two-letter country code"#))
        #expect(text.contains("dropped      conversion-value          99: out of range 0–63"))

        body["source-identifier"] = "5239"
        let genuine = run([
            "explain", try temporaryFile(Array(try JSONSerialization.data(withJSONObject: body)), suffix: ".json"),
        ])
        #expect(genuine.status == .success)
        #expect(genuine.stdout.text.contains("verdict:    verified (production)"))
        #expect(genuine.stdout.text.contains("flags:      2"))
    }

    @Test func verifyJSONCarriesFlagsAndQuarantine() throws {
        let original = try Data(contentsOf: Self.samples.appendingPathComponent("skan-3.0_apple-doc_winning.json"))
        var body = try JSONSerialization.jsonObject(with: original) as! [String: Any]
        body["did-win"] = "true"
        body["country-code"] = "fr"
        var unknownVersion = body
        unknownVersion["version"] = "5.0"
        let lines = try [body, unknownVersion].map {
            String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self)
        }
        let result = run(["verify", "--json", try temporaryFile(Array(lines.joined(separator: "\n").utf8))])
        let objects = try jsonLines(result.stdout)
        #expect(objects.count == 2)
        #expect(objects[0]["status"] as? String == "verified")
        let flags = try #require(objects[0]["flags"] as? [[String: Any]])
        #expect(
            flags.map { "\($0["field"]!) \($0["action"]!) \($0["raw"]!)" } == [
                #"did-win normalized "true""#, #"country-code normalized "fr""#,
            ])
        #expect(objects[0]["quarantine"] == nil)
        #expect(objects[1]["status"] as? String == "unsupported-version")
        #expect(objects[1]["quarantine"] as? String == "unknown-version")
        #expect((objects[1]["flags"] as? [Any])?.isEmpty == true)
    }

    /// Apple Ads' SKAdNetwork postbacks (ad-network-id com.apple.ads, one campaign id per placement).
    @Test func explainNamesAppleAds() throws {
        let original = try Data(contentsOf: Self.samples.appendingPathComponent("skan-3.0_apple-doc_winning.json"))
        var body = try JSONSerialization.jsonObject(with: original) as! [String: Any]
        body["ad-network-id"] = "com.apple.ads"
        body["campaign-id"] = 10
        let result = run(["explain", try temporaryFile(Array(try JSONSerialization.data(withJSONObject: body)), suffix: ".json")])
        #expect(result.stdout.text.contains("network:    Apple Ads, search results"), "\(result.stdout.text)")
    }

    @Test func explainShowsJWSParts() throws {
        let file = Self.samples.appendingPathComponent(
            "development/aak_apple-doc_developer-settings_apple-development-identifier-1.json"
        ).path
        let result = run(["explain", "--allow-dev", file])
        #expect(result.status == .success)
        #expect(result.stdout.text.contains(#"{"kid":"apple-development-identifier\/1","alg":"ES256"}"#))
        #expect(result.stdout.text.contains("raw r ‖ s, 64 bytes"))
        #expect(result.stdout.text.contains("country-code                 \"US\""))
    }
}

/// The built `postback` binary: standard input and real exit codes.
@Suite struct PostbackBinaryTests {
    static var binary: URL {
        // The test runner sits in the build directory next to the product.
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("postback")
    }

    func run(_ arguments: [String], stdin: Data = Data()) throws -> (status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(stdin)
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func readsStandardInput() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            Issue.record("postback binary not found at \(Self.binary.path); run `swift build` first")
            return
        }
        let sample = try Data(contentsOf: VerifyCommandTests.samples.appendingPathComponent("skan-3.0_apple-doc_winning.json"))
        let ok = try run(["verify", "--json", "-"], stdin: sample)
        #expect(ok.status == 0)
        #expect(ok.stdout.contains(#""source":"<stdin>","status":"verified""#))
        let bad = try run(["verify", "-"], stdin: Data("{}".utf8))
        #expect(bad.status == 1)
        let usage = try run(["verify"])
        #expect(usage.status == 2)
    }

    @Test func aFullOutputDiskIsAnIOErrorNotSuccess() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            Issue.record("postback binary not found at \(Self.binary.path); run `swift build` first")
            return
        }
        // /dev/full fails every write with ENOSPC: the verdicts never reach the user, so exit 2.
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = [
            "verify", "--json", VerifyCommandTests.samples.appendingPathComponent("skan-2.2_apple-doc.json").path,
        ]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
        #expect(message.contains("writing standard output failed: No space left on device"))
    }
}
