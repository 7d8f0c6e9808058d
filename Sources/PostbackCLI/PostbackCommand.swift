/// The `postback` executable's subcommands. The entry point only forwards here, so tests can run any
/// command in-process with captured output.
public enum PostbackCommand {
    public static let version = "0.1.0"

    static let usage = """
        usage: postback <command> [options]

        Verify and measure Apple's ad attribution postbacks (SKAdNetwork 1.0–4.0, AdAttributionKit).

        commands:
          verify     check the signature of every postback in files or stdin
          explain    show the parsed fields, the signed message, the verdict and flags for a postback
          reverify   move stored postbacks that now verify (quarantined, rejected) into the spool
          serve      receive postbacks over HTTP and store them durably
          send       POST postback files to an endpoint (test a deployment, load test)
          aggregate  decode stored postbacks into campaign-level daily aggregates
          schema     check or export conversion schemas
          report     a self-contained HTML report of the aggregates
          generate   mint test postbacks signed with your own key (for tests and benchmarks)

        Run 'postback <command> --help' for a command's options.
        """

    /// Runs a subcommand. `words` excludes the program name.
    public static func run(_ words: [String], io: CommandIO = .process) -> ExitStatus {
        let status = dispatch(words, io: io)
        if let error = io.standardOutput.writeError {
            io.printError("postback: writing standard output failed: \(error)")
            return .usageOrIOError
        }
        return status
    }

    private static func dispatch(_ words: [String], io: CommandIO) -> ExitStatus {
        guard let command = words.first else {
            io.printError(usage)
            return .usageOrIOError
        }
        let rest = Array(words.dropFirst())
        switch command {
        case "verify": return VerifyCommand.run(rest, io: io)
        case "explain": return ExplainCommand.run(rest, io: io)
        case "reverify": return ReverifyCommand.run(rest, io: io)
        case "serve": return ServeCommand.run(rest, io: io)
        case "send": return SendCommand.run(rest, io: io)
        case "aggregate": return AggregateCommand.run(rest, io: io)
        case "schema": return SchemaCommand.run(rest, io: io)
        case "report": return ReportCommand.run(rest, io: io)
        case "generate": return GenerateCommand.run(rest, io: io)
        case "--version", "version":
            io.print("postback \(version)")
            return .success
        case "--help", "-h", "help":
            io.print(usage)
            return .success
        default:
            io.printError("postback: unknown command '\(command)'\n\n\(usage)")
            return .usageOrIOError
        }
    }
}
