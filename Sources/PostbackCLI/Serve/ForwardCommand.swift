import Basics
import Foundation
import PostbackServer
import PostbackStore
import Postbacks
import SpoolDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// `postback forward`: look at and repair the receiver's forwarding to partners (docs/forwarding.md).
enum ForwardCommand {
    static let usage = """
        usage: postback forward status --config FILE
               postback forward replay --config FILE --destination NAME --from DAY --to DAY [--retry-seconds N]
               postback forward retry-dead-letters --config FILE [--destination NAME] [--retry-seconds N]

          status              per destination: segments forwarded, segments not yet forwarded (with
                              the one in progress and its byte offset), dead letters not yet resolved
          replay              re-send every verified postback received from DAY to DAY (UTC,
                              YYYY-MM-DD, inclusive) that the destination's filters pick, e.g. after a
                              partner lost data; same Idempotency-Key as the first time, so a partner
                              that kept them drops the repeats. Ignores max_age_hours; does not move
                              the receiver's cursor
          retry-dead-letters  re-send the dead letters (refused or too old) of every destination, or of
                              NAME; the ones the partner accepts are marked resolved
          --config FILE       the receiver's config (`serve --config`): destinations, data_dir, writer_id
          --retry-seconds N   how long to keep retrying a partner that is unavailable (5xx, 429, no
                              answer) before giving up with where to resume (default 300)

        Safe while the receiver runs. Header secrets are read as the receiver reads them (env or file).

        Exit status: 0 done; 1 some postback was refused or the partner stayed unavailable (the
        command says where to resume); 2 usage or I/O error.
        """

    static let syntax = CommandSyntax("forward", usage: usage)
    static let statusSyntax = CommandSyntax("forward status", usage: usage, options: ["--config"])
    static let replaySyntax = CommandSyntax(
        "forward replay", usage: usage, options: ["--config", "--destination", "--from", "--to", "--retry-seconds"])
    static let retrySyntax = CommandSyntax(
        "forward retry-dead-letters", usage: usage, options: ["--config", "--destination", "--retry-seconds"])

