import Basics
import BuildStamp
import Postbacks

/// The `postback` executable's subcommands. The entry point only forwards here, so tests can run any
/// command in-process with captured output.
package enum PostbackCommand {
    /// `0.2.0 (a1b2c3d, 2026-12-04)`: the release, and the commit and date of the build.
    package static let version = BuildInfo.description

    static let usage = """
        usage: postback <command> [options]

        Verify and measure Apple's ad attribution postbacks (SKAdNetwork 1.0–4.0, AdAttributionKit).

        commands:
          verify     check the signature of every postback in files or stdin
          explain    show the parsed fields, the signed message, the verdict and flags for a postback
          reverify   move stored postbacks that now verify (quarantined, rejected) into the spool
          serve      receive postbacks over HTTP and store them durably
          send       POST postback files to an endpoint (test a deployment, load test)
          forward    the receiver's forwarding to partners: status, replay, retry-dead-letters
          aggregate  decode stored postbacks into campaign-level daily aggregates
          spend      import what ad networks charged (cost rows) for CPI and ROAS by install date
          schema     check or export conversion schemas
          report     a self-contained HTML report of the aggregates
          api        a read-only API over the aggregates, each token scoped to apps and networks
          check      the nightly check: each app × ad network's day against its recent days
          model      check the model of null-value postbacks on this store's data (model check)
          generate   mint test postbacks signed with your own key (for tests and benchmarks)
          impression sign ad impressions with the ad network's key, or check them (before any postback)
          demo       the whole pipeline on this machine: receiver, traffic, nightly job, report
          samples    list or copy Apple's example postbacks, the example schemas and spend export
          spool      set aside a spool segment damaged at rest, when no good copy exists

        options:
          -h, --help     this help; 'postback <command> --help' (or 'postback help <command>')
                         for a command's options
          --version      print the version

        Exit status: 0 success; 1 the command ran and some input did not pass (each command's
        --help says what); 2 usage or I/O error.
        """

    /// The top level: `postback <command>`, with "did you mean" for a mistyped command.
    static let syntax = CommandSyntax("", usage: usage)

    /// Runs a subcommand. `words` excludes the program name.
    package static func run(_ words: [String], io: CommandIO = .process) -> ExitStatus {
        let status = dispatch(words, io: io)
        if let error = io.standardOutput.writeError {
            io.printError("postback: writing standard output failed: \(error)")
            return .usageOrIOError
        }
        return status
    }

    private static func dispatch(_ words: [String], io: CommandIO) -> ExitStatus {
        if words.first == "--version" || words.first == "version" {
            io.print("postback \(version)")
            return .success
        }
        // `postback help verify` is `postback verify --help`.
        if words.first == "help", words.count > 1 { return dispatch(Array(words.dropFirst()) + ["--help"], io: io) }
        return syntax.dispatch(
            words, io: io,
            to: [
                ("verify", VerifyCommand.run),
                ("explain", ExplainCommand.run),
                ("reverify", ReverifyCommand.run),
                ("serve", ServeCommand.run),
                ("send", SendCommand.run),
                ("forward", ForwardCommand.run),
                ("aggregate", AggregateCommand.run),
                ("spend", SpendCommand.run),
                ("schema", SchemaCommand.run),
                ("report", ReportCommand.run),
                ("api", ApiCommand.run),
                ("check", CheckCommand.run),
                ("model", ModelCommand.run),
                ("generate", GenerateCommand.run),
                ("impression", ImpressionCommand.run),
                ("demo", DemoCommand.run),
                ("samples", SamplesCommand.run),
                ("spool", SpoolCommand.run),
            ])
    }
}
