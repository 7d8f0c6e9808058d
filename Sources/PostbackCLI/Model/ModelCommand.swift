import Aggregation
import Basics

/// `postback model check`: argument handling and output; the check is `Aggregation.ModelCheck`.
enum ModelCommand {
    static let usage = """
        usage: postback model check --data DATA --from YYYY-MM-DD --to YYYY-MM-DD
                                    [--holdout SHARE] [--seed N] [--json]

        How well the model of null-value postbacks (the modeled columns of campaign_daily,
        docs/modeling.md) does on this store: hides a seeded share of the measured postbacks of the
        published campaign_daily days (in memory; nothing is written), fits the same model on the
        rest, and says how often the 90% intervals of the hidden postbacks' totals hold their
        published values (campaign × window totals, and campaigns over the range, with how many
        were tested), and the error of each app's total. Near 90% is right; far below, the model's
        assumptions do not hold on this store; far above, the intervals are too wide.

          --data DATA       the store whose agg/ 'postback aggregate' published
          --from, --to DAY  the received days whose hidden postbacks are tested (the 27 days
                            before --from are read too: the model pools 28 days)
          --holdout SHARE   the share of measured postbacks hidden (default 0.2, between 0 and 1)
          --seed N          which postbacks are hidden (default 1; the same seed hides the same ones)
          --json            one JSON object instead of lines

        Exit status: 0 checked; 2 usage or I/O error, or no day of the range is published.
        """

    static let syntax = CommandSyntax("model", usage: usage)
    static let checkSyntax = CommandSyntax(
        "model check", usage: usage, flags: ["--json"], options: ["--data", "--from", "--to", "--holdout", "--seed"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("check", check)])
    }

    private static func check(_ words: [String], io: CommandIO) -> ExitStatus {
        var request: ModelCheck.Request
        let json: Bool
        do {
            let arguments = try checkSyntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DATA is required") }
            var days: [UTCDay] = []
            for option in ["--from", "--to"] {
                guard let text = arguments.value(option) else { throw CommandError.usage("\(option) DAY is required") }
                guard let day = UTCDay(text) else {
                    throw CommandError.usage("\(option) must be a date YYYY-MM-DD, got '\(text)'")
                }
                days.append(day)
            }
            try UserPaths.requireDirectory(data, option: "--data", holding: "agg/ from 'postback aggregate'")
            request = ModelCheck.Request(dataDirectory: data, from: days[0], to: days[1])
            if let text = arguments.value("--holdout") {
                guard let share = Double(text), share > 0, share < 1 else {
                    throw CommandError.usage("--holdout must be a share between 0 and 1 (e.g. 0.2), got '\(text)'")
                }
                request.holdout = share
            }
            if let text = arguments.value("--seed") {
                guard let seed = UInt64(text) else { throw CommandError.usage("--seed must be a whole number, got '\(text)'") }
                request.seed = seed
            }
            json = arguments.has("--json")
        } catch {
            return checkSyntax.finish(error, io: io)
        }
        do {
            let result = try ModelCheck.run(request)
            if json { io.standardOutput.write(result.json) } else { io.standardOutput.write(Array(result.text.utf8)) }
        } catch {
            io.printError("postback model check: \(error)")
            return .usageOrIOError
        }
        return .success
    }
}
