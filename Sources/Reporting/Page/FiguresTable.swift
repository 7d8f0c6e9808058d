/// The exact figures behind a chart, as a plain table beside it: what a reader copies into a
/// spreadsheet and what a screen reader reads. The first column heads each row.
struct FiguresTable {
    struct Column {
        let title: String
        /// CSS classes of the column's cells: `n` right-aligned numbers, `t` text, `t wrap` long text.
        let style: String

        static func text(_ title: String) -> Column { Column(title: title, style: "t") }
        /// Text that may be long (reasons, labels): wraps instead of widening the table.
        static func longText(_ title: String) -> Column { Column(title: title, style: "t wrap") }
        static func number(_ title: String) -> Column { Column(title: title, style: "n") }
        /// A name or identifier in a wide table: wraps, but keeps room for a word or two per line.
        static func name(_ title: String) -> Column { Column(title: title, style: "t name") }
        /// A short composite like `L 33% · M 50% · H 17%`: wraps between its parts.
        static func mix(_ title: String) -> Column { Column(title: title, style: "t mix") }
    }

    let id: String
    let caption: String
    let columns: [Column]
    var rows: [[String]] = []
    /// A last row set apart (totals).
    var footer: [String]? = nil

    init(id: String, caption: String, columns: [Column]) {
        self.id = id
        self.caption = caption
        self.columns = columns
    }

    mutating func add(_ cells: [String]) {
        precondition(cells.count == columns.count, "a row of \(id) has \(cells.count) cells for \(columns.count) columns")
        rows.append(cells)
    }

    func render(into html: inout HTMLWriter) {
        html.element("div", ["class": "figures", "tabindex": "0", "role": "region", "aria-label": caption]) { html in
            html.element("table", ["id": id]) { html in
                html.element("caption", text: caption)
                html.element("thead") { html in
                    html.element("tr") { html in
                        for column in columns {
                            html.element("th", ["scope": "col", "class": column.style], text: column.title)
                        }
                    }
                }
                html.element("tbody") { html in
                    if rows.isEmpty {
                        html.element("tr") { html in
                            html.element("td", ["colspan": String(columns.count), "class": "none"], text: "No data")
                        }
                    }
                    for row in rows { renderRow(row, into: &html) }
                }
                if let footer {
                    html.element("tfoot") { html in renderRow(footer, into: &html) }
                }
            }
        }
    }

    private func renderRow(_ cells: [String], into html: inout HTMLWriter) {
        html.element("tr") { html in
            for (index, cell) in cells.enumerated() {
                let style = columns[index].style
                if index == 0 {
                    html.element("th", ["scope": "row", "class": style], text: cell)
                } else {
                    html.element("td", ["class": style], text: cell)
                }
            }
        }
    }
}
