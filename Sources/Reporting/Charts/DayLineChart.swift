import Basics
import Postbacks

/// A share per day, one line per series: `part` of `whole` (e.g. null values of winning postbacks).
/// A day where a series has nothing to divide by has no point, and the line breaks there.
struct DayLineChart {
    struct Point {
        let part: Int
        let whole: Int
    }

    struct Series {
        let name: String
        /// CSS class of the series' colour (stroke and marker).
        let style: String
        /// One entry per day of `days`; nil where there is nothing to divide by.
        let points: [Point?]
        let isDashed: Bool
    }

    let id: String
    let title: String
    let description: String
    let days: [UTCDay]
    let series: [Series]
    /// How a point's tooltip names its parts: "null values of", "winning postbacks".
    let partNoun: String
    let wholeNoun: String

    private static let height = 270.0

    func render(into html: inout HTMLWriter) {
        let plot = SVGChart.Area(x: 60, y: 22, width: SVGChart.width - 60 - 16, height: Self.height - 22 - 40)
        var largest = 0.0
        for entry in series {
            for case let point? in entry.points { largest = max(largest, NumberFormat.ratio(point.part, of: point.whole) * 100) }
        }
        let scale = NiceScale(covering: min(100, max(5, largest)), tickCount: 5, integral: false)
        SVGChart.open(&html, id: id, height: Self.height, title: title, description: description)
        SVGChart.valueAxisLeft(&html, scale: scale, plot: plot) {
            NumberFormat.tick($0, fractionDigits: scale.fractionDigits) + "%"
        }
        let slot = plot.width / Double(max(1, days.count))
        func position(_ index: Int, _ point: Point) -> (Double, Double) {
            (
                plot.x + slot * (Double(index) + 0.5),
                plot.bottom - scale.position(NumberFormat.ratio(point.part, of: point.whole) * 100, length: plot.height)
            )
        }
        for entry in series {
            var path = ""
            var penDown = false
            for (index, point) in entry.points.enumerated() {
                guard let point else {
                    penDown = false
                    continue
                }
                let (x, y) = position(index, point)
                path += (penDown ? " L" : (path.isEmpty ? "M" : " M")) + NumberFormat.svg(x) + " " + NumberFormat.svg(y)
                penDown = true
            }
            if !path.isEmpty {
                html.empty("path", ["class": "line \(entry.style)\(entry.isDashed ? " dashed" : "")", "d": path])
            }
            for (index, point) in entry.points.enumerated() {
                guard let point else { continue }
                let (x, y) = position(index, point)
                html.shape(
                    "circle",
                    ["class": "marker \(entry.style)", "cx": NumberFormat.svg(x), "cy": NumberFormat.svg(y), "r": "3.5"],
                    tooltip:
                        "\(NumberFormat.longDay(days[index])) · \(entry.name): \(NumberFormat.percent(point.part, of: point.whole)) "
                        + "(\(NumberFormat.count(point.part)) \(partNoun) \(NumberFormat.count(point.whole)) \(wholeNoun))")
            }
        }
        SVGChart.dayAxis(&html, days: days, plot: plot)
        SVGChart.close(&html)
    }
}
