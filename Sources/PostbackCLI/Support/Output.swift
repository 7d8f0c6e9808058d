#if canImport(Glibc)
import Glibc
#endif
import Basics
import Locking

/// Where a command writes: a file descriptor, or memory in tests.
public protocol OutputSink: Sendable {
    func write(_ bytes: [UInt8])
    /// Whether this is a terminal (progress is shown only there).
    var isTerminal: Bool { get }
    /// The first failed write (a full disk, say), so the command can exit with an I/O error rather
    /// than report success over output that was cut short.
    var writeError: String? { get }
}

extension OutputSink {
    public var writeError: String? { nil }
}

/// Writes straight to a file descriptor, retrying short writes. Callers batch their output, so there
/// is no buffering here to forget to flush.
public struct FileDescriptorSink: OutputSink {
    public let descriptor: Int32
    private let failure = Locked<String?>(nil)

    public init(descriptor: Int32) { self.descriptor = descriptor }

    public var writeError: String? { failure.withLock { $0 } }

    public static let standardOutput = FileDescriptorSink(descriptor: 1)
    public static let standardError = FileDescriptorSink(descriptor: 2)

    public var isTerminal: Bool { isatty(descriptor) == 1 }

    public func write(_ bytes: [UInt8]) {
        do {
            try FileDescriptorIO.writeAll(bytes, to: descriptor, path: "")
        } catch where error.errorNumber != EPIPE {
            // EPIPE is not a failure: the reader went away (`postback verify … | head`), as it chose to.
            let message = String(cString: strerror(error.errorNumber))
            failure.withLock { if $0 == nil { $0 = message } }
        } catch {}
    }
}

/// The standard streams of one command run.
public struct CommandIO: Sendable {
    public let standardOutput: any OutputSink
    public let standardError: any OutputSink

    public init(standardOutput: any OutputSink, standardError: any OutputSink) {
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    public static let process = CommandIO(standardOutput: FileDescriptorSink.standardOutput, standardError: FileDescriptorSink.standardError)

    func print(_ text: String) { standardOutput.write(Array((text + "\n").utf8)) }
    func printError(_ text: String) { standardError.write(Array((text + "\n").utf8)) }
}

/// Exit statuses shared by the subcommands.
public enum ExitStatus: Int32, Sendable {
    /// Everything checked out.
    case success = 0
    /// The command ran, and some input did not pass (a postback not verified, a failed check).
    case failure = 1
    /// Bad usage or an I/O error: the command could not do its job.
    case usageOrIOError = 2
}
