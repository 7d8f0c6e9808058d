import AggregateSchema
package import Basics
import Foundation

/// The dashboard's pages (`postback api`'s `/dashboard/`, docs/api.md): a sign-in form, and the
/// report's first screen (`ReportPage.renderFirstScreen`, the page's own code over the reader's
/// scope) under a plain GET form that chooses the days and, among the scope's apps and ad networks
/// only, one app and one network, with a table comparing the range's figures (`ReportFigures`) with
/// the period of the same length just before. Like the report: no script, nothing loaded; the one
/// stylesheet is inline (`css`), allowed by its hash in the server's Content-Security-Policy.
package enum DashboardPage {
    /// Where the dashboard lives, on the API's listener and behind nginx alike.
    package static let basePath = "/dashboard/"
    package static let reportPath = basePath + "report"
    package static let sessionPath = basePath + "session"
    package static let signOutPath = basePath + "session/end"

    /// What the form chose: the days, and one app and one network of the scope (nil: all of them).
    package struct Choice: Sendable, Equatable {
        package var from: UTCDay
        package var to: UTCDay
        package var app: String?
        package var network: String?
        /// Production postbacks, or the development ones (test keys, integrations): never both.
        package var environment = ReportEnvironment.production

        package init(
            from: UTCDay, to: UTCDay, app: String? = nil, network: String? = nil,
            environment: ReportEnvironment = .production
        ) {
            self.from = from
            self.to = to
            self.app = app
            self.network = network
            self.environment = environment
        }
    }

    /// The page's stylesheet: the report's, and the form's and comparison's few rules.
    package static let css = ReportStyle.css.description + "\n" + extraCSS.description

    private static let extraCSS: StaticString = """
        form.choice { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: end; margin: 12px 0 0; font-size: 14px; }
        form.choice label { display: flex; flex-direction: column; color: var(--muted); font-size: 12.5px; }
        form.choice input, form.choice select, form.signin input { font: inherit; font-size: 14px; padding: 3px 6px; }
        button { font: inherit; font-size: 14px; padding: 4px 12px; }
        header.top { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: end; gap: 8px; }
        form.signout { margin: 0; }
        form.signin { display: flex; flex-direction: column; gap: 10px; max-width: 40em; margin: 24px 0; }
        #comparison { margin-top: 18px; }
        """

    /// The first screen of `request` (its scope the reader's, narrowed to the choice's app and
    /// network), the form, and the comparison with the period just before; also the figures drawn.
    /// - Parameters:
    ///   - readerScope: the token's whole scope, whose apps and networks the pickers offer.
    ///   - reader: the token's name, shown beside "Sign out".
    /// - Throws: `ReportError` as the report does; `.noAggregates` when no day of the range is
    ///   published (`emptyRange` draws that page).
    package static func page(
        _ request: ReportRequest, choice: Choice, readerScope: DataScope, reader: String
    ) throws(ReportError) -> (page: String, figures: ReportFigures, previous: ReportFigures?) {
        let model = try ReportGenerator.model(request)
        let figures = try ReportGenerator.figures(of: model, request: request)
        let days = choice.to.daysSinceEpoch - choice.from.daysSinceEpoch + 1
        var before = request
        before.from = choice.from.adding(days: -days)
        before.to = choice.from.adding(days: -1)
        var previous: ReportFigures?
        do {
            previous = try ReportGenerator.figures(before)
        } catch  where error.code == .noAggregates {
            previous = nil
        }
        let offered = try choices(request, model: model, readerScope: readerScope)
        let report = ReportPage(model: model, request: request)
        var html = HTMLWriter(reservingCapacity: 1 << 17)
        head(&html, title: "\(report.title) · \(report.rangeText)")
        header(&html, title: report.title, reader: reader)
        html.open("main")
        form(&html, choice: choice, apps: offered.apps, networks: offered.networks)
        try report.renderFirstScreen(&html)
        comparison(&html, figures, previous)
        html.close("main")
        tail(
            &html,
            footer:
                "Made by \(request.toolVersion) from the published aggregates; the figures of your token's apps and ad networks only."
        )
        return (html.output, figures, previous)
    }

    /// The form and a notice when no day of the chosen range is published.
    package static func emptyRange(
        _ request: ReportRequest, choice: Choice, readerScope: DataScope, reader: String
    ) throws(ReportError) -> String {
        let offered = try choices(request, model: nil, readerScope: readerScope)
        var html = HTMLWriter(reservingCapacity: 1 << 14)
        head(&html, title: "Postback report")
        header(&html, title: "Postback report", reader: reader)
        html.open("main")
        form(&html, choice: choice, apps: offered.apps, networks: offered.networks)
        ReportPage.notice("No day from \(choice.from) to \(choice.to) is published: choose other days.", in: &html)
        html.close("main")
        tail(&html, footer: "Made by \(request.toolVersion).")
        return html.output
    }

    /// The sign-in form; `message` (a refused token, a session that ended) above it.
    package static func signIn(message: String?) -> String {
        var html = HTMLWriter(reservingCapacity: 4096)
        head(&html, title: "Sign in · Postback report")
        html.element("header", ["class": "top"]) { html in html.element("h1", text: "Postback report") }
        html.open("main")
        if let message { ReportPage.notice(message, in: &html) }
        html.element("form", ["class": "signin", "method": "post", "action": sessionPath]) { html in
            html.element("label", ["for": "token"], text: "Your API token (pbk_…), as 'postback api token create' printed it")
            html.empty(
                "input",
                ["id": "token", "name": "token", "type": "password", "autocomplete": "off", "required": "required", "size": "60"])
            html.element("button", ["type": "submit"], text: "Sign in")
        }
        html.element(
            "p", ["class": "note"],
            text: "The token stays here: the browser keeps only a session cookie, which ends when you sign out, after its "
                + "hours, or as soon as the token is revoked or expires.")
        html.close("main")
        tail(&html, footer: "Postback report: the figures of your token's apps and ad networks.")
        return html.output
    }

    /// A short page saying what went wrong with the form (a bad day, a range too long).
    package static func problem(_ text: String) -> String {
        var html = HTMLWriter(reservingCapacity: 2048)
        head(&html, title: "Postback report")
        html.element("header", ["class": "top"]) { html in html.element("h1", text: "Postback report") }
        html.open("main")
        ReportPage.notice(text, in: &html)
        html.element("p") { html in html.element("a", ["href": reportPath], text: "Back to the report") }
        html.close("main")
        tail(&html, footer: "Postback report.")
        return html.output
    }

    /// The seven days up to the last published day (by its manifest, never after `today`), or up to
    /// yesterday when none is published.
    package static func defaultChoice(dataDirectory: String, today: UTCDay) -> Choice {
        let directory = dataDirectory + "/agg/_manifests"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let last =
            names.compactMap { name -> UTCDay? in
                guard name.hasPrefix("dt="), name.hasSuffix(".json") else { return nil }
                return UTCDay(String(name.dropFirst(3).dropLast(5)))
            }
            .filter { $0 <= today }.max() ?? today.adding(days: -1)
        return Choice(from: last.adding(days: -6), to: last)
    }

    // MARK: Parts

    /// The apps and networks the pickers offer: a side the token lists, as listed; a side of `all`,
    /// those with rows in the range (read with the token's whole scope when the page is narrowed).
    private static func choices(_ request: ReportRequest, model: ReportModel?, readerScope: DataScope) throws(ReportError)
        -> (apps: [String], networks: [String])
    {
        var whole: ReportModel? = model
        if readerScope.apps == .all || readerScope.networks == .all, model == nil || request.scope != readerScope {
            var unnarrowed = request
            unnarrowed.scope = readerScope
            do {
                whole = try ReportGenerator.model(unnarrowed)
            } catch  where error.code == .noAggregates {
                whole = nil
            }
        }
        func listed(_ side: DataScope.Members, seen: () -> [String]) -> [String] {
            switch side {
            case .all: seen().filter { !$0.isEmpty }.sorted()
            case .only(let members): members.sorted()
            }
        }
        return (
            listed(readerScope.apps) { whole.map { Array($0.appIDs) } ?? [] },
            listed(readerScope.networks) { whole.map { Array($0.networkTotals.keys) } ?? [] }
        )
    }

    private static func head(_ html: inout HTMLWriter, title: String) {
        html.raw("<!DOCTYPE html>\n")
        html.open("html", ["lang": "en"])
        html.open("head")
        html.empty("meta", ["charset": "utf-8"])
        html.empty("meta", ["name": "viewport", "content": "width=device-width, initial-scale=1"])
        // No referrer to other sites; same-origin keeps the `Origin` of the page's own POSTs (no-referrer would send `null`).
        html.empty("meta", ["name": "referrer", "content": "same-origin"])
        // No request for /favicon.ico (outside the dashboard's path): an empty icon, allowed by `img-src data:`.
        html.empty("link", ["rel": "icon", "href": "data:,"])
        html.element("title", text: title)
        // Exactly `css` between the tags: the server's Content-Security-Policy allows it by its hash.
        html.open("style")
        html.raw(ReportStyle.css)
        html.newline()
        html.raw(extraCSS)
        html.close("style")
        html.close("head")
        html.newline()
        html.open("body")
    }

    private static func tail(_ html: inout HTMLWriter, footer: String) {
        html.element("footer", text: footer)
        html.close("body")
        html.close("html")
        html.newline()
    }

    private static func header(_ html: inout HTMLWriter, title: String, reader: String) {
        html.element("header", ["class": "top"]) { html in
            html.element("h1", text: title)
            html.element("form", ["class": "signout", "method": "post", "action": signOutPath]) { html in
                html.element("span", ["class": "meta"], text: "Signed in as \(reader) ")
                html.element("button", ["type": "submit"], text: "Sign out")
            }
        }
        html.newline()
    }

    private static func form(_ html: inout HTMLWriter, choice: Choice, apps: [String], networks: [String]) {
        html.element(
            "form", ["class": "choice", "method": "get", "action": reportPath, "aria-label": "Days, app and ad network"]
        ) {
            html in
            html.element("label") { html in
                html.text("From")
                html.empty("input", ["type": "date", "name": "from", "value": choice.from.description, "required": "required"])
            }
            html.element("label") { html in
                html.text("To")
                html.empty("input", ["type": "date", "name": "to", "value": choice.to.description, "required": "required"])
            }
            picker(&html, name: "app", label: "App", all: "All apps", options: apps, chosen: choice.app)
            picker(
                &html, name: "network", label: "Ad network", all: "All ad networks", options: networks, chosen: choice.network,
                shown: ReportPage.networkName)
            html.element("label") { html in
                html.text("Postbacks")
                html.element("select", ["name": "environment"]) { html in
                    for environment in ReportEnvironment.allCases {
                        if environment == choice.environment {
                            html.element(
                                "option", ["value": environment.rawValue, "selected": "selected"], text: environment.rawValue)
                        } else {
                            html.element("option", ["value": environment.rawValue], text: environment.rawValue)
                        }
                    }
                }
            }
            html.element("button", ["type": "submit"], text: "Show")
        }
        html.newline()
    }

    private static func picker(
        _ html: inout HTMLWriter, name: StaticString, label: String, all: String, options: [String], chosen: String?,
        shown: (String) -> String = { $0 }
    ) {
        html.element("label") { html in
            html.text(label)
            html.element("select", ["name": name.description]) { html in
                if chosen == nil {
                    html.element("option", ["value": "", "selected": "selected"], text: all)
                } else {
                    html.element("option", ["value": ""], text: all)
                }
                for option in options {
                    if option == chosen {
                        html.element("option", ["value": option, "selected": "selected"], text: shown(option))
                    } else {
                        html.element("option", ["value": option], text: shown(option))
                    }
                }
            }
        }
    }

    /// Figure, this period, the period just before, and the change, for the first screen's figures.
    private static func comparison(_ html: inout HTMLWriter, _ current: ReportFigures, _ previous: ReportFigures?) {
        html.element("section", ["id": "comparison", "aria-labelledby": "comparison-heading"]) { html in
            html.element("h2", ["id": "comparison-heading", "class": "first"], text: "Compared with the period before")
            let days = current.to.daysSinceEpoch - current.from.daysSinceEpoch + 1
            let before = (current.from.adding(days: -days), current.from.adding(days: -1))
            var table = FiguresTable(
                id: "table-comparison",
                caption: "This range against the \(days) day\(days == 1 ? "" : "s") before it (\(before.0) to \(before.1))"
                    + (previous == nil ? ", of which no day is published" : "")
                    + "; change: (this − before) ÷ before",
                columns: [.text("Figure"), .number("This period"), .number("Period before"), .number("Change")])
            for row in PeriodComparison.rows(current, previous) {
                table.add([row.figure, row.current, row.previous, row.change])
            }
            table.render(into: &html)
        }
        html.newline()
    }
}
