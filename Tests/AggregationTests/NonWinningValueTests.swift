import Foundation
import PostbackStore
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import Postbacks

/// Apple: "Nonwinning postbacks don't contain conversion values". A value stored on a non-winning
/// postback (kept by a build before the verifier dropped it, or added on the way) is never decoded
/// or counted: the postback counts as a loss without a value, and is flagged.
@Suite struct NonWinningValueTests {
    @Test func aValueOnANonWinningPostbackIsIgnoredAndFlagged() throws {
        let store = TemporaryDirectory("nonwinning")
        var spool = SpoolBuilder(root: store.path)
        let d = "2026-03-10T"
        spool.add(record(AggregateJobTests.skan4(source: "12", coarse: .high), key: "W:0", at: d + "10:00:00.000000Z"))
        spool.add(
            record(AggregateJobTests.skan4(source: "12", coarse: .high, didWin: false), key: "L1:0", at: d + "11:00:00.000000Z"))
        spool.add(
            record(AggregateJobTests.skan4(source: "12", fine: 63, didWin: false), key: "L2:0", at: d + "12:00:00.000000Z"))
        try spool.write()
        _ = try run(store.path, catalog: catalog(AggregateJobTests.schema), from: "2026-03-10")

        let rows = CSVText.rows(try store.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv"))
        let losses = rows.filter { $0["did_win"] == "false" }
        func total(_ column: String, _ rows: [[String: String]]) -> Int { rows.reduce(0) { $0 + Int($1[column] ?? "0")! } }
        #expect(total("postbacks", losses) == 2 && total("losses", losses) == 2 && total("flagged_postbacks", losses) == 2)
        for loss in losses {
            #expect(loss["cv_kind"] == "none" && loss["fine_cv"] == "" && loss["coarse_cv"] == "", "\(loss)")
            #expect(loss["revenue_min_sum"] == "" && loss["revenue_est_sum"] == "" && loss["revenue_max_sum"] == "", "\(loss)")
        }
        // The winner's coarse value is decoded as before (high: 10–20, estimate the midpoint).
        let win = try #require(rows.first { $0["did_win"] == "true" })
        #expect(win["coarse_cv"] == "high" && win["revenue_min_sum"] == "10" && win["flagged_postbacks"] == "0", "\(win)")

        let daily = CSVText.rows(try store.read("agg/campaign_daily/dt=2026-03-10/part-00000.csv"))
        #expect(total("losses", daily) == 2 && total("flagged_postbacks", daily) == 2)
        #expect(daily.compactMap { $0["revenue_min_sum"] }.filter { !$0.isEmpty } == ["10"], "\(daily)")
    }
}
