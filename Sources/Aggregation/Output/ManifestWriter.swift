import Basics
import Postbacks

/// The manifest of one day's partition, written last: which inputs (with sizes and SHA-256) went
/// into which outputs (with row counts and SHA-256), under which schemas and tool version. No
/// wall-clock time appears in it, so a rerun over the same inputs writes the same bytes.
struct ManifestWriter {
    /// 2: per-currency revenue totals (`revenue_est_by_currency` instead of `revenue_est_sum`),
    /// `spool_segments`, `partial` and `totals.decoded_postbacks`. 3: the detail table is
    /// `postback_detail_daily`; `campaign_daily`, `publisher_daily`, `country_daily` and
    /// `campaign_daily_development` are its rollups (`AggregateTables.all`).
    static let formatVersion = 3
    static let problemsListed = 50
    static let reasonsListed = 50

    struct Output {
        let table: String
        let path: String
        let rows: Int
        let bytes: Int
        let sha256: String
    }

    /// `"outputs": [{"table", "path", "rows", "bytes", "sha256"}, …]`: a day's and a cohort's manifest.
    static func writeOutputs(_ outputs: [Output], into json: inout JSONWriter) {
        json.key("outputs")
        json.beginArray()
        for output in outputs {
            json.beginObject()
            json.field("table", output.table)
            json.field("path", output.path)
            json.field("rows", output.rows)
            json.field("bytes", output.bytes)
            json.field("sha256", output.sha256)
            json.endObject()
        }
        json.endArray()
    }

    static func manifest(
        day: UTCDay, toolVersion: String, lookbackDays: Int, facts table: DayFacts, lookback: [SegmentReport],
        schemas: [ConversionSchema], outputs: [Output], totals: DayTotals, partial: Bool,
        quarantine: QuarantineSummary? = nil, conflicts: ConflictSummary? = nil
    ) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 4096)
        json.beginObject()
        json.field("format", formatVersion)
        json.field("dt", day.description)
        json.field("tool", toolVersion)
        json.field("lookback_days", lookbackDays)
        json.field("spool_segments", table.segments.filter { $0.spool == .postbacks }.count)
        json.field("partial", partial)

        json.key("inputs")
        json.beginArray()
        for segment in table.segments {
            json.beginObject()
            json.field("path", segment.name)
            json.field("spool", segment.spool?.rawValue ?? "input")
            json.field("bytes", segment.bytes)
            json.field("sha256", segment.sha256)
            json.field("lines", segment.lines)
            json.field("postbacks", segment.postbacks)
            json.field("rejected", segment.rejected)
            json.field("corrupt_lines", segment.corruptLines)
            json.field("torn_tail", segment.tornTail)
            json.endObject()
        }
        json.endArray()

        json.key("lookback_inputs")
        json.beginArray()
        for segment in lookback {
            json.beginObject()
            json.field("path", segment.name)
            json.field("bytes", segment.bytes)
            json.field("sha256", segment.sha256)
            json.endObject()
        }
        json.endArray()

        json.key("schemas")
        json.beginArray()
        for schema in schemas {
            json.beginObject()
            json.field("schema_id", schema.schemaID)
            json.field("file", schema.file.split(separator: "/").suffix(2).joined(separator: "/"))
            json.field("sha256", schema.digest)
            json.endObject()
        }
        json.endArray()

        writeOutputs(outputs, into: &json)

        // The model behind campaign_daily's modeled columns (docs/modeling.md).
        json.key("model")
        json.beginObject()
        json.field("name", NullValueModel.name)
        json.field("pooling_days", NullValueModel.poolingDays)
        json.field("min_measured", Int(NullValueModel.minMeasured))
        json.key("interval")
        json.value(numberText: "\(NullValueModel.interval)")
        json.field("prior_postbacks", NullValueModel.priorPostbacks)
        json.endObject()

        json.key("totals")
        json.beginObject()
        json.field("postbacks", totals.postbacks)
        json.field("installs", totals.installs)
        json.field("redownloads", totals.redownloads)
        json.field("reengagements", totals.reengagements)
        json.field("losses", totals.losses)
        json.field("null_cv_postbacks", totals.nullValuePostbacks)
        json.field("decoded_postbacks", totals.decodedPostbacks)
        totals.writeRevenueByCurrency(into: &json)
        json.field("development_postbacks", totals.developmentPostbacks)
        json.field("rejected_postbacks", totals.rejectedPostbacks)
        json.field("duplicates_same_day", table.sameDayDuplicates)
        json.field("duplicates_of_earlier_days", table.earlierDayDuplicates)
        json.field("corrupt_lines", table.segments.reduce(0) { $0 + $1.corruptLines })
        json.field("torn_tails", table.segments.filter(\.tornTail).count)
        json.endObject()
        // Counted, with no revenue: `postback schema init --app APP_ID` starts a schema for each.
        totals.writeAppsWithoutSchema(into: &json)

        json.key("rejected_by_status")
        json.beginObject()
        for status in VerificationStatus.allCases {
            if let count = table.rejectedByStatus[status] { json.field(status.rawValue, count) }
        }
        json.endObject()

        json.key("rejected_reasons")
        json.beginArray()
        let reasons = table.rejectedReasons.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        for (reason, count) in reasons.prefix(reasonsListed) {
            json.beginObject()
            json.field("reason", reason)
            json.field("count", count)
            json.endObject()
        }
        json.endArray()

        // Not counted, kept apart with the value that keeps them out (postback reverify takes them back).
        (quarantine ?? QuarantineSummary()).write(into: &json)
        // Copies of stored postbacks that disagreed on unsigned values (issue 24); the stored copies count.
        (conflicts ?? ConflictSummary()).write(into: &json)

        json.key("problems")
        json.beginArray()
        var listed = 0
        for segment in table.segments {
            for problem in segment.problems where listed < problemsListed {
                json.beginObject()
                json.field("path", segment.name)
                json.field("line", problem.line)
                json.field("reason", problem.reason)
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
