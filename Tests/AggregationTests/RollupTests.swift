import AggregateSchema
import Foundation
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import Aggregation

/// The rollups (`campaign_daily`, `publisher_daily`, `country_daily`, `campaign_daily_development`)
/// checked against the detail table they roll up, on a synthesized spool rendered by several workers
/// (so the per-worker sums are merged): regrouped here independently, summed with exact amounts.
@Suite struct RollupTests {
    static let days = ["2026-03-01", "2026-03-02"]

    /// A store aggregated once for the suite: enough rows for two render parts a day (1,024 rows each).
    static let root: String = {
        let root = TemporaryDirectory.create("rollups")
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 4000
        spool.developmentRate = 0.05
        spool.rejectedRate = 0.02
        spool.duplicateRate = 0.05
        _ = try! spool.write(to: StoreLayout(root: root), first: day(days[0]), days: days.count)
        _ = try! run(root, catalog: SchemaCatalog.load(directory: Fixtures.sampleSchemas), from: days[0], to: days[1], workers: 2)
        return root
    }()

    static func read(_ path: String) throws -> String { try String(contentsOfFile: root + "/" + path, encoding: .utf8) }

    static func table(_ name: String, _ date: String) throws -> [[String: String?]] {
        CSVText.rowsKeepingNulls(try read("agg/\(name)/dt=\(date)/part-00000.csv"))
    }

    /// The rollup of `rows` by `kept` computed here: counts as integers, amounts as the exact sum of the
    /// non-empty values (nil when all are empty), each group one row of column → text.
    static func regroup(_ rows: [[String: String?]], kept: [String], measures: [String]) throws -> [[String: String?]] {
        var groups: [[String?]: [String: String?]] = [:]
        for row in rows {
            let key = kept.map { row[$0] ?? nil }
            var group = groups[key] ?? Dictionary(uniqueKeysWithValues: kept.map { ($0, row[$0] ?? nil) })
            for measure in measures {
                let value = try #require(row[measure], "\(measure) is a column")
                if AggregateColumn.moneyColumnNames.contains(measure) {
                    guard let value else {
                        group[measure] = group[measure] ?? String?.none
                        continue
                    }
                    let amount = try #require(Money(decimal: value), "\(measure) '\(value)'")
                    let sum = (group[measure].flatMap { $0 }.flatMap { Money(decimal: $0) } ?? .zero).plus(amount)!
                    group[measure] = sum.description
                } else {
                    let count = try #require(value.flatMap { Int($0) }, "\(measure) is a count")
                    group[measure] = String((group[measure].flatMap { $0 }.flatMap { Int($0) } ?? 0) + count)
                }
            }
            groups[key] = group
        }
        return Array(groups.values)
    }

    /// The detail rows a production rollup groups: those with production postbacks or rejected
    /// records (a grain seen only in development postbacks has no rollup row).
    static func production(_ rows: [[String: String?]]) -> [[String: String?]] {
        rows.filter { row in
            ["postbacks", "rejected_postbacks"].contains { Int((row[$0] ?? nil) ?? "0")! > 0 }
        }
    }

    static func sorted(_ rows: [[String: String?]], _ columns: [String]) -> [String] {
        rows.map { row in columns.map { (row[$0] ?? nil) ?? "∅" }.joined(separator: "\u{1F}") }.sorted()
    }

