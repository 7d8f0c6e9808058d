import AggregateSchema
import Foundation
import PostbackStore
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics
@testable import Postbacks

/// No CSV the product writes holds a cell a spreadsheet would evaluate (docs/aggregate.md, "Cells a
/// spreadsheet would evaluate"): a forged postback's claimed `ad-network-id` reaches the rejected
/// rows of the production tables as text, neutralised; numbers stay numbers; the product's own
/// readers, and the Parquet files, see the text as it was claimed.
@Suite struct SpreadsheetCellTests {
    static let hostile = [
        #"=hyperlink("https://evil.example/?q=1","click me")"#, "+1+cmd|' /c calc'!a0", "-2+3", "@sum(1,2)", "\ttab", "\rcr",
        "'=already", "''+twice",
    ]

    /// CSVLine's rule, and every reader of the product's CSV taking the `'` off again.
    @Test(arguments: [
        ("=1+2", #""'=1+2""#), ("+1", #""'+1""#), ("-x", #""'-x""#), ("@a", #""'@a""#), ("\tx", "\"'\tx\""),
        ("\rx", "\"'\rx\""), ("=a,b", #""'=a,b""#), (#"=a"b"#, #""'=a""b""#), ("'=x", #""''=x""#), ("''-x", #""'''-x""#),
        ("-1.50", "-1.50"), ("-3", "-3"), ("-", #""'-""#), ("-1.", #""'-1.""#), ("-.5", #""'-.5""#), ("-1e5", #""'-1e5""#),
        ("'", "'"), ("'a", "'a"), ("a=b", "a=b"), ("net.skadnetwork", "net.skadnetwork"), ("", #""""#),
    ])
    func textCellsAreNeutralisedAndReadBack(text: String, written: String) throws {
        var line = CSVLine()
        line.field(text)
        line.field("end")
        line.endLine()
        let bytes = line.array
        #expect(String(decoding: bytes, as: UTF8.self) == written + ",end\n")
        var rendered = RenderedCSV(bytes)
        #expect(rendered.nextRecord()?.first??.map { $0 } == Array(text.utf8), "RenderedCSV")
        #expect(try UserCSV(bytes).records.first?.fields.first == text, "UserCSV")
        // CSVColumnReader (the Parquet file's values) through the detail table's first text column.
        let header = CSVLine.header(["ad_network_id", "campaign"])
        let parsed = try PublishedParquet.textRows(
            parquet: try ParquetTable.encode(
                csv: header + bytes, table: "t", columns: [.field(.adNetworkID), .campaign]))
        #expect(parsed.rows.first?.first == (text.isEmpty ? "" : text), "Parquet")
    }

    @Test func amountsStayNumbers() {
        var line = CSVLine()
        line.field(Money(micros: -1_500_000))
        line.field(Int64(-3))
        line.field("-1.50")
        #expect(String(decoding: line.array, as: UTF8.self) == "-1.5,-3,-1.50")
    }

    /// The Spark mirror's patterns (spark/postback_aggregate.py, Java regular expressions) decide
    /// every case as `SpreadsheetCell` does (checked with Python's `re`, `\z` as `\Z`).
    @Test func sparkPatternsAgree() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let cases =
            Self.hostile + [
                "-1.50", "-3", "-", "-1.", "-.5", "1.5", "a", "'", "'a", "=", "-1.5\n", "+5", "@", "a=b", "'-5", "'''@x", "x\t",
            ]
        let script = """
            import json, re, sys
            sys.path.insert(0, \(String(reflecting: Fixtures.root.path + "/spark")))
            import postback_aggregate as job
            java = lambda p: re.compile(p.replace("\\\\z", "\\\\Z"))
            neutralise, number, neutralised = (java(p) for p in (job.NEUTRALISE_PATTERN, job.PLAIN_NUMBER_PATTERN, job.NEUTRALISED_PATTERN))
            cases = json.loads(sys.argv[1])
            print(json.dumps([[bool(neutralise.search(c)) and not number.search(c), bool(neutralised.search(c))] for c in cases]))
            """
        let result = try VenvPython.run(
            script: script, arguments: [String(decoding: try JSONSerialization.data(withJSONObject: cases), as: UTF8.self)])
        let answer = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[Bool]], "\(result.stderr)")
        for (text, spark) in zip(cases, answer) {
            let bytes = Array(text.utf8)
            #expect(
                spark == [SpreadsheetCell.needsNeutralising(bytes), SpreadsheetCell.isNeutralised(bytes)],
                "\(text.debugDescription)")
        }
    }

