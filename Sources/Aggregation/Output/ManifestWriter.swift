import AggregateSchema
import Basics
import Postbacks

/// The manifest of one day's partition, written last: which inputs (with sizes and SHA-256) went
/// into which outputs (with row counts and SHA-256), under which schemas and tool version. No
/// wall-clock time appears in it, so a rerun over the same inputs writes the same bytes.
struct ManifestWriter {
    private typealias Key = DayManifestKey
    private typealias Input = ManifestInputKey
    private typealias Totals = ManifestTotalsKey

    /// 2: per-currency revenue totals (`revenue_est_by_currency` instead of `revenue_est_sum`),
    /// `spool_segments`, `partial` and `totals.decoded_postbacks`. 3: the detail table is
    /// `postback_detail_daily`; `campaign_daily`, `publisher_daily`, `country_daily` and
    /// `campaign_daily_development` are its rollups (`AggregateTables.all`).
    static let formatVersion = 3
    static let problemsListed = 50
    static let reasonsListed = 50

    static func manifest(
        day: UTCDay, toolVersion: String, lookbackDays: Int, facts table: DayFacts, lookback: [SegmentReport],
        schemas: [ConversionSchema], outputs: [ManifestOutput], totals: DayTotals, partial: Bool,
        quarantine: QuarantineSummary? = nil, conflicts: ConflictSummary? = nil
    ) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 4096)
        json.beginObject()
        json.field(Key.format, formatVersion)
        json.field(Key.dt, day.description)
        json.field(Key.tool, toolVersion)
        json.field(Key.lookbackDays, lookbackDays)
        json.field(Key.spoolSegments, table.segments.filter { $0.spool == .postbacks }.count)
        json.field(Key.partial, partial)

        json.key(Key.inputs)
        json.beginArray()
        for segment in table.segments {
            json.beginObject()
            json.field(Input.path, segment.name)
            json.field(Input.spool, segment.spool?.rawValue ?? "input")
            json.field(Input.bytes, segment.bytes)
            json.field(Input.sha256, segment.sha256)
            json.field(Input.lines, segment.lines)
            json.field(Input.postbacks, segment.postbacks)
            json.field(Input.rejected, segment.rejected)
            json.field(Input.corruptLines, segment.corruptLines)
            json.field(Input.tornTail, segment.tornTail)
            json.endObject()
        }
        json.endArray()

        json.key(Key.lookbackInputs)
        json.beginArray()
        for segment in lookback {
            json.beginObject()
            json.field(Input.path, segment.name)
            json.field(Input.bytes, segment.bytes)
            json.field(Input.sha256, segment.sha256)
            json.endObject()
        }
        json.endArray()

        json.key(Key.schemas)
        json.beginArray()
        for schema in schemas {
            json.beginObject()
            json.field(ManifestSchemaKey.schemaID, schema.schemaID)
            json.field(ManifestSchemaKey.file, schema.file.split(separator: "/").suffix(2).joined(separator: "/"))
            json.field(ManifestSchemaKey.sha256, schema.digest)
            json.endObject()
        }
        json.endArray()

        ManifestOutput.write(outputs, into: &json)

        // The model behind campaign_daily's modeled columns (docs/modeling.md).
        json.key(Key.model)
        json.beginObject()
        json.field(ManifestModelKey.name, NullValueModel.name)
        json.field(ManifestModelKey.poolingDays, NullValueModel.poolingDays)
        json.field(ManifestModelKey.minMeasured, Int(NullValueModel.minMeasured))
        json.key(ManifestModelKey.interval)
        json.value(numberText: "\(NullValueModel.interval)")
        json.field(ManifestModelKey.priorPostbacks, NullValueModel.priorPostbacks)
        json.endObject()

        json.key(Key.totals)
        json.beginObject()
        json.field(Totals.postbacks, totals.postbacks)
        json.field(Totals.installs, totals.installs)
        json.field(Totals.redownloads, totals.redownloads)
        json.field(Totals.reengagements, totals.reengagements)
        json.field(Totals.losses, totals.losses)
        json.field(Totals.nullValuePostbacks, totals.nullValuePostbacks)
        json.field(Totals.decodedPostbacks, totals.decodedPostbacks)
        totals.writeRevenueByCurrency(into: &json)
        json.field(Totals.developmentPostbacks, totals.developmentPostbacks)
        json.field(Totals.rejectedPostbacks, totals.rejectedPostbacks)
        json.field(Totals.duplicatesSameDay, table.sameDayDuplicates)
        json.field(Totals.duplicatesOfEarlierDays, table.earlierDayDuplicates)
        json.field(Totals.corruptLines, table.segments.reduce(0) { $0 + $1.corruptLines })
        json.field(Totals.tornTails, table.segments.filter(\.tornTail).count)
        json.endObject()
        // Counted, with no revenue: `postback schema init --app APP_ID` starts a schema for each.
        totals.writeAppsWithoutSchema(into: &json)

        json.key(Key.rejectedByStatus)
        json.beginObject()
        for status in VerificationStatus.allCases {
            if let count = table.rejectedByStatus[status] { json.field(status.rawValue, count) }
        }
        json.endObject()

        json.key(Key.rejectedReasons)
        json.beginArray()
        let reasons = table.rejectedReasons.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        for (reason, count) in reasons.prefix(reasonsListed) {
            json.beginObject()
            json.field(ManifestReasonKey.reason, reason)
            json.field(ManifestReasonKey.count, count)
            json.endObject()
        }
        json.endArray()

        // Not counted, kept apart with the value that keeps them out (postback reverify takes them back).
        (quarantine ?? QuarantineSummary()).write(into: &json)
        // Copies of stored postbacks that disagreed on unsigned values (issue 24); the stored copies count.
        (conflicts ?? ConflictSummary()).write(into: &json)

        json.key(Key.problems)
        json.beginArray()
        var listed = 0
        for segment in table.segments {
            for problem in segment.problems where listed < problemsListed {
                json.beginObject()
                json.field(ManifestProblemKey.path, segment.name)
                json.field(ManifestProblemKey.line, problem.line)
                json.field(ManifestProblemKey.reason, problem.reason)
                json.endObject()
                listed += 1
            }
        }
        json.endArray()
        json.endObject()
        var bytes = json.bytes
        bytes.append(0x0A)
        return bytes
    }
}
