import AggregateSchema
import Aggregation
import Basics
import Foundation
import PostbackCLI
import PostbackCrypto
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Reporting

/// Empty days, missing days and partitions that cannot be trusted: a clear page or a clear error,
/// never a crash or a page that mixes two runs.
@Suite struct ReportInputTests {
    @Test func daysWithNoPostbacksGiveAClearEmptyPage() throws {
        let store = ScratchStore("empty")
        // A receiver that started (making its spool) but has received nothing yet.
        try FileManager.default.createDirectory(atPath: store.path("raw/postbacks"), withIntermediateDirectories: true)
        try store.aggregate(try TestStore.catalog(), from: "2026-03-01", to: "2026-03-02")
        let summary = try ReportGenerator.generate(store.request(from: "2026-03-01", to: "2026-03-02"))
        #expect(summary.isComplete)
        // Published as explicitly empty days (no spool): gaps, not zeros.
        #expect(summary.daysIncluded.isEmpty)
        #expect(summary.daysWithoutSpool.map(\.description) == ["2026-03-01", "2026-03-02"])
        let html = try store.text("report.html")
        let figures = PageFigures(html: html)
        #expect(figures.count("postbacks") == 0)
        #expect(figures.count("rejected") == 0)
        #expect(html.contains("No production postbacks in this range"))
        #expect(html.contains("Nothing received on 2026-03-01 to 2026-03-02"))
        #expect(!html.contains("<svg"), "no chart is drawn for nothing")
        #expect(html.components(separatedBy: "class=\"empty\"").count - 1 == 11, "every chart and table says it is empty")
        #expect(
            figures.table("table-postbacks-per-day")?.rows.map { $0.last! } == ["–", "–"], "no figure for a day without spool")
        try ReportEscapingTests.checkMarkup(html)
    }

    /// A day aggregated from `--input` files (no spool segments) is a day with data: Apple's
    /// production samples, aggregated as README's first session does, are on the production page.
    @Test func aDayFromInputFilesIsReadLikeAnyOther() throws {
        let store = ScratchStore("report-input")
        let samples = try FileManager.default.contentsOfDirectory(atPath: Fixtures.root.appendingPathComponent("Samples").path)
            .filter { $0.hasSuffix(".json") }.map { Fixtures.root.appendingPathComponent("Samples/" + $0).path }
        let output = MemorySink()
        let status = PostbackCommand.run(
            ["aggregate", "--data", store.root, "--schemas", Fixtures.sampleSchemas, "--date", "2026-03-10", "--json"]
                + samples.flatMap { ["--input", $0] }, io: CommandIO(standardOutput: output, standardError: output))
        #expect(status == .success, "\(output.text)")
        #expect(output.text.contains(#""spool_segments":0"#), "built from files, not a spool")
        let line = try #require(output.text.split(separator: "\n").first { $0.hasPrefix(#"{"dt":"2026-03-10","#) })
        let day = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let published = try #require(day["postbacks"] as? Int)
        #expect(published > 0)
        let summary = try ReportGenerator.generate(store.request(from: "2026-03-10", to: "2026-03-10"))
        #expect(summary.daysIncluded.map(\.description) == ["2026-03-10"] && summary.daysWithoutSpool.isEmpty)
        let figures = PageFigures(html: try store.text("report.html"))
        #expect(figures.count("postbacks") == published)
        #expect(!figures.html.contains("Nothing received"))
    }

    @Test func missingDaysAreListedAndShownAsGapsNotZeros() throws {
        let store = try TestStore.shared.get()
        let summary = try ReportGenerator.generate(
            store.request(from: "2026-02-27", to: "2026-03-04", out: store.path("partial.html")))
        #expect(!summary.isComplete)
        #expect(summary.daysMissing.map(\.description) == ["2026-02-27", "2026-02-28", "2026-03-04"])
        #expect(summary.daysIncluded.count == 3)
        let html = try store.text("partial.html")
        #expect(html.contains("No aggregates for 2026-02-27 to 2026-02-28, 2026-03-04"))
        #expect(html.contains("<title>Wed 4 Mar 2026: no aggregates for this day</title>"))
        let table = try #require(PageFigures(html: html).table("table-postbacks-per-day"))
        #expect(table.rows.first?.first == "2026-02-27")
        #expect(table.rows.first?.dropFirst().allSatisfy { $0 == "–" } == true, "unknown, not zero")
        #expect(PageFigures(html: html).count("postbacks") == summary.postbacks)
    }

    @Test func aRangeWithoutAggregatesIsAnErrorAndWritesNothing() throws {
        let store = ScratchStore("none")
        let request = store.request(from: "2026-03-01", to: "2026-03-03")
        #expect(throws: ReportError.noAggregates(directory: store.root, from: "2026-03-01", to: "2026-03-03", leftOut: [])) {
            try ReportGenerator.generate(request)
        }
        #expect(!FileManager.default.fileExists(atPath: request.outputPath))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.root).isEmpty, "no temporary file left behind")
    }

    /// A detail file that is not the one its manifest lists (a rerun in progress, a crash
    /// between the renames, an edit) is left out, with the reason, and its rows are not counted.
    @Test func aPartitionThatDoesNotMatchItsManifestIsLeftOut() throws {
        let store = try TestStore.make(perDay: 200)
        let csv = store.path("agg/postback_detail_daily/dt=2026-03-02/part-00000.csv")
        let original = try String(contentsOfFile: csv, encoding: .utf8)
        let lines = original.split(separator: "\n")
        try (lines.dropLast().joined(separator: "\n") + "\n").write(toFile: csv, atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: store.path("agg/_manifests/dt=2026-03-03.json"))

        let summary = try ReportGenerator.generate(store.request(from: "2026-03-01", to: "2026-03-03"))
        #expect(summary.daysIncluded.map(\.description) == ["2026-03-01"])
        #expect(summary.daysLeftOut.map(\.description) == ["2026-03-02", "2026-03-03"])
        let html = try store.text("report.html")
        #expect(html.contains("2026-03-02: postback_detail_daily does not match its manifest"))
        #expect(html.contains("2026-03-03: postback_detail_daily has no manifest"))
        let first = try AggregateCSV.campaignDaily(store, days: ["2026-03-01"])
        #expect(PageFigures(html: html).count("postbacks") == first.reduce(0) { $0 + $1.row.int("postbacks") })

        // With nothing left to show, the reasons are in the error.
        #expect {
            try ReportGenerator.generate(store.request(from: "2026-03-02", to: "2026-03-03"))
        } throws: { error in
            let text = "\(error)"
            return text.contains("no published aggregates for 2026-03-02 to 2026-03-03")
                && text.contains("2026-03-02: postback_detail_daily does not match its manifest")
                && text.contains("2026-03-03: postback_detail_daily has no manifest")
        }
    }

    /// A day published before the rollups (manifest format 2: its detail rows are `campaign_daily`, and
    /// there is no `postback_detail_daily`) still loads, and makes the page the format-3 day makes.
    @Test func aDayPublishedBeforeTheRollupsStillLoads() throws {
        let store = try TestStore.make(perDay: 200)
        let request = store.request(from: TestStore.first, to: TestStore.last)
        let files = FileManager.default
        let rollups = AggregateTables.rollups.map(\.table)
        // The page of the same days without campaign_daily in their manifests: a day from before the
        // rollups has no modeled columns either (docs/modeling.md), so neither page shows modeled figures.
        for day in ReportFiguresTests.days {
            let path = store.path("agg/_manifests/dt=\(day).json")
            var manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            manifest["outputs"] = (manifest["outputs"] as! [[String: Any]]).filter {
                $0["table"] as? String != AggregateTables.campaignDaily
            }
            try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
        }
        let current = try ReportGenerator.page(request)
        for day in ReportFiguresTests.days {
            for table in rollups { try files.removeItem(atPath: store.path("agg/\(table)/dt=\(day)")) }
            try files.moveItem(
                atPath: store.path("agg/\(AggregateTables.postbackDetailDaily)/dt=\(day)"),
                toPath: store.path("agg/campaign_daily/dt=\(day)"))
            let path = store.path("agg/_manifests/dt=\(day).json")
            var manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            manifest["format"] = 2
            manifest["outputs"] = (manifest["outputs"] as! [[String: Any]]).compactMap { output -> [String: Any]? in
                let table = output["table"] as! String
                if rollups.contains(table) { return nil }
                guard table == AggregateTables.postbackDetailDaily else { return output }
                var renamed = output
                renamed["table"] = "campaign_daily"
                renamed["path"] = "agg/campaign_daily/dt=\(day)/part-00000.csv"
                return renamed
            }
            try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: path))
        }
        #expect(!files.fileExists(atPath: store.path("agg/\(AggregateTables.postbackDetailDaily)/dt=\(TestStore.first)")))
        let legacy = try ReportGenerator.page(request)
        #expect(legacy == current)
        #expect((PageFigures(html: legacy).count("postbacks") ?? 0) > 0)
    }

    /// A file that matches its manifest but does not read as the table (another tool wrote both, or a
    /// newer format) is an error naming the file and line, not a silently wrong page.
    @Test(arguments: [
        ("postbacks\n", 1, "not a campaign_daily table: no column app_id"),
        (header + "\n" + row(postbacks: "12x") + "\n", 2, "postbacks is '12x', expected a count"),
        (header + "\n" + row(postbacks: "1") + ",extra\n", 2, "fields, the header has"),
        (header + "\n\"unterminated" + "\n", 2, "unterminated quoted field"),
        (header + "\nab\"c" + "\n", 2, "quote inside an unquoted field"),
    ])
    func aMalformedTableIsAnErrorWithItsPlace(csv: String, line: Int, reason: String) throws {
        let store = ScratchStore("malformed")
        try writeDay(store, day: "2026-03-01", csv: csv, rows: csv.split(separator: "\n").count - 1)
        #expect {
            try ReportGenerator.generate(store.request(from: "2026-03-01", to: "2026-03-01"))
        } throws: { error in
            guard let error = error as? ReportError, error.code == .malformed else { return false }
            return error.path?.hasSuffix("dt=2026-03-01/part-00000.csv") == true && error.line == line
                && error.reason.contains(reason)
        }
    }

    @Test func aManifestOfAnotherFormatIsAnError() throws {
        let store = ScratchStore("format")
        try writeDay(store, day: "2026-03-01", csv: Self.header + "\n", rows: 0, format: 4)
        #expect {
            try ReportGenerator.generate(store.request(from: "2026-03-01", to: "2026-03-01"))
        } throws: { error in
            guard let error = error as? ReportError, error.code == .malformed else { return false }
            return error.path?.hasSuffix("_manifests/dt=2026-03-01.json") == true
                && error.reason.contains("manifest format 4 is not one this postback reads (1 to 3)")
        }
    }

    @Test func anUnwritableOutputIsAnIOError() throws {
        let store = try TestStore.shared.get()
        #expect {
            try ReportGenerator.generate(
                store.request(from: TestStore.first, to: TestStore.last, out: store.path("no/such/dir/report.html")))
        } throws: { error in
            // The write's own error, whose text the command prints after "postback report: ".
            guard let error = error as? SystemCallError, error.errorNumber == ENOENT else { return false }
            return error.path.contains("no/such/dir/") && "\(error)".hasSuffix(": open failed: No such file or directory")
        }
        // The command prints it as it is after its name. Its own checks refuse a missing directory first, so the
        // write fails in /proc, a directory where no file can be created.
        let run = TestSupport.run([
            "report", "--data", store.root, "--from", TestStore.first, "--to", TestStore.last, "--out", "/proc/report.html",
        ])
        #expect(run.status == .usageOrIOError)
        #expect(
            run.stderr.hasPrefix("postback report: /proc/.report.html.tmp-")
                && run.stderr.hasSuffix(": open failed: No such file or directory\n")
                && run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
    }

    static let header = AggregateTables.detailColumns.joined(separator: ",")

    static func row(postbacks: String) -> String {
        AggregateTables.detailColumns.map { $0 == "postbacks" ? postbacks : $0 == "app_id" ? "1" : "" }.joined(
            separator: ",")
    }

    /// A partition written by hand, with a manifest that lists its true size and checksum.
    private func writeDay(_ store: ScratchStore, day: String, csv: String, rows: Int, format: Int = 1) throws {
        let directory = store.path("agg/campaign_daily/dt=\(day)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: store.path("agg/_manifests"), withIntermediateDirectories: true)
        try csv.write(toFile: directory + "/part-00000.csv", atomically: false, encoding: .utf8)
        let manifest = """
            {"format": \(format), "dt": "\(day)", "tool": "hand", "lookback_days": 0, "inputs": [], "lookback_inputs": [], "schemas": [],
             "outputs": [{"table": "campaign_daily", "path": "x", "rows": \(rows), "bytes": \(csv.utf8.count), "sha256": "\(SHA256.hash(Array(csv.utf8)))"}],
             "totals": {"postbacks": 0, "installs": 0, "redownloads": 0, "reengagements": 0, "losses": 0, "null_cv_postbacks": 0,
                        "revenue_est_sum": 0, "development_postbacks": 0, "rejected_postbacks": 0, "duplicates_same_day": 0,
                        "duplicates_of_earlier_days": 0, "corrupt_lines": 0, "torn_tails": 0},
             "rejected_by_status": {}, "rejected_reasons": [], "problems": []}
            """
        try manifest.write(toFile: store.path("agg/_manifests/dt=\(day).json"), atomically: false, encoding: .utf8)
    }
}
