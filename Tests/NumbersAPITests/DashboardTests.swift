import Basics
import Foundation
import NumbersAPI
import Reporting
import TestSupport
import Testing

/// The dashboard as a person uses it, in Chromium (headless, over DevTools): signing in with a token
/// through the form, the report's first screen of the token's scope, the pickers, signing out. The
/// figures are read from the page's DOM and compared, as numbers, with the API's own summary of the
/// same scope and days; what another token's scope holds is looked for in the DOM and must be absent.
///
/// One store (a month, `POSTBACK_DASHBOARD_DAYS` days of `POSTBACK_DASHBOARD_PER_DAY` postbacks; CI: 28
/// × 240, about 10 s to publish) and one API started once for the suite, one browser per test.
@Suite(.serialized, .disabled(if: TestScale.underSanitizer, "Chromium is not sanitized (TestScale)")) struct DashboardTests {
    /// The range read (its previous period is the 14 days before, also published).
    static let from = UTCDay(year: 2026, month: 3, day: 15)
    static let to = UTCDay(year: 2026, month: 3, day: 28)

    @Test func theFirstScreenShowsTheSummaryOfTheTokensScope() throws {
        let site = try DashboardSite.shared.get()
        let (browser, tab) = try site.signedIn(site.tokenA.text)
        defer { withExtendedLifetime(browser) {} }
        #expect(try tab.evaluate("location.pathname") == "/dashboard/report")
        // The range and nothing else chosen, through the page's own GET form.
        try tab.submitForm(
            "form.choice",
            values: ["from": Self.from.description, "to": Self.to.description, "app": "", "network": ""])
        #expect(try tab.evaluate("location.search") == "?from=\(Self.from)&to=\(Self.to)&app=&network=&environment=production")
        let page = try tab.facts()
        let summary = try site.summary(token: site.tokenA.text, from: Self.from, to: Self.to)
        let current = try #require(summary["current"] as? [String: Any])
        let previous = try #require(summary["previous"] as? [String: Any])
        let totals = try #require(current["totals"] as? [String: Int])
        try #require((totals["postbacks"] ?? 0) > 100, "the scope has postbacks to compare: \(totals)")

        // The headline cards, as numbers.
        let metrics = page["metrics"] as? [String: String] ?? [:]
        for (metric, key) in [
            ("postbacks", "postbacks"), ("installs", "installs"), ("redownloads", "redownloads"),
            ("reengagements", "reengagements"), ("losses", "losses"), ("null_cv_postbacks", "null_values"),
        ] {
            #expect(Self.integer(metrics[metric]) == totals[key], "\(metric): page \(metrics[metric] ?? "none"), API \(totals)")
        }
        let revenue = current["revenue"] as? [[String: Any]] ?? []
        let currencies = revenue.compactMap { $0["currency"] as? String }.filter { !$0.isEmpty }
        try #require(!currencies.isEmpty, "the scope's apps have schemas: revenue to compare")
        for entry in revenue {
            let currency = entry["currency"] as? String ?? ""
            guard !currency.isEmpty, let shown = metrics["revenue_est_sum:\(currency)"] else { continue }
            #expect(Self.decimal(shown) == Self.cents(entry["estimate"]), "revenue \(currency): page \(shown), API \(entry)")
        }

        // The top campaigns: the same campaigns in the same order, with the same installs and postbacks.
        let top = page["top"] as? [[String: String]] ?? []
        let campaigns = current["top_campaigns"] as? [[String: Any]] ?? []
        try #require(!campaigns.isEmpty)
        #expect(top.count == campaigns.count, "rows: page \(top.count), API \(campaigns.count)")
        for (row, campaign) in zip(top, campaigns) {
            let counts = campaign["counts"] as? [String: Int] ?? [:]
            #expect(row["Campaign"] == campaign["campaign"] as? String, "\(row) against \(campaign)")
            #expect(Self.integer(row["Installs"]) == counts["installs"], "\(row) against \(campaign)")
            #expect(Self.integer(row["Postbacks"]) == counts["postbacks"], "\(row) against \(campaign)")
        }

        // The comparison with the 14 days before: this period, the period before and the change,
        // the change computed here from the API's two numbers.
        let comparison = Dictionary(
            (page["comparison"] as? [[String]] ?? []).map { ($0[0], Array($0.dropFirst())) }, uniquingKeysWith: { $1 })
        let before = try #require(previous["totals"] as? [String: Int])
        for (figure, key) in [("Postbacks", "postbacks"), ("Installs", "installs"), ("Null values", "null_values")] {
            let row = try #require(comparison[figure], "no comparison row \(figure): \(comparison.keys.sorted())")
            let (now, then) = (totals[key]!, before[key]!)
            #expect(Self.integer(row[0]) == now && Self.integer(row[1]) == then, "\(figure): \(row), API \(now) and \(then)")
            #expect(row[2] == Self.change(now, then), "\(figure): \(row[2]), expected \(Self.change(now, then))")
        }
        for currency in currencies {
            let row = try #require(comparison["Revenue to date, \(currency)"])
            let now = (revenue.first { $0["currency"] as? String == currency })?["estimate"]
            let then = (previous["revenue"] as? [[String: Any]] ?? []).first { $0["currency"] as? String == currency }?[
                "estimate"]
            #expect(Self.decimal(row[0]) == Self.cents(now) && Self.decimal(row[1]) == Self.cents(then), "\(row)")
        }

        // Seen as a person sees it: no console message or refused resource, nothing loaded from elsewhere.
        #expect(tab.problems().isEmpty, "\(tab.problems())")
        // (data: URLs are the browser's own: the date inputs' icons.)
        let requested = tab.requests().filter { !$0.hasPrefix("data:") }
        #expect(requested.allSatisfy { $0.hasPrefix(site.base + "/dashboard/") }, "\(requested)")
        #expect(page["active"] as? Int == 0, "no script, frame, object or image")
        let output = Fixtures.root.appendingPathComponent(".build/dashboard-test").path
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        try tab.screenshot(output + "/dashboard.png")
    }

    @Test func anotherScopeAndASignedOutBrowserSeeNothingOfTokenA() throws {
        let site = try DashboardSite.shared.get()
        let summaryA = try site.summary(token: site.tokenA.text, from: Self.from, to: Self.to)
        let summaryB = try site.summary(token: site.tokenB.text, from: Self.from, to: Self.to)
        let forbidden = Self.traces(of: summaryA, scope: site.tokenA.record.scope, besides: summaryB)
        try #require(forbidden.markup.count >= 6 && forbidden.figures.count >= 2, "\(forbidden)")
        let browser = try DashboardBrowser()
        let url = site.base + "/dashboard/report?from=\(Self.from)&to=\(Self.to)"

        // Signed out: the report's address leads to the sign-in form, which holds nothing of anyone's.
        let signedOut = try browser.tab()
        try signedOut.navigate(url)
        #expect(try signedOut.evaluate("location.pathname") == "/dashboard/")
        #expect(try signedOut.evaluate("String(document.querySelector('input[name=token]') !== null)") == "true")
        let outside = try signedOut.evaluate("document.documentElement.outerHTML")
        let outsideFigures = Self.figures(in: try signedOut.evaluate("document.body.innerText"))
        for trace in forbidden.markup { #expect(!outside.contains(trace), "signed out, the page shows \(trace)") }
        for figure in forbidden.figures { #expect(!outsideFigures.contains(figure), "signed out, the page shows \(figure)") }

        // Token B, of other apps and networks: its own figures, none of A's, even when it asks for A's app.
        let tab = try browser.tab()
        try tab.navigate(site.base + "/dashboard/")
        try tab.signIn(site.tokenB.text)
        for address in [url, url + "&app=\(site.tokenA.record.scope.apps.text.split(separator: ",")[0])"] {
            try tab.navigate(address)
            let html = try tab.evaluate("document.documentElement.outerHTML")
            let text = try tab.evaluate("document.body.innerText")
            for trace in forbidden.markup { #expect(!html.contains(trace), "B's page (\(address)) shows \(trace)") }
            for figure in forbidden.figures {
                #expect(!Self.figures(in: text).contains(figure), "B's page (\(address)) shows A's \(figure)")
            }
            #expect(text.contains("Top campaigns by installs"))
        }
        try tab.navigate(url)
        let metrics = try tab.facts()["metrics"] as? [String: String] ?? [:]
        let totalsB = (summaryB["current"] as? [String: Any])?["totals"] as? [String: Int] ?? [:]
        #expect(Self.integer(metrics["postbacks"]) == totalsB["postbacks"] && (totalsB["postbacks"] ?? 0) > 0)
        // The pickers offer B's apps and networks, exactly.
        let offered = try tab.evaluate(
            "JSON.stringify([...document.querySelectorAll('select[name=app] option, select[name=network] option')].map(o => o.value).filter(v => v))"
        )
        let expected =
            site.tokenB.record.scope.apps.text.split(separator: ",")
            + site.tokenB.record.scope.networks.text.split(separator: ",")
        #expect(offered == "[" + expected.map { "\"\($0)\"" }.joined(separator: ",") + "]")
    }

    @Test func aRevokedTokensSessionIsRefusedAtTheNextPage() throws {
        let site = try DashboardSite.shared.get()
        let (browser, tab) = try site.signedIn(site.tokenC.text)
        defer { withExtendedLifetime(browser) {} }
        try tab.navigate(site.base + "/dashboard/report?from=\(Self.from)&to=\(Self.to)")
        #expect(try tab.evaluate("location.pathname") == "/dashboard/report")
        let cookie = try #require(try tab.cookies().first { $0.string("name") == Dashboard.cookieName }?.string("value"))
        #expect(try site.http(["-b", "\(Dashboard.cookieName)=\(cookie)", site.base + "/dashboard/report"]).status == 200)

        let revoked = run(["api", "token", "revoke", "--tokens", site.data.tokensPath, "--name", "token-c"])
        try #require(revoked.status == .success, "\(revoked.stderr)")
        try tab.navigate(site.base + "/dashboard/report?from=\(Self.from)&to=\(Self.to)")
        #expect(try tab.evaluate("location.pathname") == "/dashboard/")
        #expect(try tab.evaluate("String(document.querySelector('input[name=token]') !== null)") == "true")
        // The session is gone, not only this browser's cookie: the old cookie is refused too.
        let again = try site.http(["-b", "\(Dashboard.cookieName)=\(cookie)", site.base + "/dashboard/report"])
        #expect(again.status == 303 && again.headers.contains("Location: /dashboard/\r\n"), "\(again.status) \(again.headers)")
        // And signing in with it again is refused.
        let refused = try site.http(["--data-urlencode", "token=\(site.tokenC.text)", site.base + "/dashboard/session"])
        #expect(refused.status == 401 && !refused.headers.contains("Set-Cookie"))
    }

    @Test func theSessionCookieIsHttpOnlyStrictExpiringAndSecureBehindTLS() throws {
        let site = try DashboardSite.shared.get()
        let signedInAt = Date().timeIntervalSince1970
        let (browser, tab) = try site.signedIn(site.tokenA.text)
        defer { withExtendedLifetime(browser) {} }
        let cookies = try tab.cookies()
        #expect(cookies.count == 1)
        let cookie = try #require(cookies.first { $0.string("name") == Dashboard.cookieName })
        #expect(cookie.bool("httpOnly") == true && cookie.string("sameSite") == "Strict" && cookie.bool("secure") == false)
        #expect(cookie.string("path") == "/dashboard/" && cookie.bool("session") == false)
        // Expiring after the session's 8 hours (Max-Age), as the browser computed it.
        let expires = cookie.number("expires") ?? 0
        #expect(abs(expires - (signedInAt + 8 * 3600)) < 120, "expires \(expires), signed in at \(signedInAt)")
        let value = cookie.string("value") ?? ""
        #expect(value.count == 64 && value.allSatisfy(\.isHexDigit) && !site.tokenA.text.contains(value))
        // Out of scripts' reach.
        #expect(try tab.evaluate("document.cookie") == "")
        // The audit log names who signed in, and holds neither the token (it came in the form's body)
        // nor the session id.
        let audit = site.data.audit.withLock { $0 }
        #expect(audit.contains { $0.contains("\"path\":\"/dashboard/session\"") && $0.contains("\"token\":\"token-a\"") })
        #expect(!audit.contains { $0.contains(String(site.tokenA.text.suffix(64))) || $0.contains(value) })
        // Every page: no-store, the policy, no script.
        let page = try site.http(["-b", "\(Dashboard.cookieName)=\(value)", site.base + "/dashboard/report"])
        #expect(page.status == 200 && page.headers.contains("Cache-Control: no-store\r\n"))
        #expect(
            page.headers.contains(
                "Content-Security-Policy: default-src 'none'; style-src 'sha256-"))
        #expect(page.headers.contains("img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"))

        // Signing out through the page's button ends the session on the server.
        try tab.submitForm("form.signout", values: [:])
        #expect(try tab.evaluate("location.pathname") == "/dashboard/")
        #expect(try tab.cookies().isEmpty)
        #expect(try site.http(["-b", "\(Dashboard.cookieName)=\(value)", site.base + "/dashboard/report"]).status == 303)

        // A sign-in sent from another origin is refused, with no cookie.
        let crossSite = try site.http([
            "-H", "Origin: http://evil.example", "--data-urlencode", "token=\(site.tokenA.text)",
            site.base + "/dashboard/session",
        ])
        #expect(crossSite.status == 403 && !crossSite.headers.contains("Set-Cookie"))
        // A body past the bound is refused before it is read.
        let large = try site.http([
            "--data-urlencode", "token=\(String(repeating: "x", count: 4096))", site.base + "/dashboard/session",
        ])
        #expect(large.status == 413)

        // Behind TLS (--behind-tls, as behind nginx): the same cookie, Secure, for an https Origin only.
        let tls = "http://127.0.0.1:\(site.tlsServer.port)"
        let plainOrigin = try site.http([
            "-H", "Origin: \(tls)", "--data-urlencode", "token=\(site.tokenA.text)", tls + "/dashboard/session",
        ])
        #expect(plainOrigin.status == 403)
        let secure = try site.http([
            "-H", "Origin: https://127.0.0.1:\(site.tlsServer.port)", "--data-urlencode", "token=\(site.tokenA.text)",
            tls + "/dashboard/session",
        ])
        let setCookie = secure.headers.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }.map(String.init) ?? ""
        #expect(secure.status == 303, "\(secure.headers)")
        for attribute in ["; Path=/dashboard/", "; Max-Age=28800", "; HttpOnly", "; SameSite=Strict", "; Secure"] {
            #expect(setCookie.contains(attribute), "\(setCookie)")
        }
    }

    /// Behind nginx as deploy/nginx.conf sets it up (TLS, location /dashboard/), the API run
    /// `--behind-tls`: a person signs in over HTTPS, the cookie is Secure, the report of the range
    /// comes through, and signing out ends the session.
    @Test func theDashboardWorksBehindNginxWithASecureCookie() throws {
        let site = try DashboardSite.shared.get()
        let front = try NginxFront(apiPort: site.tlsServer.port)
        let browser = try DashboardBrowser(trustingAnyCertificate: true)
        let tab = try browser.tab()
        try tab.navigate(front.base + "/dashboard")
        #expect(try tab.evaluate("location.href") == front.base + "/dashboard/")
        try tab.signIn(site.tokenA.text)
        #expect(try tab.evaluate("location.pathname") == "/dashboard/report")
        let cookie = try #require(try tab.cookies().first { $0.string("name") == Dashboard.cookieName })
        #expect(cookie.bool("secure") == true && cookie.bool("httpOnly") == true && cookie.string("sameSite") == "Strict")
        try tab.navigate(front.base + "/dashboard/report?from=\(Self.from)&to=\(Self.to)")
        let totals = try #require(
            (try site.summary(token: site.tokenA.text, from: Self.from, to: Self.to)["current"] as? [String: Any])?["totals"]
                as? [String: Int])
        #expect(Self.integer((try tab.facts()["metrics"] as? [String: String])?["postbacks"]) == totals["postbacks"])
        try tab.submitForm("form.signout", values: [:])
        #expect(try tab.evaluate("location.pathname") == "/dashboard/")
        #expect(try tab.cookies().isEmpty)
        #expect(tab.problems().isEmpty, "\(tab.problems())")
    }

    // MARK: Independent readings

    /// `1,234` → 1234 (a count as the page shows it); nil for anything else.
    static func integer(_ text: String?) -> Int? {
        text.flatMap { Int($0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "")) }
    }

    /// An amount as the page shows it (`≥ 1,234.50`) as a Decimal.
    static func decimal(_ text: String) -> Decimal? {
        Decimal(
            string: text.replacingOccurrences(of: "≥", with: "").replacingOccurrences(of: ",", with: "")
                .trimmingCharacters(in: .whitespaces), locale: Locale(identifier: "en_US_POSIX"))
    }

    /// The API's exact amount rounded half up to cents, as docs/report.md says the page shows amounts.
    static func cents(_ value: Any?) -> Decimal? {
        guard let number = value as? NSNumber else { return nil }
        var exact = Decimal(string: number.stringValue, locale: Locale(identifier: "en_US_POSIX")) ?? number.decimalValue
        var rounded = Decimal()
        NSDecimalRound(&rounded, &exact, 2, .plain)
        return rounded
    }

    /// docs/api.md's change: (this − before) ÷ before as a percentage, one decimal, half away from zero.
    static func change(_ now: Int, _ then: Int) -> String {
        guard then > 0 else { return "–" }
        var ratio = Decimal(now - then) * 100 / Decimal(then)
        var rounded = Decimal()
        NSDecimalRound(&rounded, &ratio, 1, .plain)
        let text = String(format: "%.1f", NSDecimalNumber(decimal: rounded).doubleValue)
        return (now > then ? "+" : "") + text + "%"
    }

    /// What of A's may not appear on another page: its apps and networks (the scope's own) and its
    /// campaign names, looked for in the markup (attributes too), unless B's own summary names them;
    /// and its headline counts of three digits or more, looked for as whole figures in the text, unless
    /// B's summary (this period or the one before) has them.
    static func traces(of a: [String: Any], scope: DataScope, besides b: [String: Any]) -> (
        markup: [String], figures: [String]
    ) {
        var markup: [String] = []
        for side in [scope.apps, scope.networks] {
            if case .only(let members) = side { markup += members.sorted() }
        }
        let current = a["current"] as? [String: Any] ?? [:]
        markup += (current["top_campaigns"] as? [[String: Any]] ?? []).compactMap { $0["campaign"] as? String }
            .filter { $0 != "Other campaigns" }
        let totals = current["totals"] as? [String: Int] ?? [:]
        let otherText = String(decoding: try! JSONSerialization.data(withJSONObject: b), as: UTF8.self)
        let otherNumbers = Set(otherText.split(whereSeparator: { !$0.isNumber }).map(String.init))
        return (
            markup.filter { !otherText.contains("\"\($0)\"") },
            totals.values.filter { $0 >= 100 && !otherNumbers.contains(String($0)) }.map(grouped)
        )
    }

    /// The page's text as figures: split at whitespace and the separators the page puts between them.
    static func figures(in text: String) -> Set<String> {
        Set(text.split(whereSeparator: { $0.isWhitespace || "|·()≥–".contains($0) }).map(String.init))
    }

    static func grouped(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return out
    }
}

