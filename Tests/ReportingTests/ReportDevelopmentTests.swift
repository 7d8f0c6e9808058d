import Basics
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

    /// The text between `open` and the next `close` after it, for every occurrence of `open` in `text`.
    static func pieces(of text: String, from open: String, to close: String) -> [String] {
        text.components(separatedBy: open).dropFirst().compactMap { after in
            after.range(of: close).map { String(after[..<$0.lowerBound]) }
        }
    }

    @Test func developmentChartsAppearOnlyWithTheFlagEqualTheirTablesAndSayDevelopment() throws {
        let (without, with, rows) = try pages()
        #expect(!without.contains("chart-development-"))
        let start = try #require(with.range(of: "<section id=\"development-decoded\""))
        let end = try #require(with.range(of: "</section>\n", range: start.upperBound..<with.endIndex))
        let section = String(with[start.lowerBound..<end.upperBound])
        let figures = PageFigures(html: section)

        // Every chart title, figure tooltip, legend, caption and subheading of the section says development
        // (the other tooltips are a campaign's full name, like the production charts').
        let charts = Self.pieces(of: section, from: "<svg ", to: "</svg>")
        #expect(charts.count == 3)
        let titles = charts.flatMap { Self.pieces(of: $0, from: "<title", to: "</title>") }
        let chartTitles = titles.filter { $0.hasPrefix(" id=") }
        #expect(chartTitles.count == 3)
        let figureTooltips = titles.filter { $0.contains(": ") }
        let legends = Self.pieces(of: section, from: "<ul class=\"legend\">", to: "</ul>")
        let captions = Self.pieces(of: section, from: "<caption>", to: "</caption>")
        let subheadings = Self.pieces(of: section, from: "<h3>", to: "</h3>")
        #expect(legends.count == 3 && captions.count >= 5 && subheadings.count == 3 && figureTooltips.count > 10)
        for text in chartTitles + figureTooltips + legends + captions + subheadings {
            #expect(text.lowercased().contains("development"), "\(text)")
        }

        // Postbacks and installs per day: each day's column segments add up to the day's row of the table.
        let days = try #require(figures.table("table-development-days"))
        #expect(!days.rows.isEmpty)
        for (id, column, noun) in [
            ("chart-development-postbacks-per-day", 1, "development postbacks"),
            ("chart-development-installs-per-day", 2, "development installs"),
        ] {
            let chart = try #require(charts.first { $0.contains("id=\"\(id)\"") }, "\(id)")
            var perDay: [String: Int] = [:]
            for tooltip in Self.pieces(of: chart, from: "<title>", to: "</title>") {
                let parts = tooltip.components(separatedBy: ": ")
                let (place, figure) = (parts.dropLast().joined(separator: ": "), try #require(parts.last))
                #expect(figure.hasSuffix(" " + noun), "\(tooltip)")
                let day = try #require(place.components(separatedBy: " · ").first)
                perDay[day, default: 0] += number(String(figure.dropLast(noun.count + 1)))
            }
            for row in days.rows {
                #expect(perDay[NumberFormat.longDay(UTCDay(row[0])!), default: 0] == number(row[column]), "\(id) \(row[0])")
            }
            #expect(perDay.values.reduce(0, +) == number(days.footer![column]))
        }

        // Fine values: each heat map row's n is its campaign's development fine values, summing to the
        // table's and to campaign_daily's development postbacks with a fine value.
        let fineChart = try #require(charts.first { $0.contains("id=\"chart-development-fine\"") })
        let fineTable = try #require(figures.table("table-development-fine"))
        let postbacks = try #require(fineTable.column("Development postbacks"))
        let fromRows = rows.filter { $0.row.text("cv_kind") == "fine" }.reduce(0) { $0 + $1.row.int("development_postbacks") }
        let heatTotals = Self.pieces(of: fineChart, from: "class=\"value-label\"", to: "</text>").map {
            number(String($0.split(separator: ">").last!))
        }
        #expect(fromRows > 0)
        #expect(heatTotals.reduce(0, +) == fromRows)
        #expect(fineTable.rows.reduce(0) { $0 + number($1[postbacks]) } == fromRows)
    }
}
