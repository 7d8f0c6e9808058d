/// `postback aggregate` (issue 4): placeholder until the aggregator lands.
enum AggregateCommand {
    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        io.printError("postback aggregate: not built yet")
        return .usageOrIOError
    }
}

/// `postback schema` (issue 4/6): placeholder.
enum SchemaCommand {
    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        io.printError("postback schema: not built yet")
        return .usageOrIOError
    }
}
