import AggregateSchema
import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// The cohort pass's rules as docs/aggregate.md states them: the documented columns are the declared
/// ones, the status thresholds, the rounding of quotients, and a rerun that would make a published
/// cohort worse (a lost campaign_daily partition) refused unless --force.
@Suite struct CohortRuleTests {
    @Test func theDocumentedCohortColumnsAreTheDeclaredOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let documentation = try String(contentsOf: root.appendingPathComponent("docs/aggregate.md"), encoding: .utf8)
        let statement = AggregateTables.cohortCreateTableStatement()
        #expect(
            documentation.contains("```sql\n" + statement + "```"), "docs/aggregate.md's cohort block should read:\n\(statement)")
    }

    @Test func statusFollowsTheLastReceivedDayThatCanStillAddToTheCohort() {
        let install = UTCDay("2026-03-01")!
        let cases: [(Int?, CohortStatus)] = [
            (nil, .open), (0, .open), (3, .open), (4, .window1Final), (10, .window1Final), (11, .window2Final),
            (38, .window2Final), (39, .final), (60, .final),
        ]
        for (offset, status) in cases {
            #expect(
                CohortStatus(installDay: install, completeThrough: offset.map { install.adding(days: $0) }) == status,
                "\(offset ?? -1)")
        }
    }

    @Test func quotientsAreRoundedHalfUpToMillionths() {
        // a ÷ b for counts: (2·a·10⁶ + b) div (2·b) millionths.
        #expect(CohortDay.quotient(1, 3)?.micros == 333_333)
        #expect(CohortDay.quotient(2, 3)?.micros == 666_667)
        #expect(CohortDay.quotient(1, 2_000_000)?.micros == 1, "0.0000005 rounds up")
        #expect(CohortDay.quotient(1, 2_000_001)?.micros == 0)
        #expect(CohortDay.quotient(5, 0) == nil)
        // CPI: an amount in millionths over a count.
        #expect(CohortDay.quotient(10_000_000, 3, scale: 1_000_000)?.micros == 3_333_333)
        // ROAS: 1.5 ÷ 4 = 0.375.
        #expect(CohortDay.quotient(1_500_000, 4_000_000)?.micros == 375_000)
        // A rate: 12.34 at 0.9234567891 is 11.395456777... → 11.395457.
        #expect(FXRate(decimal: "0.9234567891")?.convert(Money(micros: 12_340_000)).micros == 11_395_457)
        #expect(FXRate(decimal: "0") == nil && FXRate(decimal: "1.12345678901") == nil && FXRate(decimal: "-1") == nil)
    }

    /// Day D holds a cohort's window-1 postback, day D+7 its window-2 one. Losing D+7's partition
    /// and rerunning D would publish the cohort with fewer postbacks: refused, exit 2, until --force.
    @Test func aRerunThatWouldMakeAPublishedCohortWorseIsRefusedUnlessForced() throws {
        let store = TemporaryDirectory("cohort-worse")
        try store.write(AggregateJobTests.schema, to: "schemas/111/t1.json")
        var spool = SpoolBuilder(root: store.path)
        // Received on the 10th at 06:00: window 1's estimated install date is the 6th (84 h before, 18:00).
        spool.add(record(AggregateJobTests.skan4(source: "1237", fine: 2), key: "A:0", at: "2026-03-10T06:00:00.000000Z"))
        // Received on the 17th at 06:00, window 2 (252 h before): the 6th too.
        spool.add(
            record(
                AggregateJobTests.skan4(source: "1237", sequence: 1, coarse: .high), key: "A:1", at: "2026-03-17T06:00:00.000000Z"
            ))
        try spool.write()
        let aggregate = ["aggregate", "--data", store.path, "--schemas", store.path + "/schemas"]
        #expect(run(aggregate + ["--from", "2026-03-06", "--to", "2026-03-17"]).status == .success)
        let cohort = try store.read("agg/campaign_cohort_daily/dt=2026-03-06/part-00000.csv")
        let row = try #require(CSVText.rows(cohort).first)
        #expect(row["campaign"] == "spring" && row["postbacks_w1"] == "1" && row["postbacks_w2"] == "1", "\(cohort)")
        #expect(row["cohort_status"] == "window-2-final" && row["complete_through"] == "2026-03-17", "\(cohort)")

        try FileManager.default.removeItem(atPath: store.path + "/agg/_manifests/dt=2026-03-17.json")
        let refused = run(aggregate + ["--date", "2026-03-10"])
        #expect(refused.status == .usageOrIOError)
        #expect(refused.stderr.contains("2026-03-06: not replaced"), "\(refused.stderr)")
        #expect(refused.stderr.contains("1 postbacks instead of 2"), "\(refused.stderr)")
        #expect(try store.read("agg/campaign_cohort_daily/dt=2026-03-06/part-00000.csv") == cohort, "the published cohort stays")
        let forced = run(aggregate + ["--date", "2026-03-10", "--force"])
        #expect(forced.status == .success, "\(forced.stderr)")
        #expect(try store.read("agg/campaign_cohort_daily/dt=2026-03-06/part-00000.csv").contains(",1,0,0,"))
    }
}