    /// Each rollup is exactly the detail rows grouped by its kept columns and summed: no group lost or
    /// added, no measure mis-summed, and its lines sorted by their bytes like every table.
    @Test(arguments: AggregateTables.rollups.map(\.table))
    func aRollupIsTheDetailGroupedByItsKeptColumns(table: String) throws {
        let rollup = try #require(AggregateTables.rollups.first { $0.table == table })
        let columns = rollup.columns.map(\.name)
        let measures = rollup.columns.filter { !rollup.kept.contains($0) }.map(\.name)
        var merged = false
        for date in Self.days {
            let detail = try Self.table(AggregateTables.postbackDetailDaily, date)
            let rows = try Self.table(table, date)
            let expected = try Self.regroup(Self.production(detail), kept: rollup.kept.map(\.name), measures: measures)
            #expect(rows.count <= detail.count)
            let (actualLines, expectedLines) = (Self.sorted(rows, columns), Self.sorted(expected, columns))
            let same = actualLines == expectedLines  // the difference, not two thousand rows, in the message
            let missing = Set(expectedLines).subtracting(actualLines).prefix(3)
            let unexpected = Set(actualLines).subtracting(expectedLines).prefix(3)
            #expect(same, "\(table) \(date): missing \(missing), unexpected \(unexpected)")
            merged = merged || rows.count < detail.count
            let text = try Self.read("agg/\(table)/dt=\(date)/part-00000.csv")
            let lines = text.split(separator: "\n").dropFirst().map(String.init)
            #expect(lines == AggregateJobTests.bytewiseSorted(lines))
            // The file's columns: the rollup's, then (campaign_daily) the model's, appended.
            let fileColumns = try #require(AggregateTables.columnsByTable.first { $0.table == table }).columns.map(\.name)
            #expect(fileColumns.starts(with: columns))
            #expect(text.hasPrefix(fileColumns.joined(separator: ",") + "\n"))
        }
        #expect(merged, "the spool has detail rows that \(table) merges")
    }

    /// The invariant analysts rely on: for every day, currency and measure, a rollup's total is the
    /// detail table's over its rows of production postbacks and rejected records (summed as exact
    /// decimals); and no rollup row is all zeros because development postbacks were seen.
    @Test func everyMeasureSumsToTheDetailTablesPerCurrency() throws {
        let measures = AggregateTables.detailInOrder.filter(\.isMeasure).map(\.name)
        func totals(_ rows: [[String: String?]]) throws -> [String: [String: Int64]] {
            var sums: [String: [String: Int64]] = [:]
            for row in rows {
                let currency = (row["currency"] ?? nil) ?? ""
                for measure in measures {
                    guard let text = row[measure] ?? nil else { continue }
                    let value =
                        AggregateColumn.moneyColumnNames.contains(measure)
                        ? try #require(Money(decimal: text)).micros : try #require(Int64(text))
                    sums[currency, default: [:]][measure, default: 0] += value
                }
            }
            return sums
        }
        for date in Self.days {
            let rows = try Self.table(AggregateTables.postbackDetailDaily, date)
            let detail = try totals(Self.production(rows))
            #expect(detail.count >= 2, "more than one currency (and rejected rows without one)")
            #expect(Self.production(rows).count < rows.count, "the spool has grains of development postbacks only")
            for rollup in AggregateTables.rollups {
                let rollupRows = try Self.table(rollup.table, date)
                #expect(try totals(rollupRows) == detail, "\(rollup.table) \(date)")
                let zeros = rollupRows.filter { Self.production([$0]).isEmpty }
                #expect(zeros.isEmpty, "\(rollup.table) \(date): \(zeros.count) rows with neither postbacks nor rejected records")
            }
        }
    }

