import Foundation
import Parquet
import TestSupport
import Testing

/// What `postback` prints and publishes from fixed inputs, byte for byte against checked-in goldens
/// (`Tests/Fixtures/goldens/`): `verify --json`'s lines and `verify`'s text, `explain`'s text, one
/// day of `aggregate --format both` (its manifest, the `postback_detail_daily` CSV, and that table's
/// Parquet file as schema and rows), and three synthesized days' manifests and report. Inputs: `Samples/` and `Tests/Fixtures/postbacks/` (Apple's
/// examples, a test key's postbacks, a conflicting copy, odd unsigned values, an unknown version, a
/// body that is not JSON, one that is not UTF-8, forged ones).
///
/// Nothing rewrites a golden: when an output differs, the test writes today's output beside a
/// temporary copy and names both, and a change that is meant is copied over the golden by hand (and
/// said in the commit). The build (`tool`) and the repository's path are the only things masked.
///
/// By default the CLI runs in this process (the debug build `swift test` made). With
/// `POSTBACK_GOLDEN_BINARY=PATH` every command runs that executable instead, so that CI holds the
/// release build to the same goldens (`.ci/run`): an output that depends on the optimizer cannot hide.
/// CI cost: about 5 s in process on 2 cores, less against the release binary.
@Suite struct GoldenOutputTests {
    static let root = Fixtures.root.path
    static let goldens = root + "/Tests/Fixtures/goldens"
    static let testKey = "Tests/Fixtures/postbacks/test-key.pem"
    static let day = "2026-03-10"

