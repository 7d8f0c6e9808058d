/// Fine conversion values (0–63) per campaign as a heat map: one row per campaign, one cell per
/// value, shaded by the value's share of the campaign's fine values, so campaigns of different
/// sizes compare. The shading uses fixed bins (the legend lists them), never a scale that shifts
/// with the data.
struct FineValueHeatmap {
    struct Row {
        let label: String
        let sublabel: String?
        /// Postbacks by fine value.
        let counts: [Int]
        /// The schema labels of each value, for tooltips.
        let labels: [Int: String]
    }

    /// Upper bounds of the shading bins in tenths of a percent: (0, 1%], (1%, 2.5%], … (20%, 100%].
    static let binUpperPermille = [10, 25, 50, 100, 200, 1000]
    static let binLegends = ["up to 1%", "1–2.5%", "2.5–5%", "5–10%", "10–20%", "over 20%"]

    let id: String
    let title: String
    let description: String
    let rows: [Row]
    /// What a row's counts are, in tooltips ("development fine values" in the development section).
    var valuesNoun = "fine values"

    private static let cellWidth = 8.0
    private static let rowHeight = 30.0
    private static let top = 26.0

    func render(into html: inout HTMLWriter) {
        let left = 200.0
        let height = Self.top + Self.rowHeight * Double(rows.count) + 6
        SVGChart.open(&html, id: id, height: height, title: title, description: description)
        for value in [0, 8, 16, 24, 32, 40, 48, 56, 63] {
            html.element(
                "text",
                [
                    "class": "tick", "x": NumberFormat.svg(left + Self.cellWidth * (Double(value) + 0.5)), "y": "16",
                    "text-anchor": "middle",
                ], text: String(value))
        }
        html.element("text", ["class": "tick", "x": NumberFormat.svg(left + 64 * Self.cellWidth + 8), "y": "16"], text: "n")
        for (index, row) in rows.enumerated() {
            let y = Self.top + Self.rowHeight * Double(index)
            let center = y + Self.rowHeight / 2
            SVGChart.rowLabel(&html, label: row.label, sublabel: row.sublabel, x: left - 8, centerY: center)
            let total = row.counts.reduce(0, +)
            html.empty(
                "rect",
                [
                    "class": "heat-0", "x": NumberFormat.svg(left), "y": NumberFormat.svg(y + 3),
                    "width": NumberFormat.svg(64 * Self.cellWidth), "height": NumberFormat.svg(Self.rowHeight - 6),
                ])
            for (value, count) in row.counts.enumerated() where count > 0 {
                let bin = Self.bin(count, of: total)
                let label = row.labels[value].map { " (\($0))" } ?? ""
                SVGChart.bar(
                    &html,
                    SVGChart.Area(
                        x: left + Self.cellWidth * Double(value), y: y + 3, width: Self.cellWidth - 1, height: Self.rowHeight - 6),
                    style: "heat-\(bin + 1)",
                    tooltip: "\(row.label) · fine value \(value)\(label): \(NumberFormat.count(count)) of "
                        + "\(NumberFormat.count(total)) \(valuesNoun) (\(NumberFormat.percent(count, of: total)))")
            }
            html.element(
                "text",
                [
                    "class": "value-label", "x": NumberFormat.svg(left + 64 * Self.cellWidth + 8),
                    "y": NumberFormat.svg(center + 4),
                ],
                text: NumberFormat.count(total))
        }
        SVGChart.close(&html)
    }

    /// The shading bin (0-based) of `count` out of `total`, in exact integer arithmetic.
    static func bin(_ count: Int, of total: Int) -> Int {
        for (index, upper) in binUpperPermille.enumerated() where count * 1000 <= total * upper { return index }
        return binUpperPermille.count - 1
    }
}
