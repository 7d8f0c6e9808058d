import Aggregation
import Basics
import Foundation
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import Reporting

/// The null-value model on the page, as a person sees it (Chromium, 1280×800): a production store
/// (a synthetic week, the sample schemas) whose first screen shows, per currency, the measured revenue
/// to date unchanged and beside it a card labelled "Modeled revenue to date" with its 90% interval, both
/// worked out by DuckDB from the published `campaign_daily` files by docs/modeling.md's sum rule (the
/// gamma quantiles from `scripts/gamma_quantiles.py`, not the report's code); the top campaigns table
/// has no modeled column; the table after it has the modeled figures beside the measured ones.
///
/// Size: `POSTBACK_MODEL_PAGE_PER_DAY` postbacks a day over 8 days (default 2,500: about 25 s on two
/// loaded cores, most of it Chromium), e.g. `POSTBACK_MODEL_PAGE_PER_DAY=40000 swift test --filter ModeledRevenuePageTests`.
@Suite(.serialized) struct ModeledRevenuePageTests {
    static let first = "2026-02-01"
    static let days = 8
    static let perDay = ProcessInfo.processInfo.environment["POSTBACK_MODEL_PAGE_PER_DAY"].flatMap(Int.init) ?? 2500

    static let store: String = {
        let root = TemporaryDirectory.create("modeled-page")
        var spool = SyntheticSpool()
        spool.shape = .realistic
        spool.postbacksPerDay = perDay
        _ = try! spool.write(to: StoreLayout(root: root), first: UTCDay(first)!, days: days)
        let last = UTCDay(first)!.adding(days: days - 1).description
        let run = TestSupport.run([
            "aggregate", "--data", root, "--schemas", Fixtures.sampleSchemas, "--from", first, "--to", last,
        ])
        precondition(run.status == .success || run.status == .failure, "\(run.stderr)")
        return root
    }()

    /// Per currency, from campaign_daily of the report's range: the measured revenue to date (every
    /// window, production rows) and the modeled null value with its 90% interval by the sum rule, as
    /// the page writes amounts (grouped, to the cent, half up).
    static let expectedScript = #"""
        import duckdb, json, math, runpy, sys
        from decimal import Decimal, ROUND_HALF_UP
        root, first, last, quantiles = sys.argv[1:5]
        gamma = runpy.run_path(quantiles)
        con = duckdb.connect()
        rows = f"""(SELECT * FROM read_csv('{root}/agg/campaign_daily/*/*.csv', header = true, all_varchar = true,
                    hive_partitioning = true) WHERE dt BETWEEN '{first}' AND '{last}' AND CAST(postbacks AS BIGINT) > 0
                    AND cv_kind <> 'none' AND currency IS NOT NULL)"""
        measured = dict(con.execute(f"SELECT currency, sum(CAST(revenue_est_sum AS DECIMAL(38, 6))) FROM {rows} GROUP BY 1").fetchall())
        modeled = con.execute(f"""
            WITH unit AS (SELECT currency, sum(CAST(modeled_null_revenue_est AS DECIMAL(38, 6))) AS est,
                                 sum(CAST(modeled_null_values_var AS DOUBLE)) AS var, sum(CAST(modeled_null_mean_sd AS DOUBLE)) AS sd
                          FROM {rows} WHERE modeled_note IS NULL AND modeled_null_revenue_est IS NOT NULL
                          GROUP BY currency, app_id, ad_network_id, source_identifier, postback_sequence_index, conversion_type)
            SELECT currency, sum(est), sum(var + sd * sd) FROM unit GROUP BY 1""").fetchall()
        def cents(amount):
            return f"{Decimal(amount).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,.2f}"
        def micros(value):
            return Decimal(math.floor(value * 1e6 + 0.5)) / Decimal(1_000_000)
        result = {}
        for currency, est, variance in modeled:
            base = measured.get(currency) or Decimal(0)
            mean = float(est)
            shape, scale = mean * mean / variance, variance / mean
            low, high = (gamma["quantile"](shape, p) * scale for p in (0.05, 0.95))
            result[currency] = {"measured": cents(base), "modeled": cents(base + est),
                                "low": cents(base + micros(low)), "high": cents(base + micros(high))}
        print(json.dumps(result))
        """#

    @Test func theFirstScreenShowsModeledBesideMeasured() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let last = UTCDay(Self.first)!.adding(days: Self.days - 1).description
        // The last four days: the pooling window reaches back before them.
        let from = UTCDay(Self.first)!.adding(days: Self.days - 4).description
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let page = TestPaths.output + "/report-modeled.html"
        let run = TestSupport.run(["report", "--data", Self.store, "--from", from, "--to", last, "--out", page])
        #expect(run.status == .success, "\(run.stderr)")
        let (status, text, problem) = try VenvPython.run(
            script: Self.expectedScript,
            arguments: [Self.store, from, last, TestPaths.packageRoot + "/scripts/gamma_quantiles.py"])
        try #require(status == 0, "\(problem)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: String]])
        #expect(!expected.isEmpty, "the store has modeled rows")

        let visit = try BrowserRenderTests.visit(
            page, screenshot: TestPaths.output + "/first-screen-modeled-1280.png", width: 1280, height: 800)
        let metrics = visit.facts["metrics"] as? [String: String] ?? [:]
        let firstScreen = visit.facts["firstScreen"] as? String ?? ""
        for (currency, figures) in expected {
            let card = metrics["modeled_revenue_est:\(currency)"] ?? ""
            #expect(card.hasPrefix("Modeled revenue to date, \(currency) \(figures["modeled"]!)"), "\(figures): \(card)")
            #expect(
                card.contains("modeled, not measured: 90% interval \(figures["low"]!)–\(figures["high"]!)"), "\(figures): \(card)"
            )
            #expect(card.contains("measured \(figures["measured"]!)") || card.contains("measured ≥ \(figures["measured"]!)"))
            #expect(firstScreen.contains("Modeled revenue to date, \(currency) | \(figures["modeled"]!)"), "\(firstScreen)")
            // The measured card beside it is the measured revenue, as it always was.
            let measuredCard = metrics["revenue_est_sum:\(currency)"] ?? ""
            #expect(
                measuredCard.hasPrefix("Revenue to date, \(currency)") && measuredCard.contains(figures["measured"]!),
                "\(figures): \(measuredCard)")
        }
        // The top campaigns' table has no modeled column; the table after it has, beside the measured one,
        // and its total row is the headline's modeled figure.
        let head = visit.facts["topHead"] as? [String] ?? []
        #expect(!head.contains { $0.contains("Modeled") }, "\(head)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let modeledTable = try #require(
            html.range(of: "id=\"table-top-campaigns-modeled\"").map { String(html[$0.lowerBound...].prefix(200_000)) })
        for (currency, figures) in expected {
            #expect(modeledTable.contains(">Modeled revenue, \(currency)<"))
            #expect(modeledTable.contains(">\(figures["modeled"]!)<"), "the total row holds \(figures["modeled"]!)")
            #expect(modeledTable.contains(">\(figures["low"]!)–\(figures["high"]!)<"))
        }
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect((visit.facts["hiddenCells"] as? [Any])?.isEmpty == true, "\(visit.facts["hiddenCells"] ?? "?")")
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty, "\(visit.console) \(visit.exceptions)")
    }
}
