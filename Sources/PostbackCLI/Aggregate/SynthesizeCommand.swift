import Aggregation
import Basics
import PostbackStore
import PostbackTesting
import Postbacks

/// `postback aggregate synthesize`: writes a made-up spool for benchmarks (not in the main usage).
enum SynthesizeCommand {
    static let usage = """
        usage: postback aggregate synthesize --data DIR --from YYYY-MM-DD --days N --per-day N
                                             [--seed N] [--segment-mb N] [--duplicate-percent N] [--jobs N]
                                             [--shape uniform|realistic]

        Writes a reproducible spool of synthetic postback records (placeholder signatures: for
        benchmarking aggregation only) under DIR/raw/, one partition per day.

        --shape uniform (default) draws campaigns, publishers, countries and values uniformly, so
        nearly every postback is a row of its own; realistic draws them Zipf-like (a few campaigns
        and publishers get most postbacks) with two ad networks per app, as real traffic falls.

        Exit status: 0 written; 2 usage or I/O error.
        """

    static let syntax = CommandSyntax(
        "aggregate synthesize", usage: usage,
        options: [
            "--data", "--from", "--days", "--per-day", "--seed", "--segment-mb", "--duplicate-percent", "--jobs", "--shape",
        ])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let data: String
        let first: UTCDay
        let days: Int
        let workers: Int
        var spool = SyntheticSpool()
        do {
            let arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let directory = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            guard let text = arguments.value("--from"), let day = UTCDay(text) else {
                throw CommandError.usage("--from YYYY-MM-DD is required")
            }
            data = directory
            first = day
            days = try arguments.integer("--days", default: 1, in: 1...3660)
            spool.postbacksPerDay = try arguments.integer("--per-day", default: 1000, in: 0...100_000_000)
            spool.seed = UInt64(try arguments.integer("--seed", default: 1, in: 0...Int.max))
            spool.segmentBytes = try arguments.integer("--segment-mb", default: 32, in: 1...4096) << 20
            spool.duplicateRate = Double(try arguments.integer("--duplicate-percent", default: 2, in: 0...100)) / 100
            workers = try arguments.integer("--jobs", default: ProcessInfoCores.count, in: 1...64)
            if let name = arguments.value("--shape") {
                guard let shape = SyntheticSpool.Shape(rawValue: name) else {
                    throw CommandError.usage("--shape must be uniform or realistic, got '\(name)'")
                }
                spool.shape = shape
            }
        } catch {
            return syntax.finish(error, io: io)
        }
        do {
            let lines = try spool.write(to: StoreLayout(root: data), first: first, days: days, workers: workers)
            io.print("wrote \(lines) spool lines for \(days) day\(days == 1 ? "" : "s") from \(first) under \(data)/raw")
            return .success
        } catch {
            io.printError("postback aggregate synthesize: \(error)")
            return .usageOrIOError
        }
    }
}
