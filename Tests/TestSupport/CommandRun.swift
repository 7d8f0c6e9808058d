import Locking
package import PostbackCLI

/// One in-process run of `postback`: its exit status and what it wrote to each stream.
package struct CommandRun {
    package let status: PostbackCLI.ExitStatus
    package let stdout: String
    package let stderr: String
}

/// Runs `postback WORDS…` in this process, output captured in memory.
package func run(_ words: [String]) -> CommandRun {
    let out = MemorySink()
    let err = MemorySink()
    let status = PostbackCommand.run(words, io: CommandIO(standardOutput: out, standardError: err))
    return CommandRun(status: status, stdout: out.text, stderr: err.text)
}

/// Collects output in memory (tests).
package final class MemorySink: OutputSink {
    private let storage = Locked<[UInt8]>([])
    package let isTerminal: Bool

    package init(isTerminal: Bool = false) { self.isTerminal = isTerminal }

    package func write(_ bytes: [UInt8]) { storage.withLock { $0.append(contentsOf: bytes) } }

    package var text: String { String(decoding: storage.withLock { $0 }, as: UTF8.self) }
    package var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
}
