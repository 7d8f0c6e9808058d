import Basics
import Postbacks

/// Columns per day, stacked by series (ad networks): a count over time and who contributed it.
/// Days without aggregates are shaded and say so, so that a gap is not read as zero.
struct DayColumnChart {
    struct Series {
        let name: String
        /// CSS class of the series' colour.
        let style: String
        /// One value per day of `days`.
        let values: [Int]
    }

    let id: String
    let title: String
    let description: String
    let days: [UTCDay]
    let unavailable: Set<UTCDay>
    let series: [Series]
    /// What is counted, plural: "postbacks".
    let noun: String

    private static let height = 290.0

    func render(into html: inout HTMLWriter) {
        let plot = SVGChart.Area(x: 60, y: 22, width: SVGChart.width - 60 - 12, height: Self.height - 22 - 40)
        let totals = days.indices.map { index in series.reduce(0) { $0 + $1.values[index] } }
        let scale = NiceScale(covering: Double(totals.max() ?? 0))
        SVGChart.open(&html, id: id, height: Self.height, title: title, description: description)
        SVGChart.valueAxisLeft(&html, scale: scale, plot: plot) { NumberFormat.tick($0) }
        let slot = plot.width / Double(max(1, days.count))
        let barWidth = min(56, max(1, slot * 0.72))
        let showTotals = days.count <= 20
        for (index, day) in days.enumerated() {
            let x = plot.x + slot * Double(index) + (slot - barWidth) / 2
            if unavailable.contains(day) {
                SVGChart.bar(
                    &html, SVGChart.Area(x: x, y: plot.y, width: barWidth, height: plot.height), style: "unavailable",
                    tooltip: "\(NumberFormat.longDay(day)): no aggregates for this day")
                continue
            }
            var top = plot.bottom
            for entry in series where entry.values[index] > 0 {
                let height = scale.position(Double(entry.values[index]), length: plot.height)
                top -= height
                SVGChart.bar(
                    &html, SVGChart.Area(x: x, y: top, width: barWidth, height: height), style: entry.style,
                    tooltip: "\(NumberFormat.longDay(day)) · \(entry.name): \(NumberFormat.count(entry.values[index])) \(noun)")
            }
            if showTotals, totals[index] > 0 {
                html.element(
                    "text",
                    [
                        "class": "value-label", "x": NumberFormat.svg(x + barWidth / 2), "y": NumberFormat.svg(top - 4),
                        "text-anchor": "middle",
                    ], text: NumberFormat.count(totals[index]))
            }
        }
        SVGChart.dayAxis(&html, days: days, plot: plot)
        SVGChart.close(&html)
    }
}
