import Foundation
import PostbackStore
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import Postbacks

/// A development postback's estimated install date uses Developer Mode's timing (windows end at 3,
/// 6, 9 minutes; a 5–10 minute delay), not production's days: the expected dates are computed in
/// Python from those documented minutes (docs/aggregate.md, "Estimated install date").
@Suite struct DevelopmentInstallDateTests {
    @Test func developmentPostbacksUseDeveloperModeTiming() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let store = TemporaryDirectory("development-install-date")
        var spool = SpoolBuilder(root: store.path)
        let arrivals = [
            (0, "2026-03-10T00:05:00.000000Z"), (1, "2026-03-10T00:12:00.000000Z"), (2, "2026-03-10T00:20:00.000000Z"),
        ]
        for (index, time) in arrivals {
            spool.add(
                record(
                    AggregateJobTests.skan4(source: "12", sequence: index, coarse: .low), key: "D:\(index)", at: time,
                    environment: .development))
        }
        spool.add(record(AggregateJobTests.skan4(source: "12", coarse: .low), key: "P:0", at: arrivals[0].1))
        try spool.write()
        _ = try run(store.path, catalog: catalog(AggregateJobTests.schema), from: "2026-03-10")

        let script = """
            import datetime, json, sys
            minutes = {0: 3 + 7.5, 1: 6 + 7.5, 2: 9 + 7.5}   # window end + mean of the 5-10 minute delay
            out = {}
            for index, time in json.loads(sys.argv[1]):
                received = datetime.datetime.strptime(time, "%Y-%m-%dT%H:%M:%S.%fZ")
                out[str(index)] = (received - datetime.timedelta(minutes=minutes[index])).date().isoformat()
            out["production"] = (datetime.datetime(2026, 3, 10, 0, 5) - datetime.timedelta(hours=84)).date().isoformat()
            print(json.dumps(out))
            """
        let argument = try JSONSerialization.data(withJSONObject: arrivals.map { [$0.0, $0.1] as [Any] })
        let result = try VenvPython.run(script: script, arguments: [String(decoding: argument, as: UTF8.self)])
        let expected = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String], "\(result.stderr)")

        let development = CSVText.rows(try store.read("agg/campaign_daily_development/dt=2026-03-10/part-00000.csv"))
        for (index, _) in arrivals {
            let rows = development.filter { $0["postback_sequence_index"] == "\(index)" }
            #expect(rows.map { $0["est_install_date"] } == [expected["\(index)"]], "window \(index): \(rows)")
        }
        let production = CSVText.rows(try store.read("agg/campaign_daily/dt=2026-03-10/part-00000.csv"))
        // (campaign_daily also holds the development postbacks' rows, counted in development_postbacks only.)
        #expect(production.filter { $0["postbacks"] != "0" }.map { $0["est_install_date"] } == [expected["production"]])
    }
}
