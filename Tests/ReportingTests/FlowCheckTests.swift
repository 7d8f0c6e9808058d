import Basics
import Foundation
import PostbackCrypto
import PostbackTesting
import TestSupport
import Testing

@testable import Reporting

/// `postback check` on a month published as the nightly job would (`postback aggregate --input …
/// --allow-dev --trust-key`, development environment), three networks of very different volume with
/// a weekend dip, and three injected faults: a network gone from day 20, null values doubled on day
/// 25 for another, fine values all 0 on day 27 for the third. Every fault is found on its day for
/// its app × network and nothing on any other day; the figures printed are recomputed with DuckDB
/// (scripts/flow_check.py, written from docs/alerts.md).
@Suite(.serialized) struct FlowCheckTests {
    static let app = "1229670720"
    static let first = 1  // day numbers 1…30 are 2026-03-01…30 (the 1st a Sunday)
    static func date(_ day: Int) -> String { String(format: "2026-03-%02d", day) }

    struct Network {
        let id: String
        let perDay: Int
    }
    static let big = Network(id: "big-network.skadnetwork", perDay: 400)
    static let mid = Network(id: "mid-network.skadnetwork", perDay: 120)
    static let small = Network(id: "small-network.skadnetwork", perDay: 25)
    static let goneFrom = 20  // small
    static let nullsDoubled = 25  // big
    static let valuesAtZero = 27  // mid

    static func publishMonth() throws -> TemporaryDirectory {
        let store = TemporaryDirectory("flow-check")
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        let signer = TestPostbackSigner(key: key)
        try store.write(key.pemRepresentation, to: "test-key.pem")
        var index = 0
        for day in 1...30 {
            let weekday = (day - 1) % 7  // 0 Sunday
            let dip = weekday == 0 || weekday == 6 ? 0.7 : 1.0
            var lines: [UInt8] = []
            for network in [big, mid, small] {
                if network.id == small.id, day >= goneFrom { continue }
                var traffic = SyntheticPostbacks(kinds: [.skan4_0, .skan3_0])
                traffic.apps = [Int64(app)!]
                traffic.adNetworkIDs = [network.id]
                traffic.windows = [0]
                traffic.nullShare = network.id == big.id && day == nullsDoubled ? 0.5 : 0.25
                traffic.fineValues = network.id == mid.id && day == valuesAtZero ? [0] : Array(1...12)
                for _ in 0..<Int(Double(network.perDay) * dip) {
                    lines += try signer.sign(traffic.postback(index, seed: 40))
                    lines.append(0x0A)
                    index += 1
                }
            }
            let input = "\(store.path)/in-\(day).jsonl"
            try Data(lines).write(to: URL(fileURLWithPath: input))
            let result = run([
                "aggregate", "--input", input, "--date", date(day), "--data", store.path, "--schemas", Fixtures.sampleSchemas,
                "--allow-dev", "--trust-key", store.path + "/test-key.pem", "--skip-cohorts", "--jobs", "1",
            ])
            try #require(result.status == .success, "aggregate \(date(day)): \(result.stderr)")
        }
        return store
    }

    static func findings(_ store: TemporaryDirectory, day: Int) throws -> [[String: Any]] {
        let text = try store.read("agg/_checks/dt=\(date(day)).development.json")
        let root = try #require(try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
        return try #require(root["findings"] as? [[String: Any]])
    }

    /// The month is published once (the costly part), then checked three ways.
    @Test func aMonthWithThreeFaults() throws {
        let started = Date()
        let store = try Self.publishMonth()
        let published = Date()
        try everyFaultIsFoundOnItsDayAndNothingElse(store)
        try theFiguresMatchAnIndependentComputation(store)
        try aDayNotPublishedSaysWhatToRun(store)
        try theReportShowsTheFindings(store)
        try aTableThatDoesNotMatchItsManifestIsNamed(store)
        print(
            "flow check: month published in "
                + String(
                    format: "%.1f s, checked in %.1f s", published.timeIntervalSince(started), Date().timeIntervalSince(published)
                ))
    }

