import Foundation
import PostbackStore
import Postbacks
import Testing

@testable import Aggregation
@testable import Basics
@testable import Reporting

/// Everything on the page that comes from the data is attacker-influenced: a rejected record is
/// keyed by whatever ad network it claims, reasons quote what was sent, and schema labels and
/// campaign names are free text. None of it may become markup.
@Suite struct ReportEscapingTests {
    static let hostileNetwork = "<script>alert(\"net\")</script>&amp;'x.skadnetwork"
    static let hostileClaimedNetwork = "\"><iframe src=javascript:alert(1)></iframe>"
    static let hostileReason = "bad <svg onload=alert(1)> & \"quoted\" \u{202E}gnp.exe"
    static let hostileLabel = "<img src=x onerror=alert('label')>"
    static let hostileCampaign = "</title><b id=\"pwned\">campaign</b>"
    static let hostileTitle = "</title><script>alert('title')</script>"

    /// Tags and attributes the page is built from; anything else in it came from the data.
    static let allowedTags: Set<String> = [
        "html", "head", "meta", "title", "style", "body", "header", "main", "footer", "section", "nav", "a", "h1", "h2", "h3",
        "p", "code",
        "div", "ul", "li", "span", "strong", "figure", "table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td",
        "svg", "desc", "g", "rect", "line", "path", "circle", "polygon", "text",
    ]
    static let allowedAttributes: Set<String> = [
        "lang", "charset", "name", "content", "http-equiv", "id", "class", "href", "role", "aria-label", "aria-labelledby",
        "title",
        "aria-hidden", "tabindex", "scope", "colspan", "data-metric", "xmlns", "viewBox", "x", "y", "x1", "x2", "y1", "y2", "cx",
        "cy",
        "r", "width", "height", "d", "points", "text-anchor",
    ]

    /// A store whose every free-text field is hostile.
    static func hostileStore() throws -> ScratchStore {
        let store = ScratchStore("hostile")
        let schema = """
            {"schema_id": "hostile/1", "app_id": 777, "effective_from": "2025-01-01", "currency": "USD",
             "windows": {"0": {"fine": {"entries": [{"value": 5, "label": \(json(hostileLabel)), "revenue": {"min": 1, "max": 2}}]},
                               "coarse": {"low": {"label": \(json(hostileLabel))}}}},
             "source_identifier_map": [{"ad_network_id": \(json(hostileNetwork)), "digits": [
                {"positions": [1, 2], "dimension": "campaign", "values": {"12": \(json(hostileCampaign))}}]}]}
            """
        var records: [SpoolRecord] = []
        for (index, fine) in [5, 5, 6].enumerated() {
            let attribution = Attribution(
                postbackProtocol: .skadnetwork, version: "4.0", appID: 777, adNetworkID: hostileNetwork,
                sourceIdentifier: "1234", interaction: .click, didWin: true, fineValue: fine)
            records.append(
                SpoolRecord(
                    receivedAt: UTCTimestamp(iso8601: "2026-03-01T1\(index):00:00.000000Z")!, writer: "rx1",
                    route: "skadnetwork-developer-copy", status: .verified, environment: .production,
                    dedupKey: "key-\(index):0", postbackProtocol: .skadnetwork, version: "4.0", keyName: "apple-skadnetwork-p256",
                    reason: nil, attribution: attribution, body: Array("{}".utf8)))
        }
        var coarse = Attribution(
            postbackProtocol: .skadnetwork, version: "4.0", appID: 777, adNetworkID: hostileNetwork,
            sourceIdentifier: "12", interaction: .view, postbackSequenceIndex: 1, didWin: true, coarseValue: .low)
        records.append(
            SpoolRecord(
                receivedAt: UTCTimestamp(iso8601: "2026-03-01T15:00:00.000000Z")!, writer: "rx1", route: "ad-network",
                status: .verified, environment: .production, dedupKey: "coarse:1", postbackProtocol: .skadnetwork,
                version: "4.0", keyName: "apple-skadnetwork-p256", reason: nil, attribution: coarse, body: Array("{}".utf8)))
        try store.append(records, spool: .postbacks, writer: "rx1")
        coarse.adNetworkID = hostileClaimedNetwork
        let rejected = SpoolRecord(
            receivedAt: UTCTimestamp(iso8601: "2026-03-01T16:00:00.000000Z")!, writer: "rx1", route: "ad-network",
            status: .invalidSignature, environment: nil, dedupKey: nil, postbackProtocol: .skadnetwork, version: "4.0",
            keyName: nil, reason: hostileReason, attribution: coarse, body: Array("{}".utf8))
        try store.append([rejected], spool: .rejected, writer: "rx1")
        try store.aggregate(
            try SchemaCatalog(schemas: [try ConversionSchema(json: Array(schema.utf8), file: "777/hostile.json")]),
            from: "2026-03-01", to: "2026-03-01")
        return store
    }

