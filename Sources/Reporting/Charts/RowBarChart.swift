/// One horizontal bar per row, its value written at its end: counts by reason, shares by network.
struct RowBarChart {
    struct Row {
        let label: String
        let sublabel: String?
        let value: Double
        /// The value as written next to the bar.
        let valueText: String
        let tooltip: String
        let style: String
    }

    let id: String
    let title: String
    let description: String
    let rows: [Row]
    /// Percentages (0–100) rather than counts.
    let isPercent: Bool
    /// Room for long labels (rejection reasons).
    let hasWideLabels: Bool

    init(id: String, title: String, description: String, rows: [Row], isPercent: Bool, hasWideLabels: Bool = false) {
        self.id = id
        self.title = title
        self.description = description
        self.rows = rows
        self.isPercent = isPercent
        self.hasWideLabels = hasWideLabels
    }

    func render(into html: inout HTMLWriter) {
        let rowHeight = rows.contains { $0.sublabel != nil } ? 32.0 : 24.0
        let labelWidth = hasWideLabels ? 320.0 : 220.0
        let plot = SVGChart.Area(
            x: labelWidth, y: 24, width: SVGChart.width - labelWidth - 64, height: rowHeight * Double(rows.count))
        let largest = rows.map(\.value).max() ?? 0
        let scale =
            isPercent
            ? NiceScale(covering: min(100, max(5, largest)), tickCount: 4, integral: false)
            : NiceScale(covering: largest, tickCount: 4)
        SVGChart.open(&html, id: id, height: plot.bottom + 8, title: title, description: description)
        SVGChart.valueAxisTop(&html, scale: scale, plot: plot) { value in
            NumberFormat.tick(value, fractionDigits: scale.fractionDigits) + (isPercent ? "%" : "")
        }
        for (index, row) in rows.enumerated() {
            let top = plot.y + rowHeight * Double(index)
            let center = top + rowHeight / 2
            SVGChart.rowLabel(&html, label: row.label, sublabel: row.sublabel, x: labelWidth - 8, centerY: center)
            let length = scale.position(row.value, length: plot.width)
            SVGChart.bar(
                &html, SVGChart.Area(x: plot.x, y: center - 8, width: length, height: 16), style: row.style, tooltip: row.tooltip)
            html.element(
                "text", ["class": "value-label", "x": NumberFormat.svg(plot.x + length + 5), "y": NumberFormat.svg(center + 4)],
                text: row.valueText)
        }
        SVGChart.close(&html)
    }
}
