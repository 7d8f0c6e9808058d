import Aggregation
import Basics
import Dispatch
import Foundation
import PostbackClient
import PostbackStore
import Postbacks

/// `postback aggregate`: the nightly job (issue 4). Everything but argument handling and printing
/// lives in the Aggregation module.
enum AggregateCommand {
    static let usage = """
        usage: postback aggregate --data DIR [--schemas DIR] (--date YYYY-MM-DD | --from YYYY-MM-DD --to YYYY-MM-DD)
                                  [--lookback-days N] [--jobs N] [--json] [--force] [--allow-open-day]
                                  [--format csv|parquet|both] [--fx FILE] [--skip-cohorts] [--allow-dev]
               postback aggregate --input FILE [--input FILE]... --date YYYY-MM-DD --data DIR [--schemas DIR]
                                  [--allow-dev] [--trust-key PEM]...

        Decodes stored postbacks into daily campaign aggregates: for each UTC day, reads every
        receiver's segments in DIR/raw/, keeps the first received copy of each postback, decodes
        conversion values with the schemas, and writes
          DIR/agg/postback_detail_daily/dt=DAY/part-00000.csv   (every dimension)
          DIR/agg/campaign_daily/dt=DAY/part-00000.csv          (its rollups: campaign,
          DIR/agg/publisher_daily/dt=DAY/part-00000.csv          publisher and country
          DIR/agg/country_daily/dt=DAY/part-00000.csv            grains)
          DIR/agg/campaign_events_daily/dt=DAY/part-00000.csv
          DIR/agg/campaign_daily_development/dt=DAY/part-00000.csv
          DIR/agg/_manifests/dt=DAY.json        (written last)
        atomically. Then it rebuilds the install-date cohorts the days touch (spend, CPI, ROAS:
          DIR/agg/campaign_cohort_daily/dt=INSTALL_DAY/part-00000.csv, and _development,
          DIR/agg/_cohort_manifests/dt=INSTALL_DAY.json) from campaign_daily and the spend that
        'postback spend import' stored (docs/spend.md). Rerunning a day over the same input rewrites the same bytes. A rerun that would
        replace a published day with one built from fewer input files or bytes, or with fewer
        decoded postbacks, is refused (a lost spool or schema) unless --force; a UTC day that is not
        over yet is refused unless --allow-open-day (with --input too), a day after today always. A day with nothing to read is
        published as an explicitly empty day (all its totals 0), which reports show as a gap.

          --data DIR          the store: spool read from DIR/raw, aggregates written to DIR/agg;
                              or s3://BUCKET/PREFIX (AWS_* variables; see docs/deployment.md)
          --schemas DIR       conversion schemas, DIR/<app-id>/*.json (see docs/aggregate.md); the
                              postbacks of an app without one are counted with no revenue, and
                              'postback schema init --app APP_ID' starts its schema
          --date DAY          one day; or --from DAY --to DAY, inclusive
          --lookback-days N   do not count again a postback whose key was received in the N days
                              before (default 10; Apple retries for up to 9 days)
          --jobs N            worker threads (default: one per core)
          --json              one JSON summary object per day on stdout
          --force             replace published days even with less input or fewer decoded postbacks
          --allow-open-day    publish a day that is not over yet (UTC), marked partial in its manifest
          --format F          csv (default), parquet or both: each table as part-00000.csv, as a
                              typed part-00000.parquet (zstd), or both, all listed in the manifest
          --fx FILE           daily exchange rates (date,from,to,rate) to bring spend into the
                              revenue's currency; without one, amounts of two currencies are never divided
          --skip-cohorts      publish the day tables only (the next run rebuilds the cohorts)
          --input FILE        aggregate raw postbacks (JSON Lines) instead of the spool, all as
                              received on --date; each is verified here first (repeatable)
          --allow-dev         development postbacks are what this run is for: a day of only
                              development postbacks is not an empty run; with --input, also
                              accept development keys (counted as development)
          --trust-key PEM     with --input: also trust this test key (needs --allow-dev)

        Exit status: 0 published; 1 published, but some spool lines were corrupt (listed in the
        manifest), or a day read postbacks and counted none in the environment asked for (every
        one refused, or only development postbacks without --allow-dev: the last line says why and
        which option fixes it); 2 usage, schema or I/O error, or a cohort the run would make worse
        than the published one (fewer postbacks: a lost campaign_daily partition; --force replaces it).
        """

