import AggregateSchema
import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// A rerun never makes a published day worse without being told to (issue 14): misplaced and
/// missing schemas are errors, a day with less input or fewer decoded postbacks is not replaced
/// unless `--force`, open days need `--allow-open-day`, days with no spool are explicitly empty,
/// `--input` files that are not postbacks are usage errors, and money is totalled per currency.
@Suite struct RerunSafetyTests {
    let command = AggregateCommandTests()

    /// App 222 decoded in euros (its fine value 5 is worth 2), next to app 111's dollars.
    static let euroSchema = AggregateJobTests.schema
        .replacingOccurrences(of: "\"schema_id\": \"t1\", \"app_id\": 111", with: "\"schema_id\": \"t2\", \"app_id\": 222")
        .replacingOccurrences(of: "\"currency\": \"USD\"", with: "\"currency\": \"EUR\"")
        .replacingOccurrences(
            of: "{\"value\": 0, \"label\": \"install_only\"}",
            with: "{\"value\": 5, \"label\": \"five\", \"revenue\": {\"min\": 2, \"max\": 2}}")

    func aggregate(
        _ store: TemporaryDirectory, _ schemas: TemporaryDirectory, _ extra: [String] = [], date: String = "2026-03-10"
    )
        -> CommandRun
    {
        TestSupport.run(["aggregate", "--data", store.path, "--schemas", schemas.path, "--date", date] + extra)
    }

    @Test func aSchemaFileOutsideAnAppDirectoryIsAnErrorNamingTheLayout() throws {
        let (store, schemas) = try command.scenario()
        try schemas.write(Self.euroSchema, to: "t2.json")
        let result = aggregate(store, schemas)
        #expect(result.status == .usageOrIOError)
        #expect(
            result.stderr.contains("\(schemas.path)/t2.json: schema files go in a directory named after the app id"),
            "\(result.stderr)")
        #expect(result.stderr.contains("\(schemas.path)/<app-id>/<effective-from>.json"))
        #expect(!store.exists("agg/_manifests/dt=2026-03-10.json"), "nothing published")

