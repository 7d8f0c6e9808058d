import Basics
import Foundation
import TestSupport

/// Chromium (`HeadlessChromium`) as a person's browser on the dashboard: tabs in contexts of their
/// own (each its own cookie jar, like separate people), pages opened and forms sent as a click
/// would send them, and what the page shows read from its DOM. DevTools evaluation is not subject to
/// the page's Content-Security-Policy, which forbids every script of the page itself.
final class DashboardBrowser {
    let browser: HeadlessChromium
    private let profile: String

    /// - Parameter trustingAnyCertificate: accepts a self-signed certificate (nginx in front, in a test).
    init(trustingAnyCertificate: Bool = false) throws {
        guard let executable = HeadlessChromium.locate() else {
            throw HeadlessChromium.Failure(
                description: "chromium not found (looked for $CHROMIUM, chromium, chromium-browser, google-chrome on PATH): "
                    + "on Debian, apt-get install chromium. The dashboard's tests need a real browser.")
        }
        profile = TemporaryDirectory.create("dashboard-chromium")
        browser = try HeadlessChromium(
            executable: executable, profileDirectory: profile, logPath: profile + ".log", windowWidth: 1280,
            windowHeight: 900, extraArguments: trustingAnyCertificate ? ["--ignore-certificate-errors"] : [])
    }

    deinit {
        browser.shutDown()
        try? FileManager.default.removeItem(atPath: profile)
        try? FileManager.default.removeItem(atPath: profile + ".log")
    }

    /// A new tab in a browser context of its own (no cookie shared with other tabs).
    func tab() throws -> Tab {
        let context = try browser.call("Target.createBrowserContext").string("browserContextId")
        let target = try browser.call("Target.createTarget") { json in
            json.field("url", "about:blank")
            json.field("browserContextId", context)
        }
        let session = try browser.call("Target.attachToTarget") { json in
            json.field("targetId", target.string("targetId"))
            json.field("flatten", true)
        }.string("sessionId")
        for domain in ["Page", "Runtime", "Log", "Network"] { try browser.call("\(domain).enable", session: session) }
        return Tab(browser: browser, session: session, firstEvent: browser.events.count)
    }

    struct Tab {
        let browser: HeadlessChromium
        let session: String?
        let firstEvent: Int

        /// Opens `url` and waits for its load (after any redirect).
        func navigate(_ url: String) throws {
            let mark = browser.events.count
            let navigation = try browser.call("Page.navigate", session: session) { $0.field("url", url) }
            if let error = navigation.string("errorText") {
                throw HeadlessChromium.Failure(description: "navigation to \(url) failed: \(error)")
            }
            _ = try browser.waitForEvent("Page.loadEventFired", after: mark)
        }

        /// The value of a JavaScript expression, as text.
        func evaluate(_ expression: String) throws -> String {
            let result = try browser.call("Runtime.evaluate", session: session) { json in
                json.field("expression", expression)
                json.field("returnByValue", true)
            }
            return result.object("result")?.string("value") ?? ""
        }

        /// Fills the fields of the form `selector` by name and sends it as its submit button would, then
        /// waits for the page it leads to.
        func submitForm(_ selector: String, values: [String: String]) throws {
            let mark = browser.events.count
            let assignments = values.sorted { $0.key < $1.key }.map { name, value in
                "form.elements[\(Self.literal(name))].value = \(Self.literal(value));"
            }.joined()
            let sent = try evaluate(
                "(() => { const form = document.querySelector(\(Self.literal(selector))); if (!form) return 'no form'; "
                    + assignments + " form.requestSubmit(); return 'sent'; })()")
            guard sent == "sent" else { throw HeadlessChromium.Failure(description: "\(selector): \(sent)") }
            _ = try browser.waitForEvent("Page.loadEventFired", after: mark)
        }

        /// Signs in through the sign-in form.
        func signIn(_ token: String) throws { try submitForm("form.signin", values: ["token": token]) }

        /// The cookies the browser holds for the current page.
        func cookies() throws -> [JSONObject] {
            guard case .array(let cookies)? = try browser.call("Network.getCookies", session: session)["cookies"] else {
                return []
            }
            return cookies.compactMap { if case .object(let cookie) = $0 { cookie } else { nil } }
        }

        /// What the page shows: the headline figures by `data-metric`, the top campaigns' rows keyed by
        /// column, the comparison's rows, and how many active elements (scripts, frames, images) it has.
        func facts() throws -> [String: Any] {
            let text = try evaluate(
                """
                JSON.stringify({
                  metrics: Object.fromEntries([...document.querySelectorAll('[data-metric]')]
                    .map(e => [e.getAttribute('data-metric'), e.textContent.trim()])),
                  top: (() => {
                    const table = document.getElementById('table-top-campaigns');
                    if (!table) return [];
                    const heads = [...table.querySelectorAll('thead th')].map(h => h.getAttribute('title') || h.textContent);
                    return [...table.querySelectorAll('tbody tr')].map(row => Object.fromEntries([...row.children]
                      .map((cell, index) => [heads[index], cell.getAttribute('title') || cell.textContent])));
                  })(),
                  comparison: [...document.querySelectorAll('#table-comparison tbody tr')].map(row => [...row.children].map(c => c.textContent)),
                  active: document.querySelectorAll('script, iframe, object, embed, img, link:not([rel=icon]), base').length
                })
                """)
            return (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
        }

        /// Console messages, script exceptions, and warnings or errors the browser logged (a refused
        /// style or resource among them) since the tab opened.
        func problems() -> [String] {
            browser.events[firstEvent...].compactMap { method, params in
                switch method {
                case "Runtime.consoleAPICalled": "console: \(params)"
                case "Runtime.exceptionThrown": "exception: \(params)"
                case "Log.entryAdded":
                    params.object("entry").flatMap { entry in
                        ["warning", "error"].contains(entry.string("level") ?? "")
                            ? "\(entry.string("level")!): \(entry.string("text") ?? "") \(entry.string("url") ?? "")" : nil
                    }
                default: nil
                }
            }
        }

        /// Every URL the tab requested since it opened.
        func requests() -> [String] {
            browser.events[firstEvent...].compactMap { method, params in
                method == "Network.requestWillBeSent" ? params.object("request")?.string("url") : nil
            }
        }

        /// A screenshot of the page's top, for people to look at.
        func screenshot(_ path: String) throws {
            let image = try browser.call("Page.captureScreenshot", session: session, timeout: 60) { $0.field("format", "png") }
            guard let data = image.string("data").flatMap({ Data(base64Encoded: $0) }) else {
                throw HeadlessChromium.Failure(description: "no screenshot data")
            }
            try data.write(to: URL(fileURLWithPath: path))
            print("dashboard screenshot: \(path)")
        }

        /// `text` as a JavaScript string literal.
        static func literal(_ text: String) -> String {
            var json = JSONWriter()
            json.value(text)
            return String(decoding: json.bytes, as: UTF8.self)
        }
    }
}

extension JSONObject {
    func bool(_ key: String) -> Bool? {
        if case .bool(let value)? = self[key] { return value }
        return nil
    }
}
