/// Coarse conversion values per campaign: in each postback window, a bar split into low, medium and
/// high by their share of the campaign's coarse values in that window.
struct CoarseShareChart {
    struct Row {
        let label: String
        let sublabel: String?
        /// Postbacks by window (0–2) and level (low, medium, high).
        let counts: [[Int]]
        /// The schema labels of each window's levels, for tooltips.
        let labels: [[String]]
    }

    static let levelNames = ["low", "medium", "high"]

    let id: String
    let title: String
    let description: String
    let rows: [Row]

    func render(into html: inout HTMLWriter) {
        let layout = WindowPanelLayout(rowCount: rows.count)
        SVGChart.open(&html, id: id, height: layout.height, title: title, description: description)
        layout.drawTitles(&html)
        layout.drawTicks(&html, [(0, "0%"), (0.5, "50%"), (1, "100%")])
        layout.drawRowLabels(&html, labels: rows.map { ($0.label, $0.sublabel) })
        for (index, row) in rows.enumerated() {
            for window in 0..<3 {
                let total = row.counts[window].reduce(0, +)
                guard total > 0 else {
                    layout.drawNote(
                        &html, "–", window: window, row: index,
                        tooltip: "\(row.label) · \(WindowPanelLayout.titles[window]): no coarse values")
                    continue
                }
                let area = layout.panel(window)
                var x = area.x
                var used = 0
                for level in 0..<3 where row.counts[window][level] > 0 {
                    let count = row.counts[window][level]
                    used += count
                    // Ends are placed from the running sum, so rounding never leaves a gap or overlap.
                    let end = area.x + area.width * Double(used) / Double(total)
                    let label = row.labels[window][level]
                    SVGChart.bar(
                        &html, SVGChart.Area(x: x, y: layout.rowCenter(index) - 9, width: end - x, height: 18),
                        style: "coarse-\(level)",
                        tooltip: "\(row.label) · \(WindowPanelLayout.titles[window]) · \(Self.levelNames[level])"
                            + (label.isEmpty ? "" : " (\(label))")
                            + ": \(NumberFormat.count(count)) of \(NumberFormat.count(total)) coarse values (\(NumberFormat.percent(count, of: total)))"
                    )
                    if end - x >= 34 {
                        html.element(
                            "text",
                            [
                                "class": "in-bar coarse-text-\(level)", "x": NumberFormat.svg((x + end) / 2),
                                "y": NumberFormat.svg(layout.rowCenter(index) + 4), "text-anchor": "middle",
                            ],
                            text: NumberFormat.wholePercent(count, of: total))
                    }
                    x = end
                }
            }
        }
        SVGChart.close(&html)
    }
}
