import Basics
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command writes: a file descriptor, or memory in tests.
package protocol OutputSink: Sendable {
    func write(_ bytes: [UInt8])
    /// Whether this is a terminal (progress is shown only there).
    var isTerminal: Bool { get }
    /// The first failed write (a full disk, say), so the command can exit with an I/O error rather
    /// than report success over output that was cut short.
    var writeError: String? { get }
}

extension OutputSink {
    package var writeError: String? { nil }
}

/// Writes straight to a file descriptor, retrying short writes. Callers batch their output, so there
/// is no buffering here to forget to flush.
package struct FileDescriptorSink: OutputSink {
    package let descriptor: Int32
    private let failure = Locked<String?>(nil)

    package init(descriptor: Int32) { self.descriptor = descriptor }

    package var writeError: String? { failure.withLock { $0 } }

    package static let standardOutput = FileDescriptorSink(descriptor: 1)
    package static let standardError = FileDescriptorSink(descriptor: 2)

    package var isTerminal: Bool { isatty(descriptor) == 1 }

    package func write(_ bytes: [UInt8]) {
        do {
            try FileDescriptorIO.writeAll(bytes, to: descriptor, path: "")
        } catch  where error.errorNumber != EPIPE {
            // EPIPE is not a failure: the reader went away (`postback verify … | head`), as it chose to.
            let message = String(cString: strerror(error.errorNumber))
            failure.withLock { if $0 == nil { $0 = message } }
        } catch {}
    }
}

/// The standard streams of one command run.
package struct CommandIO: Sendable {
    package let standardOutput: any OutputSink
    package let standardError: any OutputSink
    /// True for the process's own standard output and error: a command may then take the process's
    /// signals (Ctrl-C); run in-process by a test, it never does.
    package private(set) var isProcess = false

    package init(standardOutput: any OutputSink, standardError: any OutputSink) {
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    package static let process: CommandIO = {
        var io = CommandIO(standardOutput: FileDescriptorSink.standardOutput, standardError: FileDescriptorSink.standardError)
        io.isProcess = true
        return io
    }()

    func print(_ text: String) { standardOutput.write(Array((text + "\n").utf8)) }
    func printError(_ text: String) { standardError.write(Array((text + "\n").utf8)) }
}

/// Exit statuses shared by the subcommands.
package enum ExitStatus: Int32, Sendable {
    /// Everything checked out.
    case success = 0
    /// The command ran, and some input did not pass (a postback not verified, a failed check).
    case failure = 1
    /// Bad usage or an I/O error: the command could not do its job.
    case usageOrIOError = 2
}
