import AggregateSchema
import Aggregation
import Basics
import Foundation
import PostbackCLI
import TestSupport
import Testing

@testable import Reporting

/// What a new user sees, measured in Chromium at 1280×800 and 1920×800: the page that `postback demo`
/// and README's first session end on shows, in its first screen, the postbacks, installs and revenue
/// the published aggregates hold; no element's text overflows its box; every in-page link has a target.
@Suite(.serialized, .disabled(if: TestScale.underSanitizer, "Chromium is not sanitized (TestScale)")) struct FirstScreenTests {
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

    /// What the first screen must say about revenue, per currency, worked out by DuckDB from a published
    /// table (`DIR/agg/TABLE`) by docs/report.md's rules, never by the report's code: revenue to date
    /// (every window), window 1 alone, and per install (downloads' revenue ÷ the installs of that
    /// currency's rows, half up to the cent); a sum with an open-ended value whose estimate is its
    /// minimum is a lower bound, `≥ 18,750.00`.
    static let revenueScript = #"""
        import duckdb, json, sys
        from decimal import Decimal, ROUND_HALF_UP
        con = duckdb.connect()
        rows = f"read_csv('{sys.argv[1]}/*/*.csv', header = true, all_varchar = true, union_by_name = true)"
        def sums(condition):
            return f"""sum(CAST(revenue_est_sum AS DECIMAL(38, 6))) FILTER (WHERE {condition}),
                       sum(CAST(revenue_min_sum AS DECIMAL(38, 6))) FILTER (WHERE {condition}),
                       coalesce(bool_or(revenue_max_sum IS NULL) FILTER (WHERE {condition}), false)"""
        query = f"""SELECT currency, {sums("true")}, {sums("coalesce(postback_sequence_index, '0') = '0'")},
                           {sums("conversion_type = 'download'")}
                    FROM {rows} WHERE CAST(postbacks AS BIGINT) > 0 AND revenue_est_sum IS NOT NULL AND currency IS NOT NULL
                    GROUP BY currency"""
        installs = dict(con.execute(f"""SELECT currency, sum(CAST(installs AS BIGINT)) FROM {rows}
                                        WHERE CAST(postbacks AS BIGINT) > 0 AND currency IS NOT NULL GROUP BY currency""").fetchall())
        def money(amount):
            return f"{amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,.2f}"
        def shown(estimate, minimum, is_open, divisor=1):
            if estimate is None or divisor == 0:
                return "–"
            lower = is_open and estimate == minimum
            return ("≥ " if lower else "") + money(Decimal(estimate) / divisor)
        result = {}
        for currency, est, low, is_open, est1, low1, open1, estd, lowd, opend in con.execute(query).fetchall():
            result[currency] = {"to_date": shown(est, low, is_open), "window_one": shown(est1, low1, open1),
                                "per_install": shown(estd, lowd, opend, installs.get(currency) or 0)}
        print(json.dumps(result))
        """#

    /// `revenueScript`'s answer for the table under `store`: currency → `to_date`, `window_one`, `per_install`.
    static func revenueTexts(table: String, under store: String) throws -> [String: [String: String]] {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let (status, text, problem) = try VenvPython.run(script: revenueScript, arguments: [store + "/agg/" + table])
        try #require(status == 0, "python3 with duckdb failed (scripts/setup --test installs it): \(problem)")
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: String]], "\(text)")
    }

    /// The first screen cannot be misread: revenue is one stated definition (to date, window 1 alone
    /// beside it) with figures equal to DuckDB's, a sum without an upper bound is a lower bound, "per
    /// install" says what it divides, every caveat is inside the window, and no two column headings of
    /// a table look the same.
    func checkCannotBeMisread(_ visit: BrowserRenderTests.Visit, revenue: [String: [String: String]], width: Int) {
        let metrics = visit.facts["metrics"] as? [String: String] ?? [:]
        let head = visit.facts["topHead"] as? [String] ?? []
        let foot = visit.facts["topFoot"] as? [String] ?? []
        let text = visit.facts["text"] as? String ?? ""
        #expect(!revenue.isEmpty)
        for (currency, figures) in revenue {
            let card = metrics["revenue_est_sum:\(currency)"] ?? ""
            #expect(
                card.hasPrefix("Revenue to date, \(currency)") && card.contains(figures["to_date"]!)
                    && card.contains("window 1 alone \(figures["window_one"]!)"),
                "the revenue card shows \(figures): \(card)")
            let column = head.firstIndex(of: "Per install, \(currency)")
            #expect(
                column.map { foot.indices.contains($0) ? foot[$0] : "" } == figures["per_install"],
                "all campaigns' revenue per install is \(figures["per_install"]!): \(head) \(foot)")
        }
        // Stated once, the same everywhere: no sentence calls the headline's sum wrong.
        #expect(text.contains("revenue to date adds windows 1–3") && text.contains("per install: revenue of downloads"))
        #expect(!text.lowercased().contains("windows are not added"), "the page contradicts its own headline")
        #expect(!text.contains("–open"), "a range without an upper bound shown as an estimate")
        let caveats = visit.facts["caveats"] as? [[String: Any]] ?? []
        for caveat in caveats {
            #expect(caveat["visible"] as? Bool == true, "on the first screen at \(width)×800: \(caveat)")
        }
        for table in visit.facts["headings"] as? [[[String: String]]] ?? [] {
            let full = Set(table.map { $0["full"]! })
            let shown = Set(table.map { $0["shown"]! })
            #expect(shown.count == full.count, "column headings that look alike: \(table.map { $0["shown"]! })")
        }
    }

    @discardableResult
    func check(page: String, name: String, expected: Expected, width: Int) throws -> BrowserRenderTests.Visit {
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
        return visit
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
        let visit = try check(page: directory + "/report.html", name: "demo", expected: expected, width: width)
        // The demo's day of today is partial, and its schema's top values have no upper bound.
        #expect(
            (visit.facts["caveats"] as? [[String: Any]])?.contains { ($0["text"] as? String)?.hasPrefix("Partial:") == true }
                == true)
        let revenue = try Self.revenueTexts(table: AggregateTables.campaignDailyDevelopment, under: directory + "/store")
        #expect(revenue["EUR"]?["to_date"]?.hasPrefix("≥ ") == true, "\(revenue)")
        checkCannotBeMisread(visit, revenue: revenue, width: width)
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
        let visit = try check(page: directory.path + "/report.html", name: "readme", expected: expected, width: width)
        checkCannotBeMisread(
            visit,
            revenue: try Self.revenueTexts(table: AggregateTables.campaignDailyDevelopment, under: directory.path + "/out"),
            width: width)
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

    /// The nightly check's findings (`agg/_checks`, written by `FlowCheckFile` as `postback check`
    /// does) are a notice on the first screen at 1280×800, above the figure cards: four by name, the
    /// rest counted; a day without findings adds nothing.
    @Test func theNightlyChecksFindingsAreOnTheFirstScreen() throws {
        let store = try ReportCostTests.store("first-screen-findings")
        let day = UTCDay("2026-03-02")!
        let networks = (1...6).map { "network-\($0).skadnetwork" }
        let findings = networks.map { network in
            FlowFinding(
                FlowFinding.Context(day: day, pair: FlowPair(appID: "111", adNetworkID: network), historyDays: 14),
                .stopped, figures: [("postbacks", .count(0)), ("median", .decimal(412))],
                text: "0 postbacks, median 412 a day over 14 days")
        }
        let result = FlowCheck.Result(
            day: day, environment: .production, findings: findings, pairs: 6, pairsWithTooLittleHistory: 0,
            pairsStillStopped: [], historyDays: [])
        _ = try FlowCheckFile.write(result, dataDirectory: store.root, toolVersion: "postback test")
        var empty = result
        empty.day = day.adding(days: -1)
        empty.findings = []
        _ = try FlowCheckFile.write(empty, dataDirectory: store.root, toolVersion: "postback test")
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let page = TestPaths.output + "/report-findings.html"
        _ = try ReportGenerator.generate(store.request(from: ReportCostTests.first, to: ReportCostTests.last, out: page))
        let screenshot = TestPaths.output + "/first-screen-findings-1280.png"
        let visit = try BrowserRenderTests.visit(page, screenshot: screenshot, width: 1280, height: 800)
        let firstScreen = visit.facts["firstScreen"] as? String ?? ""
        for network in networks.prefix(4) {
            #expect(
                firstScreen.contains("2026-03-02 app 111 \(network): stopped: 0 postbacks, median 412 a day over 14 days"),
                "\(firstScreen)")
        }
        #expect(firstScreen.contains("and 2 more") && !firstScreen.contains(networks[4]), "\(firstScreen)")
        let caveats = visit.facts["caveats"] as? [[String: Any]] ?? []
        let notice = try #require(caveats.first { ($0["text"] as? String)?.hasPrefix("The nightly check found 6") == true })
        #expect(notice["visible"] as? Bool == true, "inside 1280×800: \(notice)")
        #expect(caveats.allSatisfy { $0["visible"] as? Bool == true }, "\(caveats)")
        // Above the figure cards, which are still on the first screen.
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let cards = try #require(html.range(of: "data-metric="))
        #expect(html.range(of: "id=\"check-findings\"").map { $0.lowerBound < cards.lowerBound } == true)
        #expect(firstScreen.contains("Spend, USD"), "\(firstScreen)")
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect(visit.facts["overflow"] as? Bool == false)
        print("first screen with findings: \(screenshot)")
    }

    /// The negative twin: a page whose figures sit below the first screen, and a card too narrow for
    /// its number, are seen as such, so the checks above can fail.
    @Test func theFirstScreenCheckSeesFiguresBelowTheFoldAndOverflow() throws {
        let store = ScratchStore("first-screen-negative")
        let page = store.path("low.html")
        try """
        <!DOCTYPE html><html><head><title>low</title></head><body>
        <div class="notice">Partial: high</div><div style="height: 2000px">tall</div><p>1,234 installs</p>
        <div class="notice">Partial: below the fold</div>
        <table><thead><tr><th title="demo-network-a">demo-…</th><th title="demo-network-b">demo-…</th></tr></thead></table>
        <div id="card" style="width: 40px; white-space: nowrap; overflow: hidden">5,121,728.07</div>
        <a href="#nowhere">link</a></body></html>
        """.write(toFile: page, atomically: true, encoding: .utf8)
        let visit = try BrowserRenderTests.visit(page, screenshot: nil, width: 1280, height: 800)
        #expect(!(visit.facts["firstScreen"] as? String ?? "").contains("1,234"))
        #expect((visit.facts["firstScreen"] as? String ?? "").contains("tall"))
        #expect((visit.facts["overflowing"] as? [String])?.contains { $0.contains("5,121,728.07") } == true)
        #expect((visit.facts["brokenLinks"] as? [String]) == ["#nowhere"])
        let caveats = visit.facts["caveats"] as? [[String: Any]] ?? []
        #expect(caveats.map { $0["visible"] as? Bool } == [true, false], "\(caveats)")
        let headings = visit.facts["headings"] as? [[[String: String]]] ?? []
        #expect(headings.count == 1 && Set(headings[0].map { $0["shown"]! }).count == 1, "\(headings)")
    }
}
