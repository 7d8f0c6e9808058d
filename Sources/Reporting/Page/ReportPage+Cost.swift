import AggregateSchema

/// Cost and return: what the range's installs cost (spend, CPI) and brought back (ROAS), from the
/// install cohorts of `campaign_cohort_daily` (docs/spend.md). On the first screen: spend, CPI and ROAS
/// beside installs and revenue, and a line per network that claims more installs than Apple signed;
/// below, ROAS by window per campaign and per install-date week. A ROAS made from any cohort that is
/// not `final` is marked "(open)": its return can still grow, so it is never shown as final. Amounts
/// of two currencies are never added or divided.
extension ReportPage {
    /// A campaign of the cohort table (or the sum of those not shown by name) as a table row.
    struct CohortRow<Stats> {
        let label: String
        /// The network's name, or how many campaigns the "other campaigns" row sums.
        let network: String
        let app: String
        let stats: Stats
    }

    /// The marker of a ROAS some of whose cohorts are not final.
    static let immatureMarker = "(open)"

    /// What the marker means, wherever a ROAS is shown.
    static let immatureLegend =
        "(open): at least one cohort behind the ROAS is not final yet (cohort_status open, window-1-final or "
        + "window-2-final), so its return can still grow as later postbacks come, up to 41 days after the install. "
        + "Unmarked: every cohort behind it is final."

    /// A ROAS as the page shows it: `0.82`, or `0.82 (open)` when any cohort behind it is not final.
    static func roasText(_ sum: CohortStats.ROASSum) -> String {
        let ratio = NumberFormat.ratio(sum.revenue, sum.spend)
        return sum.isFinal ? ratio : "\(ratio) \(immatureMarker)"
    }

    /// An amount per currency, currencies apart: `1,250.00 EUR · 300.00 USD`; `–` without any.
    static func amounts(_ byCurrency: [String: Money]) -> String {
        guard !byCurrency.isEmpty else { return "–" }
        return byCurrency.keys.sorted().map { "\(NumberFormat.money(byCurrency[$0]!)) \($0)" }.joined(separator: " · ")
    }

    /// CPI per spend currency: spend ÷ installs of the cohorts with spend in it.
    static func cpiText(_ stats: CohortStats) -> String {
        guard !stats.spend.isEmpty else { return "–" }
        return stats.spend.keys.sorted().map { currency in
            "\(NumberFormat.money(stats.spend[currency]!, per: stats.installsWithSpend[currency] ?? 0)) \(currency)"
        }.joined(separator: " · ")
    }

    /// ROAS of one window (0, 1, 2) per revenue currency; `–` when no cohort has one (the table of
    /// cohorts beside it says why).
    static func roasText(_ stats: CohortStats, window: Int) -> String {
        let sums = stats.roas.filter { $0.key.window == window }.sorted { $0.key < $1.key }
        guard !sums.isEmpty else { return "–" }
        if sums.count == 1 { return roasText(sums[0].value) }
        return sums.map { "\(roasText($0.value)) \($0.key.revenueCurrency)" }.joined(separator: " · ")
    }

    /// The return to date (the latest window with a ROAS) per revenue currency.
    static func latestROASText(_ stats: CohortStats) -> String {
        let latest = stats.latestROAS
        guard !latest.isEmpty else { return stats.hasSpend ? exclusionsText(stats, counted: false) : "–" }
        if latest.count == 1 { return roasText(latest[0].sum) }
        return latest.map { "\(roasText($0.sum)) \($0.currency)" }.joined(separator: " · ")
    }

    /// The modeled ROAS to date of one revenue currency (docs/modeling.md): revenue through window 3 plus
    /// the modeled null revenue, ÷ the same cohorts' spend, and its 90% interval; nil when no cohort with
    /// a ROAS in that currency has modeled columns.
    static func modeledROASText(_ stats: CohortStats, currency: String) -> (estimate: String, interval: String)? {
        guard let entry = stats.modeledROAS[currency], let ratios = entry.ratios else { return nil }
        return (
            NumberFormat.ratio(ratios.estimate, entry.spend) + (entry.isFinal ? "" : " \(immatureMarker)"),
            "\(NumberFormat.ratio(ratios.low, entry.spend))–\(NumberFormat.ratio(ratios.high, entry.spend))"
        )
    }

