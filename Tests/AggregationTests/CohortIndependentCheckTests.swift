import Foundation
import TestSupport
import Testing

/// `campaign_cohort_daily` checked independently: a synthetic month of postbacks (all three windows,
/// late postbacks landing in later received days), spend from three sources in three currencies (a
/// restated day, rows keyed by campaign id, source identifier and campaign name, claimed installs,
/// spend on days without postbacks), `postback spend import` and `postback aggregate` run in-process
/// as the nightly job would, then `scripts/cohort_check.py` recomputes every cell of every cohort file
/// with DuckDB from the published `campaign_daily` files, the stored spend and the manifests, written
/// from docs/aggregate.md and docs/spend.md only.
///
/// Size: `POSTBACK_COHORT_CHECK_PER_DAY` postbacks a received day (default 300) over
/// `POSTBACK_COHORT_CHECK_DAYS` received days (default 30), e.g.
/// `POSTBACK_COHORT_CHECK_PER_DAY=20000 swift test --filter CohortIndependentCheckTests`. The default
/// keeps the suite under a minute on two loaded cores.
@Suite(.serialized) struct CohortIndependentCheckTests {
    /// The whole month: spend imported (a day restated on the way), the days aggregated in four runs,
    /// every cohort cell recomputed and equal; a rerun over the same inputs changes no byte.
    @Test func aMonthOfCohortsMatchesTheDocumentedSQL() throws {
        var month = try CohortMonth()
        let started = Date()
        try month.synthesize()
        try month.importSpend(month.spendCSV(restated: false), source: "network-a", days: month.spendDays(source: "network-a"))
        try month.importSpend(
            month.spendCSV(source: "network-b"), source: "network-b", days: month.spendDays(source: "network-b"))
        try month.importSpend(
            month.spendCSV(source: "network-c"), source: "network-c", days: month.spendDays(source: "network-c"))
        // Empty received days before the month (published, nothing to read), so early cohorts can mature to `final`.
        try month.aggregate(from: CohortMonth.before, to: CohortMonth.day(-1))
        try month.aggregate(from: CohortMonth.day(0), to: CohortMonth.day(month.days / 2))
        // network-a restates one day: the import replaces its day, and the next run rebuilds that cohort.
        try month.importSpend(month.spendCSV(restated: true), source: "network-a", days: [CohortMonth.restatedDay])
        let restated = try month.store.read("spend/dt=\(CohortMonth.restatedDay)/network-a.csv")
        #expect(
            restated.contains(CohortMonth.restatedMarker),
            "the restated day does not have the second import's figures:\n\(restated)")
        #expect(!restated.contains(CohortMonth.firstMarker), "the restated day was added to, not replaced:\n\(restated)")
        try month.aggregate(from: CohortMonth.day(month.days / 2 + 1), to: CohortMonth.day(month.days / 2 + 1))
        try month.aggregate(from: CohortMonth.day(month.days / 2 + 2), to: CohortMonth.day(month.days - 1))
        let built = Date()

