import AggregateSchema
import Basics
import Postbacks

/// The report page, for one environment (production, or development with `--environment`): the
/// first screen answers a marketer (the range's totals, then the top campaigns by installs), then
/// one section per chart, each chart with its exact figures in a table beside it and a note on what
/// it means. Every per-campaign table and chart shows `--top` campaigns by name and sums the rest in
/// one row, so the page's size does not grow with the store; the full tables are the aggregates'
/// CSV files. The page needs no script, and its Content-Security-Policy forbids every script,
/// remote resource and form, so even markup that got past escaping could do nothing.
struct ReportPage {
    let model: ReportModel
    let request: ReportRequest

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

    /// True on the development page: every title, caption, legend and tile says "development".
    var isDevelopment: Bool { model.environment == .development }

    /// `text`, marked "(development)" on the development page.
    func labelled(_ text: String) -> String { isDevelopment ? "\(text) (development)" : text }

    /// "production" or "development": the postbacks the page's figures are made of.
    var environmentNoun: String { model.environment.rawValue }

    /// The sections the page draws, in order, with their names in the contents line: a link is only
    /// ever made to a section that is there.
    var sections: [(id: String, name: String)] {
        [("top-campaigns", "Top campaigns")]
            + (model.cohorts.hasSpend ? [("cost", "Cost and return")] : [])
            + (model.cohorts.hasClaims ? [("claims", "What networks report and what Apple signed")] : [])
            + [("volume", "Postbacks and installs"), ("campaigns", "Campaigns by app"), ("trend", "Daily trend")]
            + (model.countries.isEmpty ? [] : [("countries", "Countries")])
            + [
                ("fine", "Fine values"), ("coarse", "Coarse values"), ("revenue", "Revenue"), ("null-share", "Null values"),
                ("non-winning", "Non-winning"), ("rejected", "Rejected"), ("conflicts", "Copies that disagree"),
                ("sources", "About the data"),
            ]
    }

    func render() throws -> String {
        var html = HTMLWriter(reservingCapacity: 1 << 18)
        html.raw("<!DOCTYPE html>\n")
        html.open("html", ["lang": "en"])
        html.newline()
        renderHead(&html)
        html.open("body")
        html.newline()
        renderHeader(&html)
        html.open("main")
        try renderFirstScreen(&html)
        renderContents(&html)
        try renderCostAndReturn(&html)
        try renderClaims(&html)
        renderVolume(&html)
        try renderCampaigns(&html)
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
        html.close("main")
        html.newline()
        html.element("footer") { html in
            html.text(
                "Made by \(request.toolVersion) from the \(model.environment.table) tables and day manifests that "
                    + "'postback aggregate' published. The page holds no scripts and loads nothing; the same aggregates always "
                    + "give the same page.")
        }
        html.newline()
        html.close("body")
        html.close("html")
        html.newline()
        return html.output
    }

    /// The first screen: the environment's banner, the caveats (partial, missing, left-out days) before
    /// any figure, the headline figures and the top campaigns. The page and the dashboard
    /// (`DashboardPage`) both draw it with this.
    func renderFirstScreen(_ html: inout HTMLWriter) throws(ReportError) {
        renderEnvironment(&html)
        renderNotices(&html)
        renderSummary(&html)
        renderNoSchemaNotice(&html)
        try renderTopCampaigns(&html)
    }

    var title: String { labelled(request.title ?? "Postback report") }

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