    /// Every input postback file, relative to the repository, in a fixed order.
    static let inputs: [String] = {
        var files: [String] = []
        for directory in ["Samples", "Samples/development", "Tests/Fixtures/postbacks"] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + directory)) ?? []
            files += names.filter { $0.hasSuffix(".json") }.sorted().map { directory + "/" + $0 }
        }
        return files
    }()

    @Test func inputsAreThere() {
        // Six Apple examples, one development example, the fixtures: a missing directory must not pass as
        // an empty golden.
        #expect(Self.inputs.filter { $0.hasPrefix("Samples/") }.count == 7)
        #expect(Self.inputs.filter { $0.hasPrefix("Tests/Fixtures/postbacks/") }.count >= 15)
    }

    @Test func verifyPrintsTheGoldenJSONLinesAndText() throws {
        let trust = ["--allow-dev", "--trust-key", Self.testKey]
        let json = try GoldenRunner.run(["verify", "--json"] + trust + Self.inputs)
        try compare(json.stdout, golden: "verify.jsonl")
        let text = try GoldenRunner.run(["verify"] + trust + Self.inputs)
        try compare(
            GoldenRunner.transcript(["verify", "--json"] + trust + ["…"], json, stdout: false)
                + GoldenRunner.transcript(["verify"] + trust + ["…"], text),
            golden: "verify.txt")
    }

    @Test func explainPrintsTheGoldenText() throws {
        var transcript = ""
        for input in Self.inputs {
            let words = ["explain", "--allow-dev", "--trust-key", Self.testKey, input]
            transcript += GoldenRunner.transcript(words, try GoldenRunner.run(words))
        }
        try compare(transcript, golden: "explain.txt")
    }

    @Test func aggregatePublishesTheGoldenManifestCSVAndParquet() throws {
        let directory = TemporaryDirectory("golden")
        var words = ["aggregate", "--date", Self.day, "--data", directory.path, "--schemas", "Samples/schemas"]
        words += ["--format", "both", "--allow-dev", "--trust-key", Self.testKey]
        for input in Self.inputs where !input.contains("not-json") && !input.contains("not-utf8") {
            words += ["--input", input]
        }
        let result = try GoldenRunner.run(words)
        #expect(result.status == 0, "\(result.stderr)")

        let manifest = try directory.read("agg/_manifests/dt=\(Self.day).json")
        try compare(GoldenRunner.masked(manifest), golden: "aggregate/manifest.json")
        let table = "agg/postback_detail_daily/dt=\(Self.day)/part-00000"
        try compare(try directory.read(table + ".csv"), golden: "aggregate/postback_detail_daily.csv")
        let columns = try ParquetReader.read(try directory.bytes(table + ".parquet"))
        try compare(Self.describe(columns), golden: "aggregate/postback_detail_daily.parquet.txt")
    }

    /// Three synthesized days (`aggregate synthesize`: two receivers, duplicates across them and days,
    /// development and rejected records) through the nightly job and the report: the day manifests
    /// (each output's SHA-256, the synthesized segments' too) and the whole page.
    @Test func aSynthesizedStorePublishesTheGoldenManifestsAndReport() throws {
        let directory = TemporaryDirectory("golden")
        let data = directory.path + "/data"
        let synthesized = try GoldenRunner.run([
            "aggregate", "synthesize", "--data", data, "--from", "2026-03-03", "--days", "3", "--per-day", "300", "--seed", "4",
        ])
        #expect(synthesized.status == 0, "\(synthesized.stderr)")
        let aggregated = try GoldenRunner.run([
            "aggregate", "--data", data, "--schemas", "Samples/schemas", "--from", "2026-03-03", "--to", "2026-03-05",
            "--format", "both",
        ])
        #expect(aggregated.status == 0, "\(aggregated.stderr)")
        var manifests = ""
        for day in ["2026-03-03", "2026-03-04", "2026-03-05"] {
            manifests += GoldenRunner.masked(try directory.read("data/agg/_manifests/dt=\(day).json")) + "\n"
        }
        try compare(manifests, golden: "synthetic/manifests.jsonl")
        let page = directory.path + "/report.html"
        let report = try GoldenRunner.run(["report", "--data", data, "--from", "2026-03-03", "--to", "2026-03-05", "--out", page])
        #expect(report.status == 0, "\(report.stderr)")
        try compare(GoldenRunner.masked(try directory.read("report.html")), golden: "synthetic/report.html")
    }

    /// A Parquet file as text: each column's physical and logical type and repetition, then each row's
    /// values, tab-separated (`NULL` for null; decimals with their point).
    static func describe(_ columns: [ParquetColumn]) -> String {
        var text = "schema:\n"
        for column in columns {
            let type =
                switch column.type {
                case .string: "BYTE_ARRAY STRING"
                case .int32: "INT32"
                case .int64: "INT64"
                case .boolean: "BOOLEAN"
                case .date: "INT32 DATE"
                case .decimal(let precision, let scale): "FIXED_LEN_BYTE_ARRAY(16) DECIMAL(\(precision),\(scale))"
                case .double: "DOUBLE"
                }
            text += "  \(column.name) \(type) \(column.nullable ? "OPTIONAL" : "REQUIRED")\n"
        }
        text += "rows:\n"
        let values = columns.map(\.values)
        for row in 0..<(columns.first?.rows ?? 0) {
            let cells = zip(columns, values).map { column, values -> String in
                guard let value = values[row] else { return "NULL" }
                switch value {
                case .integer(let integer): return String(integer)
                case .string(let bytes): return String(decoding: bytes, as: UTF8.self)
                case .decimal(let unscaled):
                    guard case .decimal(_, let scale) = column.type, scale > 0 else { return String(unscaled) }
                    let digits = String(unscaled.magnitude)
                    let padded = String(repeating: "0", count: max(0, scale + 1 - digits.count)) + digits
                    return (unscaled < 0 ? "-" : "") + padded.dropLast(scale) + "." + padded.suffix(scale)
                }
            }
            text += "  " + cells.joined(separator: "\t") + "\n"
        }
        return text
    }

    /// Fails with both files named when `actual` is not the golden's bytes.
    func compare(_ actual: String, golden name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = Self.goldens + "/" + name
        let expected = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        guard expected != actual else { return }
        let written = GoldenRunner.actuals + "/" + name
        try FileManager.default.createDirectory(
            atPath: (written as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(actual.utf8).write(to: URL(fileURLWithPath: written))
        Issue.record(
            "\(name) differs from its golden: diff -u \(path) \(written) (copy it over the golden only if the change is meant)",
            sourceLocation: sourceLocation)
    }
}

/// Runs `postback` for the goldens: in this process, or the executable `POSTBACK_GOLDEN_BINARY` names.
enum GoldenRunner {
    static let binary = ProcessInfo.processInfo.environment["POSTBACK_GOLDEN_BINARY"]
    /// Where a differing output is written for `diff` (kept after the run).
    static let actuals = NSTemporaryDirectory() + "postback-goldens-\(UUID().uuidString)"

    /// The build as `postback --version` names it, masked in outputs (manifests carry it as `tool`).
    static let tool: String = {
        let version = (try? execute(["--version"]).stdout) ?? ""
        return version.hasPrefix("postback ") ? String(version.dropFirst("postback ".count).prefix { $0 != "\n" }) : ""
    }()

    /// Runs `postback WORDS…` with paths relative to the repository (made absolute here, and the
    /// repository's path masked in the output again).
    static func run(_ words: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let absolute = words.map { word in
            word.hasPrefix("Samples/") || word.hasPrefix("Tests/") ? GoldenOutputTests.root + "/" + word : word
        }
        let result = try execute(absolute)
        return (result.status, masked(result.stdout), masked(result.stderr))
    }

    /// One run, its output as printed.
    private static func execute(_ words: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let binary else {
            let result = TestSupport.run(words)
            return (result.status.rawValue, result.stdout, result.stderr)
        }
        // Both streams go to files, so that neither can fill a pipe while the other is read.
        let directory = TemporaryDirectory("golden-run")
        FileManager.default.createFile(atPath: directory.path + "/stdout", contents: nil)
        FileManager.default.createFile(atPath: directory.path + "/stderr", contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = words
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path + "/stdout"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path + "/stderr"))
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, try directory.read("stdout"), try directory.read("stderr"))
    }

    /// The repository's path and the build's name taken out of an output.
    static func masked(_ text: String) -> String {
        var text = text.replacingOccurrences(of: GoldenOutputTests.root + "/", with: "")
        if !tool.isEmpty { text = text.replacingOccurrences(of: "postback " + tool, with: "postback BUILD") }
        return text
    }

    /// `$ postback WORDS`, what it printed, and its exit status.
    static func transcript(
        _ words: [String], _ result: (status: Int32, stdout: String, stderr: String), stdout: Bool = true
    ) -> String {
        var text = "$ postback " + words.joined(separator: " ") + "\n"
        if stdout { text += result.stdout }
        if !result.stderr.isEmpty { text += "[stderr]\n" + result.stderr }
        return text + "[exit \(result.status)]\n\n"
    }
}
