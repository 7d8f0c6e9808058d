import AggregateSchema

/// Revenue per campaign in one currency: in each postback window, a bar to the estimate and a line
/// over the min–max range (an arrow when the range has no upper bound). Postbacks whose value is
/// unknown add nothing here; the tooltip and the table count them.
struct RevenueRangeChart {
    struct Row {
        let label: String
        let sublabel: String?
        /// One per window (0–2); nil or empty where the campaign has no postbacks in that window.
        let cells: [RevenueSum?]
    }

    let id: String
    let title: String
    let description: String
    let currency: String
    let rows: [Row]

    func render(into html: inout HTMLWriter) {
        let layout = WindowPanelLayout(rowCount: rows.count)
        var largest = 0.0
        for row in rows {
            for case let cell? in row.cells where cell.valuedPostbacks > 0 {
                largest = max(
                    largest, Self.amount(cell.estimate), Self.amount(cell.maximum ?? cell.estimate), Self.amount(cell.minimum))
            }
        }
        let scale = NiceScale(covering: largest, tickCount: 2, integral: false)
        SVGChart.open(&html, id: id, height: layout.height, title: title, description: description)
        layout.drawTitles(&html)
        layout.drawTicks(
            &html,
            scale.ticks.map { (scale.position($0, length: 1), NumberFormat.tick($0, fractionDigits: scale.fractionDigits)) })
        layout.drawRowLabels(&html, labels: rows.map { ($0.label, $0.sublabel) })
        for (index, row) in rows.enumerated() {
            for window in 0..<3 {
                let place = "\(row.label) · \(WindowPanelLayout.titles[window])"
                guard let cell = row.cells[window], !cell.isEmpty else {
                    layout.drawNote(&html, "–", window: window, row: index, tooltip: "\(place): no postbacks with a value")
                    continue
                }
                let unknown =
                    cell.unknownPostbacks > 0
                    ? "; \(NumberFormat.count(cell.unknownPostbacks)) more with an unknown value (withheld or undecoded: not counted as zero)"
                    : ""
                guard cell.valuedPostbacks > 0 else {
                    layout.drawNote(&html, "unknown", window: window, row: index, tooltip: "\(place): no decoded value\(unknown)")
                    continue
                }
                drawCell(
                    &html, cell, area: layout.panel(window), centerY: layout.rowCenter(index), scale: scale,
                    tooltip: "\(place): \(cell.isLowerBound ? "" : "estimate ")\(cell.shownEstimate) \(currency), "
                        + "\(cell.isLowerBound ? "no upper bound" : "range \(cell.shownRange) \(currency)"), "
                        + "from \(NumberFormat.count(cell.valuedPostbacks)) postbacks with a decoded value\(unknown)")
            }
        }
        SVGChart.close(&html)
    }

    private func drawCell(
        _ html: inout HTMLWriter, _ cell: RevenueSum, area: SVGChart.Area, centerY: Double, scale: NiceScale, tooltip: String
    ) {
        let estimate = area.x + scale.position(Self.amount(cell.estimate), length: area.width)
        let low = area.x + scale.position(Self.amount(cell.minimum), length: area.width)
        let high = cell.maximum.map { area.x + scale.position(Self.amount($0), length: area.width) } ?? area.right
        html.open("g", ["class": "revenue-cell"])
        html.element("title", text: tooltip)
        html.empty(
            "rect",
            [
                "class": "estimate", "x": NumberFormat.svg(area.x), "y": NumberFormat.svg(centerY - 7),
                "width": NumberFormat.svg(max(1, estimate - area.x)), "height": "14",
            ])
        let y = NumberFormat.svg(centerY)
        html.empty("line", ["class": "range", "x1": NumberFormat.svg(low), "x2": NumberFormat.svg(high), "y1": y, "y2": y])
        html.empty(
            "line",
            [
                "class": "range", "x1": NumberFormat.svg(low), "x2": NumberFormat.svg(low),
                "y1": NumberFormat.svg(centerY - 6), "y2": NumberFormat.svg(centerY + 6),
            ])
        if cell.maximum != nil {
            html.empty(
                "line",
                [
                    "class": "range", "x1": NumberFormat.svg(high), "x2": NumberFormat.svg(high),
                    "y1": NumberFormat.svg(centerY - 6), "y2": NumberFormat.svg(centerY + 6),
                ])
        } else {
            let tip = NumberFormat.svg(high)
            html.empty(
                "polygon",
                [
                    "class": "range-arrow",
                    "points":
                        "\(NumberFormat.svg(high - 7)),\(NumberFormat.svg(centerY - 5)) \(tip),\(y) \(NumberFormat.svg(high - 7)),\(NumberFormat.svg(centerY + 5))",
                ])
        }
        html.close("g")
    }

    /// An amount in currency units, for drawing only (figures are written from the exact `Money`).
    private static func amount(_ money: Money) -> Double { Double(money.micros) / 1_000_000 }
}
