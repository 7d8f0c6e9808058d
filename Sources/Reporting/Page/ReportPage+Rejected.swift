/// Rejected records by reason, status and claimed ad network, and development postbacks: everything
/// the headline leaves out.
extension ReportPage {
    static let reasonsCharted = 15
    /// Rows of the reasons table before the rest are summed in one.
    static let reasonRowsListed = 30

    func renderRejected(_ html: inout HTMLWriter) {
        section(
            &html, id: "rejected", title: "Rejected postbacks, and development postbacks by network",
            note: "Rejected records are what the receiver did not accept as verified postbacks: bad signatures, malformed "
                + "bodies, unknown keys, ad networks not configured. Every delivery counts (their identifiers cannot be "
                + "trusted, so they are not deduplicated), and their fields are whatever the sender claimed. Reasons come "
                + "from the day manifests, which list each day's 50 most frequent. Development postbacks (Apple's development "
                + "keys, test keys, SKAdNetwork test mode) are verified but never production. Neither is in the headline."
        ) { html in
            // Reasons that quote a claimed value are grouped by their template, the value in a column of its own.
            var byTemplate: [String: Int] = [:]
            var byTemplateAndValue: [ReasonTemplate: Int] = [:]
            for (reason, count) in model.rejectedReasons {
                let split = ReasonTemplate(reason)
                byTemplate[split.template, default: 0] += count
                byTemplateAndValue[split, default: 0] += count
            }
            let reasons = Self.byCount(byTemplate)
            let total = model.rejectedPostbacks
            var table = FiguresTable(
                id: "table-rejected-reasons", caption: "Rejected records by reason and the value it names",
                columns: [.longText("Reason"), .longText("Value"), .number("Records"), .number("Share")])
            var unshown = (rows: 0, records: 0)
            for (template, _) in reasons {
                let values = byTemplateAndValue.filter { $0.key.template == template }
                    .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key.value < $1.key.value }
                for (split, count) in values {
                    guard table.rows.count < Self.reasonRowsListed else {
                        unshown.rows += 1
                        unshown.records += count
                        continue
                    }
                    table.add([template, split.value, NumberFormat.count(count), NumberFormat.percent(count, of: total)])
                }
            }
            if unshown.rows > 0 {
                table.add([
                    "Other reasons and values (\(NumberFormat.count(unshown.rows)))", "", NumberFormat.count(unshown.records),
                    NumberFormat.percent(unshown.records, of: total),
                ])
            }
            if model.rejectedUnlisted > 0 {
                table.add([
                    Self.unlistedReasons, "", NumberFormat.count(model.rejectedUnlisted),
                    NumberFormat.percent(model.rejectedUnlisted, of: total),
                ])
            }
            table.footer = ["Total", "", NumberFormat.count(total), total > 0 ? "100.0%" : "–"]

            var rows = reasons.prefix(Self.reasonsCharted).map { reason, count in
                RowBarChart.Row(
                    label: reason, sublabel: nil, value: Double(count), valueText: NumberFormat.count(count),
                    tooltip: "\(reason): \(NumberFormat.count(count)) records (\(NumberFormat.percent(count, of: total)))",
                    style: "bar-reason")
            }
            let uncharted = reasons.dropFirst(Self.reasonsCharted).reduce(0) { $0 + $1.value } + model.rejectedUnlisted
            if uncharted > 0 {
                rows.append(
                    RowBarChart.Row(
                        label: reasons.count > Self.reasonsCharted ? "Other reasons" : Self.unlistedReasons, sublabel: nil,
                        value: Double(uncharted), valueText: NumberFormat.count(uncharted),
                        tooltip: "Other reasons: \(NumberFormat.count(uncharted)) records", style: "bar-reason"))
            }
            html.element("h3", text: "Rejected by reason")
            panel(
                &html,
                chart: { html in
                    guard total > 0 else {
                        emptyState(&html, "No rejected records in this range.")
                        return
                    }
                    RowBarChart(
                        id: "chart-rejected-reasons", title: "Rejected records by reason",
                        description:
                            "Horizontal bars, one per rejection reason, longest first; \(NumberFormat.count(total)) records in all.",
                        rows: rows, isPercent: false, hasWideLabels: true
                    ).render(into: &html)
                }, table: table)

            html.element("h3", text: "Rejected by status and claimed ad network; development by ad network")
            html.element("div", ["class": "panel"]) { html in
                var statuses = FiguresTable(
                    id: "table-rejected-status", caption: "Rejected records by verification status",
                    columns: [.text("Status"), .number("Records")])
                for status in model.rejectedByStatus.keys.sorted() {
                    statuses.add([status, NumberFormat.count(model.rejectedByStatus[status]!)])
                }
                place(statuses, &html)
                var claimed = FiguresTable(
                    id: "table-rejected-networks", caption: "Rejected records by the ad network they claim",
                    columns: [.longText("Claimed ad network"), .number("Records")])
                for (network, count) in Self.topEntries(
                    model.rejectedByClaimedNetwork, limit: Self.entriesListed, others: "Other claimed networks")
                {
                    claimed.add([network.isEmpty ? "(not parsed)" : network, NumberFormat.count(count)])
                }
                place(claimed, &html)
            }
            if !model.quarantined.isEmpty {
                html.element("h3", text: "Quarantined: not counted until a release can check or read them")
                var quarantine = FiguresTable(
                    id: "table-quarantined", caption: "Quarantined postbacks by reason and the value that keeps them out",
                    columns: [.text("Reason"), .text("Field"), .longText("Value as sent"), .number("Postbacks")])
                let listed = Self.byCount(model.quarantined)
                for (key, count) in listed.prefix(Self.entriesListed) {
                    let parts = key.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
                    quarantine.add([parts[0], parts[1], parts[2], NumberFormat.count(count)])
                }
                let rest = listed.dropFirst(Self.entriesListed)
                if !rest.isEmpty {
                    quarantine.add([
                        "Other reasons and values (\(NumberFormat.count(rest.count)))", "", "",
                        NumberFormat.count(rest.reduce(0) { $0 + $1.value }),
                    ])
                }
                place(quarantine, &html)
            }
            html.element("div", ["class": "panel"]) { html in
                var development = FiguresTable(
                    id: "table-development", caption: "Development postbacks by ad network",
                    columns: [.text("Ad network"), .number("Postbacks")])
                for (network, count) in Self.topEntries(
                    model.developmentByNetwork, limit: Self.entriesListed, others: "Other networks")
                {
                    development.add([
                        model.developmentByNetwork[network] == nil ? network : Self.networkName(network),
                        NumberFormat.count(count),
                    ])
                }
                development.footer = ["Total", NumberFormat.count(model.developmentPostbacks)]
                place(development, &html)
            }
        }
    }

    static let unlistedReasons = "(reasons not listed in the manifests)"

    /// Entries with the largest count first, then by key.
    static func byCount(_ counts: [String: Int]) -> [(key: String, value: Int)] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }
}
