import AggregateSchema
import Aggregation
import Foundation
import Postbacks
import Testing

@testable import Reporting

/// The campaign report (issue 14): each app's campaign table, the daily trend, the country section
/// and `--app`, each figure checked against the CSV rows it is summed from.
@Suite struct ReportCampaignTests {
    typealias Fixture = ReportFiguresTests.Fixture

    func number(_ text: String) -> Int { Int(text.replacingOccurrences(of: ",", with: "")) ?? -1 }

    @Test func everyCampaignOfEveryAppIsInItsAppsTable() throws {
        let fixture = try Fixture()
        var expected: [String: (postbacks: Int, installs: Int, redownloads: Int, reengagements: Int)] = [:]
        var apps = Set<String>()
        for (_, row) in fixture.production {
            let app = row.text("app_id") ?? "unknown app"
            apps.insert(app)
            let key = "\(app)|\(ReportFiguresTests.campaign(row))|\(row.text("ad_network_id") ?? "")"
            var sums = expected[key] ?? (0, 0, 0, 0)
            sums.postbacks += row.int("postbacks")
            sums.installs += row.int("installs")
            sums.redownloads += row.int("redownloads")
            sums.reengagements += row.int("reengagements")
            expected[key] = sums
        }
        #expect(apps.count >= 2)
        var seen = 0
        for app in apps {
            let table = try #require(fixture.page.table("table-campaigns-\(app)"), "a table for app \(app)")
            for record in table.records {
                let network = record["Ad network"]!
                let key = expected.keys.first {
                    $0.hasPrefix("\(app)|\(record["Campaign"]!)|")
                        && ReportPage.networkName(String($0.split(separator: "|").last ?? "")) == network
                }
                let sums = try #require(key.flatMap { expected[$0] }, "\(app) \(record)")
                #expect(number(record["Postbacks"]!) == sums.postbacks && number(record["Installs"]!) == sums.installs)
                #expect(
                    number(record["Redownloads"]!) == sums.redownloads && number(record["Re-engagements"]!) == sums.reengagements)
                seen += 1
            }
            let appPostbacks = fixture.production.filter { ($0.row.text("app_id") ?? "unknown app") == app }.reduce(0) {
                $0 + $1.row.int("postbacks")
            }
            #expect(number(table.footer![2]) == appPostbacks)
        }
        #expect(seen == expected.count, "every campaign appears once, none is cut")
    }

    @Test func theTrendHasEveryDaysInstallsAndRevenuePerCurrency() throws {
        let fixture = try Fixture()
        let table = try #require(fixture.page.table("table-trend"))
        let currencies = Set(fixture.production.compactMap { $0.row.text("currency") }.filter { !$0.isEmpty })
        #expect(!currencies.isEmpty)
        for day in ReportFiguresTests.days {
            let record = try #require(table.records.first { $0["Day"] == day })
            let rows = fixture.production.filter { $0.day == day }
            #expect(number(record["Installs"]!) == rows.reduce(0) { $0 + $1.row.int("installs") })
            for currency in currencies {
                // Revenue to date: every window added; a sum with an open-ended value whose estimate is its
                // minimum is shown as the lower bound it is.
                var (sum, minimum, open) = (Money.zero, Money.zero, false)
                for (_, row) in rows where row.text("currency") == currency && row.int("postbacks") > 0 {
                    guard let text = row.text("revenue_est_sum"), let amount = Money(decimal: text) else { continue }
                    sum = sum.plus(amount)!
                    minimum = minimum.plus(Money(decimal: row.text("revenue_min_sum")!)!)!
                    open = open || row.text("revenue_max_sum") == nil
                }
                let shown = open && sum == minimum ? "≥ \(NumberFormat.money(minimum))" : NumberFormat.money(sum)
                #expect(record["Revenue to date, \(currency)"] == shown, "\(day) \(currency)")
            }
        }
    }

    @Test func theCountrySectionAppearsWithCountryCodes() throws {
        let fixture = try Fixture()
        let withCountry = fixture.production.filter { $0.row.text("country_code") != nil }
        guard !withCountry.isEmpty else {
            #expect(fixture.page.table("table-countries") == nil, "no country section without country codes")
            return
        }
        let table = try #require(fixture.page.table("table-countries"))
        var expected: [String: Int] = [:]
        for (_, row) in withCountry { expected[row.text("country_code")!, default: 0] += row.int("postbacks") }
        let shown = Dictionary(
            uniqueKeysWithValues: table.records.filter { $0["Country"] != "(no country)" }.map {
                ($0["Country"]!, number($0["Postbacks"]!))
            })
        #expect(shown == expected)
    }

    @Test func appLimitsThePageToOneApp() throws {
        let store = try TestStore.shared.get()
        let rows = try AggregateCSV.campaignDaily(store, days: ReportFiguresTests.days).filter { $0.row.int("postbacks") > 0 }
        let app = try #require(rows.compactMap { $0.row.text("app_id") }.first)
        var request = store.request(from: TestStore.first, to: TestStore.last)
        request.appID = app
        let page = PageFigures(html: try ReportGenerator.page(request))
        let expected = rows.filter { $0.row.text("app_id") == app }.reduce(0) { $0 + $1.row.int("postbacks") }
        #expect(page.count("postbacks") == expected)
        #expect(expected < rows.reduce(0) { $0 + $1.row.int("postbacks") }, "the store has other apps")
        #expect(page.table("table-campaigns-\(app)") != nil)
        #expect(page.html.contains("app \(app) only"))
        let others = Set(rows.compactMap { $0.row.text("app_id") }).subtracting([app])
        for other in others { #expect(page.table("table-campaigns-\(other)") == nil) }
    }
}
