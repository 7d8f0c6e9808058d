import Aggregation
import Foundation
import PostbackCrypto
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import Reporting

enum TestPaths {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Where the browser test leaves its page and screenshot for people to look at.
    static var output: String {
        ProcessInfo.processInfo.environment["REPORT_TEST_OUTPUT"] ?? packageRoot + "/.build/report-test"
    }
}

/// A scratch store under the system temp dir, removed with the value; or a kept one at a given
/// path (emptied first), for a store several tests share and people may look at afterwards.
final class ScratchStore: Sendable {
    let root: String
    private let isKept: Bool

    init(_ label: String = "report") {
        root = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString)"
        isKept = false
        try! FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    init(keptAt path: String) throws {
        root = path
        isKept = true
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit { if !isKept { try? FileManager.default.removeItem(atPath: root) } }

    var layout: StoreLayout { StoreLayout(root: root) }

    func path(_ relative: String) -> String { root + "/" + relative }

    func text(_ relative: String) throws -> String { try String(contentsOfFile: path(relative), encoding: .utf8) }

    /// Appends spool records to `raw/<spool>/dt=<day>/part-<writer>-000001.jsonl`.
    func append(_ records: [SpoolRecord], spool: StoreLayout.Spool, writer: String = "rx9") throws {
        for record in records {
            let directory = layout.partition(spool, day: record.receivedAt.day)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let file = directory + "/" + StoreLayout.segmentName(writer: writer, sequence: 1)
            if !FileManager.default.fileExists(atPath: file) { _ = FileManager.default.createFile(atPath: file, contents: nil) }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(record.encoded()))
            try handle.close()
        }
    }

    /// Runs the real aggregation job over `from`…`to`.
    func aggregate(_ catalog: SchemaCatalog, from: String, to: String) throws {
        let request = AggregationRequest(
            dataDirectory: root, from: UTCDay(from)!, to: UTCDay(to)!, workers: 2, toolVersion: "postback test")
        try AggregationJob(request: request, catalog: catalog).run()
    }

    func request(from: String, to: String, out: String? = nil, top: Int = 10_000, title: String? = nil) -> ReportRequest {
        ReportRequest(
            dataDirectory: root, from: UTCDay(from)!, to: UTCDay(to)!, outputPath: out ?? path("report.html"), title: title,
            topCampaigns: top, toolVersion: "postback test")
    }
}

/// Test data: a synthetic spool (three ad networks per protocol, SKAdNetwork 3.0/4.0 and
/// AdAttributionKit, fine, coarse and withheld values, winners and non-winners, duplicates,
/// development and rejected records), decoded with two schemas that cover fine values only in part
/// (so unmapped values have unknown revenue) and map campaigns for some networks only.
enum TestStore {
    static let first = "2026-03-01"
    static let last = "2026-03-03"

    static let gameSchema = """
        {"schema_id": "test-game/1", "app_id": 525463029, "effective_from": "2025-01-01", "currency": "USD",
         "windows": {
           "0": {"fine": {"entries": [
                   {"value": 0, "label": "install_only"},
                   {"values": [1, 29], "label": "bucket_${bucket}", "revenue_buckets": {"start": 0.5, "width": 0.25}},
                   {"value": 63, "label": "whale", "revenue": {"min": 100, "max": null, "estimate": 150}}]},
                 "coarse": {"low": {"label": "low_value", "revenue": {"min": 0, "max": 1}},
                            "medium": {"label": "mid_value", "revenue": {"min": 1, "max": 10, "estimate": 4}},
                            "high": {"label": "high_value", "revenue": {"min": 10, "max": null, "estimate": 25}}}},
           "1": {"coarse": {"inherit": "0"}},
           "2": {"coarse": {"inherit": "1", "high": {"label": "late_high", "revenue": {"min": 20, "max": 60}}}}},
         "source_identifier_map": [
           {"ad_network_id": "network0.skadnetwork", "digits": [
              {"positions": [1, 2], "dimension": "campaign", "values": {"10": "spring_sale", "11": "summer_sale", "12": "brand"}},
              {"positions": [3], "dimension": "geo"}, {"positions": [4], "dimension": "placement"}]},
           {"ad_network_id": "network1.adattributionkit", "digits": [{"positions": [1, 2], "dimension": "campaign"}]}]}
        """

    static let shopSchema = """
        {"schema_id": "test-shop/1", "app_id": 1229670720, "effective_from": "2025-01-01", "currency": "EUR",
         "applies_to": {"conversion_types": ["download", "redownload"]},
         "windows": {
           "0": {"fine": {"entries": [{"values": [0, 39], "label": "spend_${value}", "revenue_buckets": {"start": 0, "width": 2}}]},
                 "coarse": {"low": {"label": "browsed"}, "medium": {"label": "carted", "revenue": {"min": 0, "max": 5}},
                            "high": {"label": "bought", "revenue": {"min": 5, "max": 50, "estimate": 20}}}},
           "1": {"coarse": {"inherit": "0"}},
           "2": {"coarse": {"inherit": "0"}}}}
        """

    static func catalog() throws -> SchemaCatalog {
        try SchemaCatalog(schemas: [
            try ConversionSchema(json: Array(gameSchema.utf8), file: "525463029/test.json"),
            try ConversionSchema(json: Array(shopSchema.utf8), file: "1229670720/test.json"),
        ])
    }