    /// The page's first line when its figures need a word before anyone reads them: a development
    /// page says what development postbacks are; a production page with none says where the range's
    /// postbacks are instead, and how to see them.
    private func renderEnvironment(_ html: inout HTMLWriter) {
        if isDevelopment {
            html.element("div", ["class": "banner development", "role": "note", "id": "environment"]) { html in
                html.element("strong", text: "Development postbacks. ")
                html.text(
                    "Every figure on this page is of postbacks signed with Apple's development keys or your test keys, or "
                        + "sent in SKAdNetwork test mode: what a team sees while it integrates, not what its ads brought. ")
                if model.productionPostbacks == 0 {
                    html.text("The range has no production postbacks.")
                } else {
                    html.text(
                        "The range's \(NumberFormat.count(model.productionPostbacks)) production postbacks are on the "
                            + "production page (")
                    html.element("code", text: "postback report")
                    html.text(" without ")
                    html.element("code", text: "--environment")
                    html.text("), never added here.")
                }
            }
        } else if model.totals.postbacks == 0, model.developmentPostbacks > 0 {
            html.element("div", ["class": "banner", "role": "note", "id": "environment"]) { html in
                html.element(
                    "strong",
                    text: "No production postbacks in this range, but \(NumberFormat.count(model.developmentPostbacks)) "
                        + "development postbacks: ")
                html.text("see them with ")
                html.element("code", text: "postback report --environment development")
                html.text(
                    " (Apple's development keys, test keys, SKAdNetwork test mode). They are never added to the production "
                        + "figures below.")
            }
        }
        html.newline()
    }

    private func renderSummary(_ html: inout HTMLWriter) {
        let totals = model.totals
        let noun = environmentNoun
        html.element("section", ["id": "summary", "aria-label": labelled("Headline")]) { html in
            html.element("div", ["class": "cards"]) { html in
                card(
                    &html, labelled("Postbacks"), metric: "postbacks", value: NumberFormat.count(totals.postbacks),
                    detail: "verified, \(noun), first copies")
                card(
                    &html, labelled("Installs"), metric: "installs", value: NumberFormat.count(totals.installs),
                    detail: "winning first postbacks of downloads")
                for currency in model.revenueByCurrency.keys.sorted() where !currency.isEmpty {
                    revenueCard(&html, currency: currency, model.revenueByCurrency[currency]!)
                    modeledRevenueCard(&html, currency: currency)
                }
                spendCards(&html)
                card(
                    &html, labelled("Null-value share"), metric: "null_share",
                    value: NumberFormat.percent(totals.nullValues, of: totals.winners),
                    detail: " null values of \(NumberFormat.count(totals.winners)) winners: revenue unknown",
                    detailMetric: "null_cv_postbacks", detailCount: totals.nullValues)
                card(
                    &html, labelled("Redownloads · re-engagements"), metric: "redownloads",
                    value: NumberFormat.count(totals.redownloads),
                    detail: " re-engagements", detailMetric: "reengagements", detailCount: totals.reengagements)
                card(
                    &html, labelled("Non-winning"), metric: "losses", value: NumberFormat.count(totals.losses),
                    detail: "\(NumberFormat.percent(totals.losses, of: totals.postbacks)) of postbacks")
                if let unscheduled = model.revenueByCurrency[""], unscheduled.unknownPostbacks > 0 {
                    card(
                        &html, labelled("Without a schema"), metric: "no_schema",
                        value: NumberFormat.count(unscheduled.unknownPostbacks), detail: "postbacks whose value no schema decodes"
                    )
                }
            }
            html.element("p", ["class": "aside"]) { html in
                html.text("Kept out of these figures: ")
                if isDevelopment {
                    aside(&html, "production", model.productionPostbacks, "production postbacks")
                } else {
                    aside(&html, "development", model.developmentPostbacks, "development postbacks")
                }
                html.text(" · ")
                aside(&html, "rejected", model.rejectedPostbacks, "rejected")
                html.text(" · ")
                aside(&html, "duplicates", model.duplicatesDropped, "duplicates not counted again")
                html.text(" · ")
                aside(&html, "corrupt_lines", model.corruptLines, "corrupt spool lines")
                html.text(" · ")
                aside(&html, "torn_tails", model.tornTails, "torn tails")
            }
            renderSpendLines(&html)
        }
        html.newline()
    }

