import AggregateSchema
import Aggregation
import Foundation
import Testing

@testable import Reporting

/// Spend, CPI and ROAS from the install cohorts (`campaign_cohort_daily`), checked against figures
/// computed here from the fixture rows with Foundation's `Decimal`, not by the report's code.
@Suite struct ReportCostTests {
    static let first = "2026-03-01"
    static let last = "2026-03-03"
    static let networkA = "demo-network-a.skadnetwork"
    static let networkB = "demo-network-b.skadnetwork"
    static let networkC = "demo-network-c.skadnetwork"

    /// The fixture's cohort rows by install date; 2026-02-28 and 2026-03-04 are outside the range.
    static let cohorts: [String: [CohortFixture.Row]] = [
        "2026-02-28": [
            CohortFixture.row(
                network: networkA, campaign: "spring_sale", status: "final", spend: "7777", spendCurrency: "USD", installs: 10,
                revenue: ["1", nil, nil])
        ],
        "2026-03-01": [
            CohortFixture.row(
                network: networkA, campaign: "spring_sale", status: "final", spend: "1000", spendCurrency: "USD", reported: 410,
                installs: 400, revenue: ["300", "200", "300"]),
            CohortFixture.row(
                network: networkB, campaign: "summer_push", status: "window-1-final", spend: "500.5", spendCurrency: "USD",
                reported: 250, installs: 200, revenue: ["100.25", "50", nil]),
        ],
        "2026-03-02": [
            CohortFixture.row(
                network: networkA, campaign: "spring_sale", status: "open", spend: "1000", spendCurrency: "USD", reported: 360,
                installs: 350, revenue: ["200", nil, nil]),
            // Spend in EUR, revenue in USD, no rate: its ROAS is empty and must never be divided.
            CohortFixture.row(
                network: networkC, campaign: "eu_launch", status: "final", spend: "800", spendCurrency: "EUR", installs: 100,
                revenue: ["55", nil, nil], note: "currency-mismatch"),
        ],
        "2026-03-03": [
            CohortFixture.row(
                network: networkA, sourceIdentifier: "5239", status: "open", spend: nil, spendCurrency: nil, installs: 50,
                revenue: ["20", nil, nil], note: "no-spend"),
            CohortFixture.row(
                network: networkB, campaign: "summer_push", status: "open", spend: "299.5", spendCurrency: "USD", reported: 200,
                installs: 120, revenue: ["30", nil, nil]),
            // Spend rows in EUR and USD that could not be brought to one: no spend, no CPI, no ROAS.
            CohortFixture.row(
                network: networkC, campaign: "two_currencies", status: "open", spend: nil, spendCurrency: nil, installs: 30,
                revenue: ["12", nil, nil], note: "mixed-spend-currencies"),
        ],
        "2026-03-04": [
            CohortFixture.row(
                network: networkB, campaign: "summer_push", status: "open", spend: "9999", spendCurrency: "USD", reported: 9999,
                installs: 1, revenue: ["1", nil, nil])
        ],
    ]

    /// A store with the fixture's received days (so a page can be made) and cohorts.
    static func store(
        _ label: String, cohorts: [String: [CohortFixture.Row]] = cohorts, format: CohortFixture.Format = .csv,
        development: [String: [CohortFixture.Row]] = [:]
    ) throws -> ScratchStore {
        let store = ScratchStore(label)
        for day in ["2026-03-01", "2026-03-02", "2026-03-03"] {
            try CohortFixture.writeDay(
                store, day: day,
                rows: [
                    ("111", networkA, "spring_sale", 300, "400"), ("111", networkB, "summer_push", 120, "60"),
                    ("111", networkC, "eu_launch", 40, "20"),
                ])
        }
        for day in Set(cohorts.keys).union(development.keys) {
            var tables: [String: [CohortFixture.Row]] = [:]
            if let rows = cohorts[day] { tables[CohortLoader.production] = rows }
            if let rows = development[day] { tables[CohortLoader.development] = rows }
            try CohortFixture.write(store, day: day, tables: tables, format: format)
        }
        return store
    }

    // MARK: The independent computation

