import Aggregation
import Basics
import Postbacks

/// The report page: a headline of production figures, then one section per chart, each chart with
/// its exact figures in a table beside it and a note on what it means. The page needs no script, and
/// its Content-Security-Policy forbids every script, remote resource and form, so even markup that
/// got past escaping could do nothing.
struct ReportPage {
    let model: ReportModel
    let request: ReportRequest
    /// `campaign_daily_development` (`--include-development`), shown apart and labelled; nil without the flag.
    var development: ReportModel? = nil
    /// True for the page over `development` that draws the development section's charts: series,
    /// legends, captions and empty states that production panels share with it say "development".
    var labelsDevelopment = false

    /// A campaign (or the sum of the campaigns not shown by name) as a chart row.
    struct CampaignRow {
        let label: String
        let sublabel: String?
        /// Empty for the "other campaigns" row.
        let network: String
        let app: String
        let stats: CampaignStats
        /// The row that sums the campaigns not shown by name.
        var isOthers = false
    }

    func render() throws(ReportError) -> String {
        var html = HTMLWriter(reservingCapacity: 1 << 18)
        html.raw("<!DOCTYPE html>\n")
        html.open("html", ["lang": "en"])
        html.newline()
        renderHead(&html)
        html.open("body")
        html.newline()
        renderHeader(&html)
        html.open("main")
        renderSummary(&html)
        renderNotices(&html)
        renderContents(&html)
        renderVolume(&html)
        renderCampaigns(&html)
        renderTrend(&html)
        renderCountries(&html)
        try renderFineValues(&html)
        try renderCoarseValues(&html)
        try renderRevenue(&html)
        renderNullShare(&html)
        renderNonWinning(&html)
        renderRejected(&html)
        renderConflicts(&html)
        renderSources(&html)
        try renderDevelopment(&html)
        html.close("main")
        html.newline()
        html.element("footer") { html in
            html.text(
                "Made by \(request.toolVersion) from the campaign_daily tables and day manifests that 'postback aggregate' "
                    + "published. The page holds no scripts and loads nothing; the same aggregates always give the same page.")
        }
        html.newline()
        html.close("body")
        html.close("html")
        html.newline()
        return html.output
    }

    var title: String { request.title ?? "Postback report" }

    var rangeText: String {
        model.from == model.to ? model.from.description : "\(model.from) to \(model.to)"
    }

    // MARK: Head and headline

    private func renderHead(_ html: inout HTMLWriter) {
        html.open("head")
        html.newline()
        html.empty("meta", ["charset": "utf-8"])
        html.empty("meta", ["name": "viewport", "content": "width=device-width, initial-scale=1"])
        html.empty(
            "meta",
            [
                "http-equiv": "Content-Security-Policy",
                "content": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'",
            ])
        html.empty("meta", ["name": "generator", "content": request.toolVersion])
        html.newline()
        html.element("title", text: "\(title) · \(rangeText)")
        html.newline()
        html.open("style")
        html.newline()
        html.raw(ReportStyle.css)
        html.newline()
        html.close("style")
        html.newline()
        html.close("head")
        html.newline()
    }

    private func renderHeader(_ html: inout HTMLWriter) {
        html.element("header", ["class": "top"]) { html in
            html.element("h1", text: title)
            let count = model.rangeDays.count
            html.element(
                "p", ["class": "meta"],
                text: "\(rangeText) · \(count) day\(count == 1 ? "" : "s") by the UTC day postbacks were received · "
                    + "\(model.days.count) with aggregates"
                    + (request.appID.map { " · app \($0) only (rejected reasons and duplicates are the whole store's)" } ?? ""))
        }
        html.newline()
    }

    private func renderSummary(_ html: inout HTMLWriter) {
        let totals = model.totals
        html.element("section", ["id": "summary", "aria-label": "Headline"]) { html in
            html.element("div", ["class": "cards"]) { html in
                card(
                    &html, "Postbacks", metric: "postbacks", value: NumberFormat.count(totals.postbacks),
                    detail: "verified, production, first copies")
                card(
                    &html, "Installs", metric: "installs", value: NumberFormat.count(totals.installs),
                    detail: "winning first postbacks of downloads")
                card(&html, "Redownloads", metric: "redownloads", value: NumberFormat.count(totals.redownloads), detail: nil)
                card(
                    &html, "Re-engagements", metric: "reengagements", value: NumberFormat.count(totals.reengagements), detail: nil
                )
                card(
                    &html, "Non-winning", metric: "losses", value: NumberFormat.count(totals.losses),
                    detail: "\(NumberFormat.percent(totals.losses, of: totals.postbacks)) of postbacks")
                card(
                    &html, "Null values", metric: "null_cv_postbacks", value: NumberFormat.count(totals.nullValues),
                    detail: "\(NumberFormat.percent(totals.nullValues, of: totals.winners)) of winners: revenue unknown")
                for currency in model.revenueByCurrency.keys.sorted() where !currency.isEmpty {
                    let sum = model.revenueByCurrency[currency]!
                    card(
                        &html, "Revenue estimate, \(currency)", metric: "revenue_est_sum:\(currency)",
                        value: NumberFormat.money(sum.estimate),
                        detail:
                            "range \(NumberFormat.money(sum.minimum))–\(sum.maximum.map(NumberFormat.money) ?? "no upper bound"); "
                            + "\(NumberFormat.count(sum.unknownPostbacks)) with unknown value")
                }
                if let unscheduled = model.revenueByCurrency[""], unscheduled.unknownPostbacks > 0 {
                    card(
                        &html, "Without a schema", metric: "no_schema", value: NumberFormat.count(unscheduled.unknownPostbacks),
                        detail: "postbacks whose value no schema decodes")
                }
            }
            html.element("p", ["class": "aside"]) { html in
                html.text("Kept out of the headline: ")
                aside(&html, "development", model.developmentPostbacks, "development postbacks")
                html.text(" · ")
                aside(&html, "rejected", model.rejectedPostbacks, "rejected")
                html.text(" · ")
                aside(&html, "duplicates", model.duplicatesDropped, "duplicates not counted again")
                html.text(" · ")
                aside(&html, "corrupt_lines", model.corruptLines, "corrupt spool lines")
                html.text(" · ")
                aside(&html, "torn_tails", model.tornTails, "torn tails")
            }
        }
        html.newline()
    }

