import Foundation
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback samples`: the repository's Samples/ carried in the binary, so README's first session
/// runs in any directory and from any installation.
@Suite struct SamplesCommandTests {
    static let samples = Fixtures.root.appendingPathComponent("Samples")
    static let generated = Fixtures.root.appendingPathComponent("Sources/PostbackCLI/Samples/SampleFiles.swift")

    /// Every file under Samples/, relative paths sorted.
    static func sampleFiles() throws -> [String] {
        let all = try #require(FileManager.default.enumerator(atPath: samples.path)?.allObjects as? [String])
        return all.filter { UserPaths.kind(of: samples.path + "/" + $0) == .file }.sorted()
    }

    /// SampleFiles.swift as it must be for today's Samples/.
    static func expectedSource() throws -> String {
        var lines = [
            "// Written by SamplesCommandTests (POSTBACK_UPDATE_SAMPLES=1 swift test --filter SamplesCommandTests)",
            "// from the repository's Samples/; do not edit by hand.", "",
            "/// The repository's `Samples/`, file by file (`postback samples`).", "enum SampleFiles {",
            "    static let all: [(path: String, text: String)] = [",
        ]
        for path in try sampleFiles() {
            let text = try String(contentsOf: samples.appendingPathComponent(path), encoding: .utf8)
            #expect(!text.contains("\"\"\"#") && !text.contains("\\#"), "\(path) cannot go in a raw string literal")
            // Indented as `swift format` leaves a multi-line literal (the indentation is not part of it).
            let indented = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.isEmpty ? "" : "            " + $0 }.joined(separator: "\n")
            lines.append("        (\n            \"\(path)\",\n            #\"\"\"\n\(indented)\n            \"\"\"#\n        ),")
        }
        lines += [
            "    ]", "", "    /// The text of the sample at `path` (relative to `Samples/`).",
            "    static func text(_ path: String) -> String { all.first { $0.path == path }?.text ?? \"\" }", "}", "",
        ]
        return lines.joined(separator: "\n")
    }

    @Test func theBinaryCarriesExactlyTheRepositorysSamples() throws {
        let expected = try Self.expectedSource()
        let stored = try String(contentsOf: Self.generated, encoding: .utf8)
        if stored != expected, ProcessInfo.processInfo.environment["POSTBACK_UPDATE_SAMPLES"] == "1" {
            try expected.write(to: Self.generated, atomically: true, encoding: .utf8)
            return
        }
        #expect(
            stored == expected,
            "\(Self.generated.path) is stale: run POSTBACK_UPDATE_SAMPLES=1 swift test --filter SamplesCommandTests and commit it"
        )
        #expect(SampleFiles.all.map(\.path) == (try Self.sampleFiles()))
    }

    @Test func copyWritesEveryFileByteForByteAndASecondCopyChangesNothing() throws {
        let temporary = TemporaryDirectory("samples")
        let directory = temporary.path + "/a/Samples"
        let first = run(["samples", "--copy", directory])
        #expect(first.status == .success, "\(first.stderr)")
        let count = try Self.sampleFiles().count
        #expect(first.stdout.contains("\(count) of \(count) files written"), "\(first.stdout)")
        for path in try Self.sampleFiles() {
            let copied = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + path))
            #expect(copied == (try Data(contentsOf: Self.samples.appendingPathComponent(path))), "\(path)")
        }
        let again = run(["samples", "--copy", directory])
        #expect(again.status == .success)
        #expect(again.stdout.contains("0 of \(count) files written"), "\(again.stdout)")
        // The listing names the same files.
        #expect(run(["samples"]).stdout.split(separator: "\n").map(String.init) == (try Self.sampleFiles()))
    }

    @Test func aFileInTheWayIsNamedAndNothingIsOverwritten() throws {
        let temporary = TemporaryDirectory("samples")
        let directory = temporary.path
        try FileManager.default.createDirectory(atPath: directory + "/spend", withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: directory + "/spend/example-spend.csv"))
        let result = run(["samples", "--copy", directory])
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.contains(directory + "/spend/example-spend.csv exists with other content"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/skan-2.2_apple-doc.json"), "checked before writing")
        #expect(try String(contentsOfFile: directory + "/spend/example-spend.csv", encoding: .utf8) == "mine\n")
        let inTheWay = #expect(throws: CommandError.self) { _ = try SamplesCommand.copy(to: directory) }
        #expect(inTheWay?.code == .inTheWay && inTheWay?.path == directory + "/spend/example-spend.csv")
        let unwritable = run(["samples", "--copy", "/proc/postback-samples"])
        #expect(unwritable.status == .usageOrIOError)
        #expect(unwritable.stderr.contains("/proc/postback-samples"), "\(unwritable.stderr)")
    }

    @Test func theDemoUsesTheExampleSchema() throws {
        let file = Self.samples.appendingPathComponent("schemas/\(DemoCommand.schemaAppID)/\(DemoCommand.schemaFileName)")
        #expect(DemoCommand.schema == (try String(contentsOf: file, encoding: .utf8)))
    }
}
