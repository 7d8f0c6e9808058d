import Basics
import Foundation
import NumbersAPI
import Reporting
import TestSupport
import Testing

/// What the API refuses, each with its RFC 9457 problem, on the real server: no token, another
/// method, a body, too many days or rows, an unknown argument or column; and what a page of rows
/// continues from.
@Suite struct BoundsTests {
    @Test func refusalsAreProblemsNamingWhatIsWrong() throws {
        let fixture = try APIFixture(days: 2, perDay: 40)
        let minted = try APIToken.mint(name: "all", scope: .everything, expires: nil, today: APIFixture.first)
        try TokenFile.write([minted.record], to: fixture.tokensPath)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        let token = minted.text
        let cases: [(path: String, options: [String], token: String?, status: Int, type: String)] = [
            ("/v1/tables", [], nil, 401, "unauthorized"),
            ("/v1/tables", ["-X", "POST"], token, 405, "method-not-allowed"),
            ("/v1/summary?from=2026-03-01&to=2026-03-02", ["--data-binary", "x"], token, 413, "body-not-allowed"),
            // 93 days (92 is the most: 2026-01-01 … 2026-04-02).
            ("/v1/summary?from=2026-01-01&to=2026-04-03", [], token, 400, "bad-query"),
            ("/v1/summary?from=2026-03-02&to=2026-03-01", [], token, 400, "bad-query"),
            ("/v1/tables/campaign_daily/rows?from=2026-03-01&to=2026-03-02&limit=10001", [], token, 400, "bad-query"),
            ("/v1/tables/campaign_daily/rows?from=2026-03-01&to=2026-03-02&column=app_id", [], token, 400, "bad-query"),
            ("/v1/tables/campaign_daily/rows?from=2026-03-01&to=2026-03-02&columns=nope", [], token, 400, "bad-query"),
            ("/v1/tables/campaign_daily/rows?from=2026-03-01&to=2026-03-02&cursor=abc", [], token, 400, "bad-query"),
            ("/v1/tables/no_such_table/rows?from=2026-03-01&to=2026-03-02", [], token, 404, "not-found"),
            ("/v1/summary?from=2025-03-01&to=2025-03-02", [], token, 404, "not-found"),
        ]
        for (path, options, token, status, type) in cases {
            let answer = try get(port: server.port, path, token: token, curlOptions: options)
            #expect(answer.status == status, "\(path) \(options): \(answer.status) \(answer.body)")
            #expect(answer.body.contains("\"type\":\"urn:postback:problem:\(type)\""), "\(path): \(answer.body)")
        }
    }

    /// A table whose rows do not all name an app and an ad network is read by all/all tokens only.
    @Test func aTableWithoutAppAndNetworkIsServedToEverythingOnly() {
        let unattributable = APITables.Table(name: "by_app", columns: [.field(.appID), .postbacks])
        let tables = APITables.all + [unattributable]
        let narrow = DataScope(apps: .all, networks: .only(["network0.skadnetwork"]))
        #expect(APITables.served(to: .everything, from: tables).map(\.name).contains("by_app"))
        #expect(!APITables.served(to: narrow, from: tables).map(\.name).contains("by_app"))
        // Every table published today names both, so every token sees all of them.
        #expect(APITables.served(to: narrow).map(\.name) == APITables.all.map(\.name))
    }

    @Test func pagesFollowTheirCursorsToEveryRowOnce() throws {
        let fixture = try APIFixture(days: 3, perDay: 60)
        let minted = try APIToken.mint(name: "all", scope: .everything, expires: nil, today: APIFixture.first)
        try TokenFile.write([minted.record], to: fixture.tokensPath)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        let query = "/v1/tables/campaign_daily/rows?from=2026-03-01&to=2026-03-03&format=csv"
        let whole = try get(port: server.port, query + "&limit=10000", token: minted.text)
        let wholeLines = whole.body.split(separator: "\n").dropFirst()
        try #require(wholeLines.count > 40)
        // The same rows through pages of 13: each page's cursor is in its Next-Cursor header.
        var lines: [Substring] = []
        var cursor: String? = nil
        var pages = 0
        repeat {
            let headers = TemporaryDirectory("headers")
            let answer = try get(
                port: server.port, query + "&limit=13" + (cursor.map { "&cursor=" + $0 } ?? ""), token: minted.text,
                curlOptions: ["-D", headers.path + "/h"])
            lines += answer.body.split(separator: "\n").dropFirst()
            cursor = try headers.read("h").split(separator: "\r\n").first { $0.hasPrefix("Next-Cursor: ") }
                .map { String($0.dropFirst("Next-Cursor: ".count)) }
            pages += 1
        } while cursor != nil && pages < 1000
        #expect(Array(lines) == Array(wholeLines))
        #expect(pages == (wholeLines.count + 12) / 13)
    }
}
