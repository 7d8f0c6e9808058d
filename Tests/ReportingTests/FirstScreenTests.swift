import Aggregation
import Foundation
import PostbackCLI
import TestSupport
import Testing

@testable import Reporting

/// What a new user sees, measured in Chromium at 1280×800 and 1920×800: the page that `postback demo`
/// and README's first session end on shows, in its first screen, the postbacks, installs and revenue
/// the published aggregates hold; no element's text overflows its box; every in-page link has a target.
@Suite(.serialized) struct FirstScreenTests {
    /// The figures a first screen must show, summed here from a day's published table.
    struct Expected {
        var postbacks = 0
        var installs = 0
        var revenueMicros: [String: Int64] = [:]

        init(table: String, under store: String) throws {
            let directory = store + "/agg/" + table
            for day in try FileManager.default.contentsOfDirectory(atPath: directory) {
                let text = try String(contentsOfFile: "\(directory)/\(day)/part-00000.csv", encoding: .utf8)
                for row in CSVText.rowsKeepingNulls(text) {
                    postbacks += row.int("postbacks")
                    installs += row.int("installs")
                    if let currency = row.text("currency"), let micros = row.micros("revenue_est_sum") {
                        revenueMicros[currency, default: 0] += micros
                    }
                }
            }
        }

        /// The texts as the page writes them (grouped thousands, amounts to the cent).
        var texts: [String] {
            [NumberFormat.count(postbacks), NumberFormat.count(installs)]
                + revenueMicros.values.map { NumberFormat.money(Money(micros: $0)) }
        }
    }

