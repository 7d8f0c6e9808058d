import Foundation
import TestSupport
import Testing

@testable import Basics
@testable import Reporting

/// Stores that earlier releases wrote and published (`Tests/Fixtures/stores/`: the spool, and the
/// day's manifest and tables of manifest formats 1, 2 and 3, the cohort manifests of format 1), read
/// by today's nightly job and report. Nothing regenerates them (Tests/Fixtures/README.md).
@Suite struct PublishedFixtureTests {
    static let countedTotals = [
        "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "development_postbacks",
        "rejected_postbacks", "duplicates_same_day", "duplicates_of_earlier_days", "corrupt_lines", "torn_tails",
    ]

    static func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    static func manifestPath(_ root: String) -> String { root + "/agg/_manifests/dt=\(FixtureStore.day).json" }

    /// Revenue by currency, zero amounts left out (format 1 had one sum; format 2 listed a currency
    /// of a schema even when nothing earned it).
    static func revenue(_ totals: [String: Any]) -> [String: Double] {
        if let sum = totals["revenue_est_sum"] as? NSNumber { return ["USD": sum.doubleValue] }
        let byCurrency = totals["revenue_est_by_currency"] as? [String: NSNumber] ?? [:]
        return byCurrency.mapValues(\.doubleValue).filter { $0.value != 0 }
    }

    /// Today's nightly job over an old spool, with the old day already published (so it reads the old
    /// manifest before replacing it), counts what the release that wrote the spool counted.
    @Test(arguments: FixtureStore.readable)
    func todaysJobCountsAnOldSpoolAsItsRelease(store: FixtureStore) throws {
        let directory = TemporaryDirectory("fixture")
        try store.copy(into: directory.path)
        let old = try Self.json(Self.manifestPath(store.path))
        #expect(old["format"] as? Int == store.manifestFormat)

        let result = run([
            "aggregate", "--data", directory.path, "--schemas", Fixtures.sampleSchemas, "--date", FixtureStore.day,
            "--allow-open-day", "--skip-cohorts",
        ])
        #expect(result.status == .success, "\(result.stderr)")
        let new = try Self.json(Self.manifestPath(directory.path))
        let (oldTotals, newTotals) = (
            try #require(old["totals"] as? [String: Any]), try #require(new["totals"] as? [String: Any])
        )
        for key in Self.countedTotals {
            #expect(newTotals[key] as? Int == oldTotals[key] as? Int, "\(store.commit): totals.\(key)")
        }
        #expect(Self.revenue(newTotals) == Self.revenue(oldTotals), "\(store.commit)")
        #expect((oldTotals["postbacks"] as? Int ?? 0) > 0 && (oldTotals["rejected_postbacks"] as? Int ?? 0) > 0)
    }

    /// Today's report reads every old manifest version: the fields it takes are the manifest's.
    @Test(arguments: FixtureStore.readable)
    func todaysReportReadsEveryManifestVersion(store: FixtureStore) throws {
        let path = Self.manifestPath(store.path)
        let old = try Self.json(path)
        let totals = try #require(old["totals"] as? [String: Any])
        let manifest = try DayManifest(json: try Fixtures.bytes(URL(fileURLWithPath: path)), path: path)
        #expect(manifest.tool == old["tool"] as? String)
        #expect(manifest.postbacks == totals["postbacks"] as? Int)
        #expect(manifest.developmentPostbacks == totals["development_postbacks"] as? Int)
        #expect(manifest.rejectedPostbacks == totals["rejected_postbacks"] as? Int)
        #expect(manifest.partial == (old["partial"] as? Bool ?? false))
        #expect(manifest.detailTable == (store.manifestFormat >= 3 ? "postback_detail_daily" : "campaign_daily"))
        let byStatus = try #require(old["rejected_by_status"] as? [String: Int])
        #expect(Dictionary(uniqueKeysWithValues: manifest.rejectedByStatus.map { ($0.status, $0.count) }) == byStatus)
    }

    /// Today's report renders a day an old release published, from its files as they are.
    @Test(arguments: FixtureStore.readable)
    func todaysReportRendersAnOldDay(store: FixtureStore) throws {
        let directory = TemporaryDirectory("fixture")
        try store.copy(into: directory.path)
        let totals = try #require(try Self.json(Self.manifestPath(store.path))["totals"] as? [String: Any])
        let page = directory.path + "/report.html"
        let result = run(["report", "--data", directory.path, "--date", FixtureStore.day, "--out", page])
        #expect(result.status == .success, "\(result.stderr)")
        let postbacks = try #require(totals["postbacks"] as? Int)
        #expect(result.stdout.contains("1 day, \(postbacks) production postbacks"), "\(result.stdout)")
    }

    /// Cohort manifests of format 1 (the first release with cohorts) are read, every install date trusted.
    @Test func todaysReportReadsOldCohortManifests() throws {
        let store = try #require(FixtureStore.readable.first { $0.commit == "a5cdd77" })
        let names = try FileManager.default.contentsOfDirectory(atPath: store.path + "/agg/_cohort_manifests")
        let days = names.compactMap { UTCDay(String($0.dropFirst("dt=".count).prefix(10))) }.sorted()
        #expect(days.count == names.count && !days.isEmpty)
        for name in names {
            #expect(try Self.json(store.path + "/agg/_cohort_manifests/" + name)["format"] as? Int == 1)
        }
        let model = try CohortLoader(dataDirectory: store.path).load(from: days[0], to: try #require(UTCDay(FixtureStore.day)))
        #expect(model.days == days)
        #expect(model.leftOutDays.isEmpty, "\(model.leftOutDays)")
    }
}
