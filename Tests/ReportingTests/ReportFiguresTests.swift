import Foundation
import PostbackStore
import Postbacks
import Testing

@testable import Basics
@testable import Reporting

/// The page's figures against the aggregate tables they come from, summed here independently from
/// the CSV files (and, for rejection reasons, from the raw spool) of a generated store.
@Suite struct ReportFiguresTests {
    static let days = ["2026-03-01", "2026-03-02", "2026-03-03"]

    struct Fixture {
        let store: ScratchStore
        let page: PageFigures
        let rows: [(day: String, row: [String: String?])]

        init(top: Int = 10_000) throws {
            store = try TestStore.shared.get()
            page = PageFigures(html: try ReportGenerator.page(store.request(from: TestStore.first, to: TestStore.last, top: top)))
            rows = try AggregateCSV.campaignDaily(store, days: ReportFiguresTests.days)
        }

        /// Production rows (the others hold only development or rejected counts).
        var production: [(day: String, row: [String: String?])] { rows.filter { $0.row.int("postbacks") > 0 } }

        func sum(_ column: String) -> Int { rows.reduce(0) { $0 + $1.row.int(column) } }
    }

    /// The campaign a row belongs to, by the documented rule: the decoded campaign, else the raw
    /// campaign id or source identifier.
    static func campaign(_ row: [String: String?]) -> String {
        if let name = row.text("campaign"), !name.isEmpty { return name }
        if let id = row.text("campaign_id") { return "campaign id \(id)" }
        if let source = row.text("source_identifier") { return "source id \(source)" }
        return "no campaign"
    }

    static func campaignKey(_ row: [String: String?]) -> String {
        "\(campaign(row))|\(row.text("ad_network_id") ?? "")|\(row.text("app_id") ?? "")"
    }

    static func tableKey(_ record: [String: String]) -> String {
        "\(record["Campaign"]!)|\(record["Ad network"]!)|\(record["App"]!)"
    }

