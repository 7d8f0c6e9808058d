import AggregateSchema
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
        do {
            try self.init(ManifestObject.parse(bytes))
        } catch {
            throw .malformed(path: path, line: nil, reason: error.reason)
        }
    }

    private init(_ root: ManifestObject<DayManifestKey>) throws(ManifestError) {
        let format = try root.count(.format)
        guard Self.supportedFormats.contains(format) else {
            throw ManifestError(
                "manifest format \(format) is not one this postback reads (\(Self.supportedFormats.lowerBound) to "
                    + "\(Self.supportedFormats.upperBound)); use a newer postback")
        }
        partial = root.bool(.partial) ?? false
        for row in root.objects(.quarantined, ManifestQuarantinedKey.self, place: "quarantined[].") ?? [] {
            quarantined.append(
                (
                    try row.requiredString(.quarantine), try row.requiredString(.field), try row.requiredString(.raw),
                    try row.count(.postbacks)
                ))
        }
        conflicts = ConflictCounts(manifest: root)
        tool = try root.requiredString(.tool)
        outputs = [:]
        parquetOutputs = [:]
        for entry in try root.requiredObjects(.outputs, ManifestOutputKey.self, place: "outputs[].") {
            let output = Output(
                rows: try entry.count(.rows), bytes: try entry.count(.bytes), sha256: try entry.requiredString(.sha256))
            let table = try entry.requiredString(.table)
            if let path = entry.string(.path), path.hasSuffix(".parquet") {
                parquetOutputs[table] = output
            } else {
                outputs[table] = output
            }
        }
        detailTable =
            outputs[AggregateTables.postbackDetailDaily] != nil || parquetOutputs[AggregateTables.postbackDetailDaily] != nil
            ? AggregateTables.postbackDetailDaily : AggregateTables.campaignDaily
        guard outputs[detailTable] != nil || parquetOutputs[detailTable] != nil else {
            throw ManifestError(
                "outputs lists no \(AggregateTables.postbackDetailDaily) (or, before format 3, campaign_daily) file")
        }
        schemaIDs = []
        for schema in try root.requiredObjects(.schemas, ManifestSchemaKey.self, place: "schemas[].") {
            schemaIDs.append(try schema.requiredString(.schemaID))
        }

        let totals = try root.requiredObject(.totals, ManifestTotalsKey.self, place: "totals.")
        postbacks = try totals.count(.postbacks)
        developmentPostbacks = try totals.count(.developmentPostbacks)
        duplicatesSameDay = try totals.count(.duplicatesSameDay)
        duplicatesOfEarlierDays = try totals.count(.duplicatesOfEarlierDays)
        corruptLines = try totals.count(.corruptLines)
        tornTails = try totals.count(.tornTails)
        rejectedPostbacks = try totals.count(.rejectedPostbacks)

        guard case .object(let statuses)? = root[.rejectedByStatus] else {
            throw ManifestError("rejected_by_status is missing or not an object")
        }
        rejectedByStatus = []
        for member in statuses.members {
            guard case .number(let number) = member.value, let count = number.int64Value, count >= 0 else {
                throw ManifestError("rejected_by_status.\(member.key) is missing or not a count")
            }
            rejectedByStatus.append((member.key, Int(count)))
        }
        rejectedReasons = []
        for entry in try root.requiredObjects(.rejectedReasons, ManifestReasonKey.self, place: "rejected_reasons[].") {
            rejectedReasons.append((try entry.requiredString(.reason), try entry.count(.count)))
        }
    }
}
