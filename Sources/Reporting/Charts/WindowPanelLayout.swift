/// Rows of campaigns against three side-by-side panels, one per postback window (sequence index
/// 0, 1, 2), so windows are compared but never added (their values may overlap).
struct WindowPanelLayout {
    static let labelWidth = 210.0
    static let gap = 16.0
    static let headerHeight = 44.0
    static let titles = ["Postback 1 · days 0–2", "Postback 2 · days 3–7", "Postback 3 · days 8–35"]

    let rowCount: Int
    let rowHeight = 34.0

    var height: Double { Self.headerHeight + rowHeight * Double(rowCount) + 6 }

    var panelWidth: Double { (SVGChart.width - Self.labelWidth - 2 * Self.gap - 4) / 3 }

    /// The plotting area of window `window`, over every row.
    func panel(_ window: Int) -> SVGChart.Area {
        SVGChart.Area(
            x: Self.labelWidth + Double(window) * (panelWidth + Self.gap), y: Self.headerHeight,
            width: panelWidth, height: rowHeight * Double(rowCount))
    }

    func rowCenter(_ row: Int) -> Double { Self.headerHeight + rowHeight * (Double(row) + 0.5) }

    /// Each panel's title above its ticks.
    func drawTitles(_ html: inout HTMLWriter) {
        for window in 0..<3 {
            let area = panel(window)
            html.element(
                "text",
                ["class": "panel-title", "x": NumberFormat.svg(area.x + area.width / 2), "y": "14", "text-anchor": "middle"],
                text: Self.titles[window])
        }
    }

    /// Vertical grid lines through every panel at `ticks` (fractions of the panel's width), labelled
    /// above; the first is the axis.
    func drawTicks(_ html: inout HTMLWriter, _ ticks: [(fraction: Double, label: String)]) {
        for window in 0..<3 {
            let area = panel(window)
            for (index, tick) in ticks.enumerated() {
                let x = area.x + area.width * tick.fraction
                html.empty(
                    "line",
                    [
                        "class": index == 0 ? "axis" : "grid", "x1": NumberFormat.svg(x), "x2": NumberFormat.svg(x),
                        "y1": NumberFormat.svg(area.y), "y2": NumberFormat.svg(area.bottom),
                    ])
                html.element(
                    "text",
                    [
                        "class": "tick", "x": NumberFormat.svg(x), "y": NumberFormat.svg(area.y - 6),
                        "text-anchor": tick.fraction == 0 ? "start" : tick.fraction >= 1 ? "end" : "middle",
                    ], text: tick.label)
            }
        }
    }

    /// Row labels and the thin lines between rows.
    func drawRowLabels(_ html: inout HTMLWriter, labels: [(label: String, sublabel: String?)]) {
        for (index, entry) in labels.enumerated() {
            SVGChart.rowLabel(
                &html, label: entry.label, sublabel: entry.sublabel, x: Self.labelWidth - 10, centerY: rowCenter(index))
            if index > 0 {
                let y = Self.headerHeight + rowHeight * Double(index)
                html.empty(
                    "line",
                    [
                        "class": "row-rule", "x1": "8", "x2": NumberFormat.svg(SVGChart.width - 4),
                        "y1": NumberFormat.svg(y), "y2": NumberFormat.svg(y),
                    ])
            }
        }
    }

    /// A short grey note centred in a cell that has nothing to draw.
    func drawNote(_ html: inout HTMLWriter, _ text: String, window: Int, row: Int, tooltip: String) {
        let area = panel(window)
        html.open(
            "text",
            [
                "class": "cell-note", "x": NumberFormat.svg(area.x + area.width / 2), "y": NumberFormat.svg(rowCenter(row) + 4),
                "text-anchor": "middle",
            ])
        html.element("title", text: tooltip)
        html.text(text)
        html.close("text")
    }
}
