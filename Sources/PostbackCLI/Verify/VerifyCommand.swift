import Basics
import Dispatch
import Foundation
import Locking
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback verify`: check postback files offline and report a verdict for each postback.
enum VerifyCommand {
    static let usage = """
        usage: postback verify [--json] [--allow-dev] [--trust-key PEM]... PATH...

        Verifies Apple's signature on every postback in each PATH: a file holding one JSON
        postback, or JSON Lines (one postback per line). '-' reads standard input.

          --json            one JSON object per postback per line, on stdout
          --allow-dev       accept AdAttributionKit development keys and --trust-key keys
                            (such postbacks are always reported as development)
          --trust-key PEM   also trust this P-256/P-192 test key (needs --allow-dev); repeatable
          --jobs N          worker threads (default: one per core)

        Exit status: 0 every postback verified, 1 any did not, 2 usage or I/O error.
        """

    static let syntax = CommandSyntax(
        "verify", usage: usage, flags: ["--json", "--allow-dev"], options: ["--trust-key", "--jobs"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        let policy: VerificationPolicy
        let jobs: Int
        do {
            arguments = try syntax.parse(words)
            guard !arguments.positionals.isEmpty else { throw CommandError.usage("no PATH given (use '-' for standard input)") }
            let testKeys = try TrustKeys.load(arguments.values("--trust-key"))
            if !testKeys.isEmpty, !arguments.has("--allow-dev") {
                throw CommandError.usage("--trust-key keys are test keys; add --allow-dev to accept postbacks they sign")
            }
            policy = VerificationPolicy(allowsDevelopment: arguments.has("--allow-dev"), testKeys: testKeys)
            jobs = try arguments.integer("--jobs", default: ProcessInfoCores.count, in: 1...256)
        } catch {
            return syntax.finish(error, io: io)
        }

        let run = VerifyRun(verifier: PostbackVerifier(policy: policy), json: arguments.has("--json"), io: io, jobs: jobs)
        var hadIOError = false
        for path in arguments.positionals {
            do {
                try run.verify(path: path)
            } catch {
                io.printError("postback verify: \(error)")
                hadIOError = true
            }
        }
        let tally = run.tally.withLock { $0 }
        let summary = tally.summary(seconds: run.elapsedSeconds)
        if arguments.has("--json") { io.printError(summary) } else { io.print(summary) }
        if hadIOError { return .usageOrIOError }
        return tally.total > 0 && tally.verified == tally.total ? .success : .failure
    }
}

/// Counts of verdicts, merged from batches.
struct VerdictTally: Sendable {
    var byStatus: [VerificationStatus: Int] = [:]
    var total: Int { byStatus.values.reduce(0, +) }
    var verified: Int { byStatus[.verified] ?? 0 }

    mutating func add(_ other: VerdictTally) {
        for (status, count) in other.byStatus { byStatus[status, default: 0] += count }
    }

    func summary(seconds: Double) -> String {
        let failed = total - verified
        var text = "\(total) postback\(total == 1 ? "" : "s"): \(verified) verified"
        if failed > 0 {
            let parts = VerificationStatus.allCases.compactMap { status -> String? in
                guard status != .verified, let count = byStatus[status], count > 0 else { return nil }
                return "\(count) \(status.rawValue)"
            }
            text += ", \(failed) not verified (\(parts.joined(separator: ", ")))"
        }
        if seconds >= 0.5 { text += String(format: " in %.1f s (%.0f/s)", seconds, Double(total) / seconds) }
        return text
    }
}

/// One `verify` invocation: reads records on the calling thread, verifies batches on all cores, and
/// prints verdicts in input order.
final class VerifyRun: Sendable {
    let verifier: PostbackVerifier
    let json: Bool
    let io: CommandIO
    let jobs: Int
    let tally = Locked(VerdictTally())
    private let started = DispatchTime.now()

    private static let batchRecords = 256
    private static let batchBytes = 256 << 10

    init(verifier: PostbackVerifier, json: Bool, io: CommandIO, jobs: Int) {
        self.verifier = verifier
        self.json = json
        self.io = io
        self.jobs = jobs
    }

    var elapsedSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9 }

    func verify(path: String) throws {
        let reader = try RecordReader(path: path)
        let progress = Progress(reader: reader, sink: io.standardError)
        let map = OrderedParallelMap<[InputRecord], (bytes: [UInt8], tally: VerdictTally)>(
            workers: jobs,
            transform: { [self] batch in process(batch) },
            deliver: { [self] output in
                io.standardOutput.write(output.bytes)
                tally.withLock { $0.add(output.tally) }
            })
        var batch: [InputRecord] = []
        var batchBytes = 0
        defer { progress.finish() }
        // A read error mid-file still reports every postback read before it, in order, before the error.
        var readError: RecordReader.IOError?
        do {
            while let record = try reader.next() {
                batch.append(record)
                batchBytes += record.bytes.count
                if batch.count >= Self.batchRecords || batchBytes >= Self.batchBytes {
                    map.submit(batch)
                    batch = []
                    batchBytes = 0
                    progress.update(records: tally.withLock { $0.total })
                }
            }
        } catch {
            readError = error
        }
        if !batch.isEmpty { map.submit(batch) }
        map.waitUntilDone()
        if let readError { throw readError }
    }

    private func process(_ batch: [InputRecord]) -> (bytes: [UInt8], tally: VerdictTally) {
        var jsonOutput = JSONWriter(reservingCapacity: json ? batch.count * 250 : 0)
        var textOutput: [UInt8] = []
        var counts = VerdictTally()
        for (record, result) in zip(batch, verifier.verify(records: batch)) {
            counts.byStatus[result.status, default: 0] += 1
            if json {
                VerdictFormatter.appendJSON(source: record.source, result: result, to: &jsonOutput)
            } else {
                VerdictFormatter.appendText(source: record.source, result: result, to: &textOutput)
            }
        }
        return (json ? jsonOutput.bytes : textOutput, counts)
    }
}

/// A one-line progress display on stderr, only when stderr is a terminal and the input is large.
final class Progress {
    private let reader: RecordReader
    private let sink: any OutputSink
    private let enabled: Bool
    private var lastUpdate = DispatchTime.now()
    private let started = DispatchTime.now()
    private var shown = false

    init(reader: RecordReader, sink: any OutputSink) {
        self.reader = reader
        self.sink = sink
        self.enabled = sink.isTerminal && (reader.totalBytes ?? Int.max) >= 8 << 20
    }

    func update(records: Int) {
        guard enabled else { return }
        let now = DispatchTime.now()
        guard now.uptimeNanoseconds - lastUpdate.uptimeNanoseconds > 250_000_000 else { return }
        lastUpdate = now
        let seconds = Double(now.uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        var text = "\r\u{1B}[K  \(records) postbacks"
        if let total = reader.totalBytes, total > 0 {
            text += String(format: " (%.0f%%)", 100 * Double(reader.bytesRead) / Double(total))
        }
        text += String(format: "  %.0f/s", Double(records) / max(seconds, 0.001))
        sink.write(Array(text.utf8))
        shown = true
    }

    func finish() {
        if shown { sink.write(Array("\r\u{1B}[K".utf8)) }
    }
}

enum ProcessInfoCores {
    static var count: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
