import Basics
import Foundation
import NumbersAPI
import PostbackStore
import PostbackTesting
import Reporting
import TestSupport
import Testing

/// The API's memory of what it read (`PublishedDayCache`, `SummaryCache`): a cached day gives the rows
/// reading its file gives, under every scope; a re-published day is read again, never answered from
/// memory; the bytes kept stay within the bound. CI cost: about 10 s (two small stores, one re-publish).
@Suite struct CacheTests {
    /// The rows `PublishedRows` hands over for `scope`, through `cache` or straight from the files.
    static func rows(_ fixture: APIFixture, day: UTCDay, scope: DataScope, cache: PublishedDayCache?) throws -> [[String?]] {
        var rows: [[String?]] = []
        let reader = PublishedRows(dataDirectory: fixture.store.path, table: "campaign_daily", scope: scope, cache: cache)
        _ = try reader.forEachRow(day: day) { _, fields in
            rows.append(fields)
            return true
        }
        return rows
    }

    @Test func aCachedDayGivesTheFilesRowsUnderEveryScope() throws {
        let fixture = try APIFixture(days: 2, perDay: 200)
        let cache = PublishedDayCache()
        let scopes: [DataScope] = [
            .everything,
            DataScope(apps: .only(["525463029"]), networks: .all),
            DataScope(apps: .all, networks: .only(["network1.skadnetwork", "network3.adattributionkit"])),
            DataScope(apps: .only(["1229670720"]), networks: .only(["network0.adattributionkit"])),
            DataScope(apps: .only([]), networks: .all),
        ]
        for day in [APIFixture.first, fixture.last] {
            // The widest scope first: the narrower ones are then answered from the cached, unscoped day.
            for scope in scopes {
                let direct = try Self.rows(fixture, day: day, scope: scope, cache: nil)
                #expect(try Self.rows(fixture, day: day, scope: scope, cache: cache) == direct, "\(day) \(scope)")
                if scope == .everything { try #require(direct.count > 50) }
            }
        }
        let statistics = cache.statistics
        #expect(statistics.entries == 2)
        #expect(statistics.misses == 2)
        #expect(statistics.hits == 2 * scopes.count - 2)
    }

    @Test func theCacheKeepsWithinItsBound() throws {
        let fixture = try APIFixture(days: 4, perDay: 200)
        let one = PublishedDayCache()
        _ = try Self.rows(fixture, day: APIFixture.first, scope: .everything, cache: one)
        let dayBytes = one.statistics.bytes
        try #require(dayBytes > 0)
        // Room for two days and a half: the third day read evicts the least recently used.
        let cache = PublishedDayCache(maximumBytes: dayBytes * 5 / 2)
        for offset in 0..<4 {
            _ = try Self.rows(fixture, day: APIFixture.first.adding(days: offset), scope: .everything, cache: cache)
            #expect(cache.statistics.bytes <= cache.maximumBytes)
        }
        #expect(cache.statistics.entries == 2)
        // The last two days are kept, the first two were evicted.
        _ = try Self.rows(fixture, day: APIFixture.first.adding(days: 3), scope: .everything, cache: cache)
        #expect(cache.statistics.hits == 1)
        _ = try Self.rows(fixture, day: APIFixture.first, scope: .everything, cache: cache)
        #expect(cache.statistics.hits == 1)
        // A bound smaller than one day keeps nothing, and still answers.
        let tiny = PublishedDayCache(maximumBytes: dayBytes / 2)
        #expect(try Self.rows(fixture, day: APIFixture.first, scope: .everything, cache: tiny).count > 50)
        #expect(tiny.statistics.entries == 0)
    }

    /// The day's spool replaced by a larger one and the day published again while the API runs: the
    /// next rows and summary are the new publication's (read from the files, without any cache).
    @Test func aRepublishedDayIsReadAgainNeverAnsweredFromMemory() throws {
        let fixture = try APIFixture(days: 2, perDay: 150)
        let minted = try APIToken.mint(name: "all", scope: .everything, expires: nil, today: APIFixture.first)
        try TokenFile.write([minted.record], to: fixture.tokensPath)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        let day = fixture.last
        let rowsQuery = "/v1/tables/campaign_daily/rows?from=\(day)&to=\(day)&format=csv&limit=10000"
        let summaryQuery = "/v1/summary?from=\(APIFixture.first)&to=\(day)"
        let before = try get(port: server.port, rowsQuery, token: minted.text)
        let summaryBefore = try get(port: server.port, summaryQuery, token: minted.text)
        // Asked twice: the second answer comes from memory, and is the same.
        #expect(try get(port: server.port, rowsQuery, token: minted.text).body == before.body)
        #expect(try get(port: server.port, summaryQuery, token: minted.text).body == summaryBefore.body)
        let directBefore = try Self.rows(fixture, day: day, scope: .everything, cache: nil)

        let layout = StoreLayout(root: fixture.store.path)
        for spool in StoreLayout.Spool.allCases {
            try? FileManager.default.removeItem(atPath: layout.partition(spool, day: day))
        }
        var spool = SyntheticSpool()
        spool.apps = APIFixture.apps
        spool.adNetworks = APIFixture.networkNames
        spool.postbacksPerDay = 400
        spool.seed = 99
        _ = try spool.write(to: layout, first: day, days: 1)
        let published = run([
            "aggregate", "--data", fixture.store.path, "--schemas", Fixtures.sampleSchemas, "--from", day.description,
            "--to", day.description, "--force",
        ])
        try #require(published.status == .success, "aggregate: \(published.stdout)\(published.stderr)")
        let directAfter = try Self.rows(fixture, day: day, scope: .everything, cache: nil)
        try #require(directAfter != directBefore)

        let after = try get(port: server.port, rowsQuery, token: minted.text)
        #expect(after.status == 200)
        #expect(after.body.split(separator: "\n").count - 1 == directAfter.count)
        #expect(after.body != before.body)
        // The summary counts the new publication's postbacks (150 of the day became about 400).
        let summaryAfter = try get(port: server.port, summaryQuery, token: minted.text)
        #expect(summaryAfter.body != summaryBefore.body)
        let totalBefore = try #require(Self.postbacks(summaryBefore.body))
        let totalAfter = try #require(Self.postbacks(summaryAfter.body))
        #expect(totalAfter > totalBefore)
    }

    /// `current.totals.postbacks` of a summary answer.
    static func postbacks(_ body: String) -> Int? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            let current = object["current"] as? [String: Any], let totals = current["totals"] as? [String: Any]
        else { return nil }
        return totals["postbacks"] as? Int
    }
}