        let answer = try month.check()
        let checked = Date()
        #expect(answer.mismatches == 0 && answer.problems == 0, "\(answer.text)")
        // ~100 cohort days of tens of keys, 45 columns each (both tables): far above what a stub would give.
        #expect(answer.cells >= (month.days >= 30 && month.perDay >= 300 ? 20_000 : 1_000), "\(answer.text)")
        for status in ["open", "window-1-final", "window-2-final", "final"] {
            #expect(month.cohortText().contains(",\(status),"), "no cohort is \(status)")
        }
        for note in [
            "no-spend", "zero-spend", "no-revenue", "currency-mismatch", "mixed-revenue-currencies", "mixed-spend-currencies",
        ] {
            #expect(month.cohortText().contains(",\(note),"), "no row has roas_note \(note)")
        }
        // What docs/aggregate.md settled is exercised: no campaign_daily row counts no postback but rejected
        // records (development postbacks only are in campaign_daily_development), and a zero spend whose
        // roas_note is an earlier one in the documented order.
        let files = try month.agg()
        #expect(!month.rows(of: "campaign_daily", in: files).contains { $0["postbacks"] == "0" && $0["est_install_date"] != "" })
        #expect(month.rows(of: "campaign_daily_development", in: files).contains { $0["postbacks"] != "0" })
        #expect(
            month.rows(of: "campaign_cohort_daily", in: files).contains {
                $0["spend"] == "0" && $0["roas_note"] != "zero-spend"
            })

        // A rerun of the last run over the same inputs republishes the same bytes, cohorts and manifests included.
        let before = try month.agg()
        try month.aggregate(from: CohortMonth.day(month.days / 2 + 2), to: CohortMonth.day(month.days - 1))
        let after = try month.agg()
        #expect(before.keys.sorted() == after.keys.sorted())
        let changed = before.keys.filter { before[$0] != after[$0] }.sorted()
        #expect(changed.isEmpty, "a rerun over the same inputs changed \(changed.prefix(10))")
        let again = try month.check()
        #expect(again.mismatches == 0 && again.problems == 0, "\(again.text)")
        print(
            "cohort check: \(answer.cells) cells, \(answer.mismatches) mismatches; month built in "
                + String(format: "%.1f s, checked in %.1f s", built.timeIntervalSince(started), checked.timeIntervalSince(built)))
    }

    /// A late postback updates its cohort on the next run: day D is aggregated, then day D + 1, whose
    /// postbacks include estimated install dates of cohorts D's run published; those cohort files change,
    /// the check passes after each run, and rerunning D + 1 changes nothing.
    @Test func aLatePostbackUpdatesItsCohortOnTheNextRun() throws {
        var month = try CohortMonth(days: 12)
        try month.synthesize()
        try month.importSpend(month.spendCSV(restated: false), source: "network-a", days: month.spendDays(source: "network-a"))
        let d = CohortMonth.day(10)
        try month.aggregate(from: d, to: d)
        let first = try month.check()
        #expect(first.mismatches == 0 && first.problems == 0, "\(first.text)")
        let cohorts = try month.agg().filter { $0.key.hasPrefix("campaign_cohort_daily/") }
        #expect(!cohorts.isEmpty)

        try month.aggregate(from: CohortMonth.day(11), to: CohortMonth.day(11))
        let second = try month.check()
        #expect(second.mismatches == 0 && second.problems == 0, "\(second.text)")
        let now = try month.agg()
        let grown = cohorts.keys.filter { now[$0] != cohorts[$0] }.sorted()
        // Day D + 1's window-1 postbacks are installs of D − 3 and D − 2, its window-2 ones of D − 11 and D − 10,
        // its window-3 ones of D − 38 and D − 37: every one of those cohorts was published by D's run.
        for install in [-3, -2].map({ CohortMonth.day(10 + $0) }) {
            #expect(grown.contains("campaign_cohort_daily/dt=\(install)/part-00000.csv"), "\(install) did not change: \(grown)")
            #expect(
                try month.postbacks(cohort: install, in: now) > month.postbacks(cohort: install, in: cohorts),
                "cohort \(install) did not gain postbacks")
        }
        let before = try month.agg()
        try month.aggregate(from: CohortMonth.day(11), to: CohortMonth.day(11))
        #expect(try month.agg() == before, "rerunning D + 1 changed bytes")
    }

    @Test func theCheckFindsWhatItsHandMadeStoreSays() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let result = try VenvPython.run(script: CohortMonth.checker, arguments: ["--self-test"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("\"self_test\": \"passed\""), "\(result.stdout)")
    }
}

/// A month in a temporary store, and the log of what was run on it (`cohort_check.py --runs`).
struct CohortMonth {
    static let first = "2026-03-01"
    /// The first of the empty received days published before the month (39 days before it and more).
    static let before = "2026-01-15"
    static let restatedDay = day(9)
    static let firstMarker = "777.123456"
    static let restatedMarker = "888.654321"
    /// Spend on install days no postback has (before any install date, and after the month).
    static let spendOnlyDays = ["2026-01-10", "2026-04-30"]

