import Foundation
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback demo` (issue 14): the whole pipeline end to end on loopback.
@Suite struct DemoCommandTests {
    /// Every line of every file under `directory` (the spool's segments hold one record a line).
    func lineCount(under directory: String) throws -> Int {
        let files = try #require(FileManager.default.enumerator(atPath: directory)?.allObjects as? [String])
        var lines = 0
        for file in files where UserPaths.kind(of: directory + "/" + file) == .file {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)), as: UTF8.self)
            lines += text.split(separator: "\n").count
        }
        return lines
    }

    @Test func theDemoReceivesStoresAggregatesAndReportsEveryPostback() throws {
        let parent = TemporaryDirectory("demo")
        let dir = parent.path + "/demo"
        let demo = run(["demo", "--dir", dir, "--count", "400"])
        #expect(demo.status == .success, "\(demo.stderr)")
        // Every postback sent was acknowledged and stored once; nothing was rejected.
        #expect(demo.stdout.contains("HTTP 200: 400"), "\(demo.stdout)")
        #expect(try lineCount(under: dir + "/store/raw/postbacks") == 400)
        let rejected = dir + "/store/raw/rejected"
        let rejectedLines = FileManager.default.fileExists(atPath: rejected) ? try lineCount(under: rejected) : 0
        #expect(rejectedLines == 0)
        // The nightly job published the day, and the report counts the demo's development postbacks.
        let manifests = try FileManager.default.contentsOfDirectory(atPath: dir + "/store/agg/_manifests")
        #expect(!manifests.isEmpty)
        let page = String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir + "/report.html")), as: UTF8.self)
        #expect(page.contains("postback demo"))
        #expect(demo.stdout.contains("400 development"), "\(demo.stdout)")
        // The page is the development page: every label the schema decoded in
        // campaign_daily_development appears on it (tables and chart tooltips).
        var labels = Set<String>()
        for day in manifests.map({ String($0.dropFirst(3).dropLast(5)) }) {
            let path = dir + "/store/agg/campaign_daily_development/dt=\(day)/part-00000.csv"
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            for row in CSVText.rows(text) where row["revenue_est_sum"] != "" { labels.insert(row["decoded_label"]!) }
        }
        #expect(!labels.isEmpty, "the demo's traffic decodes with its schema")
        #expect(page.contains("id=\"environment\""), "the development banner")
        for label in labels {
            let escaped = label.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            #expect(page.contains(escaped), "decoded label \(label) missing from the page")
        }
        // The closing message says where everything is.
        for place in [dir + "/store/raw", dir + "/store/agg", dir + "/report.html", "xdg-open"] {
            #expect(demo.stdout.contains(place), "missing \(place) in \(demo.stdout)")
        }
        // No progress line when standard error is not a terminal.
        #expect(!demo.stderr.contains("sent 400 of 400"))
        // Twenty earlier days, their spend imported, and cohorts with spend, CPI and ROAS: summed here
        // from the published development cohorts, network b claims a fifth more installs than were signed.
        #expect(manifests.count == 21, "\(manifests)")
        var claimed = 0
        var signed = 0
        var withSpend = 0
        var open = 0
        let cohorts = try FileManager.default.contentsOfDirectory(atPath: dir + "/store/agg/campaign_cohort_daily_development")
        for partition in cohorts {
            let path = dir + "/store/agg/campaign_cohort_daily_development/\(partition)/part-00000.csv"
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            for row in CSVText.rows(text) {
                if row["spend"] != "" { withSpend += 1 }
                if row["cohort_status"] == "open" { open += 1 }
                if row["ad_network_id"] == "demo-network-b.skadnetwork", let claim = Int(row["reported_installs"] ?? "") {
                    claimed += claim
                    signed += Int(row["installs"]!)!
                }
            }
        }
        #expect(withSpend > 50 && open > 0, "\(withSpend) rows with spend, \(open) open")
        #expect(signed > 0 && Double(claimed) > Double(signed) * 1.15, "network b claims \(claimed), Apple signed \(signed)")
        #expect(page.contains("claims") && page.contains("What networks report and what Apple signed"))
    }

    @Test func progressIsShownOnlyOnATerminal() throws {
        let parent = TemporaryDirectory("demo")
        let out = MemorySink()
        let terminal = MemorySink(isTerminal: true)
        let status = PostbackCommand.run(
            ["demo", "--dir", parent.path + "/demo", "--count", "200"],
            io: CommandIO(standardOutput: out, standardError: terminal))
        #expect(status == .success, "\(terminal.text)")
        #expect(terminal.text.contains("\rsent 200 of 200 postbacks\n"), "\(terminal.text)")
        #expect(!out.text.contains("sent 200 of 200"))
    }

    @Test func aDirectoryThatIsNotEmptyIsRefusedAndLeftAlone() throws {
        let dir = TemporaryDirectory("demo")
        try dir.write("keep me", to: "notes.txt")
        let demo = run(["demo", "--dir", dir.path])
        #expect(demo.status == .usageOrIOError)
        #expect(demo.stderr.contains("--dir \(dir.path) is not empty"), "\(demo.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["notes.txt"])

        try dir.write("x", to: "file")
        let onFile = run(["demo", "--dir", dir.path + "/file"])
        #expect(onFile.status == .usageOrIOError)
        #expect(onFile.stderr.contains("is a file"), "\(onFile.stderr)")
    }

    /// The binary carries its own copy of the example schema; it must stay the sample's.
    @Test func theEmbeddedSchemaIsTheSampleSchema() throws {
        let sample = try String(
            contentsOfFile: Fixtures.sampleSchemas + "/\(DemoCommand.schemaAppID)/\(DemoCommand.schemaFileName)", encoding: .utf8)
        #expect(
            DemoCommand.schema.trimmingCharacters(in: .whitespacesAndNewlines)
                == sample.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