    /// Revenue to date in one currency (`HeadlineRevenue`): a lower bound shown as one (`≥ 18,750.00`),
    /// window 1 alone beside it.
    private func revenueCard(_ html: inout HTMLWriter, currency: String, _ revenue: HeadlineRevenue) {
        let sum = revenue.toDate
        // A lower bound says so in its value (`≥`); a range without an upper bound is never shown as one.
        let range = sum.isLowerBound ? "" : "range \(sum.shownRange); "
        card(
            &html, labelled("\(HeadlineRevenue.name), \(currency)"), metric: "revenue_est_sum:\(currency)",
            value: sum.shownEstimate,
            detail: "windows 1–3; window 1 alone \(revenue.windowOne.shownEstimate); \(range)"
                + "\(NumberFormat.count(sum.unknownPostbacks)) with unknown value")
    }

    /// Beside the measured revenue, never in it: what it would be with the null postbacks' modeled
    /// value (docs/modeling.md), labelled modeled, with its 90% interval; "too little data" when the
    /// model covered none of them. No card when there is nothing to model (no null postbacks, or a
    /// page whose rows carry no model, as the development page's).
    private func modeledRevenueCard(_ html: inout HTMLWriter, currency: String) {
        guard let modeled = model.modeledByCurrency[currency], modeled.modeledNulls + modeled.unmodeledNulls > 0,
            let measured = model.revenueByCurrency[currency]?.toDate
        else { return }
        let name = labelled("Modeled revenue to date, \(currency)")
        let left =
            modeled.unmodeledNulls > 0
            ? "; \(NumberFormat.count(modeled.unmodeledNulls)) null values not modeled (too little data)" : ""
        guard modeled.isModeled, let total = modeled.total(measured: measured.estimate) else {
            card(
                &html, name, metric: "modeled_revenue_est:\(currency)", value: "too little data",
                detail: "the model needs \(NullValueModel.minMeasured) measured postbacks per app and window in "
                    + "\(NullValueModel.poolingDays) days; measured revenue only, above")
            return
        }
        card(
            &html, name, metric: "modeled_revenue_est:\(currency)", value: NumberFormat.money(total.estimate),
            detail: "modeled, not measured: 90% interval \(NumberFormat.money(total.low))–\(NumberFormat.money(total.high)); "
                + "measured \(measured.shownEstimate) + modeled value of \(NumberFormat.count(modeled.modeledNulls)) "
                + "null values \(NumberFormat.money(modeled.modeledNull))\(left)")
    }

    /// A headline figure. A detail line may start with a second count (`detailMetric`).
    func card(
        _ html: inout HTMLWriter, _ name: String, metric: String, value: String, detail: String?,
        detailMetric: String? = nil, detailCount: Int = 0
    ) {
        html.element("div", ["class": "card"]) { html in
            html.element("p", ["class": "kpi-name"], text: name)
            html.element("p", ["class": "kpi-value", "data-metric": metric], text: value)
            if let detail {
                html.element("p", ["class": "kpi-detail"]) { html in
                    if let detailMetric {
                        html.element("span", ["data-metric": detailMetric], text: NumberFormat.count(detailCount))
                    }
                    html.text(detail)
                }
            }
        }
    }

    private func aside(_ html: inout HTMLWriter, _ metric: String, _ count: Int, _ noun: String) {
        html.element("strong", ["data-metric": metric], text: NumberFormat.count(count))
        html.text(" " + noun)
    }

