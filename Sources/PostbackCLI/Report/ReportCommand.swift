import Postbacks
import PostbackClient
import Reporting

/// `postback report` (issue 6): argument handling and the summary line; the page is built in the
/// Reporting module.
enum ReportCommand {
    static let usage = """
        usage: postback report --data DIR (--date YYYY-MM-DD | --from YYYY-MM-DD --to YYYY-MM-DD) --out FILE
                               [--title TEXT] [--top N]

        Writes one self-contained HTML page (inline SVG charts, no scripts, nothing loaded from
        elsewhere) from the aggregates 'postback aggregate' published under DIR/agg: postbacks and
        installs per day and ad network, fine and coarse conversion values and revenue per campaign,
        null-value and non-winning shares, rejected and development postbacks. The page is written
        atomically, and the same aggregates always give the same bytes.

          --data DIR          the store (reads DIR/agg/campaign_daily and DIR/agg/_manifests);
                              or s3://BUCKET/PREFIX (AWS_* variables; see docs/deployment.md)
          --date DAY          one day; or --from DAY --to DAY, inclusive (the UTC day received)
          --out FILE          the page to write
          --title TEXT        the page's heading (default: Postback report)
          --top N             campaigns shown by name in per-campaign charts, the rest summed
                              (default \(ReportRequest.defaultTopCampaigns))

        Exit status: 0 written, every day of the range included; 1 written, but some days have no
        aggregates or could not be trusted (the page lists them); 2 usage or I/O error, a malformed
        aggregate, or no day of the range has aggregates (nothing written).
        """

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let request: ReportRequest
        do {
            let arguments = try Arguments(words, flags: ["--help"], options: ["--data", "--date", "--from", "--to", "--out", "--title", "--top"])
            if arguments.has("--help") {
                io.print(usage)
                return .success
            }
            guard arguments.positionals.isEmpty else { throw UsageError("unexpected argument '\(arguments.positionals[0])'") }
            guard let data = arguments.value("--data") else { throw UsageError("--data DIR is required") }
            guard let out = arguments.value("--out") else { throw UsageError("--out FILE is required") }
            let (from, to) = try AggregateCommand.dayRange(arguments)
            request = ReportRequest(dataDirectory: data, from: from, to: to, outputPath: out, title: arguments.value("--title"),
                                    topCampaigns: try arguments.integer("--top", default: ReportRequest.defaultTopCampaigns, in: 1...500),
                                    toolVersion: "postback \(PostbackCommand.version)")
        } catch {
            io.printError("postback report: \(error)\n\n\(usage)")
            return .usageOrIOError
        }
        let summary: ReportSummary
        do {
            if S3Location.isObjectStoreURL(request.dataDirectory) {
                var staged: ReportSummary?
                try ObjectStoreJobs.report(url: request.dataDirectory, from: request.from, to: request.to) { root in
                    var local = request
                    local.dataDirectory = root
                    staged = try ReportGenerator.generate(local)
                }
                summary = staged!
            } else {
                summary = try ReportGenerator.generate(request)
            }
        } catch {
            io.printError("postback report: \(error)")
            return .usageOrIOError
        }
        for day in summary.daysMissing { io.printError("postback report: \(day): no aggregates (shown as a gap)") }
        for day in summary.daysLeftOut { io.printError("postback report: \(day): aggregates left out (the page says why)") }
        let days = summary.daysIncluded.count
        io.print("wrote \(summary.outputPath) (\(summary.bytes) bytes): \(days) day\(days == 1 ? "" : "s"), "
            + "\(summary.postbacks) postbacks, \(summary.installs) installs; \(summary.developmentPostbacks) development and "
            + "\(summary.rejectedPostbacks) rejected kept apart")
        return summary.isComplete ? .success : .failure
    }
}
