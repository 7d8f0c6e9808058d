import AggregateSchema
import Foundation
import PostbackCrypto
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// `postback aggregate` and `postback schema` run in-process: usage errors, exit codes, `--input`,
/// the exported decode table, and the CSV output read back by DuckDB.
@Suite struct AggregateCommandTests {
    func scenario() throws -> (store: TemporaryDirectory, schemas: TemporaryDirectory) {
        let store = TemporaryDirectory()
        let schemas = TemporaryDirectory("schemas")
        try AggregateJobTests.buildSpool(root: store.path)
        try schemas.write(AggregateJobTests.schema, to: "111/t1.json")
        return (store, schemas)
    }

    @Test func badUsageGetsAClearMessageAndExitCode2() throws {
        let (store, schemas) = try scenario()
        let cases: [([String], String)] = [
            (["aggregate"], "--data DIR is required"),
            (["aggregate", "--data", store.path], "give --date DAY"),
            (["aggregate", "--data", store.path, "--schemas", schemas.path], "give --date DAY"),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-02-30"],
                "--date must be a date YYYY-MM-DD, got '2026-02-30'"
            ),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path, "--from", "2026-03-10"],
                "--from and --to go together"
            ),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path, "--from", "2026-03-10", "--to", "2026-03-01"],
                "is after --to"
            ),
            (
                [
                    "aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10", "--from", "2026-03-10",
                    "--to", "2026-03-10",
                ], "not both"
            ),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10", "--lookback-days", "-1"],
                "--lookback-days must be"
            ),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path + "/nope", "--date", "2026-03-10"],
                "/nope: no such directory (it should hold <app-id>/*.json"
            ),
            (
                ["aggregate", "--data", store.path + "/nope", "--schemas", schemas.path, "--date", "2026-03-10"],
                "/nope: no such directory (it should hold raw/"
            ),
            (
                [
                    "aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10", "--allow-dev",
                    "--trust-key", store.path + "/key.pem",
                ],
                "--trust-key applies to --input"
            ),
            (
                [
                    "aggregate", "--data", store.path, "--schemas", schemas.path, "--from", "2026-03-09", "--to", "2026-03-10",
                    "--input", store.path + "/x",
                ], "/x: no such file"
            ),
            (
                ["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-09", "--input", store.path],
                "is a directory; give the files in it"
            ),
            (["aggregate", "--bogus"], "unknown option --bogus"),
            (["schema", "export"], "--schemas DIR is required"),
            (["schema", "frobnicate"], "unknown subcommand"),
        ]
        for (words, message) in cases {
            let result = run(words)
            #expect(result.status == .usageOrIOError, "\(words)")
            #expect(result.stderr.contains(message), "\(words): \(result.stderr)")
        }
        try schemas.write("{\"schema_id\": 1}", to: "111/broken.json")
        let broken = run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10"])
        #expect(
            broken.status == .usageOrIOError && broken.stderr.contains("broken.json")
                && broken.stderr.contains("schema_id: must be a string"))
        #expect(!store.exists("agg/_manifests/dt=2026-03-10.json"), "nothing published with bad schemas")
    }

    @Test func corruptLinesArePublishedAndReportedWithExitCode1() throws {
        let (store, schemas) = try scenario()
        let result = run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-10"])
        #expect(result.status == .failure)
        #expect(
            result.stderr.contains("1 corrupt line not counted") && result.stderr.contains("part-rx1-000001.jsonl:3"),
            "\(result.stderr)")
        #expect(result.stdout.hasPrefix("2026-03-10: 10 postbacks (5 installs"), "\(result.stdout)")
        #expect(result.stdout.contains("2 torn tails skipped"), "J and L (zeros a power cut left)")
        #expect(store.exists("agg/_manifests/dt=2026-03-10.json"))
        let json = run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", "2026-03-08", "--json"])
        #expect(json.status == .success, "the 8th has no corrupt line")
        #expect(json.stdout.contains(#""dt":"2026-03-08","postbacks":1,"#), "\(json.stdout)")
    }

    @Test func inputFilesAreVerifiedThenAggregated() throws {
        let store = TemporaryDirectory()
        let schemas = TemporaryDirectory("schemas")
        try schemas.write(AggregateJobTests.schema, to: "111/t1.json")
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        try store.write(key.pemRepresentation, to: "test-key.pem")
        let signer = TestPostbackSigner(key: key)
        var lines: [[UInt8]] = []
        for index in 0..<5 {
            var postback = SKAdNetworkTestPostback.v4(
                transactionID: "00000000-0000-4000-8000-00000000000\(index)", sourceIdentifier: "1237")
            postback.adNetworkID = "net.skadnetwork"
            postback.appID = 111
            postback.conversionValue = 2
            lines.append(try signer.sign(postback))
        }
        lines.append(lines[0])  // a duplicate
        // Production-signed by Apple; the sample is pretty-printed, so join its lines.
        lines.append(try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-low.json").filter { $0 != 0x0A && $0 != 0x0D })
        var forged = String(decoding: lines[1], as: UTF8.self)
        forged = forged.replacingOccurrences(of: "\"app-id\":111", with: "\"app-id\":112")
        lines.append(Array(forged.utf8))
        // Verified, but with a signed conversion type this release does not know: never counted.
        var unknownType = AdAttributionKitTestPostback(postbackIdentifier: "0E1F2A3B-4C5D-4E6F-8A9B-0C1D2E3F4A5B")
        unknownType.conversionType = "install"
        lines.append(try signer.sign(unknownType))
        let input = store.path + "/postbacks.jsonl"
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: input))

        let result = run([
            "aggregate", "--input", input, "--date", "2026-03-10", "--data", store.path, "--schemas", schemas.path,
            "--allow-dev", "--trust-key", store.path + "/test-key.pem", "--json",
        ])
        #expect(result.status == .success, "\(result.stderr)")
        #expect(
            result.stdout.contains(#""postbacks":1,"#) && result.stdout.contains(#""development_postbacks":5,"#)
                && result.stdout.contains(#""rejected_postbacks":2,"#) && result.stdout.contains(#""duplicates_same_day":1,"#),
            "\(result.stdout)")
        let rows = CSVText.rows(try store.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv"))
        let test = try #require(rows.first { $0["app_id"] == "111" && $0["development_postbacks"] == "5" })
        #expect(
            test["postbacks"] == "0" && test["decoded_label"] == "rev_1" && test["est_install_date"] == "2026-03-10",
            "received at noon, development: 10.5 minutes before (Developer Mode's timing)")
        #expect(rows.contains { $0["app_id"] == "525463029" && $0["postbacks"] == "1" && $0["coarse_cv"] == "high" })
        #expect(rows.contains { $0["rejected_postbacks"] == "1" && $0["protocol"] == "skadnetwork" })
        #expect(rows.contains { $0["rejected_postbacks"] == "1" && $0["protocol"] == "adattributionkit" }, "the quarantined one")
        #expect(!rows.contains { $0["protocol"] == "adattributionkit" && $0["development_postbacks"] != "0" })
        let manifest = try store.read("agg/_manifests/dt=2026-03-10.json")
        #expect(manifest.contains(#""spool":"input""#) && manifest.contains(#""lines":9"#), "the manifest names the input file")

        let noKey = run(["aggregate", "--input", input, "--date", "2026-03-10", "--data", store.path, "--schemas", schemas.path])
        #expect(
            noKey.status == .success && noKey.stdout.contains("8 rejected"),
            "without --trust-key the test postbacks do not verify (rejected records are not deduplicated): \(noKey.stdout)")
        let missing = run([
            "aggregate", "--input", store.path + "/missing.jsonl", "--date", "2026-03-10", "--data", store.path, "--schemas",
            schemas.path,
        ])
        #expect(missing.status == .usageOrIOError && missing.stderr.contains("missing.jsonl"))
    }

    /// A file that holds no postback gets the reason `postback verify` gives (an array, an over-long
    /// line), not a guess; and a day that is not over follows the spool's rule.
    @Test func inputProblemsAreNamedAndAnOpenDayIsPublishedOnlyOnRequest() throws {
        let store = TemporaryDirectory()
        let schemas = TemporaryDirectory("schemas")
        try schemas.write(AggregateJobTests.schema, to: "111/t1.json")
        func aggregate(_ input: String, date: String = "2026-03-10", _ extra: [String] = []) -> CommandRun {
            run(["aggregate", "--input", input, "--date", date, "--data", store.path, "--schemas", schemas.path] + extra)
        }
        try store.write(#"[{"version": "4.0"}, {"version": "4.0"}]"# + "\n", to: "array.json")
        let array = aggregate(store.path + "/array.json")
        #expect(array.status == .usageOrIOError)
        #expect(array.stderr.contains("got an array") && array.stderr.contains("one JSON object per line"), "\(array.stderr)")
        #expect(!array.stderr.contains("empty or not JSON"))

        let limit = RecordReader.defaultMaximumRecordBytes
        try store.write("{\"version\": \"" + String(repeating: "x", count: limit + 10) + "\"}\n", to: "long.jsonl")
        let long = aggregate(store.path + "/long.jsonl")
        #expect(long.status == .usageOrIOError)
        #expect(long.stderr.contains("longer than the \(limit)-byte limit"), "\(long.stderr)")

        // Apple's samples: production postbacks of a past day, never "an empty day".
        let samples = Fixtures.root.appendingPathComponent("Samples/skan-4.0_apple-doc_web-ad-tier-high.json").path
        let past = aggregate(samples)
        #expect(past.status == .success, "\(past.stderr)")
        #expect(past.stdout.contains("1 postback") && !past.stdout.contains("empty day"), "\(past.stdout)")

        let today = UTCDay(daysSinceEpoch: Int(time(nil) / 86_400)).description
        let open = aggregate(samples, date: today)
        #expect(open.status == .usageOrIOError)
        #expect(open.stderr.contains("\(today) is not over yet") && open.stderr.contains("--allow-open-day"), "\(open.stderr)")
        #expect(!store.exists("agg/_manifests/dt=\(today).json"))
        let allowed = aggregate(samples, date: today, ["--allow-open-day"])
        #expect(allowed.status == .success && allowed.stdout.contains("published as partial"), "\(allowed.stdout)")
        #expect(try store.read("agg/_manifests/dt=\(today).json").contains(#""partial":true"#))

        // A future day is never published: not told to add --allow-open-day, and refused with it.
        for extra in [[], ["--allow-open-day"]] {
            let future = aggregate(samples, date: "2030-01-01", extra)
            #expect(future.status == .usageOrIOError, "\(extra)")
            #expect(
                future.stderr.contains("2030-01-01 has not begun (today is \(today) UTC)")
                    && future.stderr.contains("a future day is never published"), "\(future.stderr)")
            #expect(!store.exists("agg/_manifests/dt=2030-01-01.json"))
        }
        let range = run([
            "aggregate", "--data", store.path, "--schemas", schemas.path, "--from", today, "--to", "2030-01-01",
            "--allow-open-day",
        ])
        #expect(range.status == .usageOrIOError && range.stderr.contains("2030-01-01 has not begun"), "\(range.stderr)")
    }

    /// Ctrl-C during the job (the built binary): the days published are named, the others too, the
    /// work files are gone, and the exit status is 130. The third day's segment is a FIFO nobody
    /// writes, so the job is surely still running when the signal comes.
    @Test func anInterruptNamesThePublishedDaysAndLeavesNoWorkFiles() throws {
        let store = TemporaryDirectory()
        let binary = Readme.binary.path
        let synthesize = Process()
        synthesize.executableURL = URL(fileURLWithPath: binary)
        synthesize.arguments = [
            "aggregate", "synthesize", "--data", store.path, "--from", "2026-03-01", "--days", "2", "--per-day", "200",
        ]
        synthesize.standardOutput = FileHandle.nullDevice
        try synthesize.run()
        synthesize.waitUntilExit()
        #expect(synthesize.terminationStatus == 0)
        let stuck = store.path + "/raw/postbacks/dt=2026-03-03"
        try FileManager.default.createDirectory(atPath: stuck, withIntermediateDirectories: true)
        #expect(mkfifo(stuck + "/part-rx1-000001.jsonl", 0o600) == 0)

        let job = Process()
        job.executableURL = URL(fileURLWithPath: binary)
        job.arguments = [
            "aggregate", "--data", store.path, "--schemas", Fixtures.sampleSchemas, "--from", "2026-03-01", "--to", "2026-03-04",
        ]
        let errors = Pipe()
        job.standardOutput = FileHandle.nullDevice
        job.standardError = errors
        try job.run()
        let deadline = Date().addingTimeInterval(60)
        while !store.exists("agg/_manifests/dt=2026-03-02.json"), Date() < deadline { usleep(50_000) }
        #expect(store.exists("agg/_work"), "the job is still running, with its work files")
        job.interrupt()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        job.waitUntilExit()
        #expect(job.terminationReason == .exit && job.terminationStatus == 130, "\(message)")
        #expect(
            message.contains("interrupted (SIGINT): published 2026-03-01, 2026-03-02; not published: 2026-03-03, 2026-03-04"),
            "\(message)")
        #expect(!store.exists("agg/_work"), "no work files left behind")
    }

    @Test func schemaCheckAndExport() throws {
        let check = run(["schema", "check", Fixtures.sampleSchemas])
        #expect(check.status == .success && check.stdout.contains("example-game/2025-06-01, app 525463029"), "\(check.stdout)")
        let schemas = TemporaryDirectory("schemas")
        try schemas.write(
            #"{"schema_id": "x", "app_id": 1, "effective_from": "2026-01-01", "currency": "USD", "windows": {"9": {}}}"#,
            to: "1/x.json")
        let bad = run(["schema", "check", schemas.path + "/1/x.json"])
        #expect(bad.status == .failure && bad.stderr.contains("windows: unknown key \"9\""))

        let export = run(["schema", "export", "--schemas", Fixtures.sampleSchemas])
        #expect(export.status == .success)
        let rows = CSVText.rows(export.stdout)
        // 2 schemas × 201 values per protocol and conversion type (game: 2 × 2; shop: 2 × 3).
        #expect(rows.count == 201 * 4 + 201 * 6)
        let bucket = try #require(
            rows.first {
                $0["schema_id"] == "example-game/2025-06-01" && $0["protocol"] == "skadnetwork"
                    && $0["conversion_type"] == "download"
                    && $0["postback_sequence_index"] == "0" && $0["cv_kind"] == "fine" && $0["cv_value"] == "3"
            })
        #expect(
            bucket["decoded_label"] == "revenue_bucket_1" && bucket["revenue_min"] == "1.99" && bucket["revenue_max"] == "2.99"
                && bucket["revenue_est"] == "2.49" && bucket["mapped"] == "true" && bucket["effective_to"] == "")
        #expect(
            rows.contains {
                $0["cv_value"] == "40" && $0["mapped"] == "false" && $0["decoded_label"] == "undecoded" && $0["revenue_est"] == ""
            })
        let events = CSVText.rows(run(["schema", "export", "--schemas", Fixtures.sampleSchemas, "--table", "events"]).stdout)
        #expect(
            events.contains {
                $0["cv_value"] == "63" && $0["event_name"] == "purchase" && $0["min_count"] == "3" && $0["max_count"] == ""
            })
        let sources = CSVText.rows(run(["schema", "export", "--schemas", Fixtures.sampleSchemas, "--table", "sources"]).stdout)
        #expect(
            sources.contains {
                $0["id_value"] == "1291" && $0["campaign"] == "summer_sale" && $0["geo"] == "ROW" && $0["placement"] == "rewarded"
            })
        #expect(
            sources.contains {
                $0["id_kind"] == "campaign_id" && $0["id_value"] == "42" && $0["campaign"] == "legacy_campaign_42"
            })
        let out = TemporaryDirectory()
        #expect(
            run(["schema", "export", "--schemas", Fixtures.sampleSchemas, "--out", out.path + "/values.csv"]).status == .success)
        #expect(try out.read("values.csv") == export.stdout)
    }

    /// Reads the published partitions with DuckDB (in `.build/venv`, from `scripts/setup --test`) through hive partitioning:
    /// the sums must equal the manifests', and decoding with the exported decode table (the way a
    /// Spark or SQL job would) must give the labels and revenue the aggregator wrote.
    @Test func duckDBReadsTheOutputAndAgrees() throws {
        let (store, schemas) = try scenario()
        _ = run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--from", "2026-03-08", "--to", "2026-03-10"])
        #expect(run(["schema", "export", "--schemas", schemas.path, "--out", store.path + "/values.csv"]).status == .success)
        let script = """
            import duckdb, json, sys
            root = sys.argv[1]
            con = duckdb.connect()
            daily = f"read_csv('{root}/agg/postback_detail_daily/*/*.csv', hive_partitioning = true, header = true, all_varchar = true)"
            sums = con.execute(f'''
                SELECT CAST(dt AS VARCHAR), sum(CAST(postbacks AS BIGINT)), sum(CAST(installs AS BIGINT)), sum(CAST(redownloads AS BIGINT)),
                       sum(CAST(reengagements AS BIGINT)), sum(CAST(losses AS BIGINT)), sum(CAST(null_cv_postbacks AS BIGINT)),
                       sum(CAST(development_postbacks AS BIGINT)), sum(CAST(rejected_postbacks AS BIGINT)), count(*)
                FROM {daily} GROUP BY dt ORDER BY dt''').fetchall()
            revenue = con.execute(f'''
                SELECT CAST(dt AS VARCHAR), currency, CAST(sum(CAST(revenue_est_sum AS DECIMAL(18, 6))) AS VARCHAR)
                FROM {daily} WHERE revenue_est_sum IS NOT NULL AND currency IS NOT NULL GROUP BY dt, currency ORDER BY 1, 2''').fetchall()
            mismatches = con.execute(f'''
                SELECT count(*) FROM {daily} d JOIN read_csv('{root}/values.csv', header = true, all_varchar = true) v
                  ON d.app_id = v.app_id AND d.protocol = v.protocol AND d.conversion_type = v.conversion_type
                 AND d.postback_sequence_index = v.postback_sequence_index AND d.cv_kind = v.cv_kind
                 AND coalesce(d.fine_cv, d.coarse_cv) = v.cv_value
                 AND CAST(d.est_install_date AS DATE) BETWEEN CAST(v.effective_from AS DATE) AND CAST(coalesce(v.effective_to, '9999-12-31') AS DATE)
                WHERE d.decoded_label <> v.decoded_label OR d.schema_id <> v.schema_id
                   OR CAST(d.revenue_est_sum AS DECIMAL(18, 6)) IS DISTINCT FROM CAST(d.postbacks AS BIGINT) * CAST(v.revenue_est AS DECIMAL(18, 6))''').fetchone()[0]
            joined = con.execute(f'''
                SELECT count(*) FROM {daily} d JOIN read_csv('{root}/values.csv', header = true, all_varchar = true) v
                  ON d.app_id = v.app_id AND d.protocol = v.protocol AND d.conversion_type = v.conversion_type
                 AND d.postback_sequence_index = v.postback_sequence_index AND d.cv_kind = v.cv_kind
                 AND coalesce(d.fine_cv, d.coarse_cv) = v.cv_value
                 AND CAST(d.est_install_date AS DATE) BETWEEN CAST(v.effective_from AS DATE) AND CAST(coalesce(v.effective_to, '9999-12-31') AS DATE)''').fetchone()[0]
            print(json.dumps({"sums": [[str(x) for x in row] for row in sums], "revenue": [[str(x) for x in row] for row in revenue],
                              "mismatches": mismatches, "joined": joined}))
            """
        // DuckDB lives in the project's virtual environment (scripts/setup --test), not the system's Python.
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let (status, text, problem) = try VenvPython.run(script: script, arguments: [store.path])
        try #require(status == 0, "python3 with duckdb failed (scripts/setup --test installs it): \(problem)")
        guard let result = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let sums = result["sums"] as? [[String]],
            let revenue = result["revenue"] as? [[String]]
        else {
            Issue.record("unexpected output: \(text)")
            return
        }
        var expected: [[String]] = []
        var expectedRevenue: [[String]] = []
        for date in ["2026-03-08", "2026-03-09", "2026-03-10"] {
            guard
                case .object(let manifest) = try StrictJSONParser.parse(
                    Array(try store.bytes("agg/_manifests/dt=\(date).json").dropLast())),
                case .object(let totals)? = manifest["totals"], case .array(let outputs)? = manifest["outputs"],
                case .object(let daily) = outputs[0], case .number(let rows)? = daily["rows"]
            else {
                Issue.record("manifest")
                return
            }
            guard rows.text != "0" else { continue }
            let keys = [
                "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "development_postbacks",
                "rejected_postbacks",
            ]
            var row =
                [date]
                + keys.map { key -> String in
                    if case .number(let n)? = totals[key] { return n.text }
                    return "?"
                }
            row.append(rows.text)
            expected.append(row)
            // One total per currency, never one sum across currencies.
            guard case .object(let byCurrency)? = totals["revenue_est_by_currency"] else {
                Issue.record("revenue_est_by_currency")
                return
            }
            for member in byCurrency.members {
                guard case .number(let amount) = member.value else {
                    Issue.record("revenue amount")
                    return
                }
                expectedRevenue.append([date, member.key, amount.text])
            }
        }
        #expect(sums == expected)
        #expect(!expectedRevenue.isEmpty)
        // DuckDB prints decimals with six places.
        #expect(revenue.map { [$0[0], $0[1], Money(decimal: $0[2]).map(\.description) ?? $0[2]] } == expectedRevenue)
        #expect(result["mismatches"] as? Int == 0, "decoding through the exported table gives the same labels and revenue")
        #expect(
            result["joined"] as? Int == 7,
            "A, B, C, F, M, the 8th's I and G (development: its own install date) decode through the table")
    }
}