    func everyFaultIsFoundOnItsDayAndNothingElse(_ store: TemporaryDirectory) throws {
        let expected: [Int: (kind: String, network: String)] = [
            Self.goneFrom: ("stopped", Self.small.id), Self.nullsDoubled: ("null-share-jump", Self.big.id),
            Self.valuesAtZero: ("values-collapsed", Self.mid.id),
        ]
        for day in 8...30 {
            let result = run(["check", "--data", store.path, "--date", Self.date(day), "--environment", "development"])
            let lines = result.stdout.split(separator: "\n").map(String.init)
            if let fault = expected[day] {
                #expect(result.status == .failure, "\(Self.date(day)): \(result.stdout)\(result.stderr)")
                #expect(
                    lines.count == 2 && lines[0].hasPrefix("\(Self.date(day)) app \(Self.app) \(fault.network): \(fault.kind): "),
                    "\(Self.date(day)): \(result.stdout)")
                print("flow check: \(lines.first ?? "")")
                let found = try Self.findings(store, day: day)
                #expect(found.count == 1 && found.first?["kind"] as? String == fault.kind)
                #expect(
                    found.first?["ad_network_id"] as? String == fault.network && found.first?["app_id"] as? String == Self.app)
            } else {
                #expect(result.status == .success, "\(Self.date(day)): \(result.stdout)\(result.stderr)")
                #expect(try Self.findings(store, day: day).isEmpty)
            }
            let still = day > Self.goneFrom ? "; 1 still stopped since an earlier day's finding" : ""
            #expect(
                lines.last == "\(expected[day] == nil ? 0 : 1) finding\(expected[day] == nil ? "s" : "") on \(Self.date(day)) "
                    + "over 3 app × network pairs; 0 pairs with too little history\(still)",
                "\(result.stdout)")
        }
        // Day 7 has six history days: every pair is counted as having too little.
        let early = run(["check", "--data", store.path, "--date", Self.date(7), "--environment", "development"])
        #expect(early.status == .success)
        #expect(early.stdout.hasSuffix("0 findings on 2026-03-07 over 3 app × network pairs; 3 pairs with too little history\n"))
    }

    /// The figures of each finding, recomputed with DuckDB from the published CSV files.
    func theFiguresMatchAnIndependentComputation(_ store: TemporaryDirectory) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let path = Fixtures.root.appendingPathComponent("scripts/flow_check.py").path
        // Run as the file would be: it finds spark/published_schema.py beside its own directory.
        let script = "__file__ = \(String(reflecting: path))\n" + (try String(contentsOfFile: path, encoding: .utf8))
        func reference(_ day: Int, _ network: Network) throws -> [String: Any] {
            let answer = try VenvPython.run(
                script: script, arguments: [store.path, Self.date(day), Self.app, network.id, "--environment", "development"])
            return try #require(
                try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any],
                "\(answer.stdout)\(answer.stderr)")
        }
        func figures(_ day: Int) throws -> [String: Any] {
            _ = run(["check", "--data", store.path, "--date", Self.date(day), "--environment", "development"])
            return try #require(try Self.findings(store, day: day).first)
        }
        func number(_ value: Any?) -> Double { (value as? NSNumber)?.doubleValue ?? .nan }

        let stopped = try figures(Self.goneFrom)
        let stoppedReference = try reference(Self.goneFrom, Self.small)
        #expect(number(stopped["median"]) == number(stoppedReference["median"]), "\(stopped) \(stoppedReference)")
        #expect(number(stopped["history_days"]) == number(stoppedReference["history_days"]))
        #expect(number(stopped["postbacks"]) == 0 && number(stoppedReference["postbacks"]) == 0)

        let nulls = try figures(Self.nullsDoubled)
        let nullsReference = try reference(Self.nullsDoubled, Self.big)
        for name in ["winners", "null_postbacks", "history_days"] {
            #expect(number(nulls[name]) == number(nullsReference[name]), "\(name): \(nulls) \(nullsReference)")
        }
        for name in ["share", "history_share", "z"] {
            #expect(abs(number(nulls[name]) - number(nullsReference[name])) < 1e-9, "\(name): \(nulls) \(nullsReference)")
        }

        let values = try figures(Self.valuesAtZero)
        let valuesReference = try reference(Self.valuesAtZero, Self.mid)
        for name in ["fine_values", "value", "value_count", "history_days"] {
            #expect(number(values[name]) == number(valuesReference[name]), "\(name): \(values) \(valuesReference)")
        }
        #expect(abs(number(values["share"]) - number(valuesReference["value_share"])) < 1e-9, "\(values) \(valuesReference)")
        #expect(abs(number(values["history_share"]) - number(valuesReference["value_history_share"])) < 1e-9)
        #expect(number(values["value"]) == 0 && number(values["share"]) == 1)
    }

    /// `postback report` over the month's last days lists the three findings the checks wrote.
    func theReportShowsTheFindings(_ store: TemporaryDirectory) throws {
        let page = store.path + "/report.html"
        let result = run([
            "report", "--data", store.path, "--from", Self.date(15), "--to", Self.date(30), "--out", page, "--environment",
            "development",
        ])
        #expect(result.status == .success, "\(result.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("The nightly check found 3 things to look at"))
        for (day, network, kind) in [
            (Self.goneFrom, Self.small, "stopped"), (Self.nullsDoubled, Self.big, "null-share-jump"),
            (Self.valuesAtZero, Self.mid, "values-collapsed"),
        ] {
            #expect(html.contains("<li>\(Self.date(day)) app \(Self.app) \(network.id): \(kind): "), "\(kind)")
        }
    }

    /// `--json` prints the findings file; a day whose table was changed after publishing is not
    /// judged: exit 2, naming the table and the remedy.
    func aTableThatDoesNotMatchItsManifestIsNamed(_ store: TemporaryDirectory) throws {
        let json = run(["check", "--data", store.path, "--date", Self.date(20), "--environment", "development", "--json"])
        #expect(json.status == .failure)
        #expect(json.stdout == (try store.read("agg/_checks/dt=\(Self.date(20)).development.json")))
        let csv = store.path + "/agg/campaign_daily_development/dt=\(Self.date(30))/part-00000.csv"
        let handle = try #require(FileHandle(forWritingAtPath: csv))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("x".utf8))
        try handle.close()
        let result = run(["check", "--data", store.path, "--date", Self.date(30), "--environment", "development"])
        #expect(result.status == .usageOrIOError)
        #expect(
            result.stderr.contains("\(Self.date(30)) cannot be read: campaign_daily_development does not match its manifest")
                && result.stderr.contains("rerun it for this day"), "\(result.stderr)")
    }

    /// A day not yet published: exit 2, the path and the remedy.
    func aDayNotPublishedSaysWhatToRun(_ store: TemporaryDirectory) throws {
        let result = run(["check", "--data", store.path, "--date", "2026-04-02"])
        #expect(result.status == .usageOrIOError)
        #expect(
            result.stderr.contains("2026-04-02 is not published: no \(store.path)/agg/_manifests/dt=2026-04-02.json")
                && result.stderr.contains("run 'postback aggregate --date 2026-04-02' first"), "\(result.stderr)")
        // The library says it by code, with the day and the manifest it looked for.
        let day = try #require(UTCDay("2026-04-02"))
        #expect {
            try FlowCheck.run(FlowCheck.Request(dataDirectory: store.path, day: day, environment: .production))
        } throws: { error in
            guard let error = error as? ReportError else { return false }
            return error.code == .notPublished && error.day == day
                && error.path == "\(store.path)/agg/_manifests/dt=2026-04-02.json"
        }
    }
}

