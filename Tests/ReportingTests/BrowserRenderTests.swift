import Foundation
import Postbacks
import TestSupport
import Testing

@testable import Reporting

/// The page in a real browser (Debian's `chromium`, headless): it loads without console messages,
/// script errors or requests for anything but itself, every chart has a size, hostile data stays
/// text, and a full-page screenshot is left in the test output for people to look at. Without
/// Chromium these tests fail: they are the only check of what a person sees.
@Suite(.serialized, .disabled(if: TestScale.underSanitizer, "Chromium is not sanitized (TestScale)")) struct BrowserRenderTests {
    /// What loading a page in the browser showed.
    struct Visit {
        var console: [String] = []
        var exceptions: [String] = []
        var logProblems: [String] = []
        var dialogs: [String] = []
        var requests: [String] = []
        /// The page's own measurements (a JSON object, see `probe`).
        var facts: [String: Any] = [:]
    }

    /// Measured in the page after load. DevTools evaluation is not subject to the page's CSP, which
    /// forbids every script of the page itself.
    static let probe = """
        JSON.stringify({
          svgs: document.querySelectorAll('svg').length,
          tinySvgs: [...document.querySelectorAll('svg')].filter(s => { const r = s.getBoundingClientRect(); return r.width < 200 || r.height < 40; }).length,
          active: document.querySelectorAll('script, iframe, object, embed, img, link, form, base').length,
          handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
          pwned: document.getElementById('pwned') !== null,
          title: document.title,
          overflow: document.documentElement.scrollWidth > window.innerWidth + 1,
          tables: document.querySelectorAll('table').length,
          scrollers: [...document.querySelectorAll('.figures, table')].filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1).map(e => e.id || e.getAttribute('aria-label')),
          hiddenCells: [...document.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right > window.innerWidth + 1).map(c => c.textContent),
          cells: document.querySelectorAll('td, th').length,
          text: document.body.innerText,
          height: Math.ceil(document.documentElement.scrollHeight),
          firstScreen: (() => {
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            const parts = [];
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              if (!node.textContent.trim() || node.parentElement.closest('svg, title, style')) continue;
              const range = document.createRange(); range.selectNodeContents(node);
              const rect = range.getBoundingClientRect();
              if (rect.width > 0 && rect.top >= 0 && rect.bottom <= window.innerHeight) parts.push(node.textContent.trim());
            }
            return parts.join(' | ');
          })(),
          overflowing: [...document.querySelectorAll('body *')].filter(e => !e.closest('svg') && e.clientWidth > 0
              && getComputedStyle(e).display !== 'inline' && e.scrollWidth > e.clientWidth + 1)
            .map(e => e.tagName.toLowerCase() + '.' + e.className + ': ' + e.textContent.trim().slice(0, 80)),
          caveats: [...document.querySelectorAll('.banner, .notice, .warning')].map(e => {
            const r = e.getBoundingClientRect();
            return { text: e.textContent.trim().slice(0, 120), top: r.top, bottom: r.bottom, visible: r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight };
          }),
          headings: [...document.querySelectorAll('table')].map(t => [...t.querySelectorAll('thead th')]
            .map(th => ({ shown: th.textContent, full: th.getAttribute('title') || th.textContent }))),
          topHead: [...document.querySelectorAll('#table-top-campaigns thead th')].map(c => c.textContent),
          topFoot: [...document.querySelectorAll('#table-top-campaigns tfoot th, #table-top-campaigns tfoot td')].map(c => c.textContent),
          costHead: [...document.querySelectorAll('#table-cost-campaigns-modeled thead th')].map(c => c.textContent),
          costFoot: [...document.querySelectorAll('#table-cost-campaigns-modeled tfoot th, #table-cost-campaigns-modeled tfoot td')].map(c => c.textContent),
          metrics: Object.fromEntries([...document.querySelectorAll('[data-metric]')].map(e => [e.getAttribute('data-metric'),
            (e.closest('.card') || e).innerText.replace(/\\s+/g, ' ').trim()])),
          brokenLinks: [...document.querySelectorAll('a[href^="#"]')].filter(a => !document.getElementById(a.getAttribute('href').slice(1)))
            .map(a => a.getAttribute('href'))
        })
        """

    static func visit(_ page: String, screenshot: String?, width: Int = 1280, height: Int = 1000) throws -> Visit {
        guard let executable = HeadlessChromium.locate() else {
            throw HeadlessChromium.Failure(
                description: "chromium not found (looked for $CHROMIUM, chromium, chromium-browser, google-chrome on PATH): "
                    + "on Debian, apt-get install chromium. The report's browser test needs a real browser.")
        }
        let profile = NSTemporaryDirectory() + "report-chromium-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let browser = try HeadlessChromium(
            executable: executable, profileDirectory: profile, logPath: TestPaths.output + "/chromium.log",
            windowWidth: width, windowHeight: height)
        defer { browser.shutDown() }

        let target = try browser.call("Target.createTarget") { $0.field("url", "about:blank") }
        let session = try browser.call("Target.attachToTarget") { json in
            json.field("targetId", target.string("targetId"))
            json.field("flatten", true)
        }.string("sessionId")
        for domain in ["Page", "Runtime", "Log", "Network"] { try browser.call("\(domain).enable", session: session) }
        try browser.call("Emulation.setDeviceMetricsOverride", session: session) { json in
            json.field("width", width)
            json.field("height", height)
            json.field("deviceScaleFactor", 1)
            json.field("mobile", false)
        }
        let url = URL(fileURLWithPath: page).absoluteString
        let navigation = try browser.call("Page.navigate", session: session) { $0.field("url", url) }
        if let error = navigation.string("errorText") {
            throw HeadlessChromium.Failure(description: "navigation failed: \(error)")
        }
        _ = try browser.waitForEvent("Page.loadEventFired")

        let evaluated = try browser.call("Runtime.evaluate", session: session) { json in
            json.field("expression", probe)
            json.field("returnByValue", true)
        }
        var visit = Visit()
        if let text = evaluated.object("result")?.string("value"), let data = text.data(using: .utf8) {
            visit.facts = (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        }
        if let screenshot {
            // The top of the page is enough for a person to look at; a 30,000-px capture takes minutes under ASan.
            let pageHeight = min(8_000, (visit.facts["height"] as? Int) ?? height)
            let image = try browser.call("Page.captureScreenshot", session: session, timeout: 60) { json in
                json.field("format", "png")
                json.field("captureBeyondViewport", true)
                json.key("clip")
                json.beginObject()
                json.field("x", 0)
                json.field("y", 0)
                json.field("width", width)
                json.field("height", pageHeight)
                json.field("scale", 1)
                json.endObject()
            }
            guard let data = image.string("data").flatMap({ Data(base64Encoded: $0) }) else {
                throw HeadlessChromium.Failure(description: "no screenshot data")
            }
            try data.write(to: URL(fileURLWithPath: screenshot))
        }

        for (method, params) in browser.events {
            switch method {
            case "Runtime.consoleAPICalled":
                visit.console.append("\(params.string("type") ?? "?"): \(params)")
            case "Runtime.exceptionThrown":
                visit.exceptions.append(params.object("exceptionDetails")?.string("text") ?? "\(params)")
            case "Log.entryAdded":
                if let entry = params.object("entry"), ["warning", "error"].contains(entry.string("level") ?? "") {
                    visit.logProblems.append(
                        "\(entry.string("level")!): \(entry.string("text") ?? "") \(entry.string("url") ?? "")")
                }
            case "Page.javascriptDialogOpening":
                visit.dialogs.append(params.string("message") ?? "")
            case "Network.requestWillBeSent":
                if let requested = params.object("request")?.string("url") { visit.requests.append(requested) }
            default:
                break
            }
        }
        return visit
    }

    /// The development page too: its charts and tables must fit as well.
    @Test(arguments: [false, true]) func thePageRendersWithoutConsoleErrorsAndIsScreenshotted(development: Bool) throws {
        let store = try TestStore.shared.get()
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let name = development ? "report-development" : "report"
        let page = TestPaths.output + "/\(name).html"
        let screenshot = TestPaths.output + "/\(name).png"
        try? FileManager.default.removeItem(atPath: screenshot)
        // One day more than the store has, so the page also shows how a missing day looks.
        var request = store.request(from: TestStore.first, to: "2026-03-04", out: page, top: 12)
        request.environment = development ? .development : .production
        _ = try ReportGenerator.generate(request)
        let html = try String(contentsOfFile: page, encoding: .utf8)

        let visit = try Self.visit(page, screenshot: screenshot)
        #expect(visit.console.isEmpty, "console: \(visit.console)")
        #expect(visit.exceptions.isEmpty, "exceptions: \(visit.exceptions)")
        #expect(visit.logProblems.isEmpty, "browser log: \(visit.logProblems)")
        #expect(visit.dialogs.isEmpty)
        #expect(
            visit.requests == [URL(fileURLWithPath: page).absoluteString], "the page loads nothing but itself: \(visit.requests)")
        let svgs = html.components(separatedBy: "<svg ").count - 1
        #expect(svgs >= 9)
        #expect(visit.facts["svgs"] as? Int == svgs)
        #expect(visit.facts["tinySvgs"] as? Int == 0, "every chart is drawn at a readable size")
        #expect(visit.facts["tables"] as? Int == html.components(separatedBy: "<table ").count - 1)
        #expect(visit.facts["active"] as? Int == 0)
        #expect(visit.facts["overflow"] as? Bool == false, "nothing widens the page beyond the window")
        #expect(
            visit.facts["title"] as? String
                == "Postback report\(development ? " (development)" : "") · 2026-03-01 to 2026-03-04")
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect((visit.facts["brokenLinks"] as? [Any])?.isEmpty == true, "\(visit.facts["brokenLinks"] ?? "?")")
        let text = visit.facts["text"] as? String ?? ""
        #expect(text.contains("Postbacks and installs per day") && text.contains("Rejected by reason"))

        #expect((visit.facts["scrollers"] as? [Any])?.isEmpty == true, "no table scrolls: \(visit.facts["scrollers"] ?? "?")")
        #expect(
            (visit.facts["hiddenCells"] as? [Any])?.isEmpty == true,
            "every figure is visible: \(visit.facts["hiddenCells"] ?? "?")")
        #expect((visit.facts["cells"] as? Int ?? 0) > 100)
        // The missing day's notice is read before any figure, and no two column headings look alike.
        let caveats = visit.facts["caveats"] as? [[String: Any]] ?? []
        #expect(caveats.contains { ($0["text"] as? String)?.hasPrefix("No aggregates for 2026-03-04") == true }, "\(caveats)")
        #expect(caveats.allSatisfy { $0["visible"] as? Bool == true }, "\(caveats)")
        for table in visit.facts["headings"] as? [[[String: String]]] ?? [] {
            #expect(Set(table.map { $0["shown"]! }).count == Set(table.map { $0["full"]! }).count, "\(table)")
        }

        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(png.count > 50_000)
        print("report screenshot: \(screenshot) (page: \(page))")
    }

    /// At a wide window too, no table scrolls and no figure is cut or off the page.
    @Test(arguments: [false, true]) func tablesNeverHideAFigureAt1920Pixels(development: Bool) throws {
        let store = try TestStore.shared.get()
        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let page = TestPaths.output + "/report-1920\(development ? "-development" : "").html"
        var request = store.request(from: TestStore.first, to: "2026-03-03", out: page, top: 12)
        request.environment = development ? .development : .production
        _ = try ReportGenerator.generate(request)
        let visit = try Self.visit(page, screenshot: nil, width: 1920)
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect(visit.facts["overflow"] as? Bool == false)
        #expect((visit.facts["scrollers"] as? [Any])?.isEmpty == true, "no table scrolls: \(visit.facts["scrollers"] ?? "?")")
        #expect(
            (visit.facts["hiddenCells"] as? [Any])?.isEmpty == true,
            "every figure is visible: \(visit.facts["hiddenCells"] ?? "?")")
    }

    /// A page whose table is too wide for its box is seen scrolling, so the checks above mean something.
    @Test func theBrowserCheckSeesAScrollingTable() throws {
        let store = ScratchStore("browser-scroll")
        let page = store.path("scroll.html")
        try """
        <!DOCTYPE html><html><head><title>scroll</title></head><body>
        <div class="figures" id="box" style="width: 200px; max-height: 40px; overflow: auto"><table id="wide"><tr>
        <td style="white-space: nowrap">a very long figure that cannot fit in two hundred pixels 123456789</td></tr>
        <tr><td>1</td></tr><tr><td>2</td></tr><tr><td>3</td></tr></table></div></body></html>
        """.write(toFile: page, atomically: true, encoding: .utf8)
        let visit = try Self.visit(page, screenshot: nil)
        #expect((visit.facts["scrollers"] as? [String]) == ["box"])
    }

    /// The negative twin: a page that logs an error, throws, and requests an image is seen doing so,
    /// so a clean visit above means something.
    @Test func theBrowserCheckSeesConsoleErrorsExceptionsAndRequests() throws {
        let store = ScratchStore("browser-negative")
        let page = store.path("noisy.html")
        try """
        <!DOCTYPE html><html><head><title>noisy</title></head><body>
        <svg width="10" height="10"></svg><img src="http://127.0.0.1:9/missing.png">
        <script>console.error("deliberate"); undefinedFunction();</script></body></html>
        """.write(toFile: page, atomically: true, encoding: .utf8)
        let visit = try Self.visit(page, screenshot: nil)
        #expect(visit.console.contains { $0.hasPrefix("error:") && $0.contains("deliberate") })
        #expect(visit.exceptions.count == 1)
        #expect(visit.requests.contains("http://127.0.0.1:9/missing.png"))
        #expect(visit.facts["tinySvgs"] as? Int == 1)
        #expect(visit.facts["active"] as? Int == 2)
    }

    @Test func hostileDataStaysTextInTheBrowser() throws {
        let store = try ReportEscapingTests.hostileStore()
        let page = store.path("hostile.html")
        _ = try ReportGenerator.generate(
            store.request(from: "2026-03-01", to: "2026-03-01", out: page, title: ReportEscapingTests.hostileTitle))
        let visit = try Self.visit(page, screenshot: nil)
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty && visit.dialogs.isEmpty, "\(visit)")
        #expect(visit.logProblems.isEmpty, "\(visit.logProblems)")
        #expect(visit.requests.count == 1)
        #expect(visit.facts["pwned"] as? Bool == false)
        #expect(visit.facts["active"] as? Int == 0)
        #expect(visit.facts["handlers"] as? Int == 0)
        let text = visit.facts["text"] as? String ?? ""
        // Shortened in the tables (its full text in their tooltips), but text all the same.
        #expect(
            text.contains(FiguresTable.shortened(ReportEscapingTests.hostileCampaign, to: FiguresTable.longestCell)),
            "the hostile campaign name is shown as text")
        #expect(text.contains(ReportEscapingTests.hostileClaimedNetwork))
        #expect(visit.facts["title"] as? String == "\(ReportEscapingTests.hostileTitle) · 2026-03-01")
    }
}
