import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackCLI
@testable import Reporting

/// `postback report` run in-process, and the page's determinism.
@Suite struct ReportCommandTests {
    func run(_ words: [String]) -> CommandRun { TestSupport.run(["report"] + words) }

    @Test(arguments: [
        ([], "--data DIR is required"),
        (["--data", "d"], "--out FILE is required"),
        (["--data", "d", "--out", "r.html"], "give --date DAY, or --from DAY and --to DAY"),
        (["--data", "d", "--out", "r.html", "--date", "2026-02-30"], "--date must be a date YYYY-MM-DD, got '2026-02-30'"),
        (
            ["--data", "d", "--out", "r.html", "--from", "2026-03-05", "--to", "2026-03-01"],
            "--from 2026-03-05 is after --to 2026-03-01"
        ),
        (["--data", "d", "--out", "r.html", "--date", "2026-03-01", "--top", "0"], "--top must be a whole number from 1 to 500"),
        (["--data", "d", "--out", "r.html", "--date", "2026-03-01", "--colour"], "unknown option --colour"),
        (["--data", "d", "--out", "r.html", "--date", "2026-03-01", "extra"], "unexpected argument 'extra'"),
    ])
    func badUsageGetsAClearMessageAndExitCode2(words: [String], message: String) {
        let result = run(words)
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.contains("Run 'postback report --help' for usage."))
    }

    @Test func helpPrintsTheUsage() {
        let result = run(["--help"])
        #expect(result.status == .success)
        #expect(result.stdout.contains("--data DIR") && result.stdout.contains("Exit status"))
    }

    @Test func writesThePageAndSaysWhatIsInIt() throws {
        let store = try TestStore.shared.get()
        let out = store.path("command.html")
        let result = run([
            "--data", store.root, "--from", TestStore.first, "--to", TestStore.last, "--out", out, "--title", "March",
        ])
        #expect(result.status == .success, "\(result.stderr)")
        let page = PageFigures(html: try store.text("command.html"))
        let postbacks = try #require(page.count("postbacks"))
        #expect(result.stdout.contains("wrote \(out) ("))
        #expect(result.stdout.contains("3 days, \(postbacks) production postbacks"))
        #expect(page.html.contains("<h1>March</h1>"))
        #expect(result.stderr.isEmpty)
    }

    @Test func dashWritesThePageToStandardOutputAndTheSummaryToStandardError() throws {
        let store = try TestStore.shared.get()
        let toFile = run([
            "--data", store.root, "--from", TestStore.first, "--to", TestStore.last, "--out", store.path("same.html"),
        ])
        let toStdout = run(["--data", store.root, "--from", TestStore.first, "--to", TestStore.last, "--out", "-"])
        #expect(toStdout.status == .success, "\(toStdout.stderr)")
        #expect(toStdout.stdout == (try store.text("same.html")), "the same page as written to a file")
        #expect(toStdout.stderr.hasPrefix("wrote standard output ("), "\(toStdout.stderr)")
        #expect(toFile.status == .success)
        #expect(
            !FileManager.default.fileExists(atPath: "-") && !FileManager.default.fileExists(atPath: store.path("-")),
            "no file named '-'")
    }

    @Test func missingDaysExitWith1AndAreNamed() throws {
        let store = try TestStore.shared.get()
        let result = run([
            "--data", store.root, "--from", TestStore.first, "--to", "2026-03-05", "--out", store.path("missing.html"),
        ])
        #expect(result.status == .failure)
        // Consecutive days as one range, on one line.
        #expect(result.stderr.contains("postback report: 2026-03-04 to 2026-03-05 (2 days): no aggregates"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: store.path("missing.html")))
    }

    @Test func noAggregatesExitWith2AndWritesNothing() throws {
        let store = ScratchStore("cli-none")
        let result = run(["--data", store.root, "--date", "2026-03-01", "--out", store.path("r.html")])
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.contains("no published aggregates for 2026-03-01 under \(store.root)/agg"))
        #expect(!FileManager.default.fileExists(atPath: store.path("r.html")))
    }

    /// The same aggregates give the same bytes: twice in a row, after the aggregates are rebuilt
    /// (byte-identical by their own guarantee), and whether written or returned. Nothing on the page
    /// comes from the clock.
    @Test func sameAggregatesGiveTheSameBytes() throws {
        let store = try TestStore.make(perDay: 300)
        let first = try ReportGenerator.generate(
            store.request(from: TestStore.first, to: TestStore.last, out: store.path("a.html")))
        try store.aggregate(try TestStore.catalog(), from: TestStore.first, to: TestStore.last)
        _ = try ReportGenerator.generate(store.request(from: TestStore.first, to: TestStore.last, out: store.path("b.html")))
        let a = try Data(contentsOf: URL(fileURLWithPath: store.path("a.html")))
        let b = try Data(contentsOf: URL(fileURLWithPath: store.path("b.html")))
        #expect(a.count == first.bytes)
        #expect(a == b)
        #expect(Data(try ReportGenerator.page(store.request(from: TestStore.first, to: TestStore.last)).utf8) == a)

        let today = UTCTimestamp.now().day
        let html = String(decoding: a, as: UTF8.self)
        #expect(!html.contains(today.description) && !html.contains(NumberFormat.longDay(today)), "the page holds today's date")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.root).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    /// Another order of the same rows (as another engine might write them) gives the same page:
    /// nothing depends on the order rows are read or on hashing.
    @Test func rowOrderDoesNotChangeThePage() throws {
        let store = try TestStore.make(perDay: 300)
        let request = store.request(from: TestStore.first, to: TestStore.last)
        let before = try ReportGenerator.page(request)
        for day in ReportFiguresTests.days {
            let path = store.path("agg/postback_detail_daily/dt=\(day)/part-00000.csv")
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            let shuffled = [lines[0]] + lines.dropFirst().reversed()
            let text = shuffled.joined(separator: "\n") + "\n"
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            try Self.rewriteManifestChecksum(store, day: day, csv: text)
        }
        #expect(try ReportGenerator.page(request) == before)
    }

    static func rewriteManifestChecksum(_ store: ScratchStore, day: String, csv: String) throws {
        let path = store.path("agg/_manifests/dt=\(day).json")
        var manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        var outputs = manifest["outputs"] as! [[String: Any]]
        outputs[0]["sha256"] = PageChecksum.sha256(csv)
        manifest["outputs"] = outputs
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
    }
}