    @Test func headlineEqualsTheTableSums() throws {
        let fixture = try Fixture()
        for (metric, column) in [
            ("postbacks", "postbacks"), ("installs", "installs"), ("redownloads", "redownloads"),
            ("reengagements", "reengagements"), ("losses", "losses"), ("null_cv_postbacks", "null_cv_postbacks"),
            ("development", "development_postbacks"), ("rejected", "rejected_postbacks"),
        ] {
            #expect(fixture.page.count(metric) == fixture.sum(column), "\(metric)")
        }
        #expect(fixture.sum("postbacks") > 1_000)
        #expect(fixture.sum("development_postbacks") > 0)
        #expect(fixture.sum("rejected_postbacks") > 0)

        var duplicates = 0
        for day in Self.days {
            let manifest = try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: fixture.store.path("agg/_manifests/dt=\(day).json"))))
            let totals = (manifest as! [String: Any])["totals"] as! [String: Any]
            duplicates += (totals["duplicates_same_day"] as! Int) + (totals["duplicates_of_earlier_days"] as! Int)
        }
        #expect(duplicates > 0)
        #expect(fixture.page.count("duplicates") == duplicates)

        var revenue: [String: Int64] = [:]
        var withoutSchema = 0
        for (_, row) in fixture.production where row.text("cv_kind") != "none" {
            guard let currency = row.text("currency") else {
                withoutSchema += row.int("postbacks")
                continue
            }
            revenue[currency, default: 0] += row.micros("revenue_est_sum") ?? 0
        }
        #expect(revenue.keys.sorted() == ["EUR", "USD"])
        for (currency, micros) in revenue {
            let cents = (micros + 5_000) / 10_000
            let shown = fixture.page.metric("revenue_est_sum:\(currency)").map(Micros.parse)
            #expect(shown == cents * 10_000, "\(currency)")
        }
        #expect(withoutSchema > 0, "re-engagements of the shop app have no schema")
        #expect(fixture.page.count("no_schema") == withoutSchema)
    }

    @Test func postbacksAndInstallsPerDayAndAdNetwork() throws {
        let fixture = try Fixture()
        for (table, column, noun) in [
            ("table-postbacks-per-day", "postbacks", "postbacks"), ("table-installs-per-day", "installs", "installs"),
        ] {
            var expected: [String: [String: Int]] = [:]
            for (day, row) in fixture.production {
                expected[day, default: [:]][row.text("ad_network_id")!, default: 0] += row.int(column)
            }
            // One row per day, a column per ad network (the store has fewer than the named maximum).
            let figures = try #require(fixture.page.table(table))
            let networks = Set(expected.values.flatMap(\.keys))
            #expect(figures.header.first == "Day" && figures.header.last == "All networks")
            let named = Set(figures.header.dropFirst().dropLast().filter { $0 != "Other networks" })
            #expect(named.isSubset(of: networks) && named.count == min(networks.count, ReportPage.networksInTables))
            #expect(figures.header.contains("Other networks") == (networks.count > named.count))
            for record in figures.records {
                let day = record["Day"]!
                #expect(number(record["All networks"]!) == expected[day]!.values.reduce(0, +), "\(table) \(day)")
                if let others = record["Other networks"] {
                    let expectedOthers = expected[day]!.filter { !named.contains($0.key) }.values.reduce(0, +)
                    #expect(number(others) == expectedOthers, "\(table) \(day) other networks")
                }
                for network in named {
                    let count = number(record[network]!)
                    #expect(count == expected[day]![network, default: 0], "\(table) \(day) \(network)")
                    // The chart's tooltip for the same column segment says the same number.
                    if column == "postbacks", count > 0 {
                        #expect(
                            fixture.page.html.contains(
                                "<title>\(NumberFormat.longDay(UTCDay(day)!)) · \(network): \(NumberFormat.count(count)) \(noun)</title>"
                            ))
                    }
                }
            }
            #expect(Set(figures.records.map { $0["Day"]! }) == Set(Self.days))
            #expect(number(figures.footer!.last!) == fixture.sum(column))
        }
    }

    @Test func fineAndCoarseValuesPerCampaign() throws {
        let fixture = try Fixture()
        var fine: [String: Int] = [:]
        var fineLabels: [String: String] = [:]
        var coarse: [String: [Int]] = [:]
        for (_, row) in fixture.production {
            let key = Self.campaignKey(row)
            if row.text("cv_kind") == "fine" {
                let value = row.text("fine_cv")!
                fine["\(key)|\(value)", default: 0] += row.int("postbacks")
                fineLabels["\(key)|\(value)"] = row.text("decoded_label")
            }
            if row.text("cv_kind") == "coarse" {
                let level = ["low", "medium", "high"].firstIndex(of: row.text("coarse_cv")!)!
                let window = row.int("postback_sequence_index") + 1
                coarse["\(key)|\(window)", default: [0, 0, 0]][level] += row.int("postbacks")
            }
        }
        #expect(fineLabels.values.contains("undecoded"), "some fine values are outside the schema")
        #expect(
            fine.keys.contains { $0.hasPrefix("spring_sale|") || $0.hasPrefix("summer_sale|") || $0.hasPrefix("brand|") },
            "a source-identifier map decoded campaigns")

        // Each campaign's most frequent values by value, the rest in one row: the rows add up to the
        // campaign's fine values, and no value left out is more frequent than one listed.
        let fineTable = try #require(fixture.page.table("table-fine"))
        var shownTotal: [String: Int] = [:]
        var smallestListed: [String: Int] = [:]
        var otherRows = 0
        for record in fineTable.records {
            let campaign = Self.tableKey(record)
            let count = number(record["Postbacks"]!)
            shownTotal[campaign, default: 0] += count
            guard record["Value"] != "other" else {
                otherRows += 1
                continue
            }
            let key = "\(campaign)|\(record["Value"]!)"
            #expect(count == fine[key], "\(key)")
            #expect(record["Label"] == fineLabels[key], "\(key)")
            smallestListed[campaign] = min(smallestListed[campaign] ?? .max, count)
        }
        var totals: [String: Int] = [:]
        for (key, count) in fine { totals[String(key[..<key.lastIndex(of: "|")!]), default: 0] += count }
        #expect(shownTotal == totals)
        #expect(otherRows > 0, "some campaign has more values than the table lists")
        for (key, count) in fine {
            let campaign = String(key[..<key.lastIndex(of: "|")!])
            let listed = fineTable.records.contains {
                Self.tableKey($0) == campaign && $0["Value"] == String(key[key.index(after: key.lastIndex(of: "|")!)...])
            }
            if !listed { #expect(count <= smallestListed[campaign]!, "\(key) left out but more frequent than a listed value") }
        }

        let coarseTable = try #require(fixture.page.table("table-coarse"))
        var shownCoarse: [String: [Int]] = [:]
        for record in coarseTable.records {
            let counts = ["Low", "Medium", "High"].map { number(record[$0]!) }
            shownCoarse["\(Self.tableKey(record))|\(record["Postback"]!)"] = counts
            #expect(number(record["Total"]!) == counts.reduce(0, +))
        }
        #expect(shownCoarse == coarse)
    }

    @Test func revenuePerCampaignAndWindowWithRanges() throws {
        let fixture = try Fixture()
        struct Expected: Equatable {
            var valued = 0, unknown = 0
            var minimum: Int64 = 0, estimate: Int64 = 0
            var maximum: Int64? = 0
        }
        var expected: [String: [String: Expected]] = [:]
        for (_, row) in fixture.production where row.text("cv_kind") != "none" {
            guard let currency = row.text("currency") else { continue }
            let key = "\(Self.campaignKey(row))|\(row.int("postback_sequence_index") + 1)"
            var entry = expected[currency, default: [:]][key, default: Expected()]
            if let estimate = row.micros("revenue_est_sum") {
                entry.valued += row.int("postbacks")
                entry.estimate += estimate
                entry.minimum += row.micros("revenue_min_sum")!
                entry.maximum = row.micros("revenue_max_sum").flatMap { maximum in entry.maximum.map { $0 + maximum } }
            } else {
                entry.unknown += row.int("postbacks")
            }
            expected[currency, default: [:]][key] = entry
        }
        #expect(expected["USD"]!.values.contains { $0.maximum == nil }, "open-ended ranges")
        #expect(expected["USD"]!.values.contains { $0.unknown > 0 }, "unknown values")
        for (currency, campaigns) in expected {
            let table = try #require(fixture.page.table("table-revenue-\(currency)"))
            var shown: [String: Expected] = [:]
            for record in table.records {
                let maximum = record["Max"]!
                shown["\(Self.tableKey(record))|\(record["Postback"]!)"] = Expected(
                    valued: number(record["With value"]!), unknown: number(record["Unknown value"]!),
                    minimum: Micros.parse(record["Min"]!),
                    estimate: Micros.parse(record["Estimate"]!),
                    maximum: maximum == "no upper bound" ? nil : Micros.parse(maximum))
            }
            #expect(shown == campaigns, "\(currency)")
        }
    }

    @Test func nullAndNonWinningShares() throws {
        let fixture = try Fixture()
        var nulls: [String: (null: Int, winners: Int)] = [:]
        var days: [String: (null: Int, winners: Int)] = [:]
        var networks: [String: (losses: Int, postbacks: Int)] = [:]
        for (day, row) in fixture.production {
            let network = row.text("ad_network_id")!
            let winners = row.int("postbacks") - row.int("losses")
            nulls["\(day)|\(network)", default: (0, 0)].null += row.int("null_cv_postbacks")
            nulls["\(day)|\(network)", default: (0, 0)].winners += winners
            days[day, default: (0, 0)].null += row.int("null_cv_postbacks")
            days[day, default: (0, 0)].winners += winners
            networks[network, default: (0, 0)].losses += row.int("losses")
            networks[network, default: (0, 0)].postbacks += row.int("postbacks")
        }
        func percent(_ part: Int, _ whole: Int) -> String {
            let tenths = (part * 2_000 + whole) / (2 * whole)
            return "\(tenths / 10).\(tenths % 10)%"
        }
        let nullTable = try #require(fixture.page.table("table-null-share"))
        #expect(nullTable.rows.count == days.count)
        for record in nullTable.records {
            let day = record["Day"]!
            let expected = try #require(days[day])
            #expect(number(record["Null values"]!) == expected.null)
            #expect(number(record["Winning postbacks"]!) == expected.winners)
            #expect(record["Share"] == percent(expected.null, expected.winners))
            for (heading, value) in record where heading.hasPrefix("Share, ") {
                let network = String(heading.dropFirst("Share, ".count))
                let counts = nulls["\(day)|\(network)"]
                #expect(value == (counts.map { $0.winners > 0 ? percent($0.null, $0.winners) : "–" } ?? "–"), "\(day) \(network)")
            }
        }
        #expect(nullTable.header.filter { $0.hasPrefix("Share, ") }.count == min(networks.count, ReportPage.networksInTables))
        let lossTable = try #require(fixture.page.table("table-non-winning"))
        #expect(lossTable.rows.count == networks.count)
        for record in lossTable.records {
            let expected = try #require(networks[record["Ad network"]!])
            #expect(number(record["Non-winning"]!) == expected.losses)
            #expect(number(record["Postbacks"]!) == expected.postbacks)
            #expect(record["Share"] == percent(expected.losses, expected.postbacks))
        }
        #expect(networks.values.contains { $0.losses > 0 })
    }

    @Test func rejectedByReasonMatchesTheRawSpool() throws {
        let fixture = try Fixture()
        var reasons: [String: Int] = [:]
        var statuses: [String: Int] = [:]
        for day in Self.days {
            for spool in StoreLayout.Spool.allCases {
                for segment in try fixture.store.layout.segments(spool, day: UTCDay(day)!) {
                    let reader = try SegmentReader(path: segment.path)
                    while let entry = try reader.next() {
                        guard case .record(let record, _) = entry, record.status != .verified else { continue }
                        reasons[record.reason ?? "(no reason given)", default: 0] += 1
                        statuses[record.status.rawValue, default: 0] += 1
                    }
                }
            }
        }
        #expect(reasons.count >= 3)
        let table = try #require(fixture.page.table("table-rejected-reasons"))
        // Each row is a reason's template and the value it quoted: put the value back to get the reason.
        var fromTable: [String: Int] = [:]
        for row in table.rows {
            let values = row[1].isEmpty ? [] : row[1].components(separatedBy: ", ")
            var reason = row[0]
            for value in values {
                let placeholder = try #require(reason.range(of: "…"))
                reason.replaceSubrange(placeholder, with: value)
            }
            fromTable[reason, default: 0] += number(row[2])
        }
        #expect(fromTable == reasons)
        #expect(number(table.footer![2]) == fixture.sum("rejected_postbacks"))
        let statusTable = try #require(fixture.page.table("table-rejected-status"))
        #expect(Dictionary(uniqueKeysWithValues: statusTable.rows.map { ($0[0], number($0[1])) }) == statuses)

        var claimed: [String: Int] = [:]
        var development: [String: Int] = [:]
        for (_, row) in fixture.rows {
            if row.int("rejected_postbacks") > 0 {
                claimed[row.text("ad_network_id") ?? "(not parsed)", default: 0] += row.int("rejected_postbacks")
            }
            if row.int("development_postbacks") > 0 {
                development[row.text("ad_network_id")!, default: 0] += row.int("development_postbacks")
            }
        }
        let claimedTable = try #require(fixture.page.table("table-rejected-networks"))
        #expect(Dictionary(uniqueKeysWithValues: claimedTable.rows.map { ($0[0], number($0[1])) }) == claimed)
        let developmentTable = try #require(fixture.page.table("table-development"))
        #expect(Dictionary(uniqueKeysWithValues: developmentTable.rows.map { ($0[0], number($0[1])) }) == development)
    }

    /// With only a few campaigns named, the last row sums exactly the campaigns left out, and every
    /// named campaign has at least as many installs as any left out.
    @Test func campaignsBeyondTheTopAreSummedInOneRow() throws {
        let fixture = try Fixture(top: 3)
        var installs: [String: Int] = [:]
        var coarse: [String: [Int]] = [:]
        for (_, row) in fixture.production {
            installs[Self.campaignKey(row), default: 0] += row.int("installs")
            guard row.text("cv_kind") == "coarse" else { continue }
            let level = ["low", "medium", "high"].firstIndex(of: row.text("coarse_cv")!)!
            coarse["\(Self.campaignKey(row))|\(row.int("postback_sequence_index") + 1)", default: [0, 0, 0]][level] += row.int(
                "postbacks")
        }
        let records = try #require(fixture.page.table("table-coarse")).records
        let named = Set(records.filter { $0["Campaign"] != "Other campaigns" }.map(Self.tableKey))
        #expect(named.count == 3)
        let withCoarse = Set(coarse.keys.map { String($0[..<$0.lastIndex(of: "|")!]) })
        let others = withCoarse.subtracting(named)
        #expect(named.allSatisfy { name in others.allSatisfy { installs[name]! >= installs[$0]! } })
        for window in 1...3 {
            let sums = others.reduce([0, 0, 0]) { sum, key in zip(sum, coarse["\(key)|\(window)"] ?? [0, 0, 0]).map(+) }
            let row = try #require(records.first { $0["Campaign"] == "Other campaigns" && $0["Postback"] == String(window) })
            #expect(["Low", "Medium", "High"].map { number(row[$0]!) } == sums)
            #expect(row["Ad network"] == "\(others.count) campaigns")
        }
    }
}