    private func renderNotices(_ html: inout HTMLWriter) {
        // The nightly check's findings (`postback check`) for the range's days, the most actionable first.
        if !model.checkFindings.isEmpty {
            html.element("div", ["class": "notice", "role": "note", "id": "check-findings"]) { html in
                let count = model.checkFindings.count
                html.element(
                    "p",
                    text: "The nightly check found \(count) thing\(count == 1 ? "" : "s") to look at "
                        + "(postback check; docs/alerts.md says what each means and what to do):")
                html.element("ul") { html in
                    for line in model.checkFindings.prefix(Self.shownFindings) { html.element("li", text: line) }
                    if count > Self.shownFindings { html.element("li", text: "and \(count - Self.shownFindings) more") }
                }
            }
        }
        if model.totals.postbacks == 0, !(model.environment == .production && model.developmentPostbacks > 0) {
            Self.notice("No \(environmentNoun) postbacks in this range: the charts below are empty.", in: &html)
        }
        if !model.missingDays.isEmpty {
            Self.notice(
                "No aggregates for \(Self.dayList(model.missingDays)): those days are shown as gaps, not as "
                    + "zero. Run 'postback aggregate' for them, or check that the range is right.", in: &html)
        }
        if !model.emptyDays.isEmpty {
            Self.notice(
                "Nothing received on \(Self.dayList(model.emptyDays)): no postback, rejected record or duplicate, or the "
                    + "receiver's store was not where 'postback aggregate' looked. Those days are shown as gaps, not as zero.",
                in: &html)
        }
        if !model.partialDays.isEmpty {
            Self.notice(
                "Partial: \(Self.dayList(model.partialDays)) were aggregated before the day was over "
                    + "(on request); their figures will grow when the day is aggregated again.", in: &html)
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
            for (anchor, name) in sections.dropFirst() {
                html.element("a", ["href": "#\(anchor)"], text: name)
            }
        }
        html.newline()
    }

    private func renderSources(_ html: inout HTMLWriter) {
        section(
            &html, id: "sources", title: "About the data",
            note: "Each day is one partition of the aggregate tables (docs/aggregate.md). A day is used only when its manifest "
                + "exists and its \(model.environment.table) file has the checksum the manifest lists. This page shows the "
                + "top \(request.topCampaigns) campaigns by name; the full tables are the CSV files named below."
        ) { html in
            var table = FiguresTable(
                id: "table-sources", caption: "What the page was made from",
                columns: [.text("Item"), .longText("Value")])
            table.add(["Days with aggregates", model.days.isEmpty ? "none" : Self.dayList(model.days)])
            table.add(["Days without aggregates", model.missingDays.isEmpty ? "none" : Self.dayList(model.missingDays)])
            table.add(["Days with nothing received", model.emptyDays.isEmpty ? "none" : Self.dayList(model.emptyDays)])
            table.add(["Partial days", model.partialDays.isEmpty ? "none" : Self.dayList(model.partialDays)])
            table.add(["Days left out", model.leftOutDays.isEmpty ? "none" : Self.dayList(model.leftOutDays.map(\.day))])
            table.add(["Aggregated by", model.tools.sorted().joined(separator: ", ")])
            table.add(["Schemas", model.schemaIDs.isEmpty ? "none" : model.schemaIDs.sorted().joined(separator: ", ")])
            table.add(["Apps", model.appIDs.isEmpty ? "none" : model.appIDs.sorted().joined(separator: ", ")])
            table.add([
                "Install cohorts (\(model.environment.cohortTable))",
                model.cohorts.days.isEmpty ? "none" : Self.dayList(model.cohorts.days),
            ])
            if !model.cohorts.leftOutDays.isEmpty {
                table.add(["Install cohorts left out", Self.dayList(model.cohorts.leftOutDays.map(\.day))])
            }
            place(table, &html)
            // Paths and commands in code elements: they never break inside a name or an option.
            html.element("p", ["class": "note", "id": "full-tables"]) { html in
                html.text("Every campaign, day and value: ")
                html.element("code", text: "agg/\(model.environment.table)/dt=DAY/part-00000.csv")
                html.text(" in the store (one file per day; ")
                html.element("code", text: "campaign_daily")
                html.text(", ")
                html.element("code", text: "publisher_daily")
                html.text(" and ")
                html.element("code", text: "country_daily")
                html.text(" are its rollups), read with any CSV or SQL tool; what each value means: ")
                html.element("code", text: "postback schema export --table values")
                html.text(".")
            }
            if isDevelopment {
                html.element(
                    "p", ["class": "note"],
                    text: "Development postbacks are those signed with Apple's development keys (AdAttributionKit), your "
                        + "test keys, or sent in SKAdNetwork test mode (source-app-id 0). A SKAdNetwork 4.0 "
                        + "test postback of window 2 or 3 carries no source-app-id, so it cannot be told from a production "
                        + "one and is counted as production; see docs/postback-spec.md.")
            }
        }
    }