    /// After the cost table: the same campaigns' ROAS through window 3 beside the modeled ROAS and its
    /// interval, per revenue currency, labelled modeled; the table above and the order of its campaigns
    /// are the measured ones.
    func renderModeledROAS(_ html: inout HTMLWriter, rows: [CohortRow<CohortStats>], keys: [CampaignKey]) {
        let total = model.cohorts.total
        let currencies = total.modeledROAS.keys.sorted().filter { Self.modeledROASText(total, currency: $0) != nil }
        guard !currencies.isEmpty else { return }
        var table = FiguresTable(
            id: "table-cost-campaigns-modeled",
            caption:
                "Modeled, not measured: the same campaigns' ROAS w3 beside the modeled ROAS (the modeled value of their "
                + "null postbacks added to the revenue) and its 90% interval (docs/modeling.md); the measured figures above "
                + "are unchanged",
            columns: cohortCampaignColumns(keys)
                + currencies.flatMap { currency -> [FiguresTable.Column] in
                    [
                        .number("ROAS w3, \(currency)"), .number("ROAS, modeled, \(currency)"),
                        .number("Modeled 90% interval, \(currency)"),
                    ]
                })
        func cells(_ stats: CohortStats) -> [String] {
            currencies.flatMap { currency -> [String] in
                let measured = stats.roas[CohortStats.ROASKey(revenueCurrency: currency, window: 2)].map(Self.roasText) ?? "–"
                guard let modeled = Self.modeledROASText(stats, currency: currency) else { return [measured, "–", "–"] }
                return [measured, modeled.estimate, modeled.interval]
            }
        }
        for row in rows { table.add(cohortCampaignCells(row, keys) + cells(row.stats)) }
        table.footer = ["All campaigns", ""] + (showsCohortApp(keys) ? [""] : []) + cells(total)
        place(table, &html)
    }

    /// What the modeled columns of the cost table are.
    static let modeledROASLegend =
        "Modeled ROAS: a model, not a measurement (docs/modeling.md): revenue through window 3 plus what the null-value "
        + "model estimates the null-value postbacks were worth, ÷ the spend of the same cohorts (those with a ROAS "
        + "the model covers); 90%: that modeled revenue's interval ÷ the same spend. Campaigns are ranked and the "
        + "measured columns computed without it."

    /// Why cohorts with spend have no ROAS: `no rate for EUR→USD`, with how many when `counted`.
    static func exclusionsText(_ stats: CohortStats, counted: Bool = true) -> String {
        guard !stats.withoutROAS.isEmpty else { return "–" }
        return stats.withoutROAS.keys.sorted().map { exclusion in
            let count = stats.withoutROAS[exclusion]!
            return counted ? "\(exclusion.meaning) (\(NumberFormat.count(count)))" : exclusion.meaning
        }.joined(separator: "; ")
    }

    /// `3 final · 1 open`: the cohorts with spend by `cohort_status`, most mature first.
    static func statusText(_ stats: CohortStats) -> String {
        let statuses = CohortStatus.allCases.reversed().filter { stats.statusesWithSpend[$0] != nil }
        guard !statuses.isEmpty else { return "–" }
        return statuses.map { "\(NumberFormat.count(stats.statusesWithSpend[$0]!)) \($0.rawValue)" }.joined(separator: " · ")
    }

    // MARK: First screen

    /// Spend and CPI per spend currency, and the return to date per revenue currency, as headline cards.
    func spendCards(_ html: inout HTMLWriter) {
        let total = model.cohorts.total
        guard total.hasSpend else { return }
        for currency in total.spend.keys.sorted() {
            let installs = total.installsWithSpend[currency] ?? 0
            card(
                &html, labelled("Spend, \(currency)"), metric: "spend:\(currency)",
                value: NumberFormat.money(total.spend[currency]!), detail: "cohorts installed in the range")
            card(
                &html, labelled("CPI, \(currency)"), metric: "cpi:\(currency)",
                value: NumberFormat.money(total.spend[currency]!, per: installs),
                detail: " installs of cohorts with spend", detailMetric: "installs_with_spend:\(currency)",
                detailCount: installs)
        }
        let latest = total.latestROAS
        for entry in latest {
            card(
                &html, labelled("ROAS, \(entry.currency)"), metric: "roas:\(entry.currency)", value: Self.roasText(entry.sum),
                detail: "revenue est. through window \(entry.window + 1) ÷ spend"
                    + (entry.sum.isFinal ? "; every cohort final" : "; (open): a cohort is not final"))
        }
        if latest.isEmpty {
            card(
                &html, labelled("ROAS"), metric: "roas", value: "–", detail: Self.exclusionsText(total, counted: false))
        }
    }