    /// What the page should show for a set of fixture rows, computed with `Decimal`.
    struct Expected {
        var spend: [String: Decimal] = [:]
        var installsWithSpend: [String: Int] = [:]
        var revenueW3 = Decimal(0)
        var spendWithROAS = Decimal(0)
        var allFinal = true

        init(_ rows: [CohortFixture.Row]) {
            for row in rows {
                guard let text = row["spend"], let currency = row["spend_currency"] else { continue }
                spend[currency, default: 0] += Decimal(string: text)!
                installsWithSpend[currency, default: 0] += Int(row["installs"]!)!
                // The ROAS is the revenue through window 3 over the spend of the rows that have one.
                guard row["roas_w3"] != nil else { continue }
                let revenue = ["revenue_est_w1", "revenue_est_w2", "revenue_est_w3"].compactMap { row[$0] }
                revenueW3 += revenue.reduce(Decimal(0)) { $0 + Decimal(string: $1)! }
                spendWithROAS += Decimal(string: text)!
                if row["cohort_status"] != "final" { allFinal = false }
            }
        }

        static func rounded(_ value: Decimal, places: Int) -> Decimal {
            var input = value
            var result = Decimal()
            NSDecimalRound(&result, &input, places, .plain)
            return result
        }

        /// Two decimals, grouped, as the page writes amounts.
        static func text(_ value: Decimal) -> String {
            NumberFormat.money(Money(micros: NSDecimalNumber(decimal: rounded(value, places: 2) * 1_000_000).int64Value))
        }

        func spendText(_ currency: String) -> String { Self.text(spend[currency]!) }
        func cpiText(_ currency: String) -> String { Self.text(spend[currency]! / Decimal(installsWithSpend[currency]!)) }

        var roasText: String {
            let ratio = Self.rounded(revenueW3 / spendWithROAS, places: 2)
            var text = "\(ratio)"
            if !text.contains(".") { text += ".00" }
            if text.split(separator: ".")[1].count == 1 { text += "0" }
            return allFinal ? text : text + " (open)"
        }
    }

    static func rowsInRange(_ cohorts: [String: [CohortFixture.Row]] = cohorts) -> [CohortFixture.Row] {
        cohorts.filter { $0.key >= first && $0.key <= last }.flatMap(\.value)
    }

    // MARK: Tests