    static let syntax = CommandSyntax(
        "aggregate", usage: usage, flags: ["--json", "--allow-dev", "--force", "--allow-open-day", "--skip-cohorts"],
        options: [
            "--data", "--schemas", "--date", "--from", "--to", "--lookback-days", "--jobs", "--input", "--trust-key", "--format",
            "--fx",
        ])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        if words.first == "synthesize" { return SynthesizeCommand.run(Array(words.dropFirst()), io: io) }
        let arguments: Arguments
        let request: AggregationRequest
        let catalog: SchemaCatalog
        var verifier: PostbackVerifier? = nil
        do {
            arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            let schemas = arguments.value("--schemas")
            let (from, to) = try dayRange(arguments)
            if let schemas {
                try UserPaths.requireDirectory(schemas, option: "--schemas", holding: "<app-id>/*.json schema files")
            }
            let inputs = arguments.values("--input")
            for input in inputs { try UserPaths.requireInputFile(input, option: "--input") }
            if inputs.isEmpty {
                if !S3Location.isObjectStoreURL(data) {
                    try UserPaths.requireDirectory(data, option: "--data", holding: "raw/ from 'postback serve'")
                }
                if !arguments.values("--trust-key").isEmpty {
                    throw CommandError.usage("--trust-key applies to --input; the spool already holds verdicts")
                }
            } else {
                guard from == to else { throw CommandError.usage("--input aggregates one day: use --date, not --from/--to") }
                guard !S3Location.isObjectStoreURL(data) else {
                    throw CommandError.usage("--input writes to a local --data DIR, not an s3:// store")
                }
                let keys = try TrustKeys.load(arguments.values("--trust-key"))
                if !keys.isEmpty, !arguments.has("--allow-dev") {
                    throw CommandError.usage("--trust-key keys are test keys; add --allow-dev")
                }
                verifier = PostbackVerifier(
                    policy: VerificationPolicy(allowsDevelopment: arguments.has("--allow-dev"), testKeys: keys))
            }
            var built = AggregationRequest(
                dataDirectory: data, from: from, to: to,
                lookbackDays: try arguments.integer(
                    "--lookback-days", default: AggregationRequest.defaultLookbackDays, in: 0...400),
                workers: try arguments.integer("--jobs", default: ProcessInfoCores.count, in: 1...64),
                toolVersion: "postback \(PostbackCommand.version)")
            built.force = arguments.has("--force")
            built.allowOpenDay = arguments.has("--allow-open-day")
            // bench/model-cost only: the nightly job without the null-value model, its columns empty.
            built.model = ProcessInfo.processInfo.environment["POSTBACK_MODEL"] != "off"
            if let format = arguments.value("--format") {
                guard let parsed = AggregateFormat(rawValue: format) else {
                    throw CommandError.usage("--format \(format): expected csv, parquet or both")
                }
                built.format = parsed
            }
            request = built
            do {
                catalog =
                    try schemas.map { (directory) in
                        try SchemaCatalog.load(directory: directory, allowingEmpty: true)
                    } ?? .empty
            } catch {
                io.printError("postback aggregate: invalid schemas\n\(error)")
                return .usageOrIOError
            }
        } catch {
            return syntax.finish(error, io: io)
        }