    /// Under the headline: a warning per network claiming more installs than Apple signed; without
    /// spend, how to get it; cohorts left out.
    func renderSpendLines(_ html: inout HTMLWriter) {
        let cohorts = model.cohorts
        for (network, claims) in cohorts.networksClaimingMore {
            html.element("p", ["class": "warning", "role": "alert", "data-metric": "claims_warning:\(network)"]) { html in
                let signed =
                    claims.signed == 0
                    ? "Apple signed none"
                    : "Apple signed \(NumberFormat.count(claims.signed)) "
                        + "(+\(NumberFormat.percent(claims.reported - claims.signed, of: claims.signed)))"
                html.text(
                    "⚠ \(Self.networkName(network)) claims \(NumberFormat.count(claims.reported)) installs; \(signed) — see ")
                html.element("a", ["href": "#claims"], text: "What networks report and what Apple signed")
            }
        }
        if !cohorts.hasSpend {
            html.element("p", ["class": "aside", "id": "no-spend"]) { html in
                if let outside = cohorts.spendOutsideRange {
                    // Spend is joined by install date, which comes days before a postback arrives.
                    html.text(
                        "No spend for the install dates of this range; the store has spend for install dates \(outside.first) to \(outside.last): "
                    )
                    html.element("code", text: "postback report --from \(outside.first) --to \(outside.last)")
                    html.text(" shows their CPI and ROAS.")
                } else {
                    html.text("No spend for this range: import the networks' cost with ")
                    html.element("code", text: "postback spend import")
                    html.text(" to see CPI and ROAS (docs/spend.md).")
                }
            }
        }
        if !cohorts.leftOutDays.isEmpty {
            html.element("div", ["class": "notice", "role": "note"]) { html in
                html.element(
                    "p", text: "Install cohorts left out of spend, CPI and ROAS because their files could not be trusted:")
                html.element("ul") { html in
                    for (day, reason) in cohorts.leftOutDays { html.element("li", text: "\(day): \(reason)") }
                }
            }
        }
    }

    /// The first `topCampaigns` of `keys` by name, then one row summing the rest.
    func cohortRows<Stats>(
        of keys: [CampaignKey], _ stats: [CampaignKey: Stats], empty: Stats,
        adding: (inout Stats, Stats) throws -> Void
    ) rethrows -> [CohortRow<Stats>] {
        let showsApp = Set(keys.map(\.appID)).count > 1 || model.appIDs.count > 1
        var rows = keys.prefix(request.topCampaigns).map { key in
            CohortRow(
                label: key.name, network: Self.networkName(key.adNetworkID), app: showsApp ? key.appID : "", stats: stats[key]!)
        }
        let rest = keys.dropFirst(request.topCampaigns)
        if !rest.isEmpty {
            var sum = empty
            for key in rest { try adding(&sum, stats[key]!) }
            rows.append(
                CohortRow(label: "Other campaigns", network: "\(NumberFormat.count(rest.count)) campaigns", app: "", stats: sum))
        }
        return rows
    }

    /// The columns that name a campaign of the cohort table.
    func cohortCampaignColumns(_ keys: [CampaignKey]) -> [FiguresTable.Column] {
        [.text("Campaign"), .text("Ad network")] + (showsCohortApp(keys) ? [.number("App")] : [])
    }

    func cohortCampaignCells<Stats>(_ row: CohortRow<Stats>, _ keys: [CampaignKey]) -> [String] {
        [row.label, row.network] + (showsCohortApp(keys) ? [row.app] : [])
    }

    private func showsCohortApp(_ keys: [CampaignKey]) -> Bool { Set(keys.map(\.appID)).count > 1 || model.appIDs.count > 1 }