/// The suite's store and API, made once: a month of synthetic postbacks published by the nightly
/// job, three tokens (A and B of disjoint apps and networks, C of A's scope, revoked by a test), the
/// API with its dashboard, and a second listener as it runs `--behind-tls`.
final class DashboardSite: @unchecked Sendable {
    static let shared = Result { try DashboardSite() }

    let data: APIFixture
    let server: APIServer
    let tlsServer: APIServer
    let tokenA: (record: APIToken, text: String)
    let tokenB: (record: APIToken, text: String)
    let tokenC: (record: APIToken, text: String)
    var base: String { "http://127.0.0.1:\(server.port)" }

    init() throws {
        let environment = ProcessInfo.processInfo.environment
        data = try APIFixture(
            days: environment["POSTBACK_DASHBOARD_DAYS"].flatMap(Int.init) ?? 28,
            perDay: environment["POSTBACK_DASHBOARD_PER_DAY"].flatMap(Int.init) ?? 240, seed: 29)
        let scopeA = DataScope(
            apps: .only(["525463029", "1229670720"]),
            networks: .only(["network0.skadnetwork", "network0.adattributionkit", "network1.skadnetwork"]))
        let scopeB = DataScope(
            apps: .only(["700000101", "700000202"]), networks: .only(["network2.skadnetwork", "network3.adattributionkit"]))
        let today = APIFixture.first
        tokenA = try APIToken.mint(name: "token-a", scope: scopeA, expires: nil, today: today)
        tokenB = try APIToken.mint(name: "token-b", scope: scopeB, expires: nil, today: today)
        tokenC = try APIToken.mint(name: "token-c", scope: scopeA, expires: nil, today: today)
        try TokenFile.write([tokenA.record, tokenB.record, tokenC.record], to: data.tokensPath)
        server = try data.start().server
        var behindTLS = Dashboard.Settings()
        behindTLS.behindTLS = true
        tlsServer = try data.start(dashboard: behindTLS).server
    }

