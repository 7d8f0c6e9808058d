import Foundation
import Testing

@testable import Reporting

/// `report --include-development`: development postbacks appear only with the flag, decoded, in a
/// section of their own where every heading says "development"; the rest of the page (and so every
/// production figure) is byte for byte the page without the flag.
@Suite struct ReportDevelopmentTests {
    func pages() throws -> (without: String, with: String, rows: [(day: String, row: [String: String?])]) {
        let store = try TestStore.shared.get()
        let request = store.request(from: TestStore.first, to: TestStore.last)
        var including = request
        including.includeDevelopment = true
        return (
            try ReportGenerator.page(request), try ReportGenerator.page(including),
            try AggregateCSV.campaignDaily(store, days: ReportFiguresTests.days)
        )
    }

    @Test func developmentFiguresAppearOnlyWithTheFlagAndApart() throws {
        let (without, with, rows) = try pages()
        let developmentPostbacks = rows.reduce(0) { $0 + $1.row.int("development_postbacks") }
        #expect(developmentPostbacks > 0)
        #expect(!without.contains("id=\"development-decoded\""))
        #expect(!without.contains("table-development-days") && !without.contains("table-development-campaigns"))

        // With the flag: the development section, and nothing else changed.
        let start = try #require(with.range(of: "<section id=\"development-decoded\""))
        let end = try #require(with.range(of: "</section>\n", range: start.upperBound..<with.endIndex))
        let link = "<a href=\"#development-decoded\">Development (decoded)</a>"
        #expect(with.contains(link))
        var rest = with
        rest.removeSubrange(start.lowerBound..<end.upperBound)
        rest = rest.replacingOccurrences(of: link, with: "")
        #expect(rest == without, "the page outside the development section is the page without the flag")

        // Its figures: the development postbacks of campaign_daily, decoded, every column labelled.
        let figures = PageFigures(html: with)
        let days = try #require(figures.table("table-development-days"))
        let campaigns = try #require(figures.table("table-development-campaigns"))
        #expect(days.footer?[1].replacingOccurrences(of: ",", with: "") == String(developmentPostbacks))
        let column = try #require(campaigns.column("Development postbacks"))
        #expect(campaigns.rows.reduce(0) { $0 + number($1[column]) } == developmentPostbacks)
        for header in days.header.dropFirst() + campaigns.header.dropFirst(3) {
            #expect(header.lowercased().contains("development"), "\(header)")
        }
        // Decoded: at least one label of the schemas (not only no_schema / null_cv / undecoded).
        let labels = try #require(campaigns.column("Decoded labels (development)"))
        let decodedLabels = Set(
            rows.filter { $0.row.int("development_postbacks") > 0 && $0.row.text("revenue_est_sum") != nil }
                .compactMap { $0.row.text("decoded_label") })
        #expect(!decodedLabels.isEmpty)
        for label in decodedLabels {
            #expect(campaigns.rows.contains { $0[labels].contains(label) }, "\(label)")
        }
    }
}