/// The thresholds on hand-made counts, each worked out by hand or with a second formula.
@Suite struct FlowStatisticsTests {
    @Test func poissonLowerTail() {
        // P(X ≤ 0; 5) = e^-5; P(X ≤ 2; 5) = e^-5 (1 + 5 + 12.5).
        #expect(abs(FlowStatistics.poissonLowerTail(0, mean: 5) - exp(-5)) < 1e-15)
        #expect(abs(FlowStatistics.poissonLowerTail(2, mean: 5) - exp(-5) * 18.5) < 1e-14)
        // Large means: P(X ≤ 450; 1000) is tiny but not 0, and the tail near the mean is about a half.
        let far = FlowStatistics.poissonLowerTail(450, mean: 1000)
        #expect(far > 0 && far < 1e-60)
        #expect(abs(FlowStatistics.poissonLowerTail(100_000, mean: 100_000) - 0.5) < 0.01)
        // The volume-drop line: 3 postbacks at a median of 14 is under 0.1%, 5 is not.
        #expect(FlowStatistics.poissonLowerTail(3, mean: 14) < 0.001)
        #expect(FlowStatistics.poissonLowerTail(5, mean: 14) > 0.001)
    }

    @Test func binomialZ() {
        // 50 of 100 against 25%: 0.25 / sqrt(0.1875 / 100) = 5.7735.
        #expect(abs(FlowStatistics.binomialZ(hits: 50, trials: 100, expected: 0.25) - 5.773502691896258) < 1e-12)
        // A history without nulls: the spread is taken at 1%, so 1 of 40 is not a jump.
        #expect(FlowStatistics.binomialZ(hits: 1, trials: 40, expected: 0) < 4)
    }

