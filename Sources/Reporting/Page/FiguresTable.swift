/// The exact figures behind a chart, as a plain table beside it: what a reader copies into a
/// spreadsheet and what a screen reader reads. The first column heads each row.
struct FiguresTable {
    struct Column {
        let title: String
        /// CSS classes of the column's cells: `n` right-aligned numbers, `t` text, `t wrap` long text,
        /// `t name` names.
        let style: String

        /// A short text or identifier (a day, an ad network): on one line, shortened past
        /// `longestCell` characters with the full text in its tooltip.
        static func text(_ title: String) -> Column { Column(title: title, style: "t") }
        /// Text that may be long (reasons, labels): wraps between words instead of widening the table.
        static func longText(_ title: String) -> Column { Column(title: title, style: "t wrap") }
        /// A figure: right-aligned, never wrapped.
        static func number(_ title: String) -> Column { Column(title: title, style: "n") }
        /// A name or identifier (a campaign, an ad network): on one line, shortened like `text`.
        static func name(_ title: String) -> Column { Column(title: title, style: "t name") }

        /// Long text wraps; everything else stays on one line and is shortened instead.
        var wraps: Bool { style.hasSuffix("wrap") }
    }

    /// Cells of one-line columns longer than this are shortened, the full text kept in `title`, so a
    /// long campaign or network name neither wraps inside itself nor widens its table off the page.
    static let longestCell = 32
    /// A word of a column heading longer than this is shortened the same way (headings wrap between words).
    static let longestHeadingWord = 14

    let id: String
    var caption: String
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
                        let headings = Self.distinctHeadings(columns.map(\.title))
                        for (column, shown) in zip(columns, headings) {
                            if shown == column.title {
                                html.element("th", ["scope": "col", "class": column.style], text: shown)
                            } else {
                                html.element("th", ["scope": "col", "class": column.style, "title": column.title], text: shown)
                            }
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
                let column = columns[index]
                let shown = column.wraps ? cell : Self.shortened(cell, to: Self.longestCell)
                switch (index == 0, shown == cell) {
                case (true, true): html.element("th", ["scope": "row", "class": column.style], text: cell)
                case (true, false): html.element("th", ["scope": "row", "class": column.style, "title": cell], text: shown)
                case (false, true): html.element("td", ["class": column.style], text: cell)
                case (false, false): html.element("td", ["class": column.style, "title": cell], text: shown)
                }
            }
        }
    }

    /// `text` cut to `limit` characters, the last one an ellipsis.
    static func shortened(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    /// The headings as shown: each word over `longestHeadingWord` characters shortened, so that two
    /// different long words never look the same. Words that would shorten alike
    /// (`demo-network-a.skadnetwork`, `demo-network-b.skadnetwork`) drop the start they share instead
    /// of their end (`…a.skadnetwork`, `…b.skadnetwork`); the full heading stays in the tooltip.
    static func distinctHeadings(_ titles: [String]) -> [String] {
        let long = Set(titles.flatMap { $0.split(separator: " ").map(String.init) }.filter { $0.count > longestHeadingWord })
        let shown = distinctShortenings(of: long.sorted())
        return titles.map { title in
            guard title.split(separator: " ").contains(where: { $0.count > longestHeadingWord }) else { return title }
            return title.split(separator: " ", omittingEmptySubsequences: false).map { shown[String($0)] ?? String($0) }
                .joined(separator: " ")
        }
    }

    /// A different short form (at most `longestHeadingWord` characters) for each of `words`: the
    /// word's start, or, for words whose starts are the same, what follows the start they share.
    static func distinctShortenings(of words: [String]) -> [String: String] {
        var shown = Dictionary(uniqueKeysWithValues: words.map { ($0, shortened($0, to: longestHeadingWord)) })
        // Each pass splits every group of look-alikes after a longer shared start; a word's own length bounds the passes.
        for _ in 0..<(words.map(\.count).max() ?? 0) {
            let groups = Dictionary(grouping: words) { shown[$0]! }.values.filter { $0.count > 1 }
            guard !groups.isEmpty else { return shown }
            for group in groups {
                let shared = group.dropFirst().reduce(group[0].count) { length, word in
                    min(length, zip(group[0], word).prefix { $0 == $1 }.count)
                }
                for word in group {
                    shown[word] = "…" + shortened(String(word.dropFirst(shared)), to: longestHeadingWord - 1)
                }
            }
        }
        // Never two headings alike: words that still look alike are shown whole.
        let alike = Dictionary(grouping: words) { shown[$0]! }.values.filter { $0.count > 1 }.joined()
        for word in alike { shown[word] = word }
        return shown
    }
}