    /// Extra rejected records with reasons of their own, so the reason chart has more than one bar.
    static func rejectedRecords(day: String) -> [SpoolRecord] {
        let reasons = [
            "body is not valid JSON: unexpected end of input", "ad network 'spam.skadnetwork' is not accepted",
            "ad network 'spam.skadnetwork' is not accepted", "unknown key id 'apple-cas-identifier/9'",
        ]
        return reasons.enumerated().map { index, reason in
            SpoolRecord(
                receivedAt: UTCTimestamp(iso8601: "\(day)T0\(index):00:00.000000Z")!, writer: "rx9",
                route: "skadnetwork-developer-copy",
                status: index == 0 ? .malformed : .untrustedKey, environment: nil, dedupKey: nil, postbackProtocol: .skadnetwork,
                version: "4.0", keyName: nil, reason: reason, attribution: nil, body: Array("{\"junk\":\(index)}".utf8))
        }
    }

    /// The store the figure and browser tests share (built once per test run, kept under the test
    /// output directory).
    static let shared: Result<ScratchStore, any Error> = Result { try make(at: TestPaths.output + "/store") }

    /// A store with three aggregated days.
    static func make(perDay: Int = 700, at path: String? = nil) throws -> ScratchStore {
        let store = try path.map { try ScratchStore(keptAt: $0) } ?? ScratchStore()
        var spool = SyntheticSpool()
        spool.postbacksPerDay = perDay
        spool.campaigns = 6
        spool.seed = 7
        spool.rejectedRate = 0.01
        spool.developmentRate = 0.01
        try spool.write(to: store.layout, first: UTCDay(first)!, days: 3, workers: 2)
        try store.append(rejectedRecords(day: "2026-03-02"), spool: .rejected)
        try store.aggregate(try catalog(), from: first, to: last)
        return store
    }
}

/// An independent reader of the aggregate CSV files (not the Reporting module's): splits RFC 4180
/// records, with an unquoted empty field as nil.
enum AggregateCSV {
    /// Every `campaign_daily` row of the store's days, with its day.
    static func campaignDaily(_ store: ScratchStore, days: [String], table: String = "postback_detail_daily") throws
        -> [(day: String, row: [String: String?])]
    {
        try days.flatMap { day in
            try CSVText.rowsKeepingNulls(store.text("agg/\(table)/dt=\(day)/part-00000.csv")).map { (day, $0) }
        }
    }
}

extension Dictionary where Key == String, Value == String? {
    func int(_ column: String) -> Int { (self[column] ?? nil).flatMap { Int($0) } ?? 0 }
    func text(_ column: String) -> String? { self[column] ?? nil }
    /// An amount in micro-units, parsed here by hand.
    func micros(_ column: String) -> Int64? { text(column).map(Micros.parse) }
}

enum Micros {
    static func parse(_ text: String) -> Int64 {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let whole = Int64(parts[0].replacingOccurrences(of: ",", with: ""))!
        let fraction = parts.count > 1 ? String(parts[1]).padding(toLength: 6, withPad: "0", startingAt: 0) : "000000"
        return whole * 1_000_000 + Int64(fraction)!
    }
}

/// Reads the figures back out of a rendered page: the tables by id, the headline metrics by name.
struct PageFigures {
    struct Table {
        let header: [String]
        let rows: [[String]]
        let footer: [String]?

        func column(_ name: String) -> Int? { header.firstIndex(of: name) }

        /// Rows as dictionaries keyed by column title.
        var records: [[String: String]] {
            rows.map { Dictionary(zip(header, $0), uniquingKeysWith: { first, _ in first }) }
        }
    }

    let html: String

    func table(_ id: String) -> Table? {
        guard let start = html.range(of: "<table id=\"\(id)\">"),
            let end = html.range(of: "</table>", range: start.upperBound..<html.endIndex)
        else {
            return nil
        }
        let body = String(html[start.upperBound..<end.lowerBound])
        func rows(_ part: String) -> [[String]] {
            guard let open = body.range(of: "<\(part)>"), let close = body.range(of: "</\(part)>") else { return [] }
            return body[open.upperBound..<close.lowerBound].components(separatedBy: "<tr>").dropFirst().map(Self.cells)
        }
        let tbody = rows("tbody").filter { !($0.count == 1 && $0[0] == "No data") }
        return Table(header: rows("thead").first ?? [], rows: tbody, footer: rows("tfoot").first)
    }

    /// The text of the element carrying `data-metric="name"`.
    func metric(_ name: String) -> String? {
        guard let start = html.range(of: "data-metric=\"\(Self.escapeAttribute(name))\">") else { return nil }
        guard let end = html.range(of: "<", range: start.upperBound..<html.endIndex) else { return nil }
        return Self.unescape(String(html[start.upperBound..<end.lowerBound]))
    }

    func count(_ name: String) -> Int? { metric(name).flatMap { Int($0.replacingOccurrences(of: ",", with: "")) } }

    private static func cells(_ row: String) -> [String] {
        var cells: [String] = []
        var rest = row[...]
        while let open = rest.range(of: "<t") {
            let afterTag = rest[open.upperBound...]
            guard afterTag.first == "h" || afterTag.first == "d", let contentStart = afterTag.range(of: ">"),
                let close = afterTag.range(of: "</t", range: contentStart.upperBound..<afterTag.endIndex)
            else { break }
            // A shortened cell keeps its full text in `title`: that is the figure the page holds.
            let tag = afterTag[..<contentStart.lowerBound]
            if let title = tag.range(of: " title=\""), let end = tag[title.upperBound...].firstIndex(of: "\"") {
                cells.append(unescape(String(tag[title.upperBound..<end])))
            } else {
                cells.append(unescape(String(afterTag[contentStart.upperBound..<close.lowerBound])))
            }
            rest = afterTag[close.upperBound...]
        }
        return cells
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escapeAttribute(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;"
        )
        .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }
}

func number(_ text: String) -> Int { Int(text.replacingOccurrences(of: ",", with: ""))! }

enum PageChecksum {
    static func sha256(_ text: String) -> String { SHA256.hash(Array(text.utf8)).description }
}