    @Test func median() {
        #expect(FlowStatistics.median([5, 1, 3]) == 3)
        #expect(FlowStatistics.median([4, 1, 3, 10]) == 3.5)
        #expect(FlowStatistics.median([]) == 0)
    }
}

/// `FlowCheck.judge` on hand-made days: what each rule lets through and what it does not.
@Suite struct FlowCheckRuleTests {
    static let pair = FlowPair(appID: "111", adNetworkID: "net.skadnetwork")
    static let start = UTCDay("2026-03-01")!

    /// `days` of history (postbacks per day, oldest first) and then the judged day.
    static func judge(_ days: [FlowCounts], today: FlowCounts) -> FlowCheck.Result {
        var history = FlowHistory()
        for (offset, counts) in days.enumerated() where counts.postbacks > 0 {
            history.days[start.adding(days: offset)] = [pair: counts]
        }
        let day = start.adding(days: days.count)
        if today.postbacks > 0 { history.days[day] = [pair: today] }
        return FlowCheck.judge(
            history, day: day, historyDays: days.indices.map { start.adding(days: $0) }, environment: .production)
    }

    static func counts(_ postbacks: Int, nulls: Int = 0, fine: [Int: Int] = [:]) -> FlowCounts {
        FlowCounts(postbacks: postbacks, losses: 0, nullValues: nulls, fineValues: fine)
    }

    @Test func volumeDropNeedsHalfTheMedianAndAnUnlikelyDay() {
        let week = [100, 100, 100, 100, 100, 70, 70].map { Self.counts($0) }
        #expect(Self.judge(week, today: Self.counts(70)).findings.isEmpty, "a weekend day")
        #expect(Self.judge(week, today: Self.counts(51)).findings.isEmpty, "over half the median")
        let drop = Self.judge(week, today: Self.counts(30))
        #expect(drop.findings.map(\.kind) == [.volumeDrop])
        #expect(drop.findings.first?.text.hasPrefix("30 postbacks, median 100 a day over 7 days (P ≤ ") == true)
        // A small pair: 1 postback at a median of 4 is under half, but not unlikely enough.
        #expect(Self.judge([4, 4, 4, 4, 4, 4, 4].map { Self.counts($0) }, today: Self.counts(1)).findings.isEmpty)
    }