    /// `campaign_daily_development` at `campaign_daily`'s grain: per group, its postbacks are the
    /// development postbacks of the detail rows with those kept columns; its own side counts are 0.
    @Test func theDevelopmentRollupHoldsEachGroupsDevelopmentPostbacks() throws {
        let rollup = AggregateTables.campaignDailyRollup
        let kept = rollup.kept.map(\.name)
        for date in Self.days {
            var expected: [[String?]: Int] = [:]
            for row in try Self.table(AggregateTables.postbackDetailDaily, date) {
                let development = Int(((row["development_postbacks"] ?? nil) ?? "0")!)!
                if development > 0 { expected[kept.map { row[$0] ?? nil }, default: 0] += development }
            }
            var actual: [[String?]: Int] = [:]
            let rows = try Self.table(AggregateTables.campaignDailyDevelopment, date)
            for row in rows {
                actual[kept.map { row[$0] ?? nil }, default: 0] += Int(((row["postbacks"] ?? nil) ?? "")!)!
                #expect(row["development_postbacks"] == "0" && row["rejected_postbacks"] == "0")
            }
            #expect(!expected.isEmpty && actual == expected, "\(date)")
            #expect(
                try Self.read("agg/campaign_daily_development/dt=\(date)/part-00000.csv").hasPrefix(
                    (rollup.columns + AggregateTables.modeledColumns).map(\.name).joined(separator: ",") + "\n"))
        }
    }

    /// DuckDB (`.build/venv`) reads every table with its documented types (`read_csv(..., types=...)`,
    /// the `CREATE TABLE` columns of docs/aggregate.md) and finds, per day, currency and measure, each
    /// rollup's sum equal to the detail table's; `version` stays text in the detail table.
    @Test func duckDBReadsEveryTableTypedAndTheRollupsAgree() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        var tables: [String: [[String]]] = [:]
        for (table, columns) in AggregateTables.columnsByTable { tables[table] = columns.map { [$0.name, $0.sqlType] } }
        let request: [String: Any] = [
            "root": Self.root, "detail": AggregateTables.postbackDetailDaily, "tables": tables,
            "rollups": AggregateTables.rollups.map { rollup in
                [rollup.table, rollup.columns.filter { !rollup.kept.contains($0) }.map(\.name)] as [Any]
            },
        ]
        let script = """
            import duckdb, json, sys
            request = json.loads(sys.argv[1])
            con = duckdb.connect()
            problems, rows = [], {}
            for table, columns in request["tables"].items():
                types = ", ".join(f"'{name}': '{sql}'" for name, sql in columns)
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_csv('{request['root']}/agg/{table}/*/*.csv', "
                            f"hive_partitioning = true, header = true, types = {{{types}}})")
                described = {name: kind for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall()}
                for name, sql in columns:
                    if described.get(name) != sql.replace(" ", ""):
                        problems.append(f"{table}.{name} read as {described.get(name)}, documented {sql}")
                rows[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if con.execute(f"SELECT DISTINCT typeof(version) FROM {request['detail']}").fetchall() != [("VARCHAR",)]:
                problems.append("version is not text in the detail table")
            for table, measures in request["rollups"]:
                sums = ", ".join(f"sum({m}) AS {m}" for m in measures)
                # A rollup groups the detail rows of production postbacks and rejected records.
                detail = f"(SELECT * FROM {request['detail']} WHERE postbacks > 0 OR rejected_postbacks > 0)"
                for a, b in ((table, detail), (detail, table)):
                    extra = con.execute(f"SELECT dt, currency, {sums} FROM {a} GROUP BY ALL EXCEPT "
                                        f"SELECT dt, currency, {sums} FROM {b} GROUP BY ALL").fetchall()
                    if extra:
                        problems.append(f"{a} has sums {b} has not: {extra[:3]}")
            print(json.dumps({"problems": problems, "rows": rows}))
            """
        let json = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
        let result = try VenvPython.run(script: script, arguments: [json])
        try #require(result.status == 0, "python3 with duckdb failed (scripts/setup --test installs it): \(result.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(answer["problems"] as? [String] == [], "\(answer)")
        let rows = try #require(answer["rows"] as? [String: Int])
        for rollup in AggregateTables.rollups {
            #expect(rows[rollup.table]! > 0 && rows[rollup.table]! <= rows[AggregateTables.postbackDetailDaily]!)
        }
    }

    /// The manifest lists every table, in write order, with its row count.
    @Test func theManifestListsEveryTable() throws {
        let manifest = try Self.read("agg/_manifests/dt=\(Self.days[1]).json")
        #expect(manifest.hasPrefix("{\"format\":3,"))
        var position = manifest.startIndex
        for table in AggregateTables.all {
            let rows = try Self.table(table, Self.days[1]).count
            let entry = "{\"table\":\"\(table)\",\"path\":\"agg/\(table)/dt=\(Self.days[1])/part-00000.csv\",\"rows\":\(rows),"
            let found = try #require(manifest.range(of: entry, range: position..<manifest.endIndex), "\(entry)")
            position = found.upperBound
        }
    }
}

extension AggregateColumn {
    static let moneyColumnNames = Set(AggregateTables.detailInOrder.filter(\.isMoney).map(\.name))
}
