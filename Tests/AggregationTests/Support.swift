import Foundation
import PostbackStore
import TestSupport

@testable import Aggregation
@testable import Basics
@testable import Postbacks

/// Builds spool segments by hand: records appended to `raw/<spool>/dt=<day>/part-<writer>-000001.jsonl`.
struct SpoolBuilder {
    let root: String
    private var files: [String: [UInt8]] = [:]

    init(root: String) { self.root = root }

    mutating func add(_ record: SpoolRecord, spool: StoreLayout.Spool = .postbacks, sequence: Int = 1) {
        append(record.encoded(), day: record.receivedAt.day, writer: record.writer, spool: spool, sequence: sequence)
    }

    /// Raw bytes appended to a segment (corrupt lines, torn tails).
    mutating func append(_ bytes: [UInt8], day: UTCDay, writer: String, spool: StoreLayout.Spool = .postbacks, sequence: Int = 1)
    {
        let path =
            StoreLayout(root: root).partition(spool, day: day) + "/" + StoreLayout.segmentName(writer: writer, sequence: sequence)
        files[path, default: []].append(contentsOf: bytes)
    }

    func write() throws {
        for (path, bytes) in files {
            try FileManager.default.createDirectory(
                atPath: String(path[..<path.lastIndex(of: "/")!]), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
    }
}

func timestamp(_ text: String) -> UTCTimestamp { UTCTimestamp(iso8601: text)! }

func day(_ text: String) -> UTCDay { UTCDay(text)! }

/// A verified spool record with the given fields (environment production unless said otherwise).
func record(
    _ attribution: Attribution, key: String, at time: String, writer: String = "rx1",
    environment: PostbackEnvironment = .production
) -> SpoolRecord {
    SpoolRecord(
        receivedAt: timestamp(time), writer: writer, route: "skadnetwork-developer-copy", status: .verified,
        environment: environment, dedupKey: key, postbackProtocol: attribution.postbackProtocol, version: attribution.version,
        keyName: "apple-skadnetwork-p256", reason: nil, attribution: attribution, body: Array("{\"placeholder\":true}".utf8))
}

/// Minimal RFC 4180 reader for checking outputs.
func catalog(_ schemas: String...) throws -> SchemaCatalog {
    try SchemaCatalog(
        schemas: schemas.enumerated().map { try ConversionSchema(json: Array($0.element.utf8), file: "test\($0.offset).json") })
}

func run(_ root: String, catalog: SchemaCatalog, from: String, to: String? = nil, lookback: Int = 10, workers: Int = 2) throws
    -> [DaySummary]
{
    let request = AggregationRequest(
        dataDirectory: root, from: day(from), to: day(to ?? from), lookbackDays: lookback, workers: workers,
        toolVersion: "postback test")
    return try AggregationJob(request: request, catalog: catalog).run()
}