    // MARK: Building blocks

    /// A section: heading (marked on the development page), what the chart means, then `body`.
    func section(_ html: inout HTMLWriter, id: String, title: String, note: String, _ body: (inout HTMLWriter) -> Void) {
        html.element("section", ["id": id, "aria-labelledby": "\(id)-heading"]) { html in
            html.element("h2", ["id": "\(id)-heading"], text: labelled(title))
            html.element("p", ["class": "note"], text: note)
            body(&html)
        }
        html.newline()
    }

    /// A table of figures, its caption marked on the development page.
    func place(_ table: FiguresTable, _ html: inout HTMLWriter) {
        var table = table
        table.caption = labelled(table.caption)
        table.render(into: &html)
    }

    /// A chart with its figures beside it; a table of more than three columns goes below the chart
    /// at full width instead, so that it never needs a scrollbar to show a figure.
    func panel(_ html: inout HTMLWriter, chart: (inout HTMLWriter) -> Void, table: FiguresTable) {
        html.element("div", ["class": table.columns.count > 3 ? "panel stacked" : "panel"]) { html in
            html.element("figure", ["class": "chart-box"]) { html in chart(&html) }
            place(table, &html)
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

    /// The `topCampaigns` largest campaigns passing `include` (by installs, or by `rank`), then one
    /// row summing the others that pass it.
    func campaignRows(
        including include: (CampaignStats) -> Bool,
        rankedBy rank: ((CampaignStats) -> Int)? = nil
    ) throws(ReportError) -> [CampaignRow] {
        var keys = model.campaignsByInstalls.filter { include(model.campaigns[$0]!) }
        if let rank {
            let scores = Dictionary(uniqueKeysWithValues: keys.map { ($0, rank(model.campaigns[$0]!)) })
            keys.sort { scores[$0]! != scores[$1]! ? scores[$0]! > scores[$1]! : $0 < $1 }
        }
        return try rows(of: keys)
    }

    /// `keys` as rows: the first `topCampaigns` by name, then one "other campaigns" row summing the rest.
    func rows(of keys: [CampaignKey]) throws(ReportError) -> [CampaignRow] {
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

    /// The first `limit` entries of `counts`, largest first, then one entry summing the rest under
    /// `others` (with how many): long lists of networks, countries or reasons stay a few rows.
    static func topEntries(_ counts: [String: Int], limit: Int, others: String) -> [(key: String, value: Int)] {
        let sorted = byCount(counts)
        guard sorted.count > limit else { return sorted }
        let rest = sorted.dropFirst(limit)
        return Array(sorted.prefix(limit)) + [("\(others) (\(NumberFormat.count(rest.count)))", rest.reduce(0) { $0 + $1.value })]
    }

    /// How many ad networks, countries, reasons and the like a table lists before it sums the rest.
    static let entriesListed = 20
    /// Ad networks with a column of their own in a table of days (the chart names more): more
    /// columns would not fit the page's width.
    static let networksInTables = 5

    /// The columns that name a campaign in a table (the app only when there are several).
    var campaignColumns: [FiguresTable.Column] {
        [.text("Campaign"), .text("Ad network")] + (model.appIDs.count > 1 ? [.number("App")] : [])
    }

    func campaignCells(_ row: CampaignRow) -> [String] {
        let network = row.isOthers ? row.sublabel ?? "" : Self.networkName(row.network)
        return [row.label, network] + (model.appIDs.count > 1 ? [row.app] : [])
    }

    /// `Mar 1–3, Mar 7` style list of days (ISO dates, runs joined).
    /// Findings of the nightly check listed by name at the top; the rest are counted.
    static let shownFindings = 4

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
