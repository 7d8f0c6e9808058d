import Basics
import PostbackServer
import PostbackStore
import Postbacks
import SpoolDelivery

/// `postback reverify`: takes back stored postbacks that the current verifier accepts (see
/// `Reverification` for the order of writes that makes it crash-safe and idempotent).
enum ReverifyCommand {
    static let usage = """
        usage: postback reverify --config FILE --data DIR (--date YYYY-MM-DD | --from YYYY-MM-DD --to YYYY-MM-DD)
                                 [--allow-dev] [--trust-key PEM]... [--trust-kid KID=PEM]...

        Runs this release's verifier again over DIR/raw/rejected/ and DIR/raw/unverifiable/ (the
        quarantine: unknown SKAdNetwork version or AdAttributionKit kid, signed values not known
        yet) for the days given, and moves every postback the receivers would now store into
        DIR/raw/postbacks/ with its original received_at: the policy is the receivers' own, read
        from their config (ad_network_ids, allow_development, trust_keys; the flags add to it as
        they do for postback serve). A key a receiver already stored is left where it is. One day
        at a time, in memory that does not grow with the store. Safe to run again and to
        interrupt: a rerun moves nothing twice. Then rerun postback aggregate for those days.
        Days from today (UTC) on are refused: receivers may still be writing them.

          --config FILE         the receivers' config file (as given to postback serve)
          --data DIR            the store
          --date DAY            one day; or --from DAY --to DAY, inclusive
          --allow-dev           also take development postbacks (as development), as serve's flag
          --trust-key PEM       also trust this test key (needs --allow-dev)
          --trust-kid KID=PEM   a test key standing in for an AdAttributionKit kid this release does
                                not know (needs --allow-dev; what it verifies is development)

        Exit status: 0 done (whether or not anything moved), 2 usage or I/O error.
        """

    static let syntax = CommandSyntax(
        "reverify", usage: usage, flags: ["--allow-dev"],
        options: ["--config", "--data", "--date", "--from", "--to", "--trust-key", "--trust-kid"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        let verifier: PostbackVerifier
        let acceptance: AcceptancePolicy
        let days: (UTCDay, UTCDay)
        do {
            arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            try UserPaths.requireDirectory(data, option: "--data", holding: "raw/ from 'postback serve'")
            days = try AggregateCommand.dayRange(arguments)
            let latest = Reverification.latestDay()
            guard days.1 <= latest else {
                throw CommandError.usage(
                    "--to \(days.1) is too recent: receivers may still append to that day; the latest day reverify takes now is \(latest)"
                )
            }
            guard let configPath = arguments.value("--config") else {
                throw CommandError.usage(
                    "--config FILE is required: reverify stores only what the receivers would (their ad_network_ids and allow_development); give it their config file"
                )
            }
            var configuration = try ServerConfiguration.load(path: configPath, sections: DeliveryConfiguration.sections)
            if arguments.has("--allow-dev") { configuration.allowsDevelopment = true }
            configuration.trustKeyPaths += arguments.values("--trust-key")
            let standIns = try TrustKeys.loadStandIns(arguments.values("--trust-kid"))
            if !(configuration.trustKeyPaths.isEmpty && standIns.isEmpty), !configuration.allowsDevelopment {
                throw CommandError.usage(
                    "--trust-key, --trust-kid and trust_keys are test keys; add --allow-dev (or allow_development) to accept postbacks they sign"
                )
            }
            verifier = PostbackVerifier(
                policy: VerificationPolicy(
                    allowsDevelopment: configuration.allowsDevelopment,
                    testKeys: try TrustKeys.load(configuration.trustKeyPaths), standInKeyIDs: standIns))
            acceptance = configuration.acceptancePolicy
        } catch {
            return syntax.finish(error, io: io)
        }
        let report: Reverification.Report
        do {
            report = try Reverification(
                layout: StoreLayout(root: arguments.value("--data")!), verifier: verifier, acceptance: acceptance
            ).run(
                from: days.0, to: days.1)
        } catch {
            io.printError("postback reverify: \(error)")
            return .usageOrIOError
        }
        for moved in report.moved {
            let was = moved.previousStatus.rawValue + (moved.previousReason.map { ": " + VerdictFormatter.printable($0) } ?? "")
            io.print(
                "moved    \(moved.source):\(moved.line) -> \(moved.destination)  dedup \(VerdictFormatter.printable(moved.dedupKey))  received \(moved.receivedAt)  (was \(was))"
            )
        }
        for skipped in report.alreadyStored {
            io.print(
                "kept     \(skipped.source):\(skipped.line)  dedup \(VerdictFormatter.printable(skipped.dedupKey)): verifies now, but a receiver stored this key already"
            )
        }
        let unchanged = report.unchanged.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        io.print(
            "\(report.moved.count) moved, \(report.completed) finished from an interrupted run, \(report.alreadyStored.count) already stored; "
                + "not verified now: \(unchanged.isEmpty ? "none" : unchanged)"
                + (report.unreadable > 0 ? "; \(report.unreadable) lines that are not records left as they are" : ""))
        if !report.moved.isEmpty {
            io.print("rerun postback aggregate for \(days.0 == days.1 ? "\(days.0)" : "\(days.0) to \(days.1)") to count them")
        }
        return .success
    }
}
