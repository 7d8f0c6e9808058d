import AggregateSchema
import Foundation
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// Figures before a schema, and runs that never look fine when they are not: `aggregate` without
/// `--schemas` publishes every count with no revenue (checked against the raw spool by an
/// independent reading in Python and DuckDB), `schema init` writes a schema `aggregate` accepts as it
/// is, and a run that counted nothing in the environment it was asked for says why and exits 1.
@Suite(.serialized) struct NoSchemaTests {
    static let date = "2026-03-10"
    static let apps: [Int64] = [111, 222]

    /// A store of production postbacks (with duplicates, rejected and a few development records) of
    /// apps no schema knows, aggregated without --schemas.
    static let store: (root: String, run: CommandRun) = {
        let root = TemporaryDirectory.create("no-schema")
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 3000
        spool.apps = apps
        spool.developmentRate = 0.02
        _ = try! spool.write(to: StoreLayout(root: root), first: UTCDay(date)!, days: 1)
        return (root, TestSupport.run(["aggregate", "--data", root, "--date", date]))
    }()

    static func manifest(_ root: String) throws -> [String: Any] {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(root)/agg/_manifests/dt=\(date).json"))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }

    static func rows(_ root: String, _ table: String) throws -> [[String: String?]] {
        CSVText.rowsKeepingNulls(
            try String(contentsOfFile: "\(root)/agg/\(table)/dt=\(date)/part-00000.csv", encoding: .utf8))
    }

    @Test func withoutSchemasEveryCountIsPublishedAndNoRevenue() throws {
        let (root, run) = Self.store
        #expect(run.status == .success, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("no schema for apps 111 ("), "\(run.stdout)")
        let manifest = try Self.manifest(root)
        let totals = try #require(manifest["totals"] as? [String: Any])
        let postbacks = try #require(totals["postbacks"] as? Int)
        #expect(postbacks > 2500 && (totals["installs"] as? Int ?? 0) > 0)
        #expect((totals["revenue_est_by_currency"] as? [String: Any])?.isEmpty == true, "no revenue, not 0: \(totals)")
        let listed = try #require(manifest["apps_without_schema"] as? [[String: Any]])
        #expect(listed.map { $0["app_id"] as? Int } == Self.apps.map { Int($0) })
        #expect(listed.reduce(0) { $0 + ($1["postbacks"] as? Int ?? 0) } == postbacks)
        for table in [AggregateTables.postbackDetailDaily] + AggregateTables.rollups.map(\.table) {
            let rows = try Self.rows(root, table)
            #expect(!rows.isEmpty)
            for row in rows {
                for column in ["revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency", "schema_id"] {
                    #expect((row[column] ?? nil) == nil, "\(table): \(column) empty without a schema: \(row)")
                }
            }
        }
        let labels = Set(try Self.rows(root, AggregateTables.campaignDaily).compactMap { $0["decoded_label"] ?? nil })
        #expect(labels == ["no_schema", "null_cv"], "\(labels)")
    }

    /// The spool read here in Python, first copy of each key, against campaign_daily read by DuckDB:
    /// per app, ad network, campaign id / source identifier and value, the same postbacks, installs,
    /// redownloads, re-engagements, losses and null values.
    @Test func theNoSchemaCountsMatchAnIndependentReadingOfTheSpool() throws {
        let (root, run) = Self.store
        #expect(run.status == .success)
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let script = """
            import duckdb, glob, json, sys
            root, date = sys.argv[1], sys.argv[2]
            copies = []
            for path in sorted(glob.glob(f"{root}/raw/postbacks/dt={date}/*.jsonl")):
                with open(path, "rb") as f:
                    for offset, line in enumerate(f):
                        record = json.loads(line)
                        if record["status"] == "verified" and record["environment"] == "production":
                            copies.append((record["received_at"], path, offset, record))
            first = {}
            for received, path, offset, record in sorted(copies, key=lambda c: c[:3]):
                first.setdefault(record["dedup_key"], record)
            expected = {}
            for record in first.values():
                a = record["attribution"]
                key = (a["app_id"], a["ad_network_id"].lower(), a["campaign_id"], a["source_identifier"], a["fine_value"], a["coarse_value"])
                wins, first_window = a["did_win"] is not False, (a["postback_sequence_index"] or 0) == 0
                sums = expected.setdefault(key, [0, 0, 0, 0, 0, 0])
                sums[0] += 1
                sums[1] += wins and first_window and a["conversion_type"] == "download"
                sums[2] += wins and first_window and a["conversion_type"] == "redownload"
                sums[3] += wins and first_window and a["conversion_type"] == "re-engagement"
                sums[4] += not wins
                sums[5] += wins and a["fine_value"] is None and a["coarse_value"] is None
            actual = {}
            sums = ", ".join(f"sum({c}::BIGINT)" for c in ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks"])
            query = (f"SELECT app_id, ad_network_id, campaign_id, source_identifier, fine_cv, coarse_cv, {sums} "
                     f"FROM read_csv('{root}/agg/campaign_daily/dt={date}/part-00000.csv', header = true, all_varchar = true) "
                     f"WHERE app_id IS NOT NULL AND postbacks::BIGINT > 0 GROUP BY ALL")
            for row in duckdb.sql(query).fetchall():
                key = (int(row[0]), row[1], None if row[2] is None else int(row[2]), row[3], None if row[4] is None else int(row[4]), row[5])
                actual[key] = [int(v) for v in row[6:]]
            expected = {k: [int(x) for x in v] for k, v in expected.items()}
            missing = [str(k) for k in expected if actual.get(k) != expected[k]][:3]
            extra = [str(k) for k in actual if k not in expected][:3]
            print(json.dumps({"keys": len(expected), "postbacks": sum(v[0] for v in expected.values()), "missing": missing, "extra": extra}))
            """
        let result = try VenvPython.run(script: script, arguments: [root, Self.date])
        try #require(result.status == 0, "python3 with duckdb failed (scripts/setup --test installs it): \(result.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(answer["missing"] as? [String] == [] && answer["extra"] as? [String] == [], "\(answer)")
        let totals = try #require(try Self.manifest(root)["totals"] as? [String: Any])
        #expect(answer["postbacks"] as? Int == totals["postbacks"] as? Int, "\(answer) \(totals)")
        #expect((answer["keys"] as? Int ?? 0) > 100)
    }

    /// `schema init` lists every value, names the source identifiers and campaign ids of the store,
    /// and its output decodes the same store as it is: labels, and revenue "at least 0", never a known 0.
    @Test func aStarterSchemaIsAcceptedAsItIsAndListsEveryValue() throws {
        let (root, run) = Self.store
        #expect(run.status == .success)
        let schemas = TemporaryDirectory("starter")
        let path = schemas.path + "/111/\(StarterSchemaFile.effectiveFrom).json"
        let written = TestSupport.run(["schema", "init", "--app", "111", "--from", root, "--out", path])
        #expect(written.status == .success, "\(written.stderr)")
        let again = TestSupport.run(["schema", "init", "--app", "111", "--out", path])
        #expect(again.status == .usageOrIOError && again.stderr.contains("exists"), "never replaces: \(again.stderr)")

        let schema = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let windows = try #require(schema["windows"] as? [String: [String: Any]])
        let fine = try #require((windows["0"]?["fine"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(fine.compactMap { $0["value"] as? Int } == Array(0...63))
        for window in ["0", "1", "2"] {
            let coarse = try #require(windows[window]?["coarse"] as? [String: Any])
            #expect(Set(coarse.keys) == ["low", "medium", "high"], "window \(window)")
        }
        // Every source identifier and campaign id of app 111 in the published tables, by ad network.
        var seen: [String: (sources: Set<String>, campaigns: Set<String>)] = [:]
        let published =
            try Self.rows(root, AggregateTables.campaignDaily) + Self.rows(root, AggregateTables.campaignDailyDevelopment)
        for row in published where (row["app_id"] ?? nil) == "111" {
            let network = try #require(row["ad_network_id"] ?? nil)
            if let source = row["source_identifier"] ?? nil, source.count == 4 {
                seen[network, default: ([], [])].sources.insert(source)
            }
            if let campaign = row["campaign_id"] ?? nil { seen[network, default: ([], [])].campaigns.insert(campaign) }
        }
        let maps = try #require(schema["source_identifier_map"] as? [[String: Any]])
        #expect(Set(maps.compactMap { $0["ad_network_id"] as? String }) == Set(seen.keys))
        for map in maps {
            let network = try #require(map["ad_network_id"] as? String)
            let digits = try #require((map["digits"] as? [[String: Any]])?.first)
            let values = (digits["values"] as? [String: String]) ?? [:]
            #expect(Set(values.keys) == seen[network]?.sources, "\(network)")
            let campaigns = (map["campaign_id_map"] as? [String: String]) ?? [:]
            #expect(Set(campaigns.keys) == seen[network]?.campaigns ?? [], "\(network)")
        }

        #expect(TestSupport.run(["schema", "check", schemas.path]).status == .success)
        let copy = TemporaryDirectory("starter-store")
        try FileManager.default.removeItem(atPath: copy.path)
        try FileManager.default.copyItem(atPath: root, toPath: copy.path)
        let decoded = TestSupport.run(["aggregate", "--data", copy.path, "--schemas", schemas.path, "--date", Self.date])
        #expect(decoded.status == .success, "\(decoded.stdout)\(decoded.stderr)")
        #expect(decoded.stdout.contains("no schema for app 222 (") && !decoded.stdout.contains("111 ("), "\(decoded.stdout)")
        var fineRows = 0
        for row in try Self.rows(copy.path, AggregateTables.campaignDaily)
        where (row["app_id"] ?? nil) == "111" && (row["postbacks"] ?? nil) != "0" {
            #expect((row["schema_id"] ?? nil) == "111/starter")
            guard (row["cv_kind"] ?? nil) == "fine" || (row["cv_kind"] ?? nil) == "coarse" else { continue }
            let label = (row["cv_kind"] ?? nil) == "fine" ? "fine_\((row["fine_cv"] ?? nil)!)" : nil
            if let label { #expect((row["decoded_label"] ?? nil) == label) }
            #expect((row["revenue_min_sum"] ?? nil) == "0" && (row["revenue_max_sum"] ?? nil) == nil, "at least 0: \(row)")
            if let source = row["source_identifier"] ?? nil, source.count == 4 {
                #expect((row["campaign"] ?? nil) == "source_\(source)")
            }
            fineRows += 1
        }
        #expect(fineRows > 0)
    }

    /// No schema yet exports the empty decode table (the Spark job's run without schemas): each table's
    /// header, as the sample schemas' export has it, and no row.
    @Test func anEmptySchemaDirectoryExportsHeadersOnly() throws {
        let empty = TemporaryDirectory("no-schemas")
        for table in ["values", "events", "sources"] {
            let exported = TestSupport.run(["schema", "export", "--schemas", empty.path, "--table", table])
            #expect(exported.status == .success, "\(exported.stderr)")
            let samples = TestSupport.run(["schema", "export", "--schemas", Fixtures.sampleSchemas, "--table", table])
            let header = try #require(samples.stdout.split(separator: "\n").first)
            #expect(exported.stdout == String(header) + "\n", "\(table): \(exported.stdout)")
        }
    }

    /// Every line refused (test postbacks without their key): the last line says why and which
    /// options fix it, and the run exits 1; with them, the same file is the development day it is.
    @Test func aRunThatRefusedEveryPostbackSaysWhyAndExits1() throws {
        let directory = TemporaryDirectory("all-refused")
        let key = directory.path + "/test-key.pem"
        let generated = TestSupport.run(["generate", "--key", key, "--create-key", "--count", "200"])
        #expect(generated.status == .success, "\(generated.stderr)")
        try directory.write(generated.stdout, to: "test.jsonl")
        let input = directory.path + "/test.jsonl"
        let refused = TestSupport.run(["aggregate", "--input", input, "--date", Self.date, "--data", directory.path + "/out"])
        #expect(refused.status == .failure, "\(refused.stdout)\(refused.stderr)")
        let last = refused.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            last.contains("all 200 postbacks of --input were refused")
                && last.contains("signed by a key this run does not trust: add --trust-key KEY --allow-dev"), "\(last)")

        let counted = TestSupport.run([
            "aggregate", "--input", input, "--date", Self.date, "--data", directory.path + "/out2", "--allow-dev",
            "--trust-key", key,
        ])
        #expect(counted.status == .success, "\(counted.stdout)\(counted.stderr)")
        #expect(counted.stdout.hasPrefix("\(Self.date): 200 development postbacks ("), "\(counted.stdout)")
    }

    /// A spool day of development postbacks only: exit 1 naming them and --allow-dev, no all-zero
    /// rows in the production rollups; their counts stay in the detail table's
    /// `development_postbacks` and in campaign_daily_development.
    @Test func aDayOfDevelopmentPostbacksOnlyIsNotAProductionDay() throws {
        let root = TemporaryDirectory.create("development-only")
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 400
        spool.rejectedRate = 0
        _ = try spool.write(to: StoreLayout(root: root), first: UTCDay(Self.date)!, days: 1)
        // Every postback signed by a development key, as a receiver stores them.
        let partition = StoreLayout(root: root).partition(.postbacks, day: UTCDay(Self.date)!)
        for name in try FileManager.default.contentsOfDirectory(atPath: partition) {
            let text = try String(contentsOfFile: partition + "/" + name, encoding: .utf8)
            try text.replacingOccurrences(of: "\"environment\":\"production\"", with: "\"environment\":\"development\"")
                .write(toFile: partition + "/" + name, atomically: true, encoding: .utf8)
        }
        let run = TestSupport.run(["aggregate", "--data", root, "--date", Self.date])
        #expect(run.status == .failure, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasPrefix("\(Self.date): "), "\(run.stdout)")
        #expect(run.stdout.contains(" development postbacks (") && run.stdout.contains("no production postbacks"))
        let last = run.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.contains("are development postbacks") && last.contains("add --allow-dev"), "\(last)")
        for rollup in AggregateTables.rollups {
            #expect(try Self.rows(root, rollup.table).isEmpty, "\(rollup.table) has no all-zero development rows")
        }
        let development = try Self.rows(root, AggregateTables.postbackDetailDaily).reduce(0) {
            $0 + Int(($1["development_postbacks"] ?? nil) ?? "0")!
        }
        let decoded = try Self.rows(root, AggregateTables.campaignDailyDevelopment).reduce(0) {
            $0 + Int(($1["postbacks"] ?? nil) ?? "0")!
        }
        #expect(development > 300 && decoded == development)
        let allowed = TestSupport.run(["aggregate", "--data", root, "--date", Self.date, "--allow-dev"])
        #expect(allowed.status == .success, "development postbacks are what this run is for: \(allowed.stderr)")
    }
}