    private func card(_ html: inout HTMLWriter, _ name: String, metric: String, value: String, detail: String?) {
        html.element("div", ["class": "card"]) { html in
            html.element("p", ["class": "kpi-name"], text: name)
            html.element("p", ["class": "kpi-value", "data-metric": metric], text: value)
            if let detail { html.element("p", ["class": "kpi-detail"], text: detail) }
        }
    }

    private func aside(_ html: inout HTMLWriter, _ metric: String, _ count: Int, _ noun: String) {
        html.element("strong", ["data-metric": metric], text: NumberFormat.count(count))
        html.text(" " + noun)
    }

    private func renderNotices(_ html: inout HTMLWriter) {
        if model.totals.postbacks == 0 {
            Self.notice(
                "No production postbacks in this range: the charts below are empty. "
                    + "Development and rejected postbacks, if any, are counted in the last section.", in: &html)
        }
        if !model.missingDays.isEmpty {
            Self.notice(
                "No aggregates for \(Self.dayList(model.missingDays)): those days are shown as gaps, not as "
                    + "zero. Run 'postback aggregate' for them, or check that the range is right.", in: &html)
        }
        if !model.emptyDays.isEmpty {
            Self.notice(
                "No spool for \(Self.dayList(model.emptyDays)): nothing was received, or the receiver's "
                    + "store was not where 'postback aggregate' looked. Those days are shown as gaps, not as zero.", in: &html)
        }
        if !model.partialDays.isEmpty {
            Self.notice(
                "Partial: \(Self.dayList(model.partialDays)) were aggregated before the day was over "
                    + "(--allow-open-day); their figures will grow when the day is aggregated again.", in: &html)
        }
        if !model.leftOutDays.isEmpty {
            html.element("div", ["class": "notice", "role": "note"]) { html in
                html.element("p", text: "Left out because their aggregates could not be trusted:")
                html.element("ul") { html in
                    for (day, reason) in model.leftOutDays { html.element("li", text: "\(day): \(reason)") }
                }
            }
        }
        html.newline()
    }

    private func renderContents(_ html: inout HTMLWriter) {
        html.element("nav", ["class": "contents", "aria-label": "Sections"]) { html in
            for (anchor, name) in [
                ("volume", "Postbacks and installs"), ("campaigns", "Campaigns"), ("trend", "Daily trend"),
                ("countries", "Countries"), ("fine", "Fine values"), ("coarse", "Coarse values"),
                ("revenue", "Revenue"), ("null-share", "Null values"), ("non-winning", "Non-winning"),
                ("rejected", "Rejected and development"), ("sources", "About the data"),
            ] + (development == nil ? [] : [("development-decoded", "Development (decoded)")]) {
                html.element("a", ["href": "#\(anchor)"], text: name)
            }
        }
        html.newline()
    }

    private func renderSources(_ html: inout HTMLWriter) {
        section(
            &html, id: "sources", title: "About the data",
            note: "Each day is one partition of the aggregate tables (docs/aggregate.md). A day is used only when its manifest "
                + "exists and its campaign_daily file has the checksum the manifest lists."
        ) { html in
            var table = FiguresTable(
                id: "table-sources", caption: "What the page was made from",
                columns: [.text("Item"), .longText("Value")])
            table.add(["Days with aggregates", model.days.isEmpty ? "none" : Self.dayList(model.days)])
            table.add(["Days without aggregates", model.missingDays.isEmpty ? "none" : Self.dayList(model.missingDays)])
            table.add(["Days with no spool", model.emptyDays.isEmpty ? "none" : Self.dayList(model.emptyDays)])
            table.add(["Partial days", model.partialDays.isEmpty ? "none" : Self.dayList(model.partialDays)])
            table.add(["Days left out", model.leftOutDays.isEmpty ? "none" : Self.dayList(model.leftOutDays.map(\.day))])
            table.add(["Aggregated by", model.tools.sorted().joined(separator: ", ")])
            table.add(["Schemas", model.schemaIDs.isEmpty ? "none" : model.schemaIDs.sorted().joined(separator: ", ")])
            table.add(["Apps", model.appIDs.isEmpty ? "none" : model.appIDs.sorted().joined(separator: ", ")])
            table.render(into: &html)
        }
    }

