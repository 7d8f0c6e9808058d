import Foundation
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import PostbackCLI

/// `postback spend import`: every refusal names FILE:LINE:COLUMN and imports nothing; a source's
/// day is replaced, never added to; the same file twice writes the same bytes; ids the schema names
/// are stored with the name; an import a crash interrupted is finished or dropped, never half there.
@Suite struct SpendImportTests {
    static let header = "date,app_id,ad_network_id,source_identifier,campaign_id,campaign,spend,currency,reported_installs"

    func store() throws -> TemporaryDirectory {
        let store = TemporaryDirectory("store")
        try store.write("", to: "raw/postbacks/.keep")
        try store.write(AggregateJobTests.schema, to: "schemas/111/t1.json")
        return store
    }

    func importFile(_ store: TemporaryDirectory, _ text: String, name: String = "net.csv", extra: [String] = []) throws
        -> CommandRun
    {
        try store.write(text, to: name)
        return run(
            ["spend", "import", "--data", store.path, "--schemas", store.path + "/schemas"] + extra + [store.path + "/" + name])
    }

    func storedDays(_ store: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: store.path + "/spend")) ?? []).filter { $0.hasPrefix("dt=") }
            .sorted()
    }

    @Test func everyBadRowIsRefusedWithItsPlaceAndNothingIsImported() throws {
        let good = "2026-03-10,111,net.skadnetwork,1237,,,10.5,USD,3\n"
        let cases: [(String, String)] = [
            (
                "date,app_id,ad_network_id,source_identifier,spnd,currency\n",
                "net.csv:1:5: unknown column 'spnd': did you mean 'spend'?"
            ),
            ("date,app_id,ad_network_id,source_identifier,currency\n", "net.csv:1: no 'spend' column"),
            ("date,app_id,ad_network_id,spend,currency\n", "net.csv:1: no campaign column"),
            (
                Self.header + "\n" + good + "2026-03-10,111,net.skadnetwork,1237,,,-3.50,USD,\n",
                "net.csv:3:7: spend '-3.50' is negative"
            ),
            (
                Self.header + "\n\"2026-03-10\",111,net.skadnetwork,1237,,,\"1,5\",USD,\n",
                "net.csv:2:7: spend '1,5' is not a decimal amount"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,1.1234567,USD,\n",
                "net.csv:2:7: spend '1.1234567' is not a decimal"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,1,EURO,\n",
                "net.csv:2:8: currency 'EURO' is not an ISO 4217 code"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,1,usd,\n",
                "net.csv:2:8: currency 'usd' must be written in capitals: 'USD'"
            ),
            (Self.header + "\n2026-02-30,111,net.skadnetwork,1237,,,1,USD,\n", "net.csv:2:1: date '2026-02-30' is not a day"),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,,,sprong,1,USD,\n",
                "net.csv:2:6: campaign 'sprong' is not a campaign of app 111's schema for net.skadnetwork on 2026-03-10 (did you mean 'spring'?)"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1237,5,,1,USD,\n",
                "net.csv:2:4: both campaign_id and source_identifier are given"
            ),
            (Self.header + "\n2026-03-10,111,net.skadnetwork,,,,1,USD,\n", "net.csv:2:5: no campaign"),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1,,,1,USD,\n",
                "net.csv:2:4: source_identifier '1' is not 2-4 digits"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,,101,,1,USD,\n",
                "net.csv:2:5: campaign_id '101' is not a SKAdNetwork campaign id"
            ),
            (
                Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,1,USD,2.5\n",
                "net.csv:2:9: reported_installs '2.5' is not a whole number"
            ),
            (Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,1,USD\n", "net.csv:2: 8 fields where the header has 9"),
            (Self.header + "\n", "net.csv: holds a header but no spend row"),
        ]
        for (text, expected) in cases {
            let store = try store()
            let result = try importFile(store, text)
            #expect(result.status == .usageOrIOError, "\(expected)")
            #expect(result.stderr.contains(expected), "expected '\(expected)' in: \(result.stderr)")
            #expect(storedDays(store).isEmpty, "a refused file stores nothing (\(expected))")
        }
        // A name without --schemas cannot be checked: refused with the remedy.
        let store = try store()
        try store.write(Self.header + "\n2026-03-10,111,net.skadnetwork,,,spring,1,USD,\n", to: "named.csv")
        let unchecked = run(["spend", "import", "--data", store.path, store.path + "/named.csv"])
        #expect(unchecked.status == .usageOrIOError && unchecked.stderr.contains("give --schemas DIR"), "\(unchecked.stderr)")
        // A file that opens but cannot be read: the read's own "PATH: what failed", then the usage hint.
        let unreadable = run(["spend", "import", "--data", store.path, "--source", "net", "/proc/self/mem"])
        #expect(unreadable.status == .usageOrIOError)
        #expect(
            unreadable.stderr
                == "postback spend import: /proc/self/mem: read failed: Input/output error\n"
                + "Run 'postback spend import --help' for usage.\n", "\(unreadable.stderr)")
        #expect(storedDays(store).isEmpty)
    }

    @Test func aRestatedDayReplacesTheSourcesDayAndTheSameFileTwiceChangesNothing() throws {
        let store = try store()
        let first =
            Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,10,USD,4\n2026-03-11,111,net.skadnetwork,1237,,,20,USD,\n"
        #expect(try importFile(store, first).status == .success)
        #expect(
            try importFile(store, Self.header + "\n2026-03-10,111,other.skadnetwork,55,,,7,EUR,\n", name: "other.csv").status
                == .success)
        let day11 = try store.bytes("spend/dt=2026-03-11/net.csv")

        // Restated: the 10th says 12.25 now, in two rows of one campaign (added together); the 11th is not in the file.
        let restated =
            Self.header + "\n2026-03-10,111,net.skadnetwork,1237,,,12,USD,4\n2026-03-10,111,net.skadnetwork,1237,,,0.25,USD,1\n"
        let result = try importFile(store, restated)
        #expect(result.status == .success && result.stdout.contains("1 day changed"), "\(result.stdout)")
        #expect(
            try store.read("spend/dt=2026-03-10/net.csv")
                == SpendRow.storedColumns.joined(separator: ",") + "\n2026-03-10,111,net.skadnetwork,,1237,spring,12.25,USD,,,5\n"
        )
        #expect(try store.bytes("spend/dt=2026-03-11/net.csv") == day11, "a day the file does not hold stays")
        #expect(try store.read("spend/dt=2026-03-10/other.csv").contains(",7,EUR,"), "another source's day stays")

        // The same file again: the same bytes, and the import says nothing changed (and is recorded).
        let before = try store.bytes("spend/dt=2026-03-10/net.csv")
        let again = try importFile(store, restated)
        #expect(again.stdout.contains("0 days changed"), "\(again.stdout)")
        #expect(try store.bytes("spend/dt=2026-03-10/net.csv") == before)
        let records = try FileManager.default.contentsOfDirectory(atPath: store.path + "/spend/_imports")
        #expect(records.count == 4, "every import is recorded: \(records)")
        #expect(!store.exists("spend/_staging"), "no staging left behind")
    }

    @Test func idsTheSchemaNamesAreStoredWithTheName() throws {
        let store = try store()
        let text =
            Self.header
            + "\n2026-03-10,111,net.skadnetwork,1237,,,1,USD,\n2026-03-10,111,net.skadnetwork,,5,,2,USD,\n2026-03-10,111,net.skadnetwork,99,,,3,USD,\n2026-03-10,111,net.skadnetwork,,,spring,4,USD,\n"
        #expect(try importFile(store, text).status == .success)
        let rows = try SpendRow.readStored(try store.bytes("spend/dt=2026-03-10/net.csv"), path: "net.csv")
        #expect(rows.map(\.campaign) == ["spring", "spring", nil, "old_five"], "\(rows)")
        #expect(rows.map(\.sourceIdentifier) == [nil, "1237", "99", nil] && rows.map(\.campaignID) == [nil, nil, nil, 5])
    }

    @Test func anInterruptedImportIsFinishedAfterItsCommitAndDroppedBefore() throws {
        let store = try store()
        let spend = SpendStore(dataDirectory: store.path)
        // A staging directory with its marker: the next import moves it into place first.
        try store.write("staged bytes\n", to: "spend/_staging/1-1/dt=2026-03-01/net.csv")
        try store.write("commit\n", to: "spend/_staging/1-1/COMMIT")
        // One without: dropped.
        try store.write("half\n", to: "spend/_staging/2-1/dt=2026-03-02/net.csv")
        try spend.recover()
        #expect(try store.read("spend/dt=2026-03-01/net.csv") == "staged bytes\n")
        #expect(!store.exists("spend/dt=2026-03-02"))
        #expect(!store.exists("spend/_staging"))
    }

    /// kill -9 of the real binary in the middle of importing a year of spend, at the moment its
    /// staging appears and at the moment its commit marker appears: afterwards (once the next import
    /// or nightly run has finished what was committed) every day is the old file or every day the new.
    @Test(.timeLimit(.minutes(3))) func aKilledImportLeavesTheOldOrTheNewStateNeverAMix() throws {
        let binary = Readme.binary.path
        var kinds: Set<String> = []
        for attempt in 0..<6 {
            let store = try store()
            var old = Self.header + "\n"
            var new = Self.header + "\n"
            var day = UTCDay("2026-01-01")!
            for _ in 0..<365 {
                for campaign in 10..<40 {
                    old += "\(day),111,net.skadnetwork,12\(campaign),,,1,USD,\n"
                    new += "\(day),111,net.skadnetwork,12\(campaign),,,2,USD,\n"
                }
                day = day.adding(days: 1)
            }
            #expect(try importFile(store, old).status == .success)
            try store.write(new, to: "net.csv")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["spend", "import", "--data", store.path, store.path + "/net.csv"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Wait for the staging directory (before the marker) or the marker itself, then kill.
            let waitForMarker = attempt % 2 == 1
            let seen = eventually(60) {
                let staged = (try? FileManager.default.contentsOfDirectory(atPath: store.path + "/spend/_staging")) ?? []
                guard let id = staged.first else { return !process.isRunning }
                return !waitForMarker || store.exists("spend/_staging/\(id)/COMMIT") || !process.isRunning
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(seen)
            try SpendStore(dataDirectory: store.path).recover()
            var states = Set<String>()
            var day2 = UTCDay("2026-01-01")!
            for _ in 0..<365 {
                let text = try store.read("spend/dt=\(day2)/net.csv")
                states.insert(text.contains(",2,USD,") ? "new" : "old")
                day2 = day2.adding(days: 1)
            }
            #expect(states.count == 1, "attempt \(attempt): days of both states after a kill: \(states)")
            kinds.formUnion(states)
        }
        #expect(kinds.contains("old"), "some kill landed before the commit marker")
    }
}