    static func json(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONWriter.appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func hostileDataCannotInjectMarkup() throws {
        let store = try Self.hostileStore()
        let html = try ReportGenerator.page(store.request(from: "2026-03-01", to: "2026-03-01", title: Self.hostileTitle))
        let figures = PageFigures(html: html)

        // The data did reach the page (so the checks below are not vacuous)…
        #expect(figures.count("postbacks") == 4)
        let claimed = try #require(figures.table("table-rejected-networks"))
        #expect(claimed.rows.map { $0[0] } == [Self.hostileClaimedNetwork])
        let reasons = try #require(figures.table("table-rejected-reasons"))
        // The quoted part of the reason is its value, in a column of its own.
        let shown = Self.hostileReason.replacingOccurrences(of: "\u{202E}", with: "[U+202E]")
        #expect(reasons.rows.map { $0[0] } == [shown.replacingOccurrences(of: "\"quoted\"", with: "\"…\"")])
        #expect(reasons.rows.map { $0[1] } == ["quoted"])
        let fine = try #require(figures.table("table-fine"))
        #expect(fine.records.map { $0["Campaign"] } == [Self.hostileCampaign, Self.hostileCampaign])
        #expect(fine.records.map { $0["Label"] } == [Self.hostileLabel, "undecoded"])
        #expect(fine.records.allSatisfy { $0["Ad network"] == Self.hostileNetwork })

        // …but only ever as text.
        for hostile in [
            Self.hostileNetwork, Self.hostileClaimedNetwork, Self.hostileReason, Self.hostileLabel, Self.hostileCampaign,
            Self.hostileTitle,
        ] {
            #expect(!html.contains(hostile), "raw: \(hostile)")
        }
        #expect(!html.contains("\u{202E}"), "a bidi override reordering the page's text")
        #expect(html.range(of: "<script", options: .caseInsensitive) == nil)
        #expect(html.range(of: "<iframe", options: .caseInsensitive) == nil)
        try Self.checkMarkup(html)
    }

    /// Every tag is one the page writes, with attributes it writes, each value quoted; nothing else
    /// in the document starts a tag.
    static func checkMarkup(_ html: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let tag = try Regex(#"^<(/?)([a-zA-Z0-9]+)((?:\s[a-zA-Z0-9-]+="[^"<>]*")*)\s*(/?)>"#)
        let attribute = try Regex(#"\s([a-zA-Z0-9-]+)="([^"]*)""#)
        var rest = html[...]
        #expect(rest.hasPrefix("<!DOCTYPE html>\n"), sourceLocation: sourceLocation)
        rest = rest.dropFirst("<!DOCTYPE html>\n".count)
        var tags = 0
        while let open = rest.firstIndex(of: "<") {
            rest = rest[open...]
            guard let match = try tag.prefixMatch(in: rest) else {
                Issue.record("not a tag the page writes: \(rest.prefix(80))", sourceLocation: sourceLocation)
                return
            }
            let name = String(match.output[2].substring!)
            #expect(allowedTags.contains(name), "tag <\(name)>", sourceLocation: sourceLocation)
            for found in match.output[3].substring!.matches(of: attribute) {
                let attributeName = String(found.output[1].substring!)
                #expect(
                    allowedAttributes.contains(attributeName), "attribute \(attributeName) on <\(name)>",
                    sourceLocation: sourceLocation)
                if attributeName == "href" { #expect(found.output[2].substring!.hasPrefix("#"), sourceLocation: sourceLocation) }
            }
            tags += 1
            rest = rest[match.range.upperBound...]
        }
        #expect(tags > 100, sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        ("plain.skadnetwork", "plain.skadnetwork"),
        ("<b>&\"'", "&lt;b&gt;&amp;&quot;&#39;"),
        ("a\u{202E}b\u{2063}c\u{0}d", "a[U+202E]b[U+2063]c[U+0000]d"),
        ("naïve ☃ 日本", "naïve ☃ 日本"),
    ])
    func escapesMarkupAndInvisibleCharacters(input: String, expected: String) {
        #expect(HTMLText.escape(input) == expected)
    }

    @Test func clippingNeverSplitsACharacterOrAnEntity() {
        #expect(HTMLText.clipped("short", to: 10) == "short")
        #expect(
            HTMLText.clipped("example123.skadnetwork · app 525463029", to: 24, keepingAfterLast: " · ")
                == "example… · app 525463029",
            "the app id is never cut")
        #expect(HTMLText.clipped("network · app 525463029", to: 40, keepingAfterLast: " · ") == "network · app 525463029")
        #expect(
            HTMLText.clipped("n · 123456789012345", to: 10, keepingAfterLast: " · ") == "n · 12345…",
            "too long to keep: clipped as usual")
        #expect(HTMLText.clipped("🇩🇪🇩🇪🇩🇪🇩🇪", to: 3) == "🇩🇪🇩🇪…")
        let clipped = HTMLText.escape(HTMLText.clipped("&&&&&&&&", to: 4))
        #expect(clipped == "&amp;&amp;&amp;…")
    }
}
