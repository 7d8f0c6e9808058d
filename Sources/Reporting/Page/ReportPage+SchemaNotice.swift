import AggregateSchema

/// The first screen's "no schema" notice: which apps' postbacks no conversion schema decoded, what a
/// schema adds, and the command that starts one.
extension ReportPage {
    /// Apps named on the page; the rest are counted in one "and N more".
    static let appsWithoutSchemaListed = 5

    func renderNoSchemaNotice(_ html: inout HTMLWriter) {
        let apps = model.postbacksWithoutSchema.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        guard let first = apps.first else { return }
        let listed = apps.prefix(Self.appsWithoutSchemaListed).map {
            "app \($0.key) (\(NumberFormat.count($0.value)) postback\($0.value == 1 ? "" : "s"))"
        }
        let more = apps.count > Self.appsWithoutSchemaListed ? " and \(apps.count - Self.appsWithoutSchemaListed) more apps" : ""
        html.element("div", ["class": "notice", "role": "note", "id": "no-schema"]) { html in
            html.element(
                "p",
                text: "No conversion schema for \(listed.joined(separator: ", "))\(more): their postbacks, installs and "
                    + "conversion values are counted on this page, but they have no revenue (shown as unknown, never as 0). "
                    + "A schema says what each conversion value means, which adds labels, events and revenue.")
            html.element("p") { html in
                html.text("Start one, fill it in, and aggregate again with --schemas: ")
                html.element(
                    "code",
                    text:
                        "postback schema init --app \(first.key) --out schemas/\(first.key)/\(StarterSchemaFile.effectiveFrom).json"
                )
                // The page never names where the store is (a local directory or a bucket make the same page).
                html.text(" (add --from and the store's directory to list the campaigns it has seen).")
            }
        }
    }
}
