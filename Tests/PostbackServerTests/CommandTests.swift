import Foundation
import PostbackClient
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback serve` and `postback send` as commands: flags, config file, logs, exit codes.
@Suite struct CommandTests {
    private func writeFile(_ name: String, in directory: String, _ text: String) -> String {
        let path = "\(directory)/\(name)"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)), "writing \(path)")
        return path
    }

    @Test func serveRunsWithAConfigFileAndFlagsOverrideIt() throws {
        let directory = TestServer.temporaryDirectory()
        let keyPath = writeFile("test-key.pem", in: directory, TestPostbacks.key.pemRepresentation)
        let config = writeFile(
            "config.json", in: directory,
            """
            {"listen": "127.0.0.1:1", "data_dir": "\(directory)/from-config", "writer_id": "cfg",
             "allow_development": true, "trust_keys": ["test-key.pem"], "ad_network_path": "/pb"}
            """)
        let output = MemorySink()
        let errors = MemorySink()
        let body = TestPostbacks.body(0, seed: 41)
        let status = ServeCommand.run(
            ["--config", config, "--listen", "127.0.0.1:0", "--data", "\(directory)/data"],
            io: CommandIO(standardOutput: output, standardError: errors)
        ) { server in
            #expect(server.configuration.writerID == "cfg", "from the file")
            #expect(server.configuration.dataDirectory == "\(directory)/data", "the flag wins")
            let response = try? HTTPClient().post("http://127.0.0.1:\(server.port)/pb", body: body)
            #expect(response?.status == 200)
            return "test"
        }
        #expect(status == .success)
        #expect(FileManager.default.fileExists(atPath: keyPath))
        let records = StoreLayout(root: "\(directory)/data")
        #expect(try records.days(.postbacks).count == 1)
        // Structured logs: every stderr line is a JSON object with time, level and msg.
        let lines = errors.lines
        #expect(lines.contains { $0.contains(#""msg":"listening""#) })
        #expect(lines.contains { $0.contains(#""msg":"stopped"#) })
        for line in lines {
            #expect(line.hasPrefix(#"{"time":""#) && line.contains(#""level":""#) && line.hasSuffix("}"), "\(line)")
        }
    }

    @Test func serveRejectsBadUsage() {
        let errors = MemorySink()
        let io = CommandIO(standardOutput: MemorySink(), standardError: errors)
        #expect(ServeCommand.run(["--listen", "nowhere"], io: io) { _ in "unused" } == .usageOrIOError)
        #expect(errors.text.contains("HOST:PORT"))
        #expect(ServeCommand.run(["--trust-key", "/nonexistent.pem"], io: io) { _ in "unused" } == .usageOrIOError)
        #expect(ServeCommand.run(["--config", "/nonexistent.json"], io: io) { _ in "unused" } == .usageOrIOError)
        #expect(ServeCommand.run(["extra"], io: io) { _ in "unused" } == .usageOrIOError)
    }

    @Test func serveRefusesASecondWriterWithTheSameID() throws {
        let directory = TestServer.temporaryDirectory()
        let server = try TestServer(dataDirectory: directory, writerID: "dup")
        defer { server.stop() }
        let errors = MemorySink()
        let status = ServeCommand.run(
            ["--listen", "127.0.0.1:0", "--data", directory, "--writer-id", "dup"],
            io: CommandIO(standardOutput: MemorySink(), standardError: errors)
        ) { _ in "unused" }
        #expect(status == .usageOrIOError)
        #expect(errors.text.contains("another receiver"))
    }

    @Test func sendReportsStatusesAndExitsZeroOnlyWhenAllGot200() throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = TestServer.temporaryDirectory()
        let good = (0..<30).map { String(decoding: TestPostbacks.body($0, seed: 42), as: UTF8.self) }.joined(separator: "\n")
        let goodPath = writeFile("good.jsonl", in: directory, good + "\n")
        let output = MemorySink()
        let io = CommandIO(standardOutput: output, standardError: MemorySink())
        #expect(
            PostbackCommand.run(["send", "--url", server.skadnetworkURL, "--concurrency", "4", goodPath], io: io) == .success)
        #expect(output.text.contains("30 postbacks to \(server.skadnetworkURL): 30 answered, 0 without an answer"))
        #expect(output.text.contains("HTTP 200: 30 (30 stored)"), "\(output.text)")
        #expect(output.text.contains("latency p50"))
        #expect(!output.text.contains("hint:"))
        #expect(try server.records(.postbacks).count == 30)

        let badPath = writeFile("bad.json", in: directory, #"{"version":"4.0"}"#)
        let mixed = MemorySink()
        #expect(
            PostbackCommand.run(
                ["send", "--url", server.skadnetworkURL, goodPath, badPath],
                io: CommandIO(standardOutput: mixed, standardError: MemorySink())) == .failure)
        #expect(mixed.text.contains("HTTP 400: 1\n    1  "), "the reason under its status: \(mixed.text)")
        #expect(mixed.text.contains("HTTP 200: 30 (30 duplicate)"), "the repeats are duplicates, answered 200: \(mixed.text)")

        // Signed with a key the receiver does not trust: the tester is told what to start it with.
        let stranger = TestPostbackSigner(key: try ECDSAPrivateKey(generatingOn: .p256))
        let strangers = try (0..<10).map {
            String(decoding: try stranger.sign(SyntheticPostbacks(kinds: [.skan4_0]).postback($0, seed: 7)), as: UTF8.self)
        }
        let strangerPath = writeFile("stranger.jsonl", in: directory, strangers.joined(separator: "\n") + "\n")
        let untrusted = MemorySink()
        #expect(
            PostbackCommand.run(
                ["send", "--url", server.skadnetworkURL, strangerPath],
                io: CommandIO(standardOutput: untrusted, standardError: MemorySink())) == .failure)
        #expect(untrusted.text.contains("HTTP 400: 10"), "\(untrusted.text)")
        #expect(
            untrusted.text.contains("hint: most postbacks did not verify") && untrusted.text.contains("--allow-dev --trust-key"))

        let refused = MemorySink()
        #expect(
            PostbackCommand.run(
                ["send", "--url", "http://127.0.0.1:1/", goodPath],
                io: CommandIO(standardOutput: refused, standardError: MemorySink())) == .failure)
        #expect(refused.text.contains("0 answered, 30 without an answer"))
        #expect(refused.text.contains("no answer: 30"))
        #expect(
            refused.text.contains("30  Failed to connect to 127.0.0.1 port 1"),
            "one group, without the varying timing: \(refused.text)")
        #expect(PostbackCommand.run(["send", goodPath], io: io) == .usageOrIOError)
        #expect(PostbackCommand.run(["send", "--url", server.skadnetworkURL, "/nonexistent"], io: io) == .usageOrIOError)
    }

    /// The receiver has one threading mode: a config naming the old second one stops `serve` with a
    /// message that says what replaced it.
    @Test func threadPerConnectionIsRefusedNamingWhatReplacedIt() throws {
        let directory = TestServer.temporaryDirectory()
        let path = directory + "/config.json"
        try #"{"listen": "127.0.0.1:0", "data_dir": "data", "thread_per_connection": true}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        let errors = MemorySink()
        let io = CommandIO(standardOutput: MemorySink(), standardError: errors)
        #expect(ServeCommand.run(["--config", path], io: io) { _ in "unused" } == .usageOrIOError)
        let message = errors.text
        #expect(message.contains("thread_per_connection is no longer a setting"), "\(message)")
        #expect(message.contains("the epoll pool and as many verifying threads"), "names what replaced it: \(message)")
        #expect(message.contains("remove the key"), "\(message)")
        #expect(!message.contains("did you mean"), "not taken for a typo: \(message)")
    }

    /// The same bodies get the same statuses, reply bodies and request counts (issue 26).
    @Test func repliesAndRequestCountsPerBody() throws {
        let bodies: [[UInt8]] = [
            TestPostbacks.body(0, seed: 44), TestPostbacks.body(0, seed: 44), Array("{}".utf8), Array("not json".utf8),
            TestPostbacks.body(1, seed: 44),
        ]
        let server = try TestServer()
        defer { server.stop() }
        let statuses = try bodies.map { try server.post($0).status }
        #expect(statuses == [200, 200, 400, 400, 200])
        let counts =
            try [200, 400].map {
                try server.metric(#"postback_http_requests_total{route="skadnetwork-developer-copy",code="\#($0)"}"#)
            } + [try server.metric("postback_request_duration_seconds_count")]
        #expect(counts == [3, 2, 5])
    }
}

/// The built `postback serve` binary stopped by a real signal: the stored postback stays, exit 0.
@Suite struct ServeSignalTests {
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("postback").path
    }

    /// A started `postback serve` process, its log so far and the address it listens on.
    struct Started {
        let process: Process
        let errors: Pipe
        var log: String
        let address: String
        let directory: String
    }

    static func start() throws -> Started? {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            Issue.record("postback binary not found at \(Self.binary); run `swift build` first")
            return nil
        }
        let directory = TestServer.temporaryDirectory()
        let keyPath = "\(directory)/test-key.pem"
        try Data(TestPostbacks.key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = [
            "serve", "--listen", "127.0.0.1:0", "--data", "\(directory)/data", "--writer-id", "sig",
            "--allow-dev", "--trust-key", keyPath,
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()

        // The "listening" log line names the bound port.
        var log = ""
        let deadline = Date().addingTimeInterval(30)
        while !log.contains(#""msg":"listening""#), Date() < deadline {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            log += String(decoding: chunk, as: UTF8.self)
        }
        guard let address = log.firstMatch(of: /"address":"(127\.0\.0\.1:\d+)"/)?.output.1 else {
            process.terminate()
            Issue.record("no listening line: \(log)")
            return nil
        }
        return Started(process: process, errors: errors, log: log, address: String(address), directory: directory)
    }

    @Test(arguments: [SIGTERM, SIGINT, SIGALRM]) func aStopSignalDrainsAndExitsZero(signal: Int32) throws {
        guard var started = try Self.start() else { return }
        let (process, errors, directory, address) = (started.process, started.errors, started.directory, started.address)
        defer { if process.isRunning { process.terminate() } }
        let response = try HTTPClient().post(
            "http://\(address)/.well-known/skadnetwork/report-attribution/",
            body: TestPostbacks.body(0, seed: 47))
        #expect(response.status == 200)

        kill(process.processIdentifier, signal)
        started.log += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let log = started.log
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "\(log)")
        #expect(log.contains(#""msg":"stopped"#))
        let layout = StoreLayout(root: "\(directory)/data")
        let segments = try layout.days(.postbacks).flatMap { try layout.segments(.postbacks, day: $0) }
        #expect(segments.count == 1)
        let reader = try SegmentReader(path: try #require(segments.first).path)
        var records = 0
        while let entry = try reader.next() { if case .record = entry { records += 1 } }
        #expect(records == 1, "the acknowledged postback is on disk after the stop")
    }

    /// SIGHUP, SIGUSR1 and SIGUSR2 (whose default action kills at once) are logged and ignored: the
    /// receiver keeps serving, and a SIGTERM afterwards still drains and exits 0.
    @Test func otherSignalsAreIgnored() throws {
        guard var started = try Self.start() else { return }
        let process = started.process
        defer { if process.isRunning { process.terminate() } }
        for signal in [SIGHUP, SIGUSR1, SIGUSR2] {
            kill(process.processIdentifier, signal)
            usleep(100_000)
            #expect(process.isRunning, "still running after signal \(signal)")
            #expect(try HTTPClient().get("http://\(started.address)/livez").status == 200)
        }
        kill(process.processIdentifier, SIGTERM)
        started.log += String(decoding: started.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(started.log)")
        for name in ["SIGHUP", "SIGUSR1", "SIGUSR2"] {
            #expect(started.log.contains(#""msg":"signal ignored","signal":"\#(name)""#), "\(started.log)")
        }
    }
}
