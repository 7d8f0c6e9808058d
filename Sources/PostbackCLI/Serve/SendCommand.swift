import Basics
import Foundation
import Locking
import PostbackClient
import Postbacks
import Synchronization

/// `postback send`: POST postback files or JSON Lines to an endpoint, for testing a deployment and
/// for load tests.
enum SendCommand {
    static let usage = """
        usage: postback send --url URL [--concurrency N] [--timeout SECONDS] [--cacert FILE] PATH...

        POSTs every postback in each PATH (a file holding one JSON postback, or JSON Lines; '-' reads
        standard input) to URL, over N kept-alive connections at once, and reports the status codes,
        the reasons the server gave for answers other than 200 (grouped, with counts), requests that
        got no answer (connection refused, timed out), and the latency.

          --url URL           where to POST (http:// or https://)
          --concurrency N     connections at once (default 1)
          --timeout SECONDS   per request, from connecting to the end of the answer (default 30)
          --cacert FILE       trust the CA certificates in FILE (PEM) for an https:// URL instead of
                              the system's, e.g. a deployment's self-signed certificate

        Exit status: 0 every POST got 200; 1 some got another status, or no answer at all
        (connection refused, timed out); 2 usage or I/O error reading PATH.
        """

    static let syntax = CommandSyntax("send", usage: usage, options: ["--url", "--concurrency", "--timeout", "--cacert"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let url: String
        let concurrency: Int
        let timeout: Int
        let paths: [String]
        let caCertificatePath: String?
        do {
            let arguments = try syntax.parse(words)
            guard let given = arguments.value("--url") else { throw CommandError.usage("--url is required") }
            guard given.hasPrefix("http://") || given.hasPrefix("https://") else {
                throw CommandError.usage("--url must start with http:// or https://")
            }
            url = given
            concurrency = try arguments.integer("--concurrency", default: 1, in: 1...1024)
            timeout = try arguments.integer("--timeout", default: 30, in: 1...3600)
            caCertificatePath = arguments.value("--cacert")
            if let caCertificatePath {
                guard FileManager.default.isReadableFile(atPath: caCertificatePath) else {
                    throw CommandError.usage(
                        "--cacert \(caCertificatePath): no such readable file (a PEM file of CA certificates)")
                }
            }
            paths = arguments.positionals
            guard !paths.isEmpty else { throw CommandError.usage("no PATH given (use '-' for standard input)") }
        } catch {
            return syntax.finish(error, io: io)
        }

        let source = BodySource(paths: paths)
        let report: PostbackSender.Report
        do {
            report = try PostbackSender.send(
                url: url, concurrency: concurrency, timeoutSeconds: Double(timeout),
                caCertificatePath: caCertificatePath, next: { source.next() })
        } catch {
            io.printError("postback send: \(error)")
            return .usageOrIOError
        }
        for problem in source.problems { io.printError("postback send: \(problem)") }
        io.print(summary(report, url: url))
        if source.hadIOError { return .usageOrIOError }
        return report.allOK ? .success : .failure
    }

    static func summary(_ report: PostbackSender.Report, url: String) -> String {
        let rate = report.seconds > 0 ? Double(report.answered) / report.seconds : 0
        let attempted = report.attempted
        var lines = [
            "\(attempted) postback\(attempted == 1 ? "" : "s") to \(URLRedaction.redacted(url)): \(report.answered) answered, \(report.errors) without an answer, "
                + "in \(format(report.seconds)) s (\(Int(rate.rounded()))/s)"
        ]
        for (status, count) in report.statusCounts.sorted(by: { $0.key < $1.key }) {
            // A 200 is stored, a duplicate of one stored before, or quarantined: said apart.
            let outcomes = report.outcomeCounts.filter { $0.key.status == status && status == 200 }
                .sorted { ($1.value, $0.key.word) < ($0.value, $1.key.word) }.map { "\($0.value) \($0.key.word)" }
            lines.append("  HTTP \(status): \(count)" + (outcomes.isEmpty ? "" : " (\(outcomes.joined(separator: ", ")))"))
            let reasons = report.rejectionCounts.filter { $0.key.status == status }.sorted {
                ($1.value, $0.key.reason) < ($0.value, $1.key.reason)
            }
            for (rejection, count) in reasons.prefix(10) {
                lines.append("    \(count)  \(VerdictFormatter.printable(rejection.reason))")
            }
            if reasons.count > 10 { lines.append("    … \(reasons.count - 10) more reasons") }
        }
        if report.errors > 0 {
            lines.append("  no answer: \(report.errors)")
            for (error, count) in report.errorCounts.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }).prefix(5) {
                lines.append("    \(count)  \(error)")
            }
        }
        if let p50 = report.latency(percentile: 0.5), let p99 = report.latency(percentile: 0.99) {
            lines.append("  latency p50 \(format(p50 * 1000)) ms, p99 \(format(p99 * 1000)) ms")
        }
        // Most postbacks not verifying is nearly always a test key the receiver does not trust.
        let unverified = report.outcomeCounts.filter { ["invalid-signature", "untrusted-key"].contains($0.key.word) }
            .values.reduce(0, +)
        if unverified * 2 > report.answered {
            lines.append(
                "hint: most postbacks did not verify. Postbacks signed with a test key (postback generate --key) verify "
                    + "only on a receiver started with --allow-dev --trust-key KEY.pem, and count as development postbacks")
        }
        return lines.joined(separator: "\n")
    }

    private static func format(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// Hands out the records of the input files one at a time to the sending threads.
private final class BodySource: Sendable {
    private struct State {
        var paths: [String]
        var reader: RecordReader?
        var problems: [String] = []
        var hadIOError = false
    }

    private let state: Locked<State>

    init(paths: [String]) { state = Locked(State(paths: paths.reversed())) }

    var problems: [String] { state.withLock { $0.problems } }
    var hadIOError: Bool { state.withLock { $0.hadIOError } }

    func next() -> [UInt8]? {
        state.withLock { state -> [UInt8]? in
            while true {
                if state.reader == nil {
                    guard let path = state.paths.popLast() else { return nil }
                    do throws(RecordReader.IOError) {
                        state.reader = try RecordReader(path: path)
                    } catch {
                        state.problems.append(error.description)
                        state.hadIOError = true
                        continue
                    }
                }
                do throws(RecordReader.IOError) {
                    guard let record = try state.reader!.next() else {
                        state.reader = nil
                        continue
                    }
                    if let problem = record.problem {
                        state.problems.append("\(record.source): \(problem); not sent")
                        continue
                    }
                    return record.bytes
                } catch {
                    state.problems.append(error.description)
                    state.hadIOError = true
                    state.reader = nil
                }
            }
        }
    }
}