    /// How long a replay keeps retrying an unavailable partner, by default.
    static let defaultRetrySeconds = 300

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("status", status), ("replay", replay), ("retry-dead-letters", retryDeadLetters)])
    }

    /// The config and its destinations (`--destination` picks one, by name).
    private static func load(_ arguments: Arguments) throws -> (ServerConfiguration, [ForwardSettings]) {
        guard let path = arguments.value("--config") else {
            throw CommandError.usage("--config FILE is required (the receiver's config)")
        }
        let configuration = try ServerConfiguration.load(path: path, sections: DeliveryConfiguration.sections)
        let forwarding = configuration.sections[ForwardingConfiguration.self]
        guard let forward = forwarding.forward else { throw CommandError.usage("\(path) has no \"forward\" destinations") }
        // Reading a store that is not there would show nothing to do; a wrong data_dir is an error.
        try UserPaths.requireDirectory(
            configuration.dataDirectory, option: "data_dir (\(path))",
            holding: "the receiver's store, raw/postbacks; give the receiver's data_dir")
        var settings = try ForwardSettings.parseList(forward, relativeTo: forwarding.configurationDirectory)
        if let name = arguments.value("--destination") {
            settings = settings.filter { $0.name == name }
            guard !settings.isEmpty else {
                throw CommandError.usage(
                    "no destination named \"\(name)\" in \(path); known: \(try ForwardSettings.parseList(forward, relativeTo: forwarding.configurationDirectory).map(\.name).joined(separator: ", "))"
                )
            }
        }
        return (configuration, settings)
    }

    private static func status(_ words: [String], io: CommandIO) -> ExitStatus {
        let configuration: ServerConfiguration
        let destinations: [ForwardSettings]
        do {
            (configuration, destinations) = try load(try statusSyntax.parse(words))
        } catch {
            return statusSyntax.finish(error, io: io)
        }
        let root = configuration.dataDirectory
        let layout = StoreLayout(root: root)
        var segments: [StoreLayout.Segment] = []
        do {
            for day in try layout.days(.postbacks) { segments += try layout.segments(.postbacks, day: day) }
        } catch {
            io.printError("postback forward status: \(error)")
            return .usageOrIOError
        }
        for destination in destinations {
            // Read-only: the receiver may be appending to these files.
            var delivered: Set<String> = []
            var offsets: [String: Int] = [:]
            let directory = "\(root)/raw/_delivery/\(destination.destinationName)"
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
            where name.hasSuffix(".ledger") {
                guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else { continue }
                let parsed = DeliveryLedger.parse([UInt8](data))
                delivered.formUnion(parsed.delivered)
                offsets.merge(parsed.offsets) { $1 }
            }
            let relative = segments.map { String($0.path.dropFirst(root.count + 1)) }
            let pending = relative.filter { !delivered.contains($0) }
            let dead = DeadLetterSpool.unresolved(root: root, destination: destination.destinationName)
            io.print("\(destination.name)  \(destination.urlForDisplay)")
            io.print(
                "  segments forwarded: \(relative.count - pending.count); not yet: \(pending.count) (the newest of each receiver may still be open)"
            )
            for (path, offset) in offsets.sorted(by: { $0.key < $1.key }) where !delivered.contains(path) {
                io.print("  in progress: \(path) from byte \(offset)")
            }
            io.print(
                "  dead letters not resolved: \(dead.entries.count)"
                    + (dead.entries.isEmpty ? "" : " (postback forward retry-dead-letters --destination \(destination.name))"))
            for problem in dead.problems { io.printError("  \(problem)") }
        }
        return .success
    }

    private static func replay(_ words: [String], io: CommandIO) -> ExitStatus {
        let configuration: ServerConfiguration
        let destination: ForwardSettings
        let from: UTCDay
        let to: UTCDay
        let deadline: Date
        do {
            let arguments = try replaySyntax.parse(words)
            guard arguments.value("--destination") != nil else { throw CommandError.usage("--destination NAME is required") }
            deadline = try retryDeadline(arguments)
            let loaded = try load(arguments)
            configuration = loaded.0
            destination = loaded.1[0]
            guard let fromText = arguments.value("--from"), let day = UTCDay(fromText) else {
                throw CommandError.usage("--from DAY is required, as YYYY-MM-DD")
            }
            guard let toText = arguments.value("--to"), let last = UTCDay(toText) else {
                throw CommandError.usage("--to DAY is required, as YYYY-MM-DD")
            }
            guard day <= last else { throw CommandError.usage("--from \(fromText) is after --to \(toText)") }
            (from, to) = (day, last)
        } catch {
            return replaySyntax.finish(error, io: io)
        }
        let layout = StoreLayout(root: configuration.dataDirectory)
        do {
            let sender = try ForwardSender(settings: destination)
            var sent = 0
            var refused = 0
            for day in try layout.days(.postbacks) where day >= from && day <= to {
                for segment in try layout.segments(.postbacks, day: day) {
                    let reader = try SegmentReader(path: segment.path)
                    var batch: [SpoolRecord] = []
                    func flush() throws {
                        guard !batch.isEmpty else { return }
                        for (record, outcome) in zip(batch, try sendWithRetries(sender, batch, until: deadline, io: io)) {
                            if case .refused(let status, let answer) = outcome {
                                refused += 1
                                io.printError(
                                    "refused (\(status)): \(ForwardSender.idempotencyKey(record)): \(answer.prefix(200))")
                            } else {
                                sent += 1
                            }
                        }
                        batch.removeAll()
                    }
                    while let entry = try reader.next() {
                        guard case .record(let record, _) = entry, sender.accepts(record) else { continue }
                        batch.append(record)
                        if batch.count == destination.concurrency { try flush() }
                    }
                    try flush()
                }
            }
            io.print("replayed to \(destination.name): \(sent) accepted, \(refused) refused, days \(from) to \(to)")
            return refused == 0 ? .success : .failure
        } catch let unavailable as CommandError where unavailable.code == .partnerUnavailable {
            io.printError("postback forward replay: \(unavailable); rerun the same command (repeats are idempotent)")
            return .failure
        } catch {
            io.printError("postback forward replay: \(error)")
            return .usageOrIOError
        }
    }

    private static func retryDeadLetters(_ words: [String], io: CommandIO) -> ExitStatus {
        let configuration: ServerConfiguration
        let destinations: [ForwardSettings]
        let deadline: Date
        do {
            let arguments = try retrySyntax.parse(words)
            (configuration, destinations) = try load(arguments)
            deadline = try retryDeadline(arguments)
        } catch {
            return retrySyntax.finish(error, io: io)
        }
        var failed = false
        for destination in destinations {
            let root = configuration.dataDirectory
            let spool = DeadLetterSpool(root: root, destination: destination.destinationName, writerID: configuration.writerID)
            let dead = DeadLetterSpool.unresolved(root: root, destination: destination.destinationName)
            for problem in dead.problems { io.printError("\(destination.name): \(problem)") }
            var resolved = 0
            var refused = 0
            do {
                let sender = try ForwardSender(settings: destination)
                for start in stride(from: 0, to: dead.entries.count, by: destination.concurrency) {
                    let entries = Array(dead.entries[start..<min(start + destination.concurrency, dead.entries.count)])
                    for (entry, outcome) in zip(
                        entries, try sendWithRetries(sender, entries.map(\.record), until: deadline, io: io))
                    {
                        if case .refused(let status, let answer) = outcome {
                            refused += 1
                            io.printError(
                                "\(destination.name): still refused (\(status)): \(entry.idempotencyKey): \(answer.prefix(200))")
                        } else {
                            try spool.markResolved(entry)
                            resolved += 1
                        }
                    }
                }
            } catch {
                io.printError("postback forward retry-dead-letters: \(destination.name): \(error); rerun to continue")
                failed = true
            }
            if refused > 0 { failed = true }
            io.print("\(destination.name): \(resolved) dead letters delivered, \(refused) still refused")
        }
        return failed ? .failure : .success
    }

    /// When retrying stops: `--retry-seconds` from now.
    private static func retryDeadline(_ arguments: Arguments) throws -> Date {
        Date().addingTimeInterval(
            Double(try arguments.integer("--retry-seconds", default: defaultRetrySeconds, in: 0...86_400)))
    }

    /// Sends one batch, waiting with backoff (and `Retry-After`) while the partner is unavailable;
    /// gives up when the next wait would pass `deadline`.
    private static func sendWithRetries(_ sender: ForwardSender, _ records: [SpoolRecord], until deadline: Date, io: CommandIO)
        throws -> [ForwardSender.Outcome]
    {
        let backoff = Backoff()
        var outcomes = sender.send(records)
        var attempt = 0
        while true {
            attempt += 1
            let retries = outcomes.indices.filter { if case .retry = outcomes[$0] { return true } else { return false } }
            guard let first = retries.first else { return outcomes }
            guard case .retry(let detail, let retryAfter) = outcomes[first] else { return outcomes }
            let wait = max(backoff.delay(afterFailures: attempt), retryAfter ?? 0)
            guard Date().addingTimeInterval(wait) <= deadline else {
                throw CommandError.partnerUnavailable("\(detail) (gave up after \(attempt) attempts: --retry-seconds)")
            }
            io.printError("\(detail); retrying in \(Int(wait.rounded(.up))) s")
            usleep(UInt32(wait * 1_000_000))
            let again = sender.send(retries.map { records[$0] })
            for (index, outcome) in zip(retries, again) { outcomes[index] = outcome }
        }
    }
}