    /// The first screen's short list: campaigns with spend, best return to date first.
    func renderTopByROAS(_ html: inout HTMLWriter) {
        let keys = Array(model.cohorts.campaignsByROAS.prefix(Self.campaignsByROASShown))
        guard !keys.isEmpty else { return }
        var table = FiguresTable(
            id: "table-top-roas",
            caption:
                "Campaigns with spend by ROAS to date (the best \(keys.count)); \(Self.immatureMarker): a cohort is not final",
            columns: cohortCampaignColumns(keys) + [.number("Spend"), .number("CPI"), .number("ROAS")])
        for key in keys {
            let stats = model.cohorts.campaigns[key]!
            let row = CohortRow(label: key.name, network: Self.networkName(key.adNetworkID), app: key.appID, stats: stats)
            table.add(
                cohortCampaignCells(row, keys) + [Self.amounts(stats.spend), Self.cpiText(stats), Self.latestROASText(stats)])
        }
        place(table, &html)
    }

    /// How many campaigns the first screen lists by ROAS.
    static let campaignsByROASShown = 5

    // MARK: Sections

    func renderCostAndReturn(_ html: inout HTMLWriter) throws {
        let cohorts = model.cohorts
        guard cohorts.hasSpend else { return }
        let keys = cohorts.campaignsWithSpend
        let rows = try cohortRows(of: keys, cohorts.campaigns, empty: CohortStats()) {
            (sum: inout CohortStats, other) throws in
            try sum.add(other)
        }
        section(
            &html, id: "cost", title: "Cost and return",
            note: "By estimated install date (campaign_cohort_daily): each install date's cohort is its installs, the spend "
                + "the networks reported for that day, and the revenue its postbacks brought in windows 1, 2 and 3. CPI is "
                + "spend ÷ installs of the cohorts with spend; ROAS w2 and w3 add the windows' revenue estimates (w1, then "
                + "w1–w2, then w1–w3), the windows read as the headline's revenue to date reads them, and divide by the "
                + "spend of the same cohorts, in one currency. "
                + Self.immatureLegend + " " + Self.modeledROASLegend
        ) { html in
            var table = FiguresTable(
                id: "table-cost-campaigns",
                caption:
                    "\(keys.count > request.topCampaigns ? "The \(request.topCampaigns) of \(NumberFormat.count(keys.count))" : "All \(keys.count)") "
                    + "campaigns with spend, most installs first: ROAS by window (–: none; the next table says why)",
                columns: cohortCampaignColumns(keys) + [
                    .number("Spend"), .number("Installs"), .number("CPI"), .number("ROAS w1"), .number("ROAS w2"),
                    .number("ROAS w3"),
                ])
            func cells(_ stats: CohortStats) -> [String] {
                [
                    Self.amounts(stats.spend), NumberFormat.count(stats.installsWithSpend.values.reduce(0, +)),
                    Self.cpiText(stats),
                    Self.roasText(stats, window: 0), Self.roasText(stats, window: 1), Self.roasText(stats, window: 2),
                ]
            }
            for row in rows { table.add(cohortCampaignCells(row, keys) + cells(row.stats)) }
            table.footer = ["All campaigns", ""] + (showsCohortApp(keys) ? [""] : []) + cells(cohorts.total)
            place(table, &html)
            renderModeledROAS(&html, rows: rows, keys: keys)

            var statuses = FiguresTable(
                id: "table-cost-cohorts",
                caption: "The same campaigns' cohorts with spend: how mature (cohort_status), and why some have no ROAS",
                columns: cohortCampaignColumns(keys) + [.longText("Cohorts with spend"), .longText("Without ROAS")])
            func statusCells(_ stats: CohortStats) -> [String] {
                [Self.statusText(stats), stats.withoutROAS.isEmpty ? "–" : Self.exclusionsText(stats)]
            }
            for row in rows { statuses.add(cohortCampaignCells(row, keys) + statusCells(row.stats)) }
            statuses.footer = ["All campaigns", ""] + (showsCohortApp(keys) ? [""] : []) + statusCells(cohorts.total)
            place(statuses, &html)

            var weeks = FiguresTable(
                id: "table-cost-weeks",
                caption: "By install-date week: 7-day blocks from the range's first day (\(model.from)), not ISO weeks",
                columns: [
                    .text("Install dates"), .number("Spend"), .number("Installs"), .number("CPI"), .number("ROAS to date"),
                    .longText("Cohorts"),
                ])
            for week in cohorts.weeks.keys.sorted() {
                let stats = cohorts.weeks[week]!
                guard stats.hasSpend else { continue }
                let first = model.from.adding(days: week * 7)
                let last = min(first.adding(days: 6).daysSinceEpoch, model.to.daysSinceEpoch)
                let lastDay = model.from.adding(days: last - model.from.daysSinceEpoch)
                weeks.add([
                    first == lastDay ? first.description : "\(first) to \(lastDay)", Self.amounts(stats.spend),
                    NumberFormat.count(stats.installsWithSpend.values.reduce(0, +)), Self.cpiText(stats),
                    Self.latestROASText(stats),
                    Self.statusText(stats),
                ])
            }
            place(weeks, &html)
        }
    }

