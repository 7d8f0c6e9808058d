import Basics
import Postbacks

/// The parts every chart shares: the `<svg>` element with its accessible name, axes and grid lines,
/// and row labels. Charts are drawn in a fixed coordinate system (`width` × their height) and scale
/// with the page through the `viewBox`.
enum SVGChart {
    static let width = 760.0

    /// A rectangle in chart coordinates.
    struct Area {
        var x: Double
        var y: Double
        var width: Double
        var height: Double

        var right: Double { x + width }
        var bottom: Double { y + height }
    }

    /// Opens `<svg>` with a `<title>` and `<desc>` that name it for screen readers; close with `close`.
    static func open(_ html: inout HTMLWriter, id: String, height: Double, title: String, description: String) {
        html.open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "id": id, "class": "chart", "role": "img",
                "viewBox": "0 0 \(NumberFormat.svg(width)) \(NumberFormat.svg(height))",
                "aria-labelledby": "\(id)-title \(id)-desc",
            ])
        html.element("title", ["id": "\(id)-title"], text: title)
        html.element("desc", ["id": "\(id)-desc"], text: description)
    }

    static func close(_ html: inout HTMLWriter) { html.close("svg") }

    /// A vertical value axis on the left of `plot`, with horizontal grid lines at each tick.
    static func valueAxisLeft(_ html: inout HTMLWriter, scale: NiceScale, plot: Area, format: (Double) -> String) {
        for tick in scale.ticks {
            let y = plot.bottom - scale.position(tick, length: plot.height)
            html.empty(
                "line",
                [
                    "class": tick == 0 ? "axis" : "grid", "x1": NumberFormat.svg(plot.x), "x2": NumberFormat.svg(plot.right),
                    "y1": NumberFormat.svg(y), "y2": NumberFormat.svg(y),
                ])
            html.element(
                "text", ["class": "tick", "x": NumberFormat.svg(plot.x - 6), "y": NumberFormat.svg(y + 4), "text-anchor": "end"],
                text: format(tick))
        }
    }

    /// A horizontal value axis above `plot`, with vertical grid lines at each tick.
    static func valueAxisTop(_ html: inout HTMLWriter, scale: NiceScale, plot: Area, format: (Double) -> String) {
        for tick in scale.ticks {
            let x = plot.x + scale.position(tick, length: plot.width)
            html.empty(
                "line",
                [
                    "class": tick == 0 ? "axis" : "grid", "x1": NumberFormat.svg(x), "x2": NumberFormat.svg(x),
                    "y1": NumberFormat.svg(plot.y), "y2": NumberFormat.svg(plot.bottom),
                ])
            html.element(
                "text", ["class": "tick", "x": NumberFormat.svg(x), "y": NumberFormat.svg(plot.y - 6), "text-anchor": "middle"],
                text: format(tick))
        }
    }

    /// Day labels under `plot`, thinned out so they do not overlap.
    static func dayAxis(_ html: inout HTMLWriter, days: [UTCDay], plot: Area) {
        guard !days.isEmpty else { return }
        let slot = plot.width / Double(days.count)
        let stride = max(1, Int((52 / slot).rounded(.up)))
        for (index, day) in days.enumerated() where index % stride == 0 {
            let x = plot.x + slot * (Double(index) + 0.5)
            html.element(
                "text",
                ["class": "tick", "x": NumberFormat.svg(x), "y": NumberFormat.svg(plot.bottom + 16), "text-anchor": "middle"],
                text: NumberFormat.shortDay(day))
        }
    }

    /// A row's label, right-aligned before `x` and clipped to fit between the chart's edge and `x`,
    /// with an optional smaller second line; the full text is its tooltip.
    static func rowLabel(_ html: inout HTMLWriter, label: String, sublabel: String?, x: Double, centerY: Double) {
        // Average glyph widths of the 12 px and 10.5 px sans-serif labels, rounded up.
        let limit = Int((x - 4) / 6.9)
        let sublimit = Int((x - 4) / 6.1)
        let firstY = sublabel == nil ? centerY + 4 : centerY - 1
        html.open("text", ["class": "row-label", "x": NumberFormat.svg(x), "y": NumberFormat.svg(firstY), "text-anchor": "end"])
        html.element("title", text: sublabel.map { "\(label) (\($0))" } ?? label)
        html.text(HTMLText.clipped(label, to: limit))
        html.close("text")
        if let sublabel {
            html.element(
                "text",
                ["class": "row-sublabel", "x": NumberFormat.svg(x), "y": NumberFormat.svg(centerY + 11), "text-anchor": "end"],
                text: HTMLText.clipped(sublabel, to: sublimit, keepingAfterLast: " · "))
        }
    }

    /// A rectangle; zero and negative sizes are not drawn.
    static func bar(_ html: inout HTMLWriter, _ area: Area, style: String, tooltip: String) {
        guard area.width > 0, area.height > 0 else { return }
        html.shape(
            "rect",
            [
                "class": style, "x": NumberFormat.svg(area.x), "y": NumberFormat.svg(area.y),
                "width": NumberFormat.svg(area.width), "height": NumberFormat.svg(area.height),
            ], tooltip: tooltip)
    }
}
