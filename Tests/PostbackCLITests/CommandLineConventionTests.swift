import BuildStamp
import Foundation
import PostbackCrypto
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackCLI

/// The conventions every command shares (clig.dev): help, "did you mean", '-' for stdout, exit codes
/// as documented, and errors that name the user's path and the remedy. One test per message class.
@Suite struct CommandLineConventionTests {
    func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "postback-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static let commands: [[String]] = [
        [], ["verify"], ["explain"], ["reverify"], ["serve"], ["send"], ["aggregate"], ["aggregate", "synthesize"],
        ["schema"], ["schema", "check"], ["schema", "export"], ["report"], ["check"], ["generate"], ["demo"], ["forward"],
        ["forward", "status"], ["forward", "replay"], ["forward", "retry-dead-letters"],
    ]

    @Test(arguments: commands)
    func everyCommandAndSubcommandHasHelp(command: [String]) {
        for help in ["-h", "--help"] {
            // Also after other words, and after an option that is wrong: help wins.
            for words in [command + [help], command + ["--no-such-option", help]] where !(command.isEmpty && words.count > 1) {
                let result = run(words)
                #expect(result.status == .success, "\(words): \(result.stderr)")
                #expect(result.stdout.hasPrefix("usage: postback"), "\(words)")
                #expect(result.stderr.isEmpty, "\(words): \(result.stderr)")
            }
        }
    }

    @Test(arguments: commands.filter { !$0.isEmpty && $0 != ["schema"] })
    func everyCommandDocumentsItsExitStatus(command: [String]) {
        let usage = run(command + ["--help"]).stdout
        #expect(usage.contains("Exit status: 0"), "\(command)")
        #expect(usage.contains("2 usage"), "\(command)")
    }

    @Test func topLevelHelpListsVersionAndExitStatus() {
        let usage = run(["--help"]).stdout
        #expect(usage.contains("--version"))
        #expect(usage.contains("Exit status: 0"))
        #expect(run(["--version"]).stdout == "postback \(BuildInfo.description)\n")
        #expect(run([]).status == .usageOrIOError, "no command is a usage error")
        #expect(run(["help", "schema", "check"]).stdout == run(["schema", "check", "--help"]).stdout)
        #expect(run(["help", "verify"]).stdout.hasPrefix("usage: postback verify"))
    }

    @Test func theBinaryExitsWithTheDocumentedCodes() throws {
        guard FileManager.default.isExecutableFile(atPath: PostbackBinaryTests.binary.path) else {
            Issue.record("postback binary not found at \(PostbackBinaryTests.binary.path); run `swift build` first")
            return
        }
        let binary = PostbackBinaryTests()
        #expect(try binary.run(["--help"]).status == 0)
        #expect(try binary.run(["schema", "check", "--help"]).status == 0)
        #expect(try binary.run(["verfy"]).status == 2)
        #expect(try binary.run(["foo", "--help"]).status == 2)
        #expect(try binary.run(["schema", "check", "/nonexistent/schemas"]).status == 2)
        #expect(try binary.run(["report", "--data", "/nonexistent", "--date", "2026-03-10", "--out", "-"]).status == 2)
        #expect(try binary.run(["verify", "-"], stdin: Data("[]".utf8)).status == 1)
    }

    /// A one-day store reported over a month: one line for the 30 days without aggregates, not 30.
    @Test func aMonthWithOneAggregatedDayIsSummarizedInOneLine() throws {
        let temporary = TemporaryDirectory("report-month")
        let sample = Fixtures.root.appendingPathComponent("Samples/skan-4.0_apple-doc_web-ad-tier-high.json").path
        let aggregate = run([
            "aggregate", "--input", sample, "--date", "2026-03-10", "--data", temporary.path, "--schemas", Fixtures.sampleSchemas,
        ])
        #expect(aggregate.status == .success, "\(aggregate.stderr)")
        let report = run([
            "report", "--data", temporary.path, "--from", "2026-03-01", "--to", "2026-03-31", "--out", temporary.path + "/r.html",
        ])
        #expect(report.status == .failure, "days without aggregates: exit 1, as --help says")
        let lines = report.stderr.split(separator: "\n")
        #expect(
            lines == [
                "postback report: 2026-03-01 to 2026-03-09, 2026-03-11 to 2026-03-31 (30 days): no aggregates (shown as a gap)"
            ],
            "\(report.stderr)")
        #expect(ReportCommand.dayRanges([UTCDay("2026-03-02")!]) == "2026-03-02")
    }

    /// An error about staged files from a bucket names the s3:// URL, not the private staging folder.
    @Test func errorsFromABucketNameTheURL() {
        struct Failure: Error, CustomStringConvertible { let description: String }
        let error = CommandError.inBucket(
            Failure(description: "no published aggregates for 2027-01-01 under /tmp/stage-1/agg"), stagedRoot: "/tmp/stage-1",
            url: "s3://bucket/store/")
        #expect(error.description == "no published aggregates for 2027-01-01 under s3://bucket/store/agg")
        #expect(error.code == .inBucket && error.path == "s3://bucket/store/")
    }

    /// `forward` on a data directory that does not exist: exit 2, naming it, never "nothing to do".
    @Test func forwardOnAMissingDataDirectoryIsAnError() throws {
        let temporary = TemporaryDirectory("forward")
        let config = temporary.path + "/serve.json"
        let missing = temporary.path + "/no-such-store"
        try Data(
            #"{"data_dir": "\#(missing)", "writer_id": "rx-1", "forward": [{"name": "mmp", "url": "http://127.0.0.1:9/p"}]}"#.utf8
        ).write(to: URL(fileURLWithPath: config))
        for words in [
            ["forward", "status", "--config", config],
            ["forward", "retry-dead-letters", "--config", config],
        ] {
            let result = run(words)
            #expect(result.status == .usageOrIOError, "\(words)")
            #expect(result.stderr.contains("data_dir (\(config)) \(missing): no such directory"), "\(result.stderr)")
            #expect(result.stdout.isEmpty, "\(result.stdout)")
        }
    }

    @Test func mistypedCommandsSubcommandsAndOptionsGetDidYouMean() {
        let cases: [([String], String)] = [
            (["verfy"], "unknown command 'verfy' (did you mean 'verify'?)"),
            (["agregate"], "unknown command 'agregate' (did you mean 'aggregate'?)"),
            (["schema", "chek", "x"], "unknown subcommand 'chek' (did you mean 'check'?)"),
            (["verify", "--jsn", "x"], "unknown option --jsn (did you mean --json?)"),
            (["verify", "--allow-devel", "x"], "unknown option --allow-devel (did you mean --allow-dev?)"),
            (["report", "--ouT", "x"], "unknown option --ouT (did you mean --out?)"),
            (["schema", "export", "--tabel", "values"], "unknown option --tabel (did you mean --table?)"),
            (["generate", "--kind", "aak"], "unknown option --kind (did you mean --kinds?)"),
            // An unknown command with --help is named, not answered with the main usage.
            (["foo", "--help"], "unknown command 'foo'"),
            (["verfy", "-h"], "unknown command 'verfy' (did you mean 'verify'?)"),
            (["schema", "chek", "--help"], "unknown subcommand 'chek' (did you mean 'check'?)"),
            (["serve", "--writerid", "x"], "unknown option --writerid (did you mean --writer-id?)"),
        ]
        for (words, message) in cases {
            let result = run(words)
            #expect(result.status == .usageOrIOError, "\(words)")
            #expect(result.stderr.contains(message), "\(words): \(result.stderr)")
            #expect(result.stderr.contains("--help' for usage."), "\(words): points to help")
            #expect(result.stdout.isEmpty)
        }
        // Nothing close: no guess.
        #expect(!run(["verify", "--zzzzzzzz", "x"]).stderr.contains("did you mean"))
    }

    @Test func suggestionPrefersTheClosestWordAndIgnoresCase() {
        #expect(Suggestion.closest(to: "--jsn", in: ["--jobs", "--json"]) == "--json")
        #expect(Suggestion.closest(to: "CURRENCY", in: ["currency"]) == "currency")
        #expect(Suggestion.closest(to: "x", in: ["verify", "explain"]) == nil)
        #expect(Suggestion.editDistance("kitten", "sitting") == 3)
    }

    @Test func schemaCheckExitCodesMatchItsHelp() throws {
        let directory = try temporaryDirectory()
        // 2: a PATH that does not exist (an I/O error, as --help says), naming the path.
        let missing = run(["schema", "check", directory + "/missing"])
        #expect(missing.status == .usageOrIOError)
        #expect(missing.stderr.contains(directory + "/missing: stat failed: No such file or directory"))
        // 1: a schema that is invalid.
        try write(#"{"schema_id": 1}"#, to: directory + "/bad.json")
        #expect(run(["schema", "check", directory + "/bad.json"]).status == .failure)
        #expect(run(["schema", "check"]).status == .usageOrIOError)
    }

    @Test func dashMeansStandardOutputWhereAFileIsWritten() throws {
        let schemas = VerifyCommandTests.root.appendingPathComponent("Samples/schemas").path
        let toStdout = run(["schema", "export", "--schemas", schemas, "--table", "sources", "--out", "-"])
        #expect(toStdout.status == .success, "\(toStdout.stderr)")
        #expect(toStdout.stdout.hasPrefix("schema_id,"), "\(toStdout.stdout.prefix(80))")
        #expect(!FileManager.default.fileExists(atPath: "-"), "no file named '-'")
    }

    @Test func inputPathErrorsNameThePathAndTheRemedy() throws {
        let directory = try temporaryDirectory()
        let schemas = VerifyCommandTests.root.appendingPathComponent("Samples/schemas").path
        let cases: [([String], String)] = [
            (
                ["aggregate", "--input", directory, "--date", "2026-03-10", "--data", directory, "--schemas", schemas],
                "--input \(directory) is a directory; give the files in it"
            ),
            (
                [
                    "aggregate", "--input", directory + "/none.jsonl", "--date", "2026-03-10", "--data", directory, "--schemas",
                    schemas,
                ],
                "--input \(directory)/none.jsonl: no such file"
            ),
            (
                ["aggregate", "--date", "2026-03-10", "--data", directory, "--schemas", directory + "/nope"],
                "--schemas \(directory)/nope: no such directory"
            ),
            (["schema", "export", "--schemas", schemas + "/111/none.json"], "no such directory"),
            (
                ["report", "--data", directory, "--date", "2026-03-10", "--out", directory + "/nodir/x.html"],
                "--out \(directory)/nodir/x.html: directory \(directory)/nodir does not exist; create it first (mkdir -p \(directory)/nodir) or give '-'"
            ),
            (
                ["report", "--data", directory, "--date", "2026-03-10", "--out", directory],
                "--out \(directory) is a directory"
            ),
            (
                ["schema", "export", "--schemas", schemas, "--out", directory + "/nodir/values.csv"],
                "directory \(directory)/nodir does not exist"
            ),
        ]
        for (words, message) in cases {
            let result = run(words)
            #expect(result.status == .usageOrIOError, "\(words)")
            #expect(result.stderr.contains(message), "\(words): \(result.stderr)")
            #expect(!result.stderr.contains(".tmp-"), "never a temporary name the user did not choose")
        }
        for command in ["verify", "explain"] {
            let result = run([command, directory])
            #expect(result.status == .usageOrIOError)
            #expect(
                result.stderr.contains("\(directory): is a directory; give the files in it (e.g. \(directory)/*.jsonl)"),
                "\(result.stderr)")
        }
        // A directory of single-postback files (Apple's samples) is named by the files it holds.
        let samples = Fixtures.root.appendingPathComponent("Samples").path
        let onSamples = run(["verify", samples])
        #expect(onSamples.stderr.contains("give the files in it (e.g. \(samples)/*.json)"), "\(onSamples.stderr)")
    }

    @Test func generateKeyErrorsSayHowToMakeTheKey() throws {
        let directory = try temporaryDirectory()
        let missing = run(["generate", "--key", directory + "/new.pem", "--count", "1"])
        #expect(missing.status == .usageOrIOError)
        #expect(missing.stderr.contains("new.pem: open failed: No such file or directory; add --create-key"), "\(missing.stderr)")

        // --create-key makes the curve the kinds need: P-192 for SKAdNetwork 1.0/2.0.
        let p192 = run(["generate", "--key", directory + "/p192.pem", "--create-key", "--kinds", "1.0,2.0", "--count", "2"])
        #expect(p192.status == .success, "\(p192.stderr)")
        #expect(p192.stdout.split(separator: "\n").count == 2)
        let key = try ECDSAPrivateKey(pemRepresentation: String(contentsOfFile: directory + "/p192.pem", encoding: .utf8))
        #expect(key.curve == .p192)
        try write(p192.stdout, to: directory + "/p192.jsonl")
        let verified = run(["verify", "--allow-dev", "--trust-key", directory + "/p192.pem", directory + "/p192.jsonl"])
        #expect(verified.status == .success, "\(verified.stdout)")

        // The wrong curve for the kinds: the message says how to get the right key.
        let wrong = run(["generate", "--key", directory + "/p192.pem", "--kinds", "3.0", "--count", "1"])
        #expect(wrong.status == .usageOrIOError)
        #expect(wrong.stderr.contains("needs a P-256 key"), "\(wrong.stderr)")
        #expect(wrong.stderr.contains("--create-key"), "\(wrong.stderr)")
        let mixed = run(["generate", "--key", directory + "/p256.pem", "--create-key", "--kinds", "1.0,4.0", "--count", "1"])
        #expect(mixed.status == .usageOrIOError)
        #expect(mixed.stderr.contains("run generate twice"), "\(mixed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/p256.pem"), "no key written for a refused command line")
    }

    @Test func jsonArraysAndByteOrderMarksAreExplained() throws {
        let directory = try temporaryDirectory()
        try write(#"[{"version":"4.0"},{"version":"4.0"}]"#, to: directory + "/array.json")
        let array = run(["verify", directory + "/array.json"])
        #expect(array.status == .failure)
        #expect(array.stdout.contains("got an array (several postbacks go one JSON object per line"), "\(array.stdout)")

        // A pretty-printed postback saved with a byte order mark is one postback, not one per line.
        let pretty =
            "\u{FEFF}{\n  \"version\": \"4.0\",\n  \"ad-network-id\": \"example.skadnetwork\",\n  \"transaction-id\": \"t\"\n}\n"
        try write(pretty, to: directory + "/bom.json")
        let bom = run(["verify", "--json", directory + "/bom.json"])
        let lines = bom.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(bom.stdout)")
        #expect(lines.first?.contains(#""source":"\#(directory)/bom.json""#) == true, "\(bom.stdout)")
    }

    @Test func trustKeyWithoutAllowDevNamesTheFlag() throws {
        let directory = try temporaryDirectory()
        _ = run(["generate", "--key", directory + "/k.pem", "--create-key", "--count", "0"])
        for command in ["verify", "explain"] {
            let result = run([command, "--trust-key", directory + "/k.pem", "x"])
            #expect(result.status == .usageOrIOError)
            #expect(result.stderr.contains("add --allow-dev"), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("allow_development"), "a flag user is not told to set a config key")
        }
    }
}