        let json = arguments.has("--json")
        let job = AggregationJob(request: request, catalog: catalog)
        var corrupt = false
        // Days that read postbacks and counted none in the environment asked for: said last.
        var nothingCounted: [String] = []
        let allowsDevelopment = arguments.has("--allow-dev")
        let fromInput = !arguments.values("--input").isEmpty
        let started = DispatchTime.now()
        var dayStarted = started
        // Ctrl-C says what was published and cleans up (the binary only: never in a test's process).
        if io.isProcess, !S3Location.isObjectStoreURL(request.dataDirectory) {
            _ = AggregateInterrupt(
                days: (0...(request.to.daysSinceEpoch - request.from.daysSinceEpoch)).map { request.from.adding(days: $0) },
                store: request.dataDirectory, io: io)
        }
        let report = { (summary: DaySummary) in
            let now = DispatchTime.now()
            let seconds = Double(now.uptimeNanoseconds - dayStarted.uptimeNanoseconds) / 1e9
            dayStarted = now
            if summary.corruptLines > 0 {
                corrupt = true
                io.printError(
                    "postback aggregate: \(summary.day): \(summary.corruptLines) corrupt line\(summary.corruptLines == 1 ? "" : "s") not counted:"
                )
                for problem in summary.problems.prefix(10) { io.printError("  \(problem)") }
            }
            io.print(json ? jsonSummary(summary, seconds: seconds) : textSummary(summary, seconds: seconds))
            if let why = nothingCountedReason(
                summary, allowsDevelopment: allowsDevelopment, fromInput: fromInput,
                trustsTestKeys: !arguments.values("--trust-key").isEmpty)
            {
                nothingCounted.append("\(summary.day): \(why)")
            }
        }
        var fx = FXTable.empty
        if let path = arguments.value("--fx") {
            do {
                try UserPaths.requireInputFile(path, option: "--fx")
                fx = try FXTable(bytes: FileBytes.read(path: path), name: path)
            } catch {
                io.printError("postback aggregate: \(error)")
                return .usageOrIOError
            }
        }
        let cohorts = { (root: String) throws -> Void in
            guard !arguments.has("--skip-cohorts") else { return }
            var cohortRequest = CohortRequest(
                dataDirectory: root, from: request.from, to: request.to, toolVersion: request.toolVersion)
            cohortRequest.format = request.format
            cohortRequest.force = request.force
            cohortRequest.fx = fx
            let summaries = try CohortBuilder.rebuild(cohortRequest)
            if json {
                for summary in summaries where summary.changed { io.print(cohortJSON(summary)) }
            } else {
                io.print(cohortText(summaries))
            }
        }
        do {
            if let verifier {
                report(try job.runInput(files: arguments.values("--input"), verifier: verifier))
                try cohorts(request.dataDirectory)
            } else if S3Location.isObjectStoreURL(request.dataDirectory) {
                try ObjectStoreJobs.aggregate(
                    url: request.dataDirectory, from: request.from, to: request.to, lookbackDays: request.lookbackDays
                ) { staged, segments in
                    var local = request
                    local.dataDirectory = staged
                    local.segmentSource = segments
                    try AggregationJob(request: local, catalog: catalog).run(onDay: report)
                    try cohorts(staged)
                }
            } else {
                try job.run(onDay: report)
                try cohorts(request.dataDirectory)
            }
        } catch {
            io.printError("postback aggregate: \(error)")
            return .usageOrIOError
        }
        for reason in nothingCounted { io.printError("postback aggregate: nothing counted on \(reason)") }
        return corrupt || !nothingCounted.isEmpty ? .failure : .success
    }

    /// Why a day that read postbacks counted none in the environment the run asked for (production,
    /// and development too with `--allow-dev`), with the likely cause and the option that fixes it;
    /// nil when it counted some, or had nothing to read (an explicitly empty day).
    static func nothingCountedReason(
        _ summary: DaySummary, allowsDevelopment: Bool, fromInput: Bool, trustsTestKeys: Bool = false
    ) -> String? {
        let totals = summary.totals
        guard totals.postbacks == 0, !(allowsDevelopment && totals.developmentPostbacks > 0) else { return nil }
        let source = fromInput ? "--input" : "the spool"
        if totals.developmentPostbacks > 0 {
            return "all \(counted(totals.developmentPostbacks, "verified postback")) of \(source) are development postbacks "
                + "(signed by a development or test key): they are in campaign_daily_development, and "
                + "'postback report --environment development' shows them; add --allow-dev when they are what this run is for"
        }
        if totals.rejectedPostbacks > 0 {
            let all = "all \(counted(totals.rejectedPostbacks, "postback")) of \(source) were refused"
            // A test key's postbacks claim Apple's key, so without --trust-key they do not verify at all.
            let untrusted =
                (summary.rejectedByStatus[.untrustedKey] ?? 0)
                + (trustsTestKeys ? 0 : summary.rejectedByStatus[.invalidSignature] ?? 0)
            if fromInput, untrusted * 2 > totals.rejectedPostbacks {
                return
                    "\(all): \(untrusted == totals.rejectedPostbacks ? "every one" : "most") signed by a key this run does not trust: "
                    + "add --trust-key KEY --allow-dev for test postbacks (the key 'postback generate' signed them with), "
                    + "--allow-dev for Apple's development keys"
            }
            let reason = summary.mostFrequentRejection.map { " (most often: \($0))" } ?? ""
            return "\(all)\(reason): "
                + (fromInput
                    ? "'postback verify FILE' shows each one's verdict"
                    : "the manifest lists the reasons (rejected_reasons); check what sends them")
        }
        if summary.quarantinedPostbacks > 0 {
            return "all \(counted(summary.quarantinedPostbacks, "postback")) were quarantined (a version or key this release "
                + "cannot check yet): 'postback reverify' takes them back once a release knows them"
        }
        return nil
    }

    private static func counted(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    static func dayRange(_ arguments: Arguments) throws -> (UTCDay, UTCDay) {
        func day(_ option: String) throws -> UTCDay? {
            guard let text = arguments.value(option) else { return nil }
            guard let day = UTCDay(text) else { throw CommandError.usage("\(option) must be a date YYYY-MM-DD, got '\(text)'") }
            return day
        }
        let date = try day("--date")
        let from = try day("--from")
        let to = try day("--to")
        switch (date, from, to) {
        case (let date?, nil, nil): return (date, date)
        case (nil, let from?, let to?):
            guard from <= to else { throw CommandError.usage("--from \(from) is after --to \(to)") }
            guard to.daysSinceEpoch - from.daysSinceEpoch < 3660 else {
                throw CommandError.usage("--from/--to spans more than ten years")
            }
            return (from, to)
        case (nil, nil, nil): throw CommandError.usage("give --date DAY, or --from DAY and --to DAY")
        case (_?, _, _): throw CommandError.usage("give either --date or --from/--to, not both")
        default: throw CommandError.usage("--from and --to go together")
        }
    }

    static func textSummary(_ summary: DaySummary, seconds: Double) -> String {
        let totals = summary.totals
        func count(_ number: Int, _ noun: String, plural: String? = nil) -> String {
            "\(number) \(number == 1 ? noun : plural ?? noun + "s")"
        }
        var text: String
        if totals.postbacks == 0, totals.developmentPostbacks > 0 {
            // A day of development postbacks only (a test key, the demo) leads with them, not with zeros.
            text =
                "\(summary.day): \(count(totals.developmentPostbacks, "development postback")) "
                + "(\(count(totals.developmentInstalls, "install"))) in campaign_daily_development; no production postbacks; "
                + "\(totals.rejectedPostbacks) rejected, "
        } else {
            text =
                "\(summary.day): \(count(totals.postbacks, "postback")) (\(count(totals.installs, "install")), "
                + "\(count(totals.redownloads, "redownload")), \(count(totals.reengagements, "re-engagement")), \(count(totals.losses, "loss", plural: "losses"))"
                + ", \(count(totals.nullValuePostbacks, "null value"))), revenue estimate \(totals.revenueText); "
                + "\(totals.developmentPostbacks) development, \(totals.rejectedPostbacks) rejected, "
        }
        text +=
            "\(count(summary.sameDayDuplicates + summary.earlierDayDuplicates, "duplicate")) dropped; "
            + "\(summary.campaignDailyRows) + \(summary.campaignEventsDailyRows) rows from \(count(summary.inputSegments, "file"))"
        let withoutSchema = totals.postbacks > 0 ? totals.postbacksWithoutSchema : totals.developmentWithoutSchema
        if !withoutSchema.isEmpty {
            let apps = withoutSchema.sorted { $0.key < $1.key }
            let listed = apps.prefix(3).map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
            text +=
                "; no schema for app\(apps.count == 1 ? "" : "s") \(listed)\(apps.count > 3 ? " and \(apps.count - 3) more" : ""): "
                + "counted, no revenue ('postback schema init --app \(apps[0].key)' starts one)"
        }
        if summary.tornTails > 0 { text += "; \(summary.tornTails) torn tail\(summary.tornTails == 1 ? "" : "s") skipped" }
        if summary.quarantinedPostbacks > 0 {
            text +=
                "; \(summary.quarantinedPostbacks) quarantined, not counted (listed in the manifest; postback reverify takes them back)"
        }
        if summary.inputSegments == 0 { text += "; nothing to read for this day: published as an empty day" }
        if summary.partial { text += "; the day is not over: published as partial" }
        text += String(format: " (%.2f s)", seconds)
        return text
    }

    /// One line for the cohort pass: how many cohorts changed and how mature they are.
    static func cohortText(_ summaries: [CohortSummary]) -> String {
        let changed = summaries.filter(\.changed)
        guard let first = summaries.first, let last = summaries.last else {
            return "cohorts: none to build (no postbacks or spend in reach)"
        }
        let open = summaries.filter { $0.status < .final }.count
        return "cohorts \(first.installDay)..\(last.installDay): \(changed.count) of \(summaries.count) rewritten; "
            + "\(open) not final yet (later postbacks can still add to them)"
    }

    static func cohortJSON(_ summary: CohortSummary) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.field("cohort", summary.installDay.description)
        json.field("rows", summary.rows)
        json.field("cohort_status", summary.status.rawValue)
        json.endObject()
        return json.string
    }

    static func jsonSummary(_ summary: DaySummary, seconds: Double) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.field("dt", summary.day.description)
        json.field("postbacks", summary.totals.postbacks)
        json.field("installs", summary.totals.installs)
        json.field("redownloads", summary.totals.redownloads)
        json.field("reengagements", summary.totals.reengagements)
        json.field("losses", summary.totals.losses)
        json.field("null_cv_postbacks", summary.totals.nullValuePostbacks)
        json.field("decoded_postbacks", summary.totals.decodedPostbacks)
        summary.totals.writeRevenueByCurrency(into: &json)
        summary.totals.writeAppsWithoutSchema(into: &json)
        json.field("development_postbacks", summary.totals.developmentPostbacks)
        json.field("rejected_postbacks", summary.totals.rejectedPostbacks)
        json.field("duplicates_same_day", summary.sameDayDuplicates)
        json.field("duplicates_of_earlier_days", summary.earlierDayDuplicates)
        json.field("corrupt_lines", summary.corruptLines)
        json.field("torn_tails", summary.tornTails)
        json.field("campaign_daily_rows", summary.campaignDailyRows)
        json.field("campaign_events_daily_rows", summary.campaignEventsDailyRows)
        json.field("input_files", summary.inputSegments)
        json.field("input_bytes", summary.inputBytes)
        json.field("spool_segments", summary.spoolSegments)
        json.field("quarantined_postbacks", summary.quarantinedPostbacks)
        json.field("partial", summary.partial)
        json.field("fast_path_lines", summary.fastPathLines)
        json.field("slow_path_lines", summary.slowPathLines)
        json.field("buckets", summary.bucketCount)
        json.field("largest_bucket", summary.largestBucket)
        json.field("manifest", summary.manifestPath)
        json.key("seconds")
        json.value(numberText: String(format: "%.3f", seconds))
        json.endObject()
        return json.string
    }
}
