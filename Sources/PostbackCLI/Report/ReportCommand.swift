/// `postback report` (issue 6): placeholder until the report lands.
enum ReportCommand {
    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        io.printError("postback report: not built yet")
        return .usageOrIOError
    }
}