    let store = TemporaryDirectory("cohort-month")
    let schemas = TemporaryDirectory("cohort-schemas")
    let days: Int
    let perDay: Int
    private(set) var runs: [[String: [String]]] = []

    init(days: Int? = nil) throws {
        let environment = ProcessInfo.processInfo.environment
        self.days = days ?? Int(environment["POSTBACK_COHORT_CHECK_DAYS"] ?? "") ?? 30
        self.perDay = Int(environment["POSTBACK_COHORT_CHECK_PER_DAY"] ?? "") ?? 300
        try writeSchemas()
        try store.write(fxCSV(), to: "fx.csv")
    }

    static func day(_ offset: Int) -> String {
        let start = ISO8601DateFormatter().date(from: first + "T00:00:00Z")!
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: start.addingTimeInterval(Double(offset) * 86_400))
    }

    var monthDays: [String] { (0..<days).map { Self.day($0) } }

    // MARK: Postbacks

    /// `postback aggregate synthesize --shape realistic`: apps 525463029 (networks 0 and 1) and 1229670720
    /// (networks 1 and 2), SKAdNetwork 4.0, AdAttributionKit and 3.0, three windows, each postback received
    /// 84 h, 252 h or 924 h after its estimated install.
    func synthesize() throws {
        let result = run([
            "aggregate", "synthesize", "--data", store.path, "--from", Self.first, "--days", String(days), "--per-day",
            String(perDay), "--shape", "realistic", "--seed", "7", "--jobs", "2",
        ])
        try #require(result.status == .success, "\(result.stderr)")
    }

    /// The sample schemas with source-identifier maps for the synthetic networks (campaign digits 10, 11, 12
    /// named, the others not), the game's revenue in USD, the shop's in EUR, and from the 10th a schema in
    /// EUR for the game's re-engagements (so some campaigns have revenue in two currencies).
    func writeSchemas() throws {
        func maps(_ networks: [String]) -> String {
            networks.map { network in
                """
                { "ad_network_id": "\(network)", "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1, 2], "dimension": "campaign", "values": { "10": "brand", "11": "video", "12": "playables" } },
                    { "positions": [3], "dimension": "geo", "values": { "1": "US", "2": "EU", "3": "ROW" } },
                    { "positions": [4], "dimension": "placement" } ],
                  "campaign_id_map": { "10": "brand", "11": "video", "12": "playables" } },
                """
            }.joined(separator: "\n")
        }
        let game = try String(contentsOfFile: Fixtures.sampleSchemas + "/525463029/2025-06-01.json", encoding: .utf8)
        let gameNetworks = [
            "network0.skadnetwork", "network1.skadnetwork", "network0.adattributionkit", "network1.adattributionkit",
        ]
        try schemas.write(
            game.replacingOccurrences(
                of: "\"source_identifier_map\": [", with: "\"source_identifier_map\": [\n" + maps(gameNetworks)),
            to: "525463029/2025-06-01.json")
        let shop = try String(contentsOfFile: Fixtures.sampleSchemas + "/1229670720/2026-01-01.json", encoding: .utf8)
        let shopNetworks = [
            "network1.skadnetwork", "network2.skadnetwork", "network1.adattributionkit", "network2.adattributionkit",
        ]
        try schemas.write(
            shop.replacingOccurrences(
                of: "\"source_identifier_map\": [", with: "\"source_identifier_map\": [\n" + maps(shopNetworks)),
            to: "1229670720/2026-01-01.json")
        let reengagement = """
            { "schema_id": "example-game-reengagement/\(Self.day(9))", "app_id": 525463029, "effective_from": "\(Self.day(9))",
              "currency": "EUR",
              "applies_to": { "protocols": ["adattributionkit"], "conversion_types": ["re-engagement"] },
              "windows": {
                "0": { "fine": { "entries": [ { "values": [0, 63], "label": "reengaged_${value}",
                                                "revenue_buckets": { "start": 0.5, "width": 0.25 } } ] },
                       "coarse": { "low": { "label": "back" }, "medium": { "label": "back_paying", "revenue": { "min": 1, "max": 3 } },
                                   "high": { "label": "back_big", "revenue": { "min": 10, "max": null, "estimate": 15.5 } } } },
                "1": { "coarse": { "inherit": "0" } },
                "2": { "coarse": { "inherit": "0" } } },
              "source_identifier_map": [ \(String(maps(gameNetworks).dropLast())) ] }
            """
        try schemas.write(reengagement, to: "525463029/\(Self.day(9)).json")
        let checked = run(["schema", "check", schemas.path])
        try #require(checked.status == .success, "\(checked.stdout)\(checked.stderr)")
    }

    // MARK: Spend

    /// One source's spend file. network-a reports in EUR (network1: both apps; the game's revenue is USD),
    /// by campaign name, by campaign id (named and not), by source identifier (four digits named and not,
    /// two digits), with impressions, clicks and over-claimed installs, rows split per country (added
    /// together on import); network-b in USD (network0 for the game, network2 for the shop, whose revenue is
    /// EUR), with a zero-spend campaign; network-c in GBP on a few days, for a campaign network-a also
    /// reports (two currencies on one key). `restated`: network-a's restated day only, other numbers.
    func spendCSV(source: String = "network-a", restated: Bool = false) -> String {
        var rows = [
            "date,app_id,ad_network_id,campaign_id,source_identifier,campaign,spend,currency,impressions,clicks,reported_installs"
        ]
        var random = UInt64(source.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }) &+ (restated ? 99 : 0)
        func amount(_ scale: UInt64) -> String {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let millionths = (random >> 20) % (scale * 1_000_000)
            let text = "\(millionths / 1_000_000).\(String(String(millionths % 1_000_000 + 1_000_000).dropFirst()))"
            // Some amounts as a network writes them: fewer decimals, trailing zeros, or none at all.
            switch random % 4 {
            case 0: return String(millionths / 1_000_000)
            case 1: return String(text.dropLast(4))
            default: return text
            }
        }
        func count(_ scale: UInt64) -> UInt64 {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (random >> 24) % scale
        }
        let days: [String]
        switch (source, restated) {
        case ("network-a", true): days = [Self.restatedDay]
        case ("network-a", false): days = spendDays(source: source)
        default: days = spendDays(source: source)
        }
        for day in days {
            switch source {
            case "network-a":
                let brand = day == Self.restatedDay ? (restated ? Self.restatedMarker : Self.firstMarker) : amount(400)
                rows += [
                    // The game on network1 (revenue in USD): by name, split per country (not on the restated day,
                    // so that its stored amount is the marker), the network's id in another case.
                    "\(day),525463029,network1.skadnetwork,,,brand,\(brand),EUR,\(count(90000)),\(count(900)),\(40 + count(40))"
                ]
                if day != Self.restatedDay {
                    rows.append(
                        "\(day),525463029,Network1.SKAdNetwork,,,brand,\(amount(50)),EUR,\(count(9000)),\(count(90)),\(5 + count(5))"
                    )
                }
                rows += [
                    // by campaign id: 11 is video in the map, 14 is not named
                    "\(day),525463029,network1.skadnetwork,11,,,\(amount(200)),EUR,,,\(20 + count(20))",
                    "\(day),525463029,network1.skadnetwork,14,,,\(amount(20)),EUR,,,",
                    // by source identifier: 1211 is playables, 1311 not named, 21 two digits as received
                    "\(day),525463029,network1.skadnetwork,,1211,,\(amount(100)),EUR,\(count(5000)),,",
                    "\(day),525463029,network1.skadnetwork,,1311,,\(amount(30)),EUR,,,",
                    "\(day),525463029,network1.adattributionkit,,21,,\(amount(30)),EUR,,\(count(70)),",
                    // The shop on network1 (revenue in EUR, as the spend): ROAS given; over-claimed installs.
                    "\(day),1229670720,network1.skadnetwork,,,brand,\(amount(300)),EUR,\(count(50000)),\(count(500)),\(60 + count(60))",
                    "\(day),1229670720,network1.skadnetwork,,11,,\(amount(40)),EUR,,,",
                    "\(day),1229670720,network1.adattributionkit,,1011,,\(amount(60)),EUR,,,\(10 + count(10))",
                ]
                if restated { rows.removeLast(3) }
            case "network-b":
                rows += [
                    // The game on network0 in USD, as its revenue.
                    "\(day),525463029,network0.skadnetwork,,,brand,\(amount(500)),USD,\(count(90000)),\(count(900)),",
                    "\(day),525463029,network0.skadnetwork,,,video,\(amount(200)),USD,,,",
                    "\(day),525463029,network0.skadnetwork,12,,,\(amount(100)),USD,,,",
                    "\(day),525463029,network0.skadnetwork,,1111,,\(amount(50)),USD,,,",
                    "\(day),525463029,network0.skadnetwork,,31,,\(day == Self.day(4) ? "0" : amount(10)),USD,,,",
                    "\(day),525463029,network0.adattributionkit,,2011,,\(amount(40)),USD,,,",
                    // two-digit identifiers the game's downloads (USD) and, from the 10th, re-engagements (EUR) share
                    "\(day),525463029,network0.adattributionkit,,11,,\(amount(40)),USD,,,",
                    "\(day),525463029,network0.adattributionkit,,22,,\(amount(40)),USD,,,",
                    // The shop on network2 in USD; its revenue is EUR: converted on the days --fx has a rate.
                    "\(day),1229670720,network2.skadnetwork,,,brand,\(amount(300)),USD,,,\(count(50))",
                    "\(day),1229670720,network2.skadnetwork,,12,,\(amount(30)),USD,,,",
                ]
            default:  // network-c, GBP
                rows += ["\(day),1229670720,network1.skadnetwork,,,brand,\(amount(100)),GBP,,,"]
            }
        }
        return rows.joined(separator: "\n") + "\n"
    }

    func spendDays(source: String) -> [String] {
        switch source {
        case "network-a": return monthDays + Self.spendOnlyDays
        case "network-b": return monthDays
        default: return [Self.day(6), Self.day(13)].filter { monthDays.contains($0) }
        }
    }

    /// `date,from,to,rate`: USD to EUR on even days, EUR to USD every third day, GBP to EUR on the 7th only.
    func fxCSV() -> String {
        var rows = ["date,from,to,rate"]
        for offset in 0..<31 {
            if offset % 2 == 0 { rows.append("\(Self.day(offset)),USD,EUR,0.9\(offset % 10)10") }
            if offset % 3 == 0 { rows.append("\(Self.day(offset)),EUR,USD,1.0923456789") }
        }
        rows.append("\(Self.day(6)),GBP,EUR,1.17")
        return rows.joined(separator: "\n") + "\n"
    }

    mutating func importSpend(_ csv: String, source: String, days: [String]) throws {
        let file = "import-\(source)-\(runs.count).csv"
        try store.write(csv, to: file)
        let result = run([
            "spend", "import", "--data", store.path, "--schemas", schemas.path, "--source", source, store.path + "/" + file,
        ])
        try #require(result.status == .success, "spend import \(source): \(result.stdout)\(result.stderr)")
        runs.append(["spend": days])
    }

    mutating func aggregate(from: String, to: String) throws {
        let result = run([
            "aggregate", "--data", store.path, "--schemas", schemas.path, "--from", from, "--to", to, "--fx",
            store.path + "/fx.csv", "--jobs", "2",
        ])
        try #require(result.status == .success, "aggregate \(from)…\(to): \(result.stdout)\(result.stderr)")
        runs.append(["aggregate": [from, to]])
    }

    // MARK: Reading back

    /// Every file under agg/ (path relative to agg/ → bytes).
    func agg() throws -> [String: Data] {
        var files: [String: Data] = [:]
        let root = store.path + "/agg/"
        let enumerator = FileManager.default.enumerator(atPath: root)!
        while let path = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + path, isDirectory: &isDirectory), !isDirectory.boolValue,
                !path.hasPrefix(".")
            else { continue }
            files[path] = try Data(contentsOf: URL(fileURLWithPath: root + path))
        }
        return files
    }

    func cohortText() -> String {
        ((try? agg()) ?? [:]).filter { $0.key.hasPrefix("campaign_cohort_daily/") }.values
            .map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    /// Every row of a table's CSV files, column → field (names here have no comma: splitting on commas is safe).
    func rows(of table: String, in files: [String: Data]) -> [[String: String]] {
        files.filter { $0.key.hasPrefix(table + "/") && $0.key.hasSuffix(".csv") }.values.flatMap { data in
            let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map {
                $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            }
            guard let header = lines.first else { return [[String: String]]() }
            return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
        }
    }

    /// Sum of postbacks_w1…w3 over a cohort file's rows.
    func postbacks(cohort: String, in files: [String: Data]) throws -> Int {
        let text = String(decoding: try #require(files["campaign_cohort_daily/dt=\(cohort)/part-00000.csv"]), as: UTF8.self)
        let lines = text.split(separator: "\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        let header = lines[0]
        let columns = ["postbacks_w1", "postbacks_w2", "postbacks_w3"].map { header.firstIndex(of: $0)! }
        // Campaign names here have no comma, so splitting on commas is safe.
        return lines.dropFirst().reduce(0) { sum, row in sum + columns.reduce(0) { $0 + (Int(row[$1]) ?? 0) } }
    }

    struct Answer {
        let cells: Int
        let mismatches: Int
        let problems: Int
        let text: String
    }

    /// Runs scripts/cohort_check.py on the store with the log of runs and the --fx file.
    func check() throws -> Answer {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let log = store.path + "/runs.json"
        try JSONSerialization.data(withJSONObject: runs).write(to: URL(fileURLWithPath: log))
        let result = try VenvPython.run(
            script: Self.checker,
            arguments: [
                store.path, "--fx", store.path + "/fx.csv", "--runs", log, "--schemas", schemas.path, "--all-mismatches",
                store.path + "/mismatches-\(runs.count).jsonl",
            ])
        let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let answer = try #require(
            try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
            "scripts/cohort_check.py gave no answer (scripts/setup --test installs duckdb): \(result.stderr)\(result.stdout)")
        let text = result.stdout.split(separator: "\n").dropLast().joined(separator: "\n")
        // POSTBACK_COHORT_CHECK_KEEP=DIR keeps a copy of the store (and the runs) of each check for a look.
        if let keep = ProcessInfo.processInfo.environment["POSTBACK_COHORT_CHECK_KEEP"] {
            let copy = keep + "/" + URL(fileURLWithPath: store.path).lastPathComponent + "-\(runs.count)"
            try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            try? FileManager.default.copyItem(atPath: store.path, toPath: copy)
            try? FileManager.default.copyItem(atPath: schemas.path, toPath: copy + "/schemas")
        }
        return Answer(
            cells: answer["cells"] as? Int ?? 0, mismatches: answer["mismatches"] as? Int ?? -1,
            problems: answer["problem_count"] as? Int ?? (answer["error"] == nil ? 0 : 1),
            text: text + (answer["error"].map { "\nerror: \($0)" } ?? ""))
    }

    /// Runs scripts/cohort_check.py as a program (its arguments follow).
    static let checker = """
        import runpy, sys
        path = \(String(reflecting: Fixtures.root.path + "/scripts/cohort_check.py"))
        sys.argv = [path] + sys.argv[1:]
        runpy.run_path(path, run_name="__main__")
        """
}