    @Test func theHeadlineHasSpendCPIAndROASOfTheRangesCohorts() throws {
        let store = try Self.store("cost-headline")
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        let figures = PageFigures(html: html)
        let expected = Expected(Self.rowsInRange())
        #expect(expected.spend.keys.sorted() == ["EUR", "USD"])
        for currency in ["EUR", "USD"] {
            #expect(figures.metric("spend:\(currency)") == expected.spendText(currency))
            #expect(figures.metric("cpi:\(currency)") == expected.cpiText(currency))
        }
        #expect(expected.roasText.hasSuffix("(open)"), "an open cohort is behind the total")
        #expect(figures.metric("roas:USD") == expected.roasText)
        // EUR spend meets USD revenue without a rate: no ROAS in EUR, and the note's meaning instead.
        #expect(figures.metric("roas:EUR") == nil)
        let top = try #require(figures.table("table-top-campaigns")).records
        #expect(top.first { $0["Campaign"] == "eu_launch" }?["ROAS"] == "no rate for EUR→USD")
        #expect(
            top.first { $0["Campaign"] == "spring_sale" }?["ROAS"]
                == Expected(Self.rowsInRange().filter { $0["campaign"] == "spring_sale" }).roasText)
        #expect(!html.contains("No spend for this range"))
        #expect(html.contains("href=\"#cost\"") && html.contains("href=\"#claims\""), "both sections are in the contents line")
        try ReportEscapingTests.checkMarkup(html)
    }

    @Test func eachCampaignsSpendCPIAndROASByWindowAreItsCohorts() throws {
        let store = try Self.store("cost-campaigns")
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        let table = try #require(PageFigures(html: html).table("table-cost-campaigns"))
        let records = Dictionary(uniqueKeysWithValues: table.records.map { ($0["Campaign"]!, $0) })
        #expect(
            Set(records.keys) == ["spring_sale", "summer_push", "eu_launch", "two_currencies"],
            "the campaign without spend is not listed")
        let rows = Self.rowsInRange()
        for name in ["spring_sale", "summer_push"] {
            let expected = Expected(rows.filter { $0["campaign"] == name })
            let record = try #require(records[name])
            #expect(record["Spend"] == expected.spendText("USD") + " USD")
            #expect(record["CPI"] == expected.cpiText("USD") + " USD")
            #expect(record["ROAS w3"] == expected.roasText, "\(name)")
        }
        // spring_sale has an open cohort: every window of it is marked.
        #expect(records["spring_sale"]?["ROAS w1"]?.hasSuffix("(open)") == true)
        // w1 of spring_sale: (300 + 200) ÷ 2,000.
        #expect(records["spring_sale"]?["ROAS w1"] == "0.25 (open)")
        let euro = try #require(records["eu_launch"])
        #expect(euro["Spend"] == "800.00 EUR" && euro["CPI"] == "8.00 EUR")
        #expect(euro["ROAS w1"] == "–" && euro["ROAS w3"] == "–", "never EUR spend against USD revenue")
        let cohorts = try #require(PageFigures(html: html).table("table-cost-cohorts")).records
        #expect(cohorts.first { $0["Campaign"] == "eu_launch" }?["Without ROAS"] == "no rate for EUR→USD (1)")
        #expect(records["two_currencies"]?["Spend"] == "–" && records["two_currencies"]?["ROAS w3"] == "–")
        #expect(cohorts.first { $0["Campaign"] == "two_currencies" }?["Without ROAS"] == "spend in several currencies (1)")
        #expect(cohorts.first { $0["Campaign"] == "spring_sale" }?["Cohorts with spend"] == "1 final · 1 open")
        // The total never divides the EUR spend by USD revenue.
        let total = Expected(rows)
        #expect(table.footer?[table.column("ROAS w3")!] == total.roasText)
        #expect(table.footer?[table.column("Spend")!] == "\(total.spendText("EUR")) EUR · \(total.spendText("USD")) USD")
    }

    /// A ROAS whose every cohort is final is not marked; one with any other status is.
    @Test func onlyAROASOfFinalCohortsIsUnmarked() throws {
        let final = CohortFixture.row(
            network: Self.networkA, campaign: "done", status: "final", spend: "100", spendCurrency: "USD", installs: 10,
            revenue: ["150", nil, nil])
        for status in ["open", "window-1-final", "window-2-final"] {
            var other = final
            other["cohort_status"] = status
            other["campaign"] = "growing"
            let store = try Self.store("cost-mature", cohorts: ["2026-03-01": [final, other]])
            let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
            let records = try #require(PageFigures(html: html).table("table-cost-campaigns")).records
            let done = try #require(records.first { $0["Campaign"] == "done" })
            let growing = try #require(records.first { $0["Campaign"] == "growing" })
            #expect(done["ROAS w3"] == "1.50" && done["ROAS w1"] == "1.50")
            #expect(growing["ROAS w3"] == "1.50 (open)" && growing["ROAS w1"] == "1.50 (open)", "\(status)")
            #expect(PageFigures(html: html).metric("roas:USD") == "1.50 (open)", "the total has a \(status) cohort")
            #expect(html.contains("window-2-final"), "the legend names the statuses")
        }
    }

    @Test(arguments: [(1049, false), (1051, true)])
    func aNetworkIsWarnedAboutOnlyPastFivePercent(reported: Int, warns: Bool) throws {
        let rows = [
            CohortFixture.row(
                network: Self.networkB, campaign: "summer_push", status: "final", spend: "10", spendCurrency: "USD",
                reported: reported - 600, installs: 600, revenue: ["5", nil, nil]),
            CohortFixture.row(
                network: Self.networkB, campaign: "summer_push", status: "final", spend: "10", spendCurrency: "USD",
                reported: 600, installs: 400, revenue: ["5", nil, nil]),
            // No claim: its installs are not compared.
            CohortFixture.row(
                network: Self.networkB, campaign: "other", status: "final", spend: "10", spendCurrency: "USD", installs: 500,
                revenue: ["5", nil, nil]),
        ]
        let store = try Self.store(
            "cost-claims", cohorts: ["2026-03-02": Array(rows.prefix(1)), "2026-03-03": Array(rows.dropFirst())])
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        // 1,049 of 1,000 signed is 4.9% more; 1,051 is 5.1% more.
        #expect(html.contains("data-metric=\"claims_warning:\(Self.networkB)\"") == warns)
        if warns {
            #expect(
                html.contains(
                    "⚠ \(Self.networkB) claims 1,051 installs; Apple signed 1,000 (+5.1%) — see <a href=\"#claims\">"))
        }
        let table = try #require(PageFigures(html: html).table("table-claims-networks"))
        #expect(
            table.rows == [
                [Self.networkB, NumberFormat.count(reported), "1,000", "+\(reported - 1000)", warns ? "+5.1%" : "+4.9%"]
            ])
    }

    @Test func theClaimsSectionComparesPerNetworkAndCampaign() throws {
        let store = try Self.store("cost-claims-section")
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        // network b: 250 + 200 claimed, 200 + 120 signed (+40.6%); network a: 410 + 360 against 400 + 350 (+2.7%).
        #expect(html.contains("⚠ \(Self.networkB) claims 450 installs; Apple signed 320 (+40.6%)"))
        #expect(!html.contains("data-metric=\"claims_warning:\(Self.networkA)\""))
        let networks = try #require(PageFigures(html: html).table("table-claims-networks"))
        #expect(networks.rows.map { $0[0] } == [Self.networkA, Self.networkB])
        #expect(networks.rows[0] == [Self.networkA, "770", "750", "+20", "+2.7%"])
        #expect(networks.footer == ["All networks", "1,220", "1,070", "+150", "+14.0%"])
        let campaigns = try #require(PageFigures(html: html).table("table-claims-campaigns"))
        #expect(campaigns.records.first { $0["Campaign"] == "summer_push" }?["Difference"] == "+130")
        #expect(html.contains("Every install counted here carries Apple&#39;s signature"))
    }

    @Test func withoutSpendThePageNamesSpendImport() throws {
        let noSpend = Self.cohorts.mapValues { rows in
            rows.map { row -> CohortFixture.Row in
                var row = row
                for column in ["spend", "spend_currency", "cpi", "roas_w1", "roas_w2", "roas_w3", "reported_installs"] {
                    row[column] = nil
                }
                row["roas_note"] = "no-spend"
                return row
            }
        }
        for cohorts in [noSpend, [:]] {
            let store = try Self.store("cost-none", cohorts: cohorts)
            let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
            #expect(
                html.contains(
                    "No spend for this range: import the networks&#39; cost with <code>postback spend import</code> to see CPI "
                        + "and ROAS (docs/spend.md)."))
            #expect(!html.contains("id=\"cost\"") && !html.contains("href=\"#cost\"") && !html.contains("data-metric=\"spend:"))
            #expect(PageFigures(html: html).table("table-top-campaigns")?.header.contains("ROAS") == false)
        }
    }

    /// A cohort file that is not the one its manifest lists is not used, like a day table's.
    @Test func aCohortThatDoesNotMatchItsManifestIsLeftOut() throws {
        let store = try Self.store("cost-mismatch")
        let path = store.path("agg/campaign_cohort_daily/dt=2026-03-02/part-00000.csv")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: ",1000,USD,", with: ",1001,USD,").write(
            toFile: path, atomically: false, encoding: .utf8)
        #expect(try String(contentsOfFile: path, encoding: .utf8) != text)
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        #expect(html.contains("2026-03-02: campaign_cohort_daily does not match its manifest"))
        let kept = Self.cohorts["2026-03-01"]! + Self.cohorts["2026-03-03"]!
        let expected = Expected(kept)
        #expect(PageFigures(html: html).metric("spend:USD") == expected.spendText("USD"))
        #expect(PageFigures(html: html).metric("spend:EUR") == nil, "the EUR spend was only in the left-out cohort")
        #expect(PageFigures(html: html).metric("roas:USD") == expected.roasText)
    }

    /// A cohort manifest that lists the table somewhere other than the documented path is not
    /// guessed at: the cohort is left out, with where it was listed.
    @Test func aCohortListedElsewhereIsLeftOutAndNamed() throws {
        let store = try Self.store("cost-elsewhere")
        let path = store.path("agg/_cohort_manifests/dt=2026-03-01.json")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let moved = text.replacingOccurrences(
            of: "agg\\/campaign_cohort_daily\\/dt=2026-03-01", with: "agg\\/campaign_cohort_daily\\/day=2026-03-01")
        #expect(moved != text)
        try moved.write(toFile: path, atomically: false, encoding: .utf8)
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        #expect(html.contains("2026-03-01: the cohort manifest lists campaign_cohort_daily as agg/campaign_cohort_daily/day="))
        let kept = Self.cohorts["2026-03-02"]! + Self.cohorts["2026-03-03"]!
        #expect(PageFigures(html: html).metric("spend:USD") == Expected(kept).spendText("USD"))
    }

    @Test func aCohortPublishedAsParquetOnlyGivesTheSamePage() throws {
        let csvStore = try Self.store("cost-csv")
        let csv = try ReportGenerator.page(csvStore.request(from: Self.first, to: Self.last))
        let parquetStore = try Self.store("cost-parquet", format: .parquet)
        #expect(
            !FileManager.default.fileExists(atPath: parquetStore.path("agg/campaign_cohort_daily/dt=2026-03-01/part-00000.csv")))
        let parquet = try ReportGenerator.page(parquetStore.request(from: Self.first, to: Self.last))
        #expect(PageFigures(html: parquet).metric("spend:USD") != nil)
        #expect(parquet == csv)
    }

    /// Campaign names and network ids in the cohort table are data: only ever text, in the
    /// tables, the cards and the claims warning alike.
    @Test func hostileNamesInTheCohortsStayText() throws {
        let hostile = [
            "2026-03-01": [
                CohortFixture.row(
                    network: ReportEscapingTests.hostileNetwork, campaign: ReportEscapingTests.hostileCampaign,
                    status: "open", spend: "10", spendCurrency: "USD", reported: 500, installs: 100, revenue: ["5", nil, nil])
            ]
        ]
        let store = try Self.store("cost-hostile", cohorts: hostile)
        let html = try ReportGenerator.page(store.request(from: Self.first, to: Self.last))
        #expect(html.contains("claims 500 installs; Apple signed 100 (+400.0%)"))
        for text in [ReportEscapingTests.hostileNetwork, ReportEscapingTests.hostileCampaign] {
            #expect(!html.contains(text), "raw: \(text)")
        }
        let table = try #require(PageFigures(html: html).table("table-cost-campaigns"))
        #expect(table.records.first?["Campaign"] == ReportEscapingTests.hostileCampaign, "the full name, as text")
        #expect(table.records.first?["Ad network"] == ReportEscapingTests.hostileNetwork)
        try ReportEscapingTests.checkMarkup(html)
    }

    @Test func theDevelopmentPageReadsTheDevelopmentCohorts() throws {
        let development = [
            "2026-03-01": [
                CohortFixture.row(
                    network: Self.networkA, campaign: "spring_sale", status: "final", spend: "12.5", spendCurrency: "USD",
                    installs: 5, revenue: ["25", nil, nil])
            ]
        ]
        let store = try Self.store("cost-development", development: development)
        var request = store.request(from: Self.first, to: Self.last)
        let production = PageFigures(html: try ReportGenerator.page(request))
        request.environment = .development
        let developmentPage = PageFigures(html: try ReportGenerator.page(request))
        #expect(production.metric("spend:USD") == Expected(Self.rowsInRange()).spendText("USD"))
        #expect(developmentPage.metric("spend:USD") == "12.50")
        #expect(developmentPage.metric("roas:USD") == "2.00")
        #expect(developmentPage.html.contains("Cost and return (development)"))
    }
}