    @Test func stoppedOnTheFirstSilentDayOnlyAndNotForSmallPairs() {
        let week = [30, 30, 30, 30, 30, 30, 30].map { Self.counts($0) }
        let first = Self.judge(week, today: Self.counts(0))
        #expect(
            first.findings.map(\.line) == [
                "2026-03-08 app 111 net.skadnetwork: stopped: 0 postbacks, median 30 a day over 7 days"
            ])
        let second = Self.judge(week + [Self.counts(0)], today: Self.counts(0))
        #expect(second.findings.isEmpty && second.pairsStillStopped == [Self.pair])
        // Under a median of 10 a silence is a volume-drop when unlikely enough (e^-9 < 0.1%), never `stopped`.
        let small = [9, 9, 9, 9, 9, 9, 9].map { Self.counts($0) }
        #expect(Self.judge(small, today: Self.counts(0)).findings.map(\.kind) == [.volumeDrop])
        #expect(Self.judge(small + [Self.counts(0)], today: Self.counts(0)).findings.isEmpty)
        #expect(Self.judge([6, 6, 6, 6, 6, 6, 6].map { Self.counts($0) }, today: Self.counts(0)).findings.isEmpty)
    }

    @Test func tooLittleHistoryIsCountedNotJudged() {
        let result = Self.judge([0, 0, 30, 30, 30, 30, 30, 30].map { Self.counts($0) }, today: Self.counts(0))
        #expect(result.findings.isEmpty && result.pairsWithTooLittleHistory == 1 && result.pairs == 1)
    }

    @Test func nullShareJumpNeedsAllThreeConditions() {
        let week = Array(repeating: Self.counts(100, nulls: 10), count: 7)
        #expect(Self.judge(week, today: Self.counts(100, nulls: 31)).findings.map(\.kind) == [.nullShareJump])
        #expect(Self.judge(week, today: Self.counts(100, nulls: 29)).findings.isEmpty, "under 20 points above")
        #expect(
            !Self.judge(week, today: Self.counts(29, nulls: 29)).findings.contains { $0.kind == .nullShareJump },
            "under 30 winners")
        let high = Array(repeating: Self.counts(100, nulls: 50), count: 7)
        #expect(Self.judge(high, today: Self.counts(100, nulls: 72)).findings.isEmpty, "under 1.5 times the history's")
    }

    @Test func valuesCollapsedNeedsADominantValueThatWasNot() {
        let week = Array(repeating: Self.counts(100, fine: [0: 20, 5: 40, 9: 40]), count: 7)
        let stuck = Self.judge(week, today: Self.counts(100, fine: [0: 40]))
        #expect(stuck.findings.map(\.kind) == [.valuesCollapsed])
        #expect(stuck.findings.first?.text == "40 of 40 fine values are 0 (100.0%), 20.0% over 7 days")
        #expect(Self.judge(week, today: Self.counts(100, fine: [0: 29])).findings.isEmpty, "under 30 fine values")
        let usual = Array(repeating: Self.counts(100, fine: [0: 60, 5: 40]), count: 7)
        #expect(Self.judge(usual, today: Self.counts(100, fine: [0: 40])).findings.isEmpty, "a value that always dominated")
    }
}

/// A findings file that does not read does not fail the page: the notice names it and the remedy.
@Suite struct FlowCheckFileTests {
    @Test func anUnreadableFindingsFileIsNamedOnThePage() throws {
        let store = try ReportCostTests.store("findings-unreadable")
        try FileManager.default.createDirectory(atPath: store.root + "/agg/_checks", withIntermediateDirectories: true)
        try "{\"findings\": [".write(toFile: store.root + "/agg/_checks/dt=2026-03-02.json", atomically: true, encoding: .utf8)
        let page = try ReportGenerator.page(store.request(from: ReportCostTests.first, to: ReportCostTests.last))
        #expect(
            page.contains(
                "<li>2026-03-02: \(store.root)/agg/_checks/dt=2026-03-02.json does not read as the check&#39;s findings "
                    + "(run &#39;postback check --date 2026-03-02&#39; again)</li>"), "\(page.prefix(4000))")
    }
}
