/// `postback serve` (issue 3): placeholder until the receiver lands.
enum ServeCommand {
    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        io.printError("postback serve: not built yet")
        return .usageOrIOError
    }
}

/// `postback send` (issue 3): placeholder until the client lands.
enum SendCommand {
    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        io.printError("postback send: not built yet")
        return .usageOrIOError
    }
}