    /// Forged postbacks claiming hostile ad network ids: every CSV table the job writes, read as a
    /// spreadsheet reads it (Python's csv module), holds no cell starting with `=`, `+`, `-`, `@`, a tab
    /// or CR that is not a number; the Parquet files (pyarrow) hold the claimed ids as they were, and
    /// `scripts/parquet_check.py` finds each Parquet file equal to its CSV with the rule undone.
    @Test func forgedAdNetworkIDsAreNeutralisedInEveryTable() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let root = TemporaryDirectory.create("spreadsheet-cells")
        var spool = SpoolBuilder(root: root)
        let d = "2026-03-10T"
        spool.add(record(AggregateJobTests.skan4(source: "12", fine: 5), key: "A:0", at: d + "10:00:00.000000Z"))
        for (index, network) in Self.hostile.enumerated() {
            var forged = record(
                AggregateJobTests.skan4(network: network, source: "12", fine: 9), key: "F\(index):0",
                at: d + "1\(index):30:00.000000Z")
            forged.status = .invalidSignature
            forged.reason = "the signature does not verify with apple-skadnetwork-p256"
            spool.add(forged, spool: .rejected)
        }
        try spool.write()
        var request = AggregationRequest(
            dataDirectory: root, from: day("2026-03-10"), to: day("2026-03-10"), workers: 2, toolVersion: "postback test")
        request.format = .both
        _ = try AggregationJob(request: request, catalog: try SchemaCatalog.load(directory: Fixtures.sampleSchemas)).run()

        let script = """
            import csv, glob, io, json, re, sys
            import pyarrow.parquet as pq
            root = sys.argv[1]
            number = re.compile(r"-?[0-9]+(\\.[0-9]+)?\\Z")
            dangerous, tables, ids = [], 0, set()
            for path in sorted(glob.glob(root + "/agg/*/dt=*/*.csv")):
                tables += 1
                for row in csv.reader(io.open(path, encoding="utf-8", newline="")):
                    for cell in row:
                        if cell[:1] in ("=", "+", "-", "@", "\\t", "\\r") and not number.match(cell):
                            dangerous.append([path.split("/agg/")[1], cell])
            for path in glob.glob(root + "/agg/postback_detail_daily/dt=*/*.parquet"):
                ids |= set(pq.read_table(path).column("ad_network_id").to_pylist())
            print(json.dumps({"dangerous": dangerous, "tables": tables, "ids": sorted(i for i in ids if i is not None)}))
            """
        let result = try VenvPython.run(script: script, arguments: [root])
        let answer = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        #expect((answer["dangerous"] as? [Any])?.isEmpty == true, "\(answer["dangerous"] ?? "")")
        #expect(answer["tables"] as? Int == AggregateTables.all.count)
        #expect(Set(answer["ids"] as? [String] ?? []).isSuperset(of: Self.hostile), "\(answer["ids"] ?? "")")
        let detail = try String(contentsOfFile: root + "/agg/postback_detail_daily/dt=2026-03-10/part-00000.csv", encoding: .utf8)
        #expect(detail.contains(#""'=hyperlink(""https://evil.example/?q=1"",""click me"")""#))

        let check = try VenvPython.run(script: ParquetTests.checker, arguments: ["tables", root])
        let checked = try #require(
            try? JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any], "\(check.stderr)")
        #expect(checked["problems"] as? [String] == [], "\(checked)")
    }
}