    func check(page: String, name: String, expected: Expected, width: Int) throws {
        #expect(expected.postbacks > 0 && expected.installs > 0 && !expected.revenueMicros.isEmpty)
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let screenshot = TestPaths.output + "/first-screen-\(name)-\(width).png"
        let visit = try BrowserRenderTests.visit(page, screenshot: screenshot, width: width, height: 800)
        let firstScreen = visit.facts["firstScreen"] as? String ?? ""
        for text in expected.texts {
            #expect(firstScreen.contains(text), "the first screen at \(width) px shows \(text): \(firstScreen)")
        }
        // The top campaigns table starts on the first screen.
        #expect(firstScreen.contains("Top campaigns by installs"), "\(firstScreen)")
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect((visit.facts["brokenLinks"] as? [Any])?.isEmpty == true, "\(visit.facts["brokenLinks"] ?? "?")")
        #expect((visit.facts["hiddenCells"] as? [Any])?.isEmpty == true, "\(visit.facts["hiddenCells"] ?? "?")")
        #expect(visit.facts["overflow"] as? Bool == false)
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty, "\(visit.console) \(visit.exceptions)")
        print("first screen: \(screenshot)")
    }

    @Test(arguments: [1280, 1920]) func theDemoOpensOnItsOwnNumbers(width: Int) throws {
        let parent = TemporaryDirectory("demo-screen")
        let directory = parent.path + "/demo"
        let output = MemorySink()
        let status = PostbackCommand.run(
            ["demo", "--dir", directory, "--count", "600"], io: CommandIO(standardOutput: output, standardError: output))
        #expect(status == .success, "\(output.text)")
        let expected = try Expected(table: AggregateTables.campaignDailyDevelopment, under: directory + "/store")
        let total = try #require(
            output.text.split(separator: "\n").first { $0.hasSuffix(" on the 20 days before") }.flatMap {
                Int($0.split(separator: " ")[0])
            },
            "the demo says how many postbacks it made: \(output.text)")
        #expect(expected.postbacks == total && total > 600 * 5, "today's 600 and the 20 days before")
        try check(page: directory + "/report.html", name: "demo", expected: expected, width: width)
        // A story: named campaigns, none shown as a raw source identifier.
        let html = try String(contentsOfFile: directory + "/report.html", encoding: .utf8)
        #expect(html.contains("spring_sale") && html.contains("loyalty_push"))
        #expect(!html.contains("source id "), "every demo campaign is named by the schema's map")
    }

    @Test(arguments: [1280, 1920]) func readmesFirstSessionEndsOnItsOwnNumbers(width: Int) throws {
        let directory = TemporaryDirectory("readme-screen")
        try Readme.runFirstSession(in: directory.path)
        let expected = try Expected(table: AggregateTables.campaignDailyDevelopment, under: directory.path + "/out")
        #expect(expected.postbacks > 900, "the session's generated postbacks are counted (as development)")
        try check(page: directory.path + "/report.html", name: "readme", expected: expected, width: width)
    }

    /// With spend in the range: spend, CPI and ROAS (its open cohort marked) and the warning about a
    /// network's claims are on the first screen at 1280×800 (and 1920×800), and the page's tables still fit.
    @Test(arguments: [1280, 1920]) func spendCPIAndROASAndTheClaimsWarningAreOnTheFirstScreen(width: Int) throws {
        let store = try ReportCostTests.store("first-screen-cost")
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let page = TestPaths.output + "/report-cost-\(width).html"
        _ = try ReportGenerator.generate(store.request(from: ReportCostTests.first, to: ReportCostTests.last, out: page))
        let screenshot = TestPaths.output + "/first-screen-cost-\(width).png"
        let visit = try BrowserRenderTests.visit(page, screenshot: screenshot, width: width, height: 800)
        let firstScreen = visit.facts["firstScreen"] as? String ?? ""
        let expected = ReportCostTests.Expected(ReportCostTests.rowsInRange())
        #expect(expected.roasText.hasSuffix(" (open)"))
        for text in [
            "Spend, USD | \(expected.spendText("USD"))", "Spend, EUR | \(expected.spendText("EUR"))",
            "CPI, USD | \(expected.cpiText("USD"))", "CPI, EUR | \(expected.cpiText("EUR"))",
            "ROAS, USD | \(expected.roasText)",
            "⚠ \(ReportCostTests.networkB) claims 450 installs; Apple signed 320 (+40.6%) — see | "
                + "What networks report and what Apple signed",
            "Top campaigns by installs",
        ] {
            #expect(firstScreen.contains(text), "the first screen shows \(text): \(firstScreen)")
        }
        #expect(!firstScreen.contains("No spend for this range"))
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect((visit.facts["brokenLinks"] as? [Any])?.isEmpty == true, "\(visit.facts["brokenLinks"] ?? "?")")
        #expect((visit.facts["hiddenCells"] as? [Any])?.isEmpty == true, "\(visit.facts["hiddenCells"] ?? "?")")
        #expect((visit.facts["scrollers"] as? [Any])?.isEmpty == true, "\(visit.facts["scrollers"] ?? "?")")
        #expect(visit.facts["overflow"] as? Bool == false)
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty, "\(visit.console) \(visit.exceptions)")
        print("first screen with spend: \(screenshot)")
    }

    /// The negative twin: a page whose figures sit below the first screen, and a card too narrow for
    /// its number, are seen as such, so the checks above can fail.
    @Test func theFirstScreenCheckSeesFiguresBelowTheFoldAndOverflow() throws {
        let store = ScratchStore("first-screen-negative")
        let page = store.path("low.html")
        try """
        <!DOCTYPE html><html><head><title>low</title></head><body>
        <div style="height: 2000px">tall</div><p>1,234 installs</p>
        <div id="card" style="width: 40px; white-space: nowrap; overflow: hidden">5,121,728.07</div>
        <a href="#nowhere">link</a></body></html>
        """.write(toFile: page, atomically: true, encoding: .utf8)
        let visit = try BrowserRenderTests.visit(page, screenshot: nil, width: 1280, height: 800)
        #expect(!(visit.facts["firstScreen"] as? String ?? "").contains("1,234"))
        #expect((visit.facts["firstScreen"] as? String ?? "").contains("tall"))
        #expect((visit.facts["overflowing"] as? [String])?.contains { $0.contains("5,121,728.07") } == true)
        #expect((visit.facts["brokenLinks"] as? [String]) == ["#nowhere"])
    }
}
