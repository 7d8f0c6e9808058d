import Basics
import Foundation
import TestSupport
import Testing

@testable import Reporting

/// `report --environment development`: the whole page drawn from `campaign_daily_development`, every
/// title, caption and tile saying "development", a banner saying why; the production page never
/// adds a development postback, and says where they are when it has none of its own.
@Suite struct ReportDevelopmentTests {
    struct Pages {
        let production: String
        let development: String
        /// `campaign_daily_development` rows, and the detail table's rows (production and side counts).
        let developmentRows: [(day: String, row: [String: String?])]
        let detailRows: [(day: String, row: [String: String?])]
    }

    func pages() throws -> Pages {
        let store = try TestStore.shared.get()
        let request = store.request(from: TestStore.first, to: TestStore.last)
        var development = request
        development.environment = .development
        return Pages(
            production: try ReportGenerator.page(request), development: try ReportGenerator.page(development),
            developmentRows: try AggregateCSV.campaignDaily(
                store, days: ReportFiguresTests.days, table: "campaign_daily_development"),
            detailRows: try AggregateCSV.campaignDaily(store, days: ReportFiguresTests.days))
    }

    @Test func theDevelopmentPageDrawsEveryFigureFromDevelopmentPostbacks() throws {
        let pages = try pages()
        let postbacks = pages.developmentRows.reduce(0) { $0 + $1.row.int("postbacks") }
        let installs = pages.developmentRows.reduce(0) { $0 + $1.row.int("installs") }
        #expect(postbacks > 0 && installs > 0)
        #expect(postbacks == pages.detailRows.reduce(0) { $0 + $1.row.int("development_postbacks") })

        let figures = PageFigures(html: pages.development)
        #expect(figures.count("postbacks") == postbacks)
        #expect(figures.count("installs") == installs)
        // What the page leaves out: the production postbacks, counted apart.
        let production = pages.detailRows.reduce(0) { $0 + $1.row.int("postbacks") }
        #expect(figures.count("production") == production)
        #expect(figures.metric("development") == nil)

        // Tables of the page add up to the same figures.
        let top = try #require(figures.table("table-top-campaigns"))
        #expect(number(top.footer![try #require(top.column("Installs"))]) == installs)
        #expect(number(top.footer![try #require(top.column("Postbacks"))]) == postbacks)
        let perDay = try #require(figures.table("table-postbacks-per-day"))
        #expect(number(perDay.footer!.last!) == postbacks)

        // Every section heading, caption and tile says development, and the banner says why.
        let html = pages.development
        #expect(html.contains("id=\"environment\""))
        #expect(html.contains("Development postbacks."))
        let headings = ReportDevelopmentTests.pieces(of: html, from: "<h2 ", to: "</h2>")
        let captions = ReportDevelopmentTests.pieces(of: html, from: "<caption>", to: "</caption>")
        let tiles = ReportDevelopmentTests.pieces(of: html, from: "<p class=\"kpi-name\">", to: "</p>")
        #expect(headings.count >= 10 && captions.count >= 10 && tiles.count >= 5)
        for text in headings + captions + tiles { #expect(text.lowercased().contains("development"), "\(text)") }
    }

    @Test func theProductionPageNeverAddsDevelopmentPostbacks() throws {
        let pages = try pages()
        let figures = PageFigures(html: pages.production)
        let production = pages.detailRows.reduce(0) { $0 + $1.row.int("postbacks") }
        let development = pages.detailRows.reduce(0) { $0 + $1.row.int("development_postbacks") }
        #expect(figures.count("postbacks") == production)
        #expect(figures.count("development") == development)
        #expect(!pages.production.contains("(development)"))
        // The store has production postbacks, so the page does not send its reader elsewhere.
        #expect(!pages.production.contains("id=\"environment\""))
    }

    @Test func aRangeWithOnlyDevelopmentPostbacksSaysSoInItsFirstLine() throws {
        let directory = TemporaryDirectory()
        try Readme.runFirstSession(in: directory.path)
        var request = ReportRequest(
            dataDirectory: directory.path + "/out", from: UTCDay("2026-03-10")!, to: UTCDay("2026-03-10")!,
            outputPath: directory.path + "/report.html", toolVersion: "postback test")
        let production = try ReportGenerator.page(request)
        let banner = try #require(ReportDevelopmentTests.pieces(of: production, from: "id=\"environment\">", to: "</div>").first)
        #expect(banner.contains("No production postbacks in this range"))
        #expect(banner.contains("postback report --environment development"))
        // The banner is the first thing in main.
        let main = try #require(production.range(of: "<main>"))
        #expect(production[main.upperBound...].hasPrefix("<div class=\"banner\""))

        request.environment = .development
        let development = PageFigures(html: try ReportGenerator.page(request))
        #expect((development.count("postbacks") ?? 0) > 0)
    }

    /// The text between `open` and the next `close` after it, for every occurrence of `open` in `text`.
    static func pieces(of text: String, from open: String, to close: String) -> [String] {
        text.components(separatedBy: open).dropFirst().compactMap { after in
            after.range(of: close).map { String(after[..<$0.lowerBound]) }
        }
    }
}