        let check = TestSupport.run(["schema", "check", schemas.path])
        #expect(check.status == .failure && check.stderr.contains("t2.json: schema files go in a directory"), "\(check.stderr)")
    }

    /// An empty schema directory (a team with no schema yet) aggregates: counts, no revenue. A rerun
    /// with it over a day a schema decoded is refused (fewer decoded postbacks); `schema check` says so.
    @Test func anEmptySchemaDirectoryCountsButCannotUndecodeAPublishedDay() throws {
        let store = TemporaryDirectory()
        try AggregateJobTests.buildSpool(root: store.path)
        let empty = TemporaryDirectory("schemas")
        try FileManager.default.createDirectory(atPath: empty.path, withIntermediateDirectories: true)
        let first = aggregate(store, empty)
        #expect(first.status == .failure, "published; the spool has a corrupt line: \(first.stderr)")
        #expect(first.stdout.contains("no schema for app"), "\(first.stdout)")
        let (decoded, schemas) = try command.scenario()
        #expect(aggregate(decoded, schemas).status == .failure, "published (the spool has a corrupt line)")
        let rerun = aggregate(decoded, empty)
        #expect(rerun.status == .usageOrIOError)
        #expect(rerun.stderr.contains("decoded postbacks instead of"), "\(rerun.stderr)")
        let check = TestSupport.run(["schema", "check", empty.path])
        #expect(check.status == .failure && check.stderr.contains("holds no schemas"), "\(check.stderr)")
    }

    @Test func aRerunWithASegmentLessIsRefusedUnlessForced() throws {
        let (store, schemas) = try command.scenario()
        #expect(aggregate(store, schemas).status == .failure, "published (the spool has a corrupt line)")
        let published = try store.bytes("agg/_manifests/dt=2026-03-10.json")

        // One receiver's segment of the day is gone (a lost disk, a mistyped --data on a copy).
        let segments = try FileManager.default.contentsOfDirectory(atPath: store.path + "/raw/postbacks/dt=2026-03-10").sorted()
        try FileManager.default.removeItem(atPath: store.path + "/raw/postbacks/dt=2026-03-10/" + segments[1])
        let refused = aggregate(store, schemas)
        #expect(refused.status == .usageOrIOError)
        #expect(refused.stderr.contains("2026-03-10: not replaced: compared with the day published in"), "\(refused.stderr)")
        #expect(refused.stderr.contains("1 input file instead of 2") && refused.stderr.contains("--force"), "\(refused.stderr)")
        #expect(try store.bytes("agg/_manifests/dt=2026-03-10.json") == published, "the published day is untouched")

        let forced = aggregate(store, schemas, ["--force"])
        #expect(forced.status != .usageOrIOError, "\(forced.stderr)")
        #expect(try store.bytes("agg/_manifests/dt=2026-03-10.json") != published, "--force publishes the smaller day")
    }

    @Test func aRerunThatDecodesFewerPostbacksIsRefused() throws {
        let (store, schemas) = try command.scenario()
        _ = aggregate(store, schemas)
        // The app's schema was replaced by another app's: the same input now decodes nothing of app 111.
        try FileManager.default.removeItem(atPath: schemas.path + "/111")
        try schemas.write(Self.euroSchema, to: "222/t2.json")
        let refused = aggregate(store, schemas)
        #expect(refused.status == .usageOrIOError)
        #expect(refused.stderr.contains("decoded postbacks instead of"), "\(refused.stderr)")
        #expect(aggregate(store, schemas, ["--force"]).status != .usageOrIOError)
    }

    @Test func theSameInputRepublishesWithoutForce() throws {
        let (store, schemas) = try command.scenario()
        _ = aggregate(store, schemas)
        let first = try store.bytes("agg/_manifests/dt=2026-03-10.json")
        let again = aggregate(store, schemas)
        #expect(again.status != .usageOrIOError, "\(again.stderr)")
        #expect(try store.bytes("agg/_manifests/dt=2026-03-10.json") == first)
    }

    @Test func aDayWithNoSpoolIsPublishedAsExplicitlyEmpty() throws {
        let (store, schemas) = try command.scenario()
        let result = aggregate(store, schemas, ["--json"], date: "2026-03-05")
        #expect(result.status == .success, "\(result.stderr)")
        #expect(result.stdout.contains("\"spool_segments\":0"), "\(result.stdout)")
        guard
            case .object(let manifest) = try StrictJSONParser.parse(
                Array(try store.bytes("agg/_manifests/dt=2026-03-05.json").dropLast())),
            case .number(let segments)? = manifest["spool_segments"]
        else {
            Issue.record("manifest")
            return
        }
        #expect(segments.text == "0")
        let text = aggregate(store, schemas, date: "2026-03-05")
        #expect(text.stdout.contains("nothing to read for this day: published as an empty day"), "\(text.stdout)")
    }

    @Test func anOpenDayIsRefusedUnlessAllowedAndThenMarkedPartial() throws {
        let (store, schemas) = try command.scenario()
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        let today = UTCDay(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday)).description
        let refused = aggregate(store, schemas, date: today)
        #expect(refused.status == .usageOrIOError)
        #expect(
            refused.stderr.contains("\(today) is not over yet (UTC)") && refused.stderr.contains("--allow-open-day"),
            "\(refused.stderr)")
        #expect(!store.exists("agg/_manifests/dt=\(today).json"))

        let allowed = aggregate(store, schemas, ["--allow-open-day", "--json"], date: today)
        #expect(allowed.status == .success, "\(allowed.stderr)")
        #expect(allowed.stdout.contains("\"partial\":true"))
        guard
            case .object(let manifest) = try StrictJSONParser.parse(
                Array(try store.bytes("agg/_manifests/dt=\(today).json").dropLast()))
        else {
            Issue.record("manifest")
            return
        }
        #expect(manifest["partial"] == .bool(true))
    }

    @Test func inputFilesThatAreNotPostbacksAreUsageErrors() throws {
        let (store, schemas) = try command.scenario()
        try store.write("", to: "empty.jsonl")
        try store.write("date,installs\n2026-03-10,4\n", to: "table.csv")
        let cases: [(String, String)] = [
            (store.path + "/raw", "is a directory; give the files in it"),
            (store.path + "/empty.jsonl", "holds no JSON postback (empty input: no JSON postback found)"),
            (store.path + "/table.csv", "holds no JSON postback (line 1: invalid JSON: unexpected 'd'"),
        ]
        for (input, message) in cases {
            let result = aggregate(store, schemas, ["--input", input])
            #expect(result.status == .usageOrIOError, "\(input)")
            #expect(result.stderr.contains("--input \(input) ") && result.stderr.contains(message), "\(input): \(result.stderr)")
        }
        #expect(!store.exists("agg/_manifests/dt=2026-03-10.json"), "nothing published for a wrong file")
    }

    @Test func revenueIsTotalledPerCurrencyNeverAcross() throws {
        let (store, schemas) = try command.scenario()
        try schemas.write(Self.euroSchema, to: "222/t2.json")
        let text = aggregate(store, schemas)
        // App 111's rows are in dollars, app 222's in euros: the totals must be the CSV's, per currency.
        let daily = CSVText.rows(try store.read("agg/postback_detail_daily/dt=2026-03-10/part-00000.csv"))
        var sums: [String: Money] = [:]
        for row in daily where row["revenue_est_sum"] != "" && row["currency"] != "" {
            sums[row["currency"]!] = sums[row["currency"]!, default: .zero].plus(Money(decimal: row["revenue_est_sum"]!)!)
        }
        #expect(sums.keys.sorted() == ["EUR", "USD"], "\(sums)")
        let expected = sums.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        #expect(text.stdout.contains("revenue estimate \(expected);"), "\(text.stdout)")
        let json = aggregate(store, schemas, ["--json"])
        let byCurrency = sums.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
        #expect(json.stdout.contains("\"revenue_est_by_currency\":{\(byCurrency)}"), "\(json.stdout)")
        #expect(!json.stdout.contains("revenue_est_sum"))
    }
}
