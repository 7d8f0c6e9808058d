import Aggregation
import Basics

/// `--include-development`: the development postbacks of `campaign_daily_development` (Apple
/// development keys, `--trust-key` test keys, SKAdNetwork test mode), decoded with the schemas and
/// shown in a section of their own: the production sections' charts of postbacks and installs per
/// day and of fine values, drawn from these rows alone, and their tables. Every heading, caption,
/// legend and column says "development"; nothing here is added to the production figures above.
extension ReportPage {
    func renderDevelopment(_ html: inout HTMLWriter) throws(ReportError) {
        guard let development else { return }
        // The production panels, over the development rows and labelled as such (only the columns every
        // grain of campaign_daily_development keeps: day, app, ad network, campaign, values, counts).
        let page = ReportPage(model: development, request: request, labelsDevelopment: true)
        let fineRows = try page.campaignRows { $0.fineTotal > 0 }
        section(
            &html, id: "development-decoded", title: "Development postbacks, decoded (development)",
            note: "Development postbacks (Apple development keys, --trust-key test keys, SKAdNetwork test mode) decoded "
                + "with the schemas, from campaign_daily_development. For testing an integration: they are in none of "
                + "the production figures above."
        ) { html in
            if !development.leftOutDays.isEmpty {
                html.element(
                    "p", ["class": "note"],
                    text: "Development figures left out for "
                        + development.leftOutDays.map { "\($0.day) (\($0.reason))" }.joined(separator: "; "))
            }
            guard development.totals.postbacks > 0 else {
                html.element("p", ["class": "note"], text: "No development postbacks in this range.")
                return
            }
            html.element("h3", text: "Development postbacks per day (development)")
            page.dayPanel(&html, id: "development-postbacks-per-day", noun: "development postbacks", value: \.postbacks)
            html.element("h3", text: "Development installs per day (development)")
            page.dayPanel(&html, id: "development-installs-per-day", noun: "development installs", value: \.installs)
            var days = FiguresTable(
                id: "table-development-days", caption: "Development postbacks and installs per day (development)",
                columns: [.text("Day"), .number("Development postbacks"), .number("Development installs")])
            for day in development.days.sorted() {
                let counts = development.dayTotals[day] ?? NetworkDayCounts()
                days.add([day.description, NumberFormat.count(counts.postbacks), NumberFormat.count(counts.installs)])
            }
            days.footer = [
                "Total", NumberFormat.count(development.totals.postbacks), NumberFormat.count(development.totals.installs),
            ]
            days.render(into: &html)

            var campaigns = FiguresTable(
                id: "table-development-campaigns", caption: "Development campaigns, decoded (development)",
                columns: [
                    .name("App"), .name("Ad network"), .name("Campaign"), .number("Development postbacks"),
                    .number("Development installs"), .number("Development redownloads"),
                    .number("Development re-engagements"), .text("Development revenue estimate"),
                    .longText("Decoded labels (development)"),
                ])
            for key in development.campaignsByVolume {
                let stats = development.campaigns[key]!
                var estimates: [String: Money] = [:]
                for (revenueKey, sum) in stats.revenue where !revenueKey.currency.isEmpty && sum.valuedPostbacks > 0 {
                    if let total = (estimates[revenueKey.currency] ?? .zero).plus(sum.estimate) {
                        estimates[revenueKey.currency] = total
                    }
                }
                let revenue = estimates.keys.sorted().compactMap { currency in
                    estimates[currency].map { "\(NumberFormat.money($0)) \(currency)" }
                }
                var labels = Set<String>()
                for set in stats.fineLabels.values { labels.formUnion(set) }
                for window in stats.coarseLabels { for set in window { labels.formUnion(set) } }
                campaigns.add([
                    key.appID, key.adNetworkID, key.name, NumberFormat.count(stats.counts.postbacks),
                    NumberFormat.count(stats.counts.installs), NumberFormat.count(stats.counts.redownloads),
                    NumberFormat.count(stats.counts.reengagements), revenue.isEmpty ? "unknown" : revenue.joined(separator: ", "),
                    labels.isEmpty ? "none" : labels.sorted().joined(separator: ", "),
                ])
            }
            campaigns.render(into: &html)
            html.element("h3", text: "Development fine conversion values per campaign (development)")
            page.fineValuePanel(&html, rows: fineRows)
        }
    }
}
