import Aggregation
import Basics
import Foundation
import PostbackClient
import PostbackCrypto
import PostbackServer
import PostbackTesting
import Postbacks
import Synchronization

/// `postback demo`: the whole pipeline on this machine, composed from the other commands' parts:
/// a receiver on loopback, shaped test traffic sent to it over HTTP, the nightly job, the report.
enum DemoCommand {
    static let usage = """
        usage: postback demo [--dir DIR] [--count N]

        Shows the whole pipeline in a few seconds, on this machine only: starts a receiver on
        127.0.0.1 (a free port), mints N postbacks for the example schema's app (three ad
        networks, five named campaigns that differ in installs and value, fine and coarse values,
        null values, re-engagements), signs them with a new test key, POSTs them to the receiver,
        publishes the 20 days before from daily files (so install cohorts mature), imports the
        networks' spend for the three weeks (one network claims more installs than Apple signed),
        runs the nightly job and writes the report. Then prints where everything is.

          --dir DIR    where to put everything (default ./postback-demo); must be missing or empty
          --count N    how many postbacks today (default 3000; each earlier day about half)

        The postbacks are signed with a test key, so they are development postbacks: the report is
        the development page (report --environment development), every figure labelled so.

        Exit status: 0 done; 2 usage or I/O error (DIR not empty, a step failed).
        """

    static let syntax = CommandSyntax("demo", usage: usage, options: ["--dir", "--count"])

    /// The example schema the demo's traffic is shaped by (Samples/schemas/1229670720), from the
    /// samples the binary carries (`postback samples`).
    static let schemaAppID = "1229670720"
    static let schemaFileName = "2026-01-01.json"
    static var schema: String { SampleFiles.text("schemas/\(schemaAppID)/\(schemaFileName)") }

    /// The demo's ad networks, most traffic first.
    static let adNetworks = ["demo-network-a.skadnetwork", "demo-network-b.skadnetwork", "demo-network-c.adattributionkit"]

    /// The demo's campaigns: a four-digit source identifier is placement (digit 1), geo (digit 2)
    /// and campaign (digits 3–4), so the campaign survives Apple's truncation to two digits. The
    /// first gets the most postbacks and the lowest values; later ones fewer and higher.
    static let sourceIdentifiers = ["1101", "2202", "1303", "3104", "2205"]
    static let campaignNames = ["spring_sale", "summer_sale", "payer_retargeting", "brand_video", "loyalty_push"]

    /// One map per ad network (the same campaigns run on each), and the campaign ids of SKAdNetwork
    /// 2–3 (1 to 5, in the same order).
    static var sourceIdentifierMaps: String {
        let campaigns = zip(sourceIdentifiers, campaignNames).map { "\"\($0.suffix(2))\": \"\($1)\"" }.joined(separator: ", ")
        let ids = campaignNames.enumerated().map { "\"\($0.offset + 1)\": \"\($0.element)\"" }.joined(separator: ", ")
        return adNetworks.map { network in
            """
                { "ad_network_id": "\(network)", "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1], "dimension": "placement", "values": { "1": "rewarded", "2": "interstitial", "3": "video" } },
                    { "positions": [2], "dimension": "geo", "values": { "1": "US", "2": "EU", "3": "APAC" } },
                    { "positions": [3, 4], "dimension": "campaign", "values": { \(campaigns) } }
                  ],
                  "campaign_id_map": { \(ids) } }
            """
        }.joined(separator: ",\n")
    }