    func renderClaims(_ html: inout HTMLWriter) throws {
        let cohorts = model.cohorts
        guard cohorts.hasClaims else { return }
        let keys = cohorts.claimsByCampaign.keys.sorted { lhs, rhs in
            let (left, right) = (cohorts.claimsByCampaign[lhs]!.reported, cohorts.claimsByCampaign[rhs]!.reported)
            return left != right ? left > right : lhs < rhs
        }
        let rows = try cohortRows(of: keys, cohorts.claimsByCampaign, empty: ClaimCounts()) {
            (sum: inout ClaimCounts, other) throws in sum.add(other)
        }
        section(
            &html, id: "claims", title: "What networks report and what Apple signed",
            note: "The installs a network reports with its spend (reported_installs), beside the installs Apple signed for the "
                + "same cohorts; only cohorts with a reported figure count. The first screen warns when a network claims more "
                + "than 5% more installs than Apple signed in the range."
        ) { html in
            html.element("ul", ["class": "note"]) { html in
                for line in Self.claimsExplanation { html.element("li", text: line) }
            }
            var networks = FiguresTable(
                id: "table-claims-networks", caption: "Reported and signed installs per ad network",
                columns: [
                    .text("Ad network"), .number("Reported installs"), .number("Signed installs"), .number("Difference"),
                    .number("Difference, %"),
                ])
            func cells(_ claims: ClaimCounts) -> [String] {
                [
                    NumberFormat.count(claims.reported), NumberFormat.count(claims.signed),
                    (claims.reported > claims.signed ? "+" : "") + NumberFormat.count(claims.reported - claims.signed),
                    claims.signed == 0
                        ? "–"
                        : (claims.reported > claims.signed ? "+" : "")
                            + NumberFormat.percent(claims.reported - claims.signed, of: claims.signed),
                ]
            }
            var total = ClaimCounts()
            let sorted = cohorts.claimsByNetwork.sorted {
                $0.value.reported != $1.value.reported ? $0.value.reported > $1.value.reported : $0.key < $1.key
            }
            for (network, claims) in sorted.prefix(Self.entriesListed) {
                networks.add([Self.networkName(network)] + cells(claims))
            }
            let rest = sorted.dropFirst(Self.entriesListed)
            if !rest.isEmpty {
                var others = ClaimCounts()
                for (_, claims) in rest { others.add(claims) }
                networks.add(["Other networks (\(NumberFormat.count(rest.count)))"] + cells(others))
            }
            for (_, claims) in sorted { total.add(claims) }
            networks.footer = ["All networks"] + cells(total)
            place(networks, &html)

            var campaigns = FiguresTable(
                id: "table-claims-campaigns", caption: "Reported and signed installs per campaign",
                columns: cohortCampaignColumns(keys) + [
                    .number("Reported installs"), .number("Signed installs"), .number("Difference"), .number("Difference, %"),
                ])
            for row in rows { campaigns.add(cohortCampaignCells(row, keys) + cells(row.stats)) }
            place(campaigns, &html)
        }
    }

    /// What a developer copy can and cannot prove (docs/spend.md).
    static let claimsExplanation = [
        "Every install counted here carries Apple's signature: a network cannot add one.",
        "Apple sends the developer copy of winning postbacks only. A network that counts its non-winning postbacks, or "
            + "installs measured another way (its own fingerprinting, view-through rules, a different window), will claim "
            + "more than the copies show, and that is not fraud in itself.",
        "Dates differ: the install date here is estimated from the postback's arrival, the network's from its own records, "
            + "so compare weeks, not single days.",
        "A device that never sends a postback (offline, app deleted before the timer) is missing from both sides, so a "
            + "shortfall of copies is not a network's doing either.",
    ]
}

extension ClaimCounts {
    mutating func add(_ other: ClaimCounts) {
        reported += other.reported
        signed += other.signed
        cohorts += other.cohorts
    }
}
