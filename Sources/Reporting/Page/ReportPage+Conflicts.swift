/// Copies that disagree: duplicates of stored postbacks whose unsigned values (conversion
/// value, coarse value, country, interaction type) differ from the stored copy's, by ad network and
/// field. The stored (first) copy is what every other section counts.
extension ReportPage {
    func renderConflicts(_ html: inout HTMLWriter) {
        let conflicts = model.conflicts
        section(
            &html, id: "conflicts", title: "Copies that disagree",
            note: "A copy of a postback already stored (the same signed identifier and window) that came with other "
                + "unsigned values: the conversion value, coarse value, country and interaction type are not signed, so a "
                + "relay or anyone replaying a genuine postback can change them. The first copy stored is the one counted "
                + "everywhere on this page and is never changed; the receiver keeps the disagreement as evidence (route, "
                + "client, both values). From the day manifests; a copy that disagreed on two fields is in two rows."
        ) { html in
            guard conflicts.copies > 0 || !conflicts.byNetworkAndField.isEmpty else {
                html.element("p", ["class": "note"], text: "No copy disagreed with the stored one in this range.")
                return
            }
            var table = FiguresTable(
                id: "table-conflicts", caption: "Copies that disagree with the stored copy, by ad network and field",
                columns: [.text("Ad network"), .text("Field"), .number("Copies")])
            let rows = conflicts.rows
            for (key, count) in rows.prefix(Self.entriesListed) {
                table.add([Self.networkName(key.network), key.field, NumberFormat.count(count)])
            }
            let rest = rows.dropFirst(Self.entriesListed)
            if !rest.isEmpty {
                table.add([
                    "Other networks and fields (\(NumberFormat.count(rest.count)))", "",
                    NumberFormat.count(rest.reduce(0) { $0 + $1.count }),
                ])
            }
            table.footer = ["Copies that disagreed", "", NumberFormat.count(conflicts.copies)]
            place(table, &html)
        }
    }
}
