import Basics
import PostbackClient
import Postbacks
import Reporting

/// `postback report` (issue 6): argument handling and the summary line; the page is built in the
/// Reporting module.
enum ReportCommand {
    static let usage = """
        usage: postback report --data DIR (--date YYYY-MM-DD | --from YYYY-MM-DD --to YYYY-MM-DD) --out FILE|-
                               [--title TEXT] [--top N] [--app ID] [--environment production|development]

        Writes one self-contained HTML page (inline SVG charts, no scripts, nothing loaded from
        elsewhere) from the aggregates 'postback aggregate' published under DIR/agg. It opens on the
        range's totals (postbacks, installs, revenue estimate, null-value share; with spend, spend,
        CPI and ROAS of the install cohorts, and a warning when a network claims more than 5% more
        installs than Apple signed) and the top campaigns by installs; then postbacks and installs per day and ad network, campaigns per app,
        fine and coarse conversion values and revenue per campaign, null-value and non-winning
        shares, rejected postbacks. The page is written atomically, and the same aggregates always
        give the same bytes.

          --data DIR          the store (reads DIR/agg/postback_detail_daily and DIR/agg/_manifests,
                              DIR/agg/campaign_cohort_daily and DIR/agg/_cohort_manifests);
                              or s3://BUCKET/PREFIX (AWS_* variables; see docs/deployment.md)
          --date DAY          one day; or --from DAY --to DAY, inclusive (the UTC day received)
          --out FILE          the page to write ('-': standard output, the summary then on stderr)
          --title TEXT        the page's heading (default: Postback report)
          --top N             campaigns shown by name in every per-campaign table and chart, the
                              rest summed in one row (default \(ReportRequest.defaultTopCampaigns))
          --app ID            only this app's campaigns, counts and charts (rejected reasons and
                              duplicates stay the whole store's: the manifests do not split them)
          --environment E     whose postbacks the page is about: production (default), or
                              development (Apple development keys, --trust-key test keys, SKAdNetwork
                              test mode: what an integration sends), read from
                              DIR/agg/campaign_daily_development. One page, one environment: the
                              two are never added together

        Exit status: 0 written, every day of the range included; 1 written, but some days have no
        aggregates or could not be trusted (the page lists them); 2 usage or I/O error, a malformed
        aggregate, or no day of the range has aggregates (nothing written).
        """

    static let syntax = CommandSyntax(
        "report", usage: usage,
        options: ["--data", "--date", "--from", "--to", "--out", "--title", "--top", "--app", "--environment"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        var request: ReportRequest
        do {
            let arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            guard let out = arguments.value("--out") else {
                throw CommandError.usage("--out FILE is required ('-' for standard output)")
            }
            let (from, to) = try AggregateCommand.dayRange(arguments)
            let topCampaigns = try arguments.integer("--top", default: ReportRequest.defaultTopCampaigns, in: 1...500)
            if !S3Location.isObjectStoreURL(data) {
                try UserPaths.requireDirectory(data, option: "--data", holding: "agg/ from 'postback aggregate'")
            }
            try UserPaths.requireOutputFile(out, option: "--out")
            request = ReportRequest(
                dataDirectory: data, from: from, to: to, outputPath: out, title: arguments.value("--title"),
                topCampaigns: topCampaigns,
                toolVersion: "postback \(PostbackCommand.version)")
            if let app = arguments.value("--app") {
                guard let number = Int64(app), number > 0, String(number) == app else {
                    throw CommandError.usage("--app must be a numeric app id (the app-id of the postbacks), got '\(app)'")
                }
                request.appID = app
            }
            if let environment = arguments.value("--environment") {
                guard let chosen = ReportEnvironment(rawValue: environment) else {
                    throw CommandError.usage("--environment must be production or development, got '\(environment)'")
                }
                request.environment = chosen
            }
        } catch {
            return syntax.finish(error, io: io)
        }
        let summary: ReportSummary
        let toStandardOutput = request.outputPath == "-"
        do {
            // The page to a file, or to standard output with --out -.
            func make(_ request: ReportRequest) throws -> ReportSummary {
                guard toStandardOutput else { return try ReportGenerator.generate(request) }
                let (page, built) = try ReportGenerator.build(request)
                io.standardOutput.write(page)
                return built
            }
            if S3Location.isObjectStoreURL(request.dataDirectory) {
                // From a bucket: the range's aggregates are staged locally, then read as usual.
                var staged: ReportSummary?
                try ObjectStoreJobs.report(url: request.dataDirectory, from: request.from, to: request.to) { root in
                    var local = request
                    local.dataDirectory = root
                    staged = try make(local)
                }
                summary = staged!
            } else {
                summary = try make(request)
            }
        } catch {
            io.printError("postback report: \(error)")
            return .usageOrIOError
        }
        // One line per kind of gap, consecutive days as ranges: a month with one aggregated day is
        // one line, not thirty.
        for (days, what) in [
            (summary.daysMissing, "no aggregates (shown as a gap)"),
            (summary.daysWithoutSpool, "nothing received (shown as a gap)"),
            (summary.daysPartial, "aggregated before the day was over (partial)"),
            (summary.daysLeftOut, "aggregates left out (the page says why)"),
        ] where !days.isEmpty {
            io.printError("postback report: \(dayRanges(days)): \(what)")
        }
        let days = summary.daysIncluded.count
        let (environment, other) =
            summary.environment == .production ? ("production", "development") : ("development", "production")
        (toStandardOutput ? io.printError : io.print)(
            "wrote \(toStandardOutput ? "standard output" : summary.outputPath) (\(summary.bytes) bytes): \(days) day\(days == 1 ? "" : "s"), "
                + "\(summary.postbacks) \(environment) postbacks, \(summary.installs) installs; "
                + "\(summary.otherEnvironmentPostbacks) \(other) and \(summary.rejectedPostbacks) rejected kept apart")
        if summary.environment == .production, summary.postbacks == 0, summary.otherEnvironmentPostbacks > 0 {
            io.printError(
                "postback report: no production postbacks in this range, \(summary.otherEnvironmentPostbacks) development ones: "
                    + "add --environment development to see them")
        }
        return summary.isComplete ? .success : .failure
    }

    /// `2026-03-01 to 2026-03-09, 2026-03-11 (10 days)`: days in order, runs of consecutive days joined.
    static func dayRanges(_ days: [UTCDay]) -> String {
        var runs: [(first: UTCDay, last: UTCDay)] = []
        for day in days.sorted() {
            if let last = runs.last?.last, last.adding(days: 1) == day {
                runs[runs.count - 1].last = day
            } else {
                runs.append((day, day))
            }
        }
        let text = runs.map { $0.first == $0.last ? "\($0.first)" : "\($0.first) to \($0.last)" }.joined(separator: ", ")
        return days.count == 1 ? text : "\(text) (\(days.count) days)"
    }
}
