/// Why a command stopped: a closed `code` (what the caller branches on: a help request prints the
/// usage, a usage error exits 2, a partner still unavailable asks for a rerun), the path it is about
/// when there is one, and the message printed on stderr. The CLI's one error type.
package struct CommandError: Error, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// A command line that is wrong: printed with a pointer to the command's `--help`, exit code 2.
        case usage
        /// `-h` or `--help` was given: not an error, the usage is printed on stdout (exit 0).
        case helpRequested
        /// A step of `postback demo` failed; what it printed says why.
        case stepFailed
        /// A file under the target directory already holds something else (`path`); nothing is overwritten.
        case inTheWay
        /// A partner still refuses or cannot be reached after `--retry-seconds`; a rerun continues.
        case partnerUnavailable
        /// An error from work on files staged from a bucket, told in the bucket's terms.
        case inBucket
    }

    package let code: Code
    /// The file or directory the error is about, when one is.
    package let path: String?
    package let message: String
    package var description: String { message }

    private init(_ code: Code, path: String? = nil, _ message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    package static func usage(_ message: String) -> CommandError { CommandError(.usage, message) }

    static let helpRequested = CommandError(.helpRequested, "help requested")

    static func stepFailed(_ message: String) -> CommandError { CommandError(.stepFailed, message) }

    static func inTheWay(_ path: String) -> CommandError {
        CommandError(
            .inTheWay, path: path,
            "\(path) exists with other content; nothing is overwritten: move it away or give --copy another directory")
    }

    static func partnerUnavailable(_ message: String) -> CommandError { CommandError(.partnerUnavailable, message) }

    /// `error` from work on staged files, its staging directory named by the bucket's URL instead: the
    /// staging directory is private and gone once the command ends.
    static func inBucket(_ error: any Error, stagedRoot: String, url: String) -> CommandError {
        var bucket = url
        while bucket.hasSuffix("/") { bucket.removeLast() }
        return CommandError(.inBucket, path: url, "\(error)".replacingOccurrences(of: stagedRoot, with: bucket))
    }
}
