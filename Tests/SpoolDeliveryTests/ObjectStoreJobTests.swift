import Basics
import Foundation
import PostbackClient
import PostbackCrypto
import TestSupport
import Testing

@testable import PostbackCLI

#if canImport(Glibc)
    import Glibc
#endif

/// `aggregate` and `report` with `--data s3://…`, against a real SeaweedFS, compared with the same
/// commands over the same segments on local disk.
@Suite("aggregate and report from a bucket", .serialized, .enabled(if: ObjectStoreServer.available))
struct ObjectStoreJobTests {
    static let schemas = ObjectStoreServer.repository + "/Samples/schemas"

    func useStore(_ store: ObjectStoreServer) {
        for (name, value) in store.environment { setenv(name, value, 1) }
    }

    /// Relative path → bytes of every regular file under `root/relative`, hidden and work files left out.
    func files(_ root: String, under relative: String) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root + "/" + relative)
        while let next = enumerator?.nextObject() as? String {
            let path = root + "/" + relative + "/" + next
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                !next.split(separator: "/").contains(where: { $0.hasPrefix(".") || $0 == "_work" })
            else { continue }
            result[relative + "/" + next] = Array(try! Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return result
    }

    /// A synthetic spool on disk, uploaded to the bucket under `prefix` unchanged.
    func spool(_ store: ObjectStoreServer, prefix: String) throws -> String {
        let local = NSTemporaryDirectory() + "postback-agg-local-\(UUID().uuidString)"
        let made = run([
            "aggregate", "synthesize", "--data", local, "--from", "2026-03-01", "--days", "4", "--per-day", "3000",
            "--segment-mb", "1", "--duplicate-percent", "5", "--seed", "7",
        ])
        #expect(made.status == .success, "\(made.stderr)")
        let client = try store.client(prefix: prefix)
        for (relative, bytes) in files(local, under: "raw") {
            try client.putBytes(relativeKey: relative, bytes: bytes, checksumSHA256: checksum(bytes))
        }
        return local
    }

    @Test func aggregateFromTheBucketIsByteIdenticalToALocalRun() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        useStore(store)
        let local = try spool(store, prefix: "acme/store")
        let url = "s3://\(store.bucket)/acme/store"
        let range = [
            "--from", "2026-03-02", "--to", "2026-03-04", "--lookback-days", "1", "--schemas", Self.schemas, "--jobs", "2",
        ]
        let localRun = run(["aggregate", "--data", local] + range)
        #expect(localRun.status == .success, "\(localRun.stderr)")
        let bucketRun = run(["aggregate", "--data", url] + range)
        #expect(bucketRun.status == .success, "\(bucketRun.stderr)")
        #expect(bucketRun.stdout.split(separator: "\n").filter { $0.hasPrefix("2026-03-0") }.count == 3)
        // From the first day's install-date window (39 days before it) to the last day received.
        #expect(bucketRun.stdout.contains("cohorts 2026-01-22..2026-03-04: "), "\(bucketRun.stdout)")

        let client = try store.client(prefix: "acme/store/")
        var published: [String: [UInt8]] = [:]
        for object in try client.list(relativePrefix: "agg/") {
            published[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
        }
        let expected = files(local, under: "agg")
        #expect(!expected.isEmpty)
        #expect(published.keys.sorted() == expected.keys.sorted())
        let identical = published == expected
        #expect(identical)
        #expect(try client.head(relativeKey: ObjectStoreJobs.leaseKey) == nil)

        // The report from the bucket is the report from the local store.
        let localPage = NSTemporaryDirectory() + "report-local-\(UUID().uuidString).html"
        let bucketPage = NSTemporaryDirectory() + "report-bucket-\(UUID().uuidString).html"
        let localReport = run(["report", "--data", local, "--from", "2026-03-02", "--to", "2026-03-04", "--out", localPage])
        let bucketReport = run(["report", "--data", url, "--from", "2026-03-02", "--to", "2026-03-04", "--out", bucketPage])
        #expect(localReport.status == .success, "\(localReport.stderr)")
        #expect(bucketReport.status == .success, "\(bucketReport.stderr)")
        let samePage = try Data(contentsOf: URL(fileURLWithPath: localPage)) == Data(contentsOf: URL(fileURLWithPath: bucketPage))
        #expect(samePage)

        // A rerun changes nothing (and uploads nothing: unchanged objects are left alone).
        let again = run(["aggregate", "--data", url] + range)
        #expect(again.status == .success, "\(again.stderr)")
        var republished: [String: [UInt8]] = [:]
        for object in try client.list(relativePrefix: "agg/") {
            republished[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
        }
        let unchanged = republished == expected
        #expect(unchanged)

        // `postback api --data s3://… --mirror DIR` serves a local copy: the same files as the local
        // store; a second pass fetches only the manifests; a day published again with other bytes of
        // the same size is fetched again through its changed manifest.
        let mirror = NSTemporaryDirectory() + "postback-mirror-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: mirror) }
        #expect(try ObjectStoreJobs.mirrorPublished(url: url, into: mirror) == expected.count)
        let mirrored = files(mirror, under: "agg")
        #expect(mirrored.keys.sorted() == expected.keys.sorted())
        let mirroredAll = mirrored == expected
        #expect(mirroredAll)
        let manifests = expected.keys.filter { $0.hasSuffix(".json") }
        #expect(try ObjectStoreJobs.mirrorPublished(url: url, into: mirror) == manifests.count)
        let table = try #require(
            expected.keys.sorted().first { $0.hasPrefix("agg/campaign_daily/dt=2026-03-03/") && $0.hasSuffix(".csv") })
        let manifest = "agg/_manifests/dt=2026-03-03.json"
        let originalTable = try #require(expected[table])
        let originalManifest = try #require(expected[manifest])
        var changedTable = originalTable
        changedTable[changedTable.count - 2] = changedTable[changedTable.count - 2] == UInt8(ascii: "1") ? 50 : 49
        let changedManifest = originalManifest + Array("\n".utf8)
        try client.putBytes(relativeKey: table, bytes: changedTable, checksumSHA256: checksum(changedTable))
        try client.putBytes(relativeKey: manifest, bytes: changedManifest, checksumSHA256: checksum(changedManifest))
        try ObjectStoreJobs.mirrorPublished(url: url, into: mirror)
        let remirrored = files(mirror, under: "agg")
        let tableFetched = remirrored[table] == changedTable
        let manifestFetched = remirrored[manifest] == changedManifest
        let othersKept =
            remirrored.filter { $0.key != table && $0.key != manifest }
            == expected.filter { $0.key != table && $0.key != manifest }
        #expect(tableFetched, "\(table): the day's manifest changed, so its table is fetched again")
        #expect(manifestFetched)
        #expect(othersKept)
        try client.putBytes(relativeKey: table, bytes: originalTable, checksumSHA256: checksum(originalTable))
        try client.putBytes(relativeKey: manifest, bytes: originalManifest, checksumSHA256: checksum(originalManifest))

        // --format both publishes the Parquet files too; a rerun with --format csv removes them from
        // the bucket as from the local store.
        for format in ["both", "csv"] {
            let localFormat = run(["aggregate", "--data", local, "--format", format] + range)
            let bucketFormat = run(["aggregate", "--data", url, "--format", format] + range)
            #expect(localFormat.status == .success && bucketFormat.status == .success, "\(bucketFormat.stderr)")
            var objects: [String: [UInt8]] = [:]
            for object in try client.list(relativePrefix: "agg/") {
                objects[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
            }
            let localFiles = files(local, under: "agg")
            #expect(localFiles.keys.contains { $0.hasSuffix(".parquet") } == (format == "both"))
            #expect(objects.keys.sorted() == localFiles.keys.sorted(), "\(format)")
            let same = objects == localFiles
            #expect(same, "\(format)")
        }
    }

    @Test func aSecondJobIsStoppedByTheLeaseAndMistakesAreClear() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        useStore(store)
        _ = try spool(store, prefix: "leased")
        let url = "s3://\(store.bucket)/leased"
        let client = try store.client(prefix: "leased/")
        // Another job's live lease.
        let lease = Array(
            "{\"holder\":\"other-host:42\",\"acquired\":\(Int(Date().timeIntervalSince1970)),\"expires\":\(Int(Date().timeIntervalSince1970) + 3600)}\n"
                .utf8)
        try client.putBytes(relativeKey: ObjectStoreJobs.leaseKey, bytes: lease, checksumSHA256: checksum(lease))
        let blocked = run(["aggregate", "--data", url, "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(blocked.status == .usageOrIOError)
        #expect(blocked.stderr.contains("another aggregate job holds") && blocked.stderr.contains("other-host:42"))
        #expect(try client.list(relativePrefix: "agg/").map(\.relativeKey) == [ObjectStoreJobs.leaseKey])
        // An expired lease (its job died) is taken over, and released at the end.
        let stale = Array("{\"holder\":\"dead:1\",\"acquired\":1,\"expires\":2}\n".utf8)
        try client.putBytes(relativeKey: ObjectStoreJobs.leaseKey, bytes: stale, checksumSHA256: checksum(stale))
        let takeover = run(["aggregate", "--data", url, "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(takeover.status == .success, "\(takeover.stderr)")
        #expect(try client.head(relativeKey: ObjectStoreJobs.leaseKey) == nil)
        #expect(try client.head(relativeKey: "agg/_manifests/dt=2026-03-02.json") != nil)

        // A prefix with no spool, a missing bucket, wrong credentials: clear errors, nothing written.
        let empty = run(["aggregate", "--data", "s3://\(store.bucket)/typo", "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(empty.status == .usageOrIOError)
        #expect(empty.stderr.contains("holds no spool"))
        #expect(try store.client(prefix: "typo/").list(relativePrefix: "").isEmpty)
        let missing = run(["aggregate", "--data", "s3://no-such-bucket/x", "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(missing.stderr.contains("NoSuchBucket"))
        // A range with no aggregates in the bucket: the error names the s3:// URL, not a staging folder.
        let nothing = run(["report", "--data", url, "--date", "2027-01-01", "--out", NSTemporaryDirectory() + "nothing.html"])
        #expect(nothing.status == .usageOrIOError)
        #expect(nothing.stderr.contains("under \(url.hasSuffix("/") ? String(url.dropLast()) : url)/agg"), "\(nothing.stderr)")
        #expect(!nothing.stderr.contains(NSTemporaryDirectory()), "\(nothing.stderr)")
        setenv("AWS_SECRET_ACCESS_KEY", "wrong", 1)
        let denied = run(["report", "--data", url, "--date", "2026-03-02", "--out", NSTemporaryDirectory() + "denied.html"])
        #expect(denied.status == .usageOrIOError)
        #expect(denied.stderr.contains("403") && denied.stderr.contains("AWS_SECRET_ACCESS_KEY"))
    }

    /// A reader that is not `postback`: pyarrow (in `.build/venv`, from scripts/requirements-test.txt)
    /// reads the published `postback_detail_daily` partitions straight from the bucket with its own S3
    /// client, typed with the documented `column_types` (spark/record-schema.json, docs/aggregate.md
    /// "Column types"); its sums must equal the manifests' totals, revenue one total per currency.
    @Test func pyarrowReadsThePublishedAggregatesFromTheBucketWithTheDocumentedTypes() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        useStore(store)
        _ = try spool(store, prefix: "tables")
        let days = ["2026-03-02", "2026-03-03", "2026-03-04"]
        let published = run([
            "aggregate", "--data", "s3://\(store.bucket)/tables", "--from", days.first!, "--to", days.last!, "--schemas",
            Self.schemas,
        ])
        #expect(published.status == .success, "\(published.stderr)")

        let script = """
            import json, sys
            from decimal import Decimal
            import pyarrow as pa, pyarrow.csv as csv, pyarrow.fs as pafs
            endpoint, bucket, access, secret, schema_file = sys.argv[1:6]
            documented = json.load(open(schema_file))["column_types"]
            def arrow_type(sql):
                if sql.startswith("DECIMAL("):
                    precision, scale = (int(n) for n in sql[len("DECIMAL("):-1].split(","))
                    return pa.decimal128(precision, scale)
                return {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
                        "BOOLEAN": pa.bool_(), "DATE": pa.date32()}[sql]
            s3 = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", access_key=access, secret_key=secret,
                                   region="us-east-1")
            infos = s3.get_file_info(pafs.FileSelector(f"{bucket}/tables/agg/postback_detail_daily", recursive=True))
            counts = ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
                      "development_postbacks", "rejected_postbacks"]
            sums, revenue = {}, {}
            for info in sorted((i for i in infos if i.type == pafs.FileType.File), key=lambda i: i.path):
                dt = next(part[3:] for part in info.path.split("/") if part.startswith("dt="))
                with s3.open_input_stream(info.path) as stream:
                    header = stream.read(1 << 16).split(b"\\n", 1)[0].decode().split(",")
                undocumented = [c for c in header if c not in documented]
                if undocumented:
                    sys.exit(f"{info.path}: columns without a documented type: {undocumented}")
                types = {c: arrow_type(documented[c]) for c in header}
                with s3.open_input_stream(info.path) as stream:
                    table = csv.read_csv(stream, convert_options=csv.ConvertOptions(column_types=types))
                for c in header:
                    if table.schema.field(c).type != types[c]:
                        sys.exit(f"{c}: read as {table.schema.field(c).type}, documented {types[c]}")
                row = sums.setdefault(dt, [0] * (len(counts) + 1))
                for n, c in enumerate(counts):
                    row[n] += sum(v for v in table.column(c).to_pylist() if v is not None)
                row[-1] += table.num_rows
                for amount, currency in zip(table.column("revenue_est_sum").to_pylist(), table.column("currency").to_pylist()):
                    if amount is not None and currency:
                        revenue[(dt, currency)] = revenue.get((dt, currency), Decimal(0)) + amount
            print(json.dumps({"sums": [[dt] + [str(n) for n in row] for dt, row in sorted(sums.items())],
                              "revenue": [[dt, cur, str(amount)] for (dt, cur), amount in sorted(revenue.items())]}))
            """
        let (status, text, problem) = try VenvPython.run(
            script: script,
            arguments: [
                "127.0.0.1:\(store.port)", store.bucket, ObjectStoreServer.accessKey, ObjectStoreServer.secretKey,
                ObjectStoreServer.repository + "/spark/record-schema.json",
            ])
        try #require(status == 0, "pyarrow failed (pip install -r scripts/requirements-test.txt into .build/venv): \(problem)")
        guard let result = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let sums = result["sums"] as? [[String]], let revenue = result["revenue"] as? [[String]]
        else {
            Issue.record("unexpected pyarrow output: \(text)")
            return
        }

        let client = try store.client(prefix: "tables/")
        var expectedSums: [[String]] = []
        var expectedRevenue: [[String]] = []
        for day in days {
            let manifestBytes = try #require(try client.getBytes(relativeKey: "agg/_manifests/dt=\(day).json"))
            guard case .object(let manifest) = try StrictJSONParser.parse(Array(manifestBytes.dropLast())),
                case .object(let totals)? = manifest["totals"], case .array(let outputs)? = manifest["outputs"],
                case .object(let daily) = outputs[0], case .number(let rows)? = daily["rows"],
                case .object(let byCurrency)? = totals["revenue_est_by_currency"]
            else {
                Issue.record("manifest of \(day)")
                return
            }
            let keys = [
                "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "development_postbacks",
                "rejected_postbacks",
            ]
            expectedSums.append(
                [day]
                    + keys.map { key -> String in
                        if case .number(let n)? = totals[key] { return n.text }
                        return "?"
                    } + [rows.text])
            for member in byCurrency.members {
                guard case .number(let amount) = member.value else { continue }
                expectedRevenue.append([day, member.key, amount.text])
            }
        }
        #expect(sums == expectedSums)
        #expect(!expectedRevenue.isEmpty)
        // Python prints the decimals with their six places, the manifest without trailing zeros: compare as numbers.
        #expect(revenue.map { [$0[0], $0[1]] } == expectedRevenue.map { [$0[0], $0[1]] })
        #expect(revenue.map { Decimal(string: $0[2]) } == expectedRevenue.map { Decimal(string: $0[2]) })
    }
}