    /// Where the demo put things, for the closing message and for tests.
    struct Layout {
        let directory: String
        var store: String { directory + "/store" }
        var schemas: String { directory + "/schemas" }
        var key: String { directory + "/demo-key.pem" }
        var report: String { directory + "/report.html" }
        var history: String { directory + "/history" }
        var spend: String { directory + "/spend.csv" }
        var aggregates: String { store + "/agg" }
    }

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let layout: Layout
        let count: Int
        do {
            let arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            count = try arguments.integer("--count", default: 3000, in: 1...1_000_000)
            layout = Layout(directory: try prepareDirectory(arguments.value("--dir") ?? "postback-demo"))
        } catch {
            return syntax.finish(error, io: io)
        }
        do {
            return try run(layout, count: count, io: io)
        } catch {
            io.printError("postback demo: \(error)")
            io.printError("postback demo: what was made so far is in \(layout.directory); remove it before running again")
            return .usageOrIOError
        }
    }

    /// DIR must be missing (it is created) or an empty directory: the demo never mixes its store
    /// with anything already there.
    static func prepareDirectory(_ path: String) throws -> String {
        switch UserPaths.kind(of: path) {
        case .missing:
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw CommandError.usage(
                    "--dir \(path): cannot create it (\(error.localizedDescription)); give a directory you can write")
            }
        case .directory:
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            guard entries.isEmpty else {
                throw CommandError.usage(
                    "--dir \(path) is not empty; give a new or empty directory (e.g. --dir \(path)-2), or remove \(path) first")
            }
            guard access(path, W_OK) == 0 else {
                throw CommandError.usage("--dir \(path) is not writable; give a directory you can write")
            }
        case .file, .other:
            throw CommandError.usage("--dir \(path) is a file; give a new or empty directory")
        }
        return path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    private static func run(_ layout: Layout, count: Int, io: CommandIO) throws -> ExitStatus {
        // The schema and a new test key.
        let schemaPath = layout.schemas + "/" + schemaAppID + "/" + schemaFileName
        try FileManager.default.createDirectory(atPath: layout.schemas + "/" + schemaAppID, withIntermediateDirectories: true)
        try DurableFile.write(Array(schema.utf8), to: schemaPath)
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        try DurableFile.write(Array(key.pemRepresentation.utf8), to: layout.key, mode: 0o600)
        let signer = TestPostbackSigner(key: key)

        // Traffic shaped by the schema, as `postback generate --schema` shapes it; each campaign with
        // values of its own, fine values ordered by the revenue they decode to (bits 0-3).
        var traffic = try GenerateCommand.shapedTraffic(
            SyntheticPostbacks(kinds: [.skan4_0, .aak, .skan3_0]),
            try GenerateCommand.syntax.parse(
                ["--schema", schemaPath] + adNetworks.flatMap { ["--ad-network", $0] }
                    + sourceIdentifiers.flatMap { ["--source-identifier", $0] }))
        traffic.valuesFollowCampaign = true
        traffic.fineValues = (0..<64).sorted { ($0 & 15, $0) < ($1 & 15, $1) }
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(count)
        for index in 0..<count { bodies.append(try signer.sign(traffic.postback(index, seed: 14))) }

        // A receiver on loopback, on a port the kernel picks, trusting only the demo's key.
        var configuration = ServerConfiguration()
        configuration.listen = "127.0.0.1:0"
        configuration.dataDirectory = layout.store
        configuration.writerID = "demo"
        configuration.allowsDevelopment = true
        configuration.trustKeyPaths = [layout.key]
        configuration.testKeys = [TrustedTestKey(name: "test:demo-key.pem", key: key.publicKey)]
        configuration.logLevel = .warning
        // A few megabytes of demo data need no 256 MiB reserve; a nearly full disk still fails loudly (500s).
        configuration.reservedFreeBytes = 0
        let sink = io.standardError
        let server = try PostbackServer.start(
            configuration: configuration, log: ServerLog(minimumLevel: .warning) { sink.write($0) })
        let url = "http://127.0.0.1:\(server.port)/.well-known/skadnetwork/report-attribution/"
        let firstDay = UTCDay(daysSinceEpoch: Int(time(nil) / 86_400))
        io.print("receiver listening on http://127.0.0.1:\(server.port), storing in \(layout.store)")

        let report: PostbackSender.Report
        do {
            report = try send(bodies, to: url, io: io)
        } catch {
            server.shutdown()
            throw error
        }
        server.shutdown()
        io.print(SendCommand.summary(report, url: url))
        guard report.allOK else {
            throw CommandError.stepFailed("the receiver did not accept every postback (see above)")
        }

        // The 20 days before, as a relay's daily files; then the nightly job over today's spool (today,
        // or yesterday too when the demo ran across midnight UTC).
        let lastDay = UTCDay(daysSinceEpoch: Int(time(nil) / 86_400))
        let history = try DemoHistory.publish(
            traffic: traffic, signer: signer, count: count, today: firstDay, layout: layout, io: io)
        let days = ["--from", firstDay.description, "--to", lastDay.description]
        // --allow-dev: development postbacks are what the demo is for, not an empty run.
        let nightly = ["--data", layout.store, "--schemas", layout.schemas, "--allow-open-day", "--allow-dev"] + days
        guard AggregateCommand.run(nightly + ["--skip-cohorts"], io: io) == .success else {
            throw CommandError.stepFailed("'postback aggregate' failed (see above)")
        }
        // What the networks say they charged (and delivered), imported; the nightly job's cohort pass
        // joins it to the installs by install date.
        let firstHistoryDay = firstDay.adding(days: -DemoHistory.days)
        let spendFile = try DemoHistory.writeSpend(layout: layout, from: firstHistoryDay, to: lastDay)
        guard
            SpendCommand.run(
                ["import", "--data", layout.store, "--schemas", layout.schemas, "--source", "demo-networks", spendFile], io: io)
                == .success
        else { throw CommandError.stepFailed("'postback spend import' failed (see above)") }
        guard AggregateCommand.run(nightly, io: io) == .success else {
            throw CommandError.stepFailed("'postback aggregate' failed (see above)")
        }
        let reported = ReportCommand.run(
            [
                "--data", layout.store, "--out", layout.report, "--title", "postback demo", "--environment", "development",
                "--from", firstHistoryDay.description, "--to", lastDay.description,
            ],
            io: io)
        guard reported == .success else { throw CommandError.stepFailed("'postback report' failed (see above)") }
        io.print(
            "\(count + history) postbacks in all: \(count) through the receiver today, \(history) on the \(DemoHistory.days) days before"
        )

        io.print(
            """

            Done. Everything is in \(layout.directory):
              store (spool, as 'postback serve' writes it)  \(layout.store)/raw
              aggregates (CSV and manifests)                \(layout.aggregates)
              schema                                        \(schemaPath)
              the networks' spend (imported)                \(layout.spend)
              earlier days' postbacks                       \(layout.history)
              test key that signed the postbacks            \(layout.key)
              report                                        \(layout.report)
            Open the report in a browser, e.g.: xdg-open \(layout.report)
            (or copy it to your own machine: it is one self-contained HTML file).
            """)
        return .success
    }

    /// POSTs every body over a few connections, with a progress line on a terminal only.
    private static func send(_ bodies: [[UInt8]], to url: String, io: CommandIO) throws -> PostbackSender.Report {
        let next = Atomic<Int>(0)
        let answered = Atomic<Int>(0)
        let showProgress = io.standardError.isTerminal
        let total = bodies.count
        let report = try PostbackSender.send(
            url: url, concurrency: 4,
            next: {
                let index = next.add(1, ordering: .relaxed).oldValue
                return index < total ? bodies[index] : nil
            },
            onResponse: { _ in
                let done = answered.add(1, ordering: .relaxed).newValue
                if showProgress, done % 100 == 0 || done == total {
                    io.standardError.write(Array("\rsent \(done) of \(total) postbacks".utf8))
                    if done == total { io.standardError.write([0x0A]) }
                }
            })
        return report
    }
}
