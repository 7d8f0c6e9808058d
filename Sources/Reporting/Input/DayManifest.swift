import Aggregation
import Basics
import Postbacks

/// What the report reads from a day's manifest (`agg/_manifests/dt=D.json`, docs/aggregate.md "The
/// manifest"): the checksums of the files it published, the side counts that are not
/// in the table (duplicates, corrupt lines, torn tails), and the rejected records by status and
/// reason, which the table does not break down.
struct DayManifest {
    /// An output file's rows, size and SHA-256.
    typealias Output = PublishedFile.Expected

    /// Format 2 added per-currency totals, `spool_segments` and `partial`; format 3 renamed the detail
    /// table `postback_detail_daily` and made `campaign_daily` its rollup. All are read.
    static let supportedFormats = 1...3

    var tool: String
    /// The table at the full detail grain: `postback_detail_daily`, or `campaign_daily` in a day
    /// published before the rollups (format 2 and older), which was that table.
    var detailTable: String
    /// Every CSV output the manifest lists, by table (what the report reads).
    var outputs: [String: Output]
    /// Every Parquet output (`--format parquet` or `both`), by table.
    var parquetOutputs: [String: Output]
    var schemaIDs: [String]
    var duplicatesSameDay: Int
    var duplicatesOfEarlierDays: Int
    var corruptLines: Int
    var tornTails: Int
    var rejectedPostbacks: Int
    var rejectedByStatus: [(status: String, count: Int)]
    /// The manifest lists the 50 most frequent reasons of the day; the rest are `rejectedPostbacks`
    /// minus their sum.
    var rejectedReasons: [(reason: String, count: Int)]
    /// Verified postbacks of the day, production and development (`totals`).
    var postbacks: Int
    var developmentPostbacks: Int
    /// The day was aggregated before it was over (`--allow-open-day`).
    var partial: Bool
    /// Quarantined postbacks (not counted) by reason, field and the value that keeps them out.
    var quarantined: [(reason: String, field: String, raw: String, postbacks: Int)] = []
    var conflicts = ConflictCounts()

    /// Nothing at all was aggregated for the day: no postback of either environment, no rejected or
    /// quarantined record, no duplicate, no damaged line. Decided from what the day holds, never from
    /// where it came from (a day built from `--input` files has no spool segments and is not empty).
    var isEmptyDay: Bool {
        postbacks == 0 && developmentPostbacks == 0 && rejectedPostbacks == 0 && duplicatesSameDay == 0
            && duplicatesOfEarlierDays == 0 && corruptLines == 0 && tornTails == 0 && quarantined.isEmpty
    }

    init(json bytes: [UInt8], path: String) throws(ReportError) {
        func bad(_ reason: String) -> ReportError { .malformed(path: path, line: nil, reason: reason) }
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes)
        } catch {
            throw bad("not valid JSON: \(error)")
        }
        guard case .object(let root) = value else { throw bad("not a JSON object") }
        func integer(_ object: JSONObject, _ key: String, in place: String) throws(ReportError) -> Int {
            guard case .number(let number)? = object[key], let value = number.int64Value, value >= 0 else {
                throw bad("\(place)\(key) is missing or not a count")
            }
            return Int(value)
        }
        func string(_ object: JSONObject, _ key: String, in place: String) throws(ReportError) -> String {
            guard case .string(let text)? = object[key] else { throw bad("\(place)\(key) is missing or not a string") }
            return text
        }
        func array(_ key: String) throws(ReportError) -> [JSONObject] {
            guard case .array(let values)? = root[key] else { throw bad("\(key) is missing or not an array") }
            var objects: [JSONObject] = []
            for value in values {
                guard case .object(let object) = value else { throw bad("\(key) holds something other than objects") }
                objects.append(object)
            }
            return objects
        }

        let format = try integer(root, "format", in: "")
        guard Self.supportedFormats.contains(format) else {
            throw bad(
                "manifest format \(format) is not one this postback reads (\(Self.supportedFormats.lowerBound) to "
                    + "\(Self.supportedFormats.upperBound)); use a newer postback")
        }
        if case .bool(let flag)? = root["partial"] { partial = flag } else { partial = false }
        if case .array(let rows)? = root["quarantined"] {
            for case .object(let row) in rows {
                quarantined.append(
                    (
                        try string(row, "quarantine", in: "quarantined[]."), try string(row, "field", in: "quarantined[]."),
                        try string(row, "raw", in: "quarantined[]."), try integer(row, "postbacks", in: "quarantined[].")
                    ))
            }
        }
        conflicts = ConflictCounts(manifest: root)
        tool = try string(root, "tool", in: "")
        outputs = [:]
        parquetOutputs = [:]
        for entry in try array("outputs") {
            let output = Output(
                rows: try integer(entry, "rows", in: "outputs[]."), bytes: try integer(entry, "bytes", in: "outputs[]."),
                sha256: try string(entry, "sha256", in: "outputs[]."))
            let table = try string(entry, "table", in: "outputs[].")
            if case .string(let path)? = entry["path"], path.hasSuffix(".parquet") {
                parquetOutputs[table] = output
            } else {
                outputs[table] = output
            }
        }
        detailTable =
            outputs[AggregateTables.postbackDetailDaily] != nil || parquetOutputs[AggregateTables.postbackDetailDaily] != nil
            ? AggregateTables.postbackDetailDaily : AggregateTables.campaignDaily
        guard outputs[detailTable] != nil || parquetOutputs[detailTable] != nil else {
            throw bad("outputs lists no \(AggregateTables.postbackDetailDaily) (or, before format 3, campaign_daily) file")
        }
        schemaIDs = []
        for schema in try array("schemas") { schemaIDs.append(try string(schema, "schema_id", in: "schemas[].")) }

        guard case .object(let totals)? = root["totals"] else { throw bad("totals is missing or not an object") }
        postbacks = try integer(totals, "postbacks", in: "totals.")
        developmentPostbacks = try integer(totals, "development_postbacks", in: "totals.")
        duplicatesSameDay = try integer(totals, "duplicates_same_day", in: "totals.")
        duplicatesOfEarlierDays = try integer(totals, "duplicates_of_earlier_days", in: "totals.")
        corruptLines = try integer(totals, "corrupt_lines", in: "totals.")
        tornTails = try integer(totals, "torn_tails", in: "totals.")
        rejectedPostbacks = try integer(totals, "rejected_postbacks", in: "totals.")

        guard case .object(let statuses)? = root["rejected_by_status"] else {
            throw bad("rejected_by_status is missing or not an object")
        }
        rejectedByStatus = []
        for member in statuses.members {
            rejectedByStatus.append((member.key, try integer(statuses, member.key, in: "rejected_by_status.")))
        }
        rejectedReasons = []
        for entry in try array("rejected_reasons") {
            rejectedReasons.append(
                (try string(entry, "reason", in: "rejected_reasons[]."), try integer(entry, "count", in: "rejected_reasons[].")))
        }
    }
}