    /// A browser of its own, signed in with `token` through the sign-in form (keep the browser while
    /// the tab is used: it ends with it).
    func signedIn(_ token: String) throws -> (DashboardBrowser, DashboardBrowser.Tab) {
        let browser = try DashboardBrowser()
        let tab = try browser.tab()
        try tab.navigate(base + "/dashboard/")
        try tab.signIn(token)
        return (browser, tab)
    }

    /// The API's summary of a token's scope, with the period before (`compare=previous`).
    func summary(token: String, from: UTCDay, to: UTCDay) throws -> [String: Any] {
        let answer = try get(port: server.port, "/v1/summary?from=\(from)&to=\(to)&compare=previous", token: token)
        try #require(answer.status == 200, "\(answer.body)")
        return try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
    }

    /// A request with curl (`arguments` before the URL), its status, header block and body.
    func http(_ arguments: [String]) throws -> (status: Int, headers: String, body: String) {
        let directory = TemporaryDirectory("dashboard-http")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments =
            ["-s", "-D", directory.path + "/headers", "-o", directory.path + "/body", "-w", "%{http_code}"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (
            Int(status) ?? 0, (try? String(contentsOfFile: directory.path + "/headers", encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: directory.path + "/body", encoding: .utf8)) ?? ""
        )
    }
}
