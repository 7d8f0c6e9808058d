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
/// worked out by DuckDB from the published `campaign_daily` files by docs/modeling.md's sum rule (a
/// campaign with its campaign ID, the low end 0 when Σ log_p_zero ≥ ln 0.05; the
/// gamma quantiles from `scripts/gamma_quantiles.py`, not the report's code); the top campaigns table
/// has no modeled column; the table after it has the modeled figures beside the measured ones.
///
/// Size: `POSTBACK_MODEL_PAGE_PER_DAY` postbacks a day over 8 days (default 2,500: about 25 s on two
/// loaded cores, most of it Chromium), e.g. `POSTBACK_MODEL_PAGE_PER_DAY=40000 swift test --filter ModeledRevenuePageTests`.
@Suite(.serialized, .disabled(if: TestScale.underSanitizer, "Chromium is not sanitized (TestScale)"))
struct ModeledRevenuePageTests {
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
                                 sum(CAST(modeled_null_values_var AS DOUBLE)) AS var, sum(CAST(modeled_null_mean_sd AS DOUBLE)) AS sd,
                                 sum(CAST(modeled_null_log_p_zero AS DOUBLE)) AS lpz
                          FROM {rows} WHERE modeled_note IS NULL AND modeled_null_revenue_est IS NOT NULL
                          GROUP BY currency, app_id, ad_network_id, source_identifier, campaign_id,
                                   coalesce(postback_sequence_index, '0'),
                                   CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END)
            SELECT currency, sum(est), sum(var + sd * sd), sum(lpz) FROM unit GROUP BY 1""").fetchall()
        def cents(amount):
            return f"{Decimal(amount).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,.2f}"
        def micros(value):
            return Decimal(math.floor(value * 1e6 + 0.5)) / Decimal(1_000_000)
        result = {}
        for currency, est, variance, log_p_zero in modeled:
            base = measured.get(currency) or Decimal(0)
            mean = float(est)
            shape, scale = mean * mean / variance, variance / mean
            low, high = (gamma["quantile"](shape, p) * scale for p in (0.05, 0.95))
            if log_p_zero >= math.log(0.05):   # a 5% chance or more that every null postback is worth 0
                low = 0.0
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

    /// Spend for every campaign of the store's cohorts with revenue, in the revenue's currency (1.5 an
    /// install plus 1), as a network's file.
    static let spendScript = #"""
        import duckdb, sys
        root, out = sys.argv[1:3]
        con = duckdb.connect()
        rows = con.execute(f"""SELECT dt, app_id, ad_network_id, source_identifier, revenue_currency, installs
            FROM read_csv('{root}/agg/campaign_cohort_daily/*/*.csv', header = true, all_varchar = true, hive_partitioning = true)
            WHERE revenue_currency IS NOT NULL AND source_identifier IS NOT NULL ORDER BY ALL""").fetchall()
        with open(out, "w") as file:
            file.write("date,app_id,ad_network_id,source_identifier,spend,currency\n")
            for dt, app, network, source, currency, installs in rows:
                file.write(f"{dt},{app},{network},{source},{int(installs) * 1.5 + 1},{currency}\n")
        print(len(rows))
        """#

    /// The range's total modeled ROAS per currency from the published cohort files, by docs/modeling.md's
    /// sum rule: the cohorts with a window-3 ROAS and modeled columns, (revenue through window 3 + modeled
    /// null revenue) ÷ their spend, the interval the gamma's 5%–95% of the modeled part (its low end 0 when
    /// Σ `modeled_null_log_p_zero` ≥ ln 0.05), as the page writes
    /// a ratio (hundredths, half up), "(open)" unless every cohort is final.
    static let modeledROASScript = #"""
        import duckdb, json, math, runpy, sys
        from decimal import Decimal
        root, first, last, quantiles = sys.argv[1:5]
        gamma = runpy.run_path(quantiles)
        con = duckdb.connect()
        rows = f"""(SELECT * FROM read_csv('{root}/agg/campaign_cohort_daily/*/*.csv', header = true, all_varchar = true,
                    hive_partitioning = true) WHERE dt BETWEEN '{first}' AND '{last}' AND roas_w3 IS NOT NULL
                    AND modeled_null_revenue_est IS NOT NULL AND spend_fx_rate IS NULL AND spend_currency = revenue_currency)"""
        totals = con.execute(f"""
            WITH campaign AS (SELECT revenue_currency AS currency, sum(CAST(revenue_est_cum_w3 AS DECIMAL(38, 6))) AS measured,
                                     sum(CAST(spend AS DECIMAL(38, 6))) AS spend,
                                     sum(CAST(modeled_null_revenue_est AS DECIMAL(38, 6))) AS est,
                                     sum(CAST(modeled_null_values_var AS DOUBLE)) AS var,
                                     sum(CAST(modeled_null_mean_sd AS DOUBLE)) AS sd,
                                     sum(CAST(modeled_null_log_p_zero AS DOUBLE)) AS lpz, bool_and(cohort_status = 'final') AS final
                              FROM {rows} GROUP BY revenue_currency, app_id, ad_network_id, campaign_id, source_identifier, campaign)
            SELECT currency, sum(measured), sum(spend), sum(est), sum(var + sd * sd), sum(lpz), bool_and(final), count(*)
            FROM campaign GROUP BY 1""").fetchall()
        # the measured ROAS w3: every cohort with one, modeled or not
        measured_all = {currency: (revenue, spend) for currency, revenue, spend in con.execute(f"""
            SELECT revenue_currency, sum(CAST(revenue_est_cum_w3 AS DECIMAL(38, 6))), sum(CAST(spend AS DECIMAL(38, 6)))
            FROM read_csv('{root}/agg/campaign_cohort_daily/*/*.csv', header = true, all_varchar = true, hive_partitioning = true)
            WHERE dt BETWEEN '{first}' AND '{last}' AND roas_w3 IS NOT NULL AND spend_fx_rate IS NULL
                  AND spend_currency = revenue_currency GROUP BY 1""").fetchall()}
        def micros(amount):
            return int(Decimal(amount) * 1_000_000)
        def ratio(numerator, denominator):
            hundredths = (200 * numerator + denominator) // (2 * denominator)
            return f"{hundredths // 100:,}.{hundredths % 100:02d}"
        result = {}
        for currency, measured, spend, est, variance, log_p_zero, final, campaigns in totals:
            base, cost, modeled = micros(measured), micros(spend), micros(est)
            mean = modeled / 1e6
            shape, scale = mean * mean / variance, variance / mean
            low, high = (math.floor(gamma["quantile"](shape, p) * scale * 1e6 + 0.5) for p in (0.05, 0.95))
            if log_p_zero >= math.log(0.05):   # a 5% chance or more that every null postback is worth 0
                low = 0
            result[currency] = {"estimate": ratio(base + modeled, cost) + ("" if final else " (open)"),
                                "interval": f"{ratio(base + low, cost)}–{ratio(base + high, cost)}",
                                "measured": ratio(*(micros(v) for v in measured_all[currency])), "campaigns": campaigns}
        print(json.dumps(result))
        """#

    /// The cost-and-return section with spend imported: beside the measured ROAS columns, the modeled ROAS
    /// and its 90% interval, labelled modeled, as DuckDB works them out from the published cohort files;
    /// the measured columns and the order of the campaigns are what they are without the modeled columns.
    @Test func theCostSectionShowsModeledROASBesideMeasured() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let root = TemporaryDirectory.create("modeled-cost")
        var spool = SyntheticSpool()
        spool.shape = .realistic
        spool.postbacksPerDay = Self.perDay / 5
        _ = try spool.write(to: StoreLayout(root: root), first: UTCDay(Self.first)!, days: Self.days)
        let last = UTCDay(Self.first)!.adding(days: Self.days - 1).description
        let aggregate = ["aggregate", "--data", root, "--schemas", Fixtures.sampleSchemas, "--from", Self.first, "--to", last]
        #expect([.success, .failure].contains(TestSupport.run(aggregate).status))
        let spendFile = root + "/spend.csv"
        let (made, count, madeProblem) = try VenvPython.run(script: Self.spendScript, arguments: [root, spendFile])
        try #require(made == 0 && (Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 10, "\(madeProblem)")
        let imported = TestSupport.run([
            "spend", "import", "--data", root, "--schemas", Fixtures.sampleSchemas, "--source", "network", spendFile,
        ])
        #expect(imported.status == .success, "\(imported.stderr)")
        #expect([.success, .failure].contains(TestSupport.run(aggregate).status))

        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let page = TestPaths.output + "/report-modeled-cost.html"
        let run = TestSupport.run(["report", "--data", root, "--from", Self.first, "--to", last, "--out", page])
        #expect(run.status == .success, "\(run.stderr)")
        let (status, text, problem) = try VenvPython.run(
            script: Self.modeledROASScript,
            arguments: [root, Self.first, last, TestPaths.packageRoot + "/scripts/gamma_quantiles.py"])
        try #require(status == 0, "\(problem)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: Any]])
        try #require(!expected.isEmpty, "cohorts with a ROAS and modeled columns: \(expected)")

        let visit = try BrowserRenderTests.visit(
            page, screenshot: TestPaths.output + "/cost-modeled-1280.png", width: 1280, height: 800)
        let head = visit.facts["costHead"] as? [String] ?? []
        let foot = visit.facts["costFoot"] as? [String] ?? []
        let currencies = expected.keys.sorted()
        #expect(
            Array(head.suffix(3 * currencies.count))
                == currencies.flatMap { ["ROAS w3, \($0)", "ROAS, modeled, \($0)", "Modeled 90% interval, \($0)"] },
            "\(head)")
        #expect(foot.count == head.count, "\(head) \(foot)")
        // The total row: the measured ROAS w3 as the table above has it, then the modeled ROAS and its interval.
        let figures = currencies.flatMap { currency -> [String] in
            let expectedCells = expected[currency]!
            let open = (expectedCells["estimate"] as? String ?? "").hasSuffix(" (open)") ? " (open)" : ""
            return [
                (expectedCells["measured"] as? String ?? "?") + open, expectedCells["estimate"] as? String ?? "?",
                expectedCells["interval"] as? String ?? "?",
            ]
        }
        #expect(Array(foot.suffix(figures.count)) == figures, "\(expected): \(foot)")
        // The modeled table fits the window (the measured table above it is as it was, and not this test's).
        let overflowing = (visit.facts["overflowing"] as? [String] ?? []).filter { $0.contains("Modeled, not measured") }
        #expect(overflowing.isEmpty, "\(overflowing)")
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty, "\(visit.console) \(visit.exceptions)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("Modeled ROAS: a model, not a measurement"))
    }
}