    // MARK: Building blocks

    /// A section: heading, what the chart means, then `body`.
    func section(_ html: inout HTMLWriter, id: String, title: String, note: String, _ body: (inout HTMLWriter) -> Void) {
        html.element("section", ["id": id, "aria-labelledby": "\(id)-heading"]) { html in
            html.element("h2", ["id": "\(id)-heading"], text: title)
            html.element("p", ["class": "note"], text: note)
            body(&html)
        }
        html.newline()
    }

    /// A chart (or its empty state) beside its table.
    /// A chart with its figures beside it; a table of more than three columns goes below the chart
    /// at full width instead, so that it never needs a scrollbar to show a figure.
    func panel(_ html: inout HTMLWriter, chart: (inout HTMLWriter) -> Void, table: FiguresTable) {
        html.element("div", ["class": table.columns.count > 3 ? "panel stacked" : "panel"]) { html in
            html.element("figure", ["class": "chart-box"]) { html in chart(&html) }
            table.render(into: &html)
        }
    }

    func emptyState(_ html: inout HTMLWriter, _ text: String) {
        html.element("p", ["class": "empty"], text: text)
    }

    /// The ad networks the day charts name, with their colours; the rest are summed as "other".
    var namedNetworks: [(name: String, style: String)] {
        model.networksByVolume.prefix(ReportStyle.seriesColours).enumerated().map {
            (Self.networkName($0.element), ReportStyle.series($0.offset))
        }
    }

    /// Networks known by name are named ("Apple Ads (com.apple.ads)"); others show their id.
    static func networkName(_ id: String) -> String {
        if id.isEmpty { return "(no ad network)" }
        return KnownAdNetwork.name(of: id).map { "\($0) (\(id))" } ?? id
    }

    /// The `topCampaigns` largest campaigns passing `include` (by postbacks, or by `rank`), then one
    /// row summing the others that pass it.
    func campaignRows(
        including include: (CampaignStats) -> Bool,
        rankedBy rank: ((CampaignStats) -> Int)? = nil
    ) throws(ReportError) -> [CampaignRow] {
        var keys = model.campaignsByVolume.filter { include(model.campaigns[$0]!) }
        if let rank {
            let scores = Dictionary(uniqueKeysWithValues: keys.map { ($0, rank(model.campaigns[$0]!)) })
            keys.sort { scores[$0]! != scores[$1]! ? scores[$0]! > scores[$1]! : $0 < $1 }
        }
        let showsApp = model.appIDs.count > 1
        var rows = keys.prefix(request.topCampaigns).map { key in
            CampaignRow(
                label: key.name, sublabel: Self.networkName(key.adNetworkID) + (showsApp ? " · app \(key.appID)" : ""),
                network: key.adNetworkID, app: key.appID, stats: model.campaigns[key]!)
        }
        let rest = keys.dropFirst(request.topCampaigns)
        if !rest.isEmpty {
            var sum = CampaignStats()
            for key in rest { try sum.add(model.campaigns[key]!) }
            rows.append(
                CampaignRow(
                    label: "Other campaigns", sublabel: "\(NumberFormat.count(rest.count)) campaigns", network: "", app: "",
                    stats: sum, isOthers: true))
        }
        return rows
    }

    /// The columns that name a campaign in a table (the app only when there are several).
    var campaignColumns: [FiguresTable.Column] {
        [.text("Campaign"), .text("Ad network")] + (model.appIDs.count > 1 ? [.number("App")] : [])
    }

    func campaignCells(_ row: CampaignRow) -> [String] {
        let network = row.isOthers ? row.sublabel ?? "" : Self.networkName(row.network)
        return [row.label, network] + (model.appIDs.count > 1 ? [row.app] : [])
    }

    /// `Mar 1–3, Mar 7` style list of days (ISO dates, runs joined).
    /// One paragraph in a note box above the charts (a gap, a partial day, an empty range).
    static func notice(_ text: String, in html: inout HTMLWriter) {
        html.element("div", ["class": "notice", "role": "note"]) { html in html.element("p", text: text) }
    }

    static func dayList(_ days: [UTCDay]) -> String {
        var parts: [String] = []
        var index = 0
        while index < days.count {
            var end = index
            while end + 1 < days.count, days[end + 1].daysSinceEpoch == days[end].daysSinceEpoch + 1 { end += 1 }
            parts.append(end == index ? days[index].description : "\(days[index]) to \(days[end])")
            index = end + 1
        }
        return parts.joined(separator: ", ")
    }
}
