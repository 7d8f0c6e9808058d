import Basics
import Reporting

/// `postback check`: argument handling and output; the comparison is `Reporting.FlowCheck`.
enum CheckCommand {
    static let usage = """
        usage: postback check --data DIR --date YYYY-MM-DD [--history-days N]
                              [--environment production|development] [--json]

        The nightly check, run after 'postback aggregate': compares the day's published figures of
        each app × ad network with its own recent published days (complete, not partial) and
        reports what changed beyond normal variation (docs/alerts.md, "The nightly check"):

          stopped           no postback, where the history's median is 10 or more a day
          volume-drop       under half the median, and under a 0.1% chance at the median (Poisson)
          null-share-jump   null values' share of 30 or more winners 20 points above and 1.5 times
                            the history's, z ≥ 4
          values-collapsed  one fine value holds 80% of 30 or more fine values, and held at most
                            50% of the history's

        A pair with fewer than \(FlowCheck.minimumHistoryDays) history days with postbacks is not judged (counted in the
        summary). A stop is reported on the day it begins; the days after, the pair is counted as
        still stopped. Prints one line per finding and a summary, and writes the findings to
        DIR/agg/_checks/dt=DAY.json (development: dt=DAY.development.json), which the report shows.

          --data DIR          the store whose agg/ 'postback aggregate' published
          --date DAY          the day to check (the UTC day received)
          --history-days N    how many days before it to compare with (default \(FlowCheck.defaultHistoryDays), 7 to 366)
          --environment E     production (default), or development (read from
                              DIR/agg/campaign_daily_development: test keys, integrations)
          --json              print the findings file on standard output instead of lines

        Exit status: 0 no finding; 1 findings (listed); 2 usage or I/O error, or the day is not
        published (run 'postback aggregate --date DAY' first).
        """

    static let syntax = CommandSyntax(
        "check", usage: usage, flags: ["--json"], options: ["--data", "--date", "--history-days", "--environment"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let request: FlowCheck.Request
        let json: Bool
        do {
            let arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            guard let text = arguments.value("--date") else { throw CommandError.usage("--date DAY is required") }
            guard let day = UTCDay(text) else { throw CommandError.usage("--date must be a date YYYY-MM-DD, got '\(text)'") }
            let history = try arguments.integer("--history-days", default: FlowCheck.defaultHistoryDays, in: 7...366)
            var environment = ReportEnvironment.production
            if let name = arguments.value("--environment") {
                guard let chosen = ReportEnvironment(rawValue: name) else {
                    throw CommandError.usage("--environment must be production or development, got '\(name)'")
                }
                environment = chosen
            }
            try UserPaths.requireDirectory(data, option: "--data", holding: "agg/ from 'postback aggregate'")
            request = FlowCheck.Request(dataDirectory: data, day: day, historyDays: history, environment: environment)
            json = arguments.has("--json")
        } catch {
            return syntax.finish(error, io: io)
        }
        let result: FlowCheck.Result
        do {
            result = try FlowCheck.run(request)
            let path = try FlowCheckFile.write(
                result, dataDirectory: request.dataDirectory, toolVersion: "postback \(PostbackCommand.version)")
            if json {
                io.standardOutput.write(try FileBytes.read(path: path))
            } else {
                for finding in result.findings { io.print(finding.line) }
                io.print(result.summary)
            }
        } catch {
            io.printError("postback check: \(error)")
            return .usageOrIOError
        }
        return result.findings.isEmpty ? .success : .failure
    }
}
