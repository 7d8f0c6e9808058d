/// A chart's key, as an HTML list above it: swatch and name per series. HTML rather than SVG so long
/// names wrap instead of running off the chart.
enum Legend {
    static func render(_ entries: [(style: String, name: String)], into html: inout HTMLWriter, isLine: Bool = false) {
        guard !entries.isEmpty else { return }
        html.element("ul", ["class": "legend"]) { html in
            for entry in entries {
                html.element("li") { html in
                    html.element(
                        "span", ["class": "\(isLine ? "swatch-line" : "swatch") \(entry.style)", "aria-hidden": "true"], text: "")
                    html.text(entry.name)
                }
            }
        }
    }
}
