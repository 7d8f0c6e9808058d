import Basics
import Foundation
import PostbackCLI
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

/// `postback reverify`: quarantined and rejected postbacks that now verify are moved into the spool
/// once, counted once, and a crash (kill -9) half way loses and duplicates nothing.
@Suite struct ReverifyTests {
    /// An AdAttributionKit postback signed with the server tests' key under a kid this release does
    /// not know: the stand-in for a key Apple has just started to use.
    static func newKidPostback(_ id: String, kid: String = "apple-cas-identifier/1") -> [UInt8] {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: id)
        postback.keyID = kid
        postback.conversionValue = 12
        return try! TestPostbacks.signer.sign(postback)
    }

    static let standInVerifier = PostbackVerifier(
        policy: VerificationPolicy(
            allowsDevelopment: true, standInKeyIDs: ["apple-cas-identifier/1": TestPostbacks.trusted]))

    /// A receiver that takes development postbacks and every ad network.
    static let acceptAll = AcceptancePolicy(allowsDevelopment: true, adNetworkIDs: nil)

    @Test func quarantinedPostbacksAreMovedOnceAndCountedOnce() throws {
        let server = try TestServer()
        let body = Self.newKidPostback("REVERIFY-E2E-1")
        // The device's retries: three copies, each answered 200; stored once (issue 24 item 4).
        for _ in 0..<3 { #expect(try server.post(body, to: server.appAttributionURL).status == 200) }
        var unknownVersion = SKAdNetworkTestPostback(version: "5.0", transactionID: "reverify-e2e-version")
        unknownVersion.sourceIdentifier = "1234"
        #expect(try server.post(try TestPostbacks.signer.sign(unknownVersion)).status == 200)
        server.stop()
        #expect(try server.records(.unverifiable).count == 2)
        #expect(try server.records(.postbacks).isEmpty)
        let today = UTCTimestamp.now().day

        // The receiver is stopped, so today's segments are closed and the library may take them.
        let report = try Reverification(layout: server.layout, verifier: Self.standInVerifier, acceptance: Self.acceptAll).run(
            from: today, to: today)
        #expect(report.moved.count == 1, "moved once")
        #expect(report.unchanged == ["quarantined (unknown-version)": 1])
        let stored = try server.records(.postbacks)
        #expect(stored.count == 1)
        #expect(
            stored.allSatisfy {
                $0.body == body && $0.status == .verified && $0.environment == .development
                    && $0.dedupKey == "REVERIFY-E2E-1:0/development"
            })
        let quarantined = try server.records(.unverifiable)
        #expect(quarantined.map(\.quarantine) == [.unknownVersion], "only what still cannot be checked stays")
        let original = try #require(report.moved.first?.receivedAt)
        #expect(stored.map(\.receivedAt).min() == original, "the original received_at is kept")
        #expect(try server.segments(.postbacks).map(\.writer) == ["reverify"])

        // Counted once by the nightly job (the other copies as duplicates).
        // Today is still open (the receiver may write it), hence --allow-open-day; an empty schemas
        // directory is an error, so the samples' schemas are used (none is for this app).
        let schemas = ReplayTests.root.appendingPathComponent("Samples/schemas").path
        let io = CommandIO(standardOutput: MemorySink(), standardError: MemorySink())
        #expect(
            PostbackCommand.run(
                ["aggregate", "--data", server.dataDirectory, "--schemas", schemas, "--date", "\(today)", "--allow-open-day"],
                io: io) != .usageOrIOError)
        let csv = try String(
            contentsOfFile: server.layout.aggregateFile(table: "postback_detail_daily", day: today), encoding: .utf8)
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = lines[0]
        let rows = lines.dropFirst().filter { $0[header.firstIndex(of: "protocol")!] == "adattributionkit" }
        #expect(rows.count == 1)
        #expect(rows.first?[header.firstIndex(of: "development_postbacks")!] == "1")
        #expect(rows.first?[header.firstIndex(of: "duplicates_dropped")!] == "0")

        // A second run changes nothing.
        let again = try Reverification(layout: server.layout, verifier: Self.standInVerifier, acceptance: Self.acceptAll).run(
            from: today, to: today)
        #expect(again.moved.isEmpty && again.completed == 0)
        #expect(try server.records(.postbacks).count == 1)

        // Every segment, the receiver's and those reverify wrote or rewrote, matches a seal of its
        // bytes, so the nightly job's check (SegmentSeals) never takes a reverified store for damaged.
        let seals = SegmentSeals.load(root: server.layout.root, day: today)
        for spool in [StoreLayout.Spool.postbacks, .unverifiable] {
            for segment in try server.layout.segments(spool, day: today) {
                let bytes = [UInt8](try #require(FileManager.default.contents(atPath: segment.path)))
                let name = String(segment.path.dropFirst(server.layout.root.count + 1))
                #expect(seals[name]?.contains(SegmentSeals.seal(of: bytes)) == true, "\(name)")
            }
        }
    }

    @Test func theCommandRefusesDaysReceiversMayStillWrite() throws {
        let errors = MemorySink()
        let io = CommandIO(standardOutput: MemorySink(), standardError: errors)
        let today = UTCTimestamp.now().day
        #expect(
            PostbackCommand.run(
                ["reverify", "--config", "config.json", "--data", TestServer.temporaryDirectory(), "--date", "\(today)"], io: io)
                == .usageOrIOError)
        #expect(errors.text.contains("too recent"))
    }

    // MARK: kill -9 half way

    static let day = UTCDay("2026-01-05")!

    /// A store with four quarantined postbacks (unknown kid) and two rejected ones (a test key's
    /// signature under Apple's kid), one of them received twice, plus one forged for good.
    static func crashStore() throws -> (layout: StoreLayout, keyFile: String) {
        let root = TestServer.temporaryDirectory()
        let layout = StoreLayout(root: root)
        try writeSegment(layout, .unverifiable, (1...4).map { newKidPostback("REVERIFY-CRASH-\($0)") })
        let testKeySigned = newKidPostback("REVERIFY-CRASH-5", kid: "apple-cas-identifier/0")
        // Signed by a key nobody trusts: rejected before and after.
        let stranger = TestPostbackSigner(key: try ECDSAPrivateKey(generatingOn: .p256))
        let forged = try stranger.sign(AdAttributionKitTestPostback(postbackIdentifier: "REVERIFY-CRASH-6"))
        let otherKey = try stranger.sign(AdAttributionKitTestPostback(postbackIdentifier: "REVERIFY-CRASH-7"))
        try writeSegment(layout, .rejected, [testKeySigned, testKeySigned, forged, otherKey])
        let keyFile = root + "/test-key.pem"
        try DurableFile.write(Array(TestPostbacks.key.publicKey.pemRepresentation.utf8), to: keyFile)
        try DurableFile.write(Array("{}".utf8), to: root + "/config.json")
        return (layout, keyFile)
    }

    /// A receiver's segment of `day` in `spool` holding `bodies`, with the verdicts of Apple's keys,
    /// received a second apart.
    static func writeSegment(_ layout: StoreLayout, _ spool: StoreLayout.Spool, _ bodies: [[UInt8]], day: UTCDay = day)
        throws
    {
        let production = PostbackVerifier()
        var bytes: [UInt8] = []
        for (index, body) in bodies.enumerated() {
            let at = UTCTimestamp(
                microsecondsSinceEpoch: Int64(day.daysSinceEpoch) * 86_400_000_000 + Int64(index + 1) * 1_000_000)
            bytes += SpoolRecord(
                receivedAt: at, writer: "rx1", route: "appattribution-developer-copy", result: production.verify(body: body),
                body: body
            ).encoded()
        }
        try DurableFile.makeDirectories(layout.partition(spool, day: day))
        try DurableFile.write(
            bytes, to: layout.partition(spool, day: day) + "/" + StoreLayout.segmentName(writer: "rx1", sequence: 1))
    }

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("postback").path
    }

    static func reverify(_ layout: StoreLayout, keyFile: String, kill: String? = nil) throws -> (
        status: Int32, signaled: Bool, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "reverify", "--config", layout.root + "/config.json", "--data", layout.root, "--date", "\(day)", "--allow-dev",
            "--trust-key", keyFile,
            "--trust-kid", "apple-cas-identifier/1=\(keyFile)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["POSTBACK_TEST_REVERIFY_KILL"] = kill
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal, String(decoding: data, as: UTF8.self))
    }

    static func records(_ layout: StoreLayout, _ spool: StoreLayout.Spool) throws -> [SpoolRecord] {
        var records: [SpoolRecord] = []
        for segment in try layout.segments(spool, day: day) {
            let reader = try SegmentReader(path: segment.path)
            while let entry = try reader.next() {
                guard case .record(let record, _) = entry else {
                    Issue.record("\(segment.path): \(entry)")
                    continue
                }
                records.append(record)
            }
        }
        return records
    }

    /// Every copy is in exactly one place: moved (stored once) or still where it was.
    static func expectNothingLostOrDuplicated(_ layout: StoreLayout, movedAtLeast: Int) throws {
        let stored = try records(layout, .postbacks)
        let left = try records(layout, .rejected) + records(layout, .unverifiable)
        let storedIdentities = stored.map { "\($0.receivedAt) \(String(decoding: $0.body, as: UTF8.self))" }
        #expect(Set(storedIdentities).count == stored.count, "no copy is stored twice")
        #expect(stored.count >= movedAtLeast)
        #expect(
            stored.count
                + left.filter { r in !storedIdentities.contains("\(r.receivedAt) \(String(decoding: r.body, as: UTF8.self))") }
                .count == 8,
            "each of the 8 copies is stored or still in its source")
    }

    @Test(arguments: ["destination", "source"]) func killNineHalfWayLosesAndDuplicatesNothing(at point: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            Issue.record("postback binary not found at \(Self.binary); run `swift build` first")
            return
        }
        let (layout, keyFile) = try Self.crashStore()
        let killed = try Self.reverify(layout, keyFile: keyFile, kill: point)
        #expect(killed.signaled && killed.status == SIGKILL, "\(killed)")
        try Self.expectNothingLostOrDuplicated(layout, movedAtLeast: 6)
        if point == "source" {
            #expect(try Self.records(layout, .rejected).count == 2, "the first source segment was rewritten before the kill")
            #expect(try Self.records(layout, .unverifiable).count == 4, "the second was not")
        }

        let finished = try Self.reverify(layout, keyFile: keyFile)
        #expect(finished.status == 0, "\(finished.output)")
        #expect(finished.output.contains("0 moved"), "\(finished.output)")
        let stored = try Self.records(layout, .postbacks)
        #expect(stored.count == 6)
        #expect(Set(stored.compactMap(\.dedupKey)) == Set((1...5).map { "REVERIFY-CRASH-\($0):0/development" }))
        #expect(try Self.records(layout, .unverifiable).isEmpty)
        #expect(
            try Self.records(layout, .rejected).map(\.dedupKey) == ["REVERIFY-CRASH-6:0", "REVERIFY-CRASH-7:0"],
            "forged and unknown keys stay rejected")
        #expect(try layout.segments(.postbacks, day: Self.day).count == 1)
        try Self.expectNothingLostOrDuplicated(layout, movedAtLeast: 6)

        let again = try Self.reverify(layout, keyFile: keyFile)
        #expect(again.output.contains("0 moved, 0 finished from an interrupted run"), "\(again.output)")
        #expect(try Self.records(layout, .postbacks).count == 6)
    }

    // MARK: the door's policy

    /// Apple's own 4.0 example (ad-network-id `com.example`): a receiver that accepts other ad
    /// networks only refuses it (400, `raw/rejected/`), and reverify with that receiver's config
    /// leaves it there; with a config that accepts it (in other letter case), it is moved, as the
    /// door would have stored it.
    @Test func reverifyAppliesTheDoorsAdNetworkPolicy() throws {
        let body = try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")
        let server = try TestServer { $0.acceptedAdNetworkIDs = ["network1.skadnetwork"] }
        #expect(try server.post(body).status == 400)
        server.stop()
        #expect(try server.records(.rejected).map(\.dedupKey) == ["6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:0"])

        let root = TestServer.temporaryDirectory()
        let layout = StoreLayout(root: root)
        try Self.writeSegment(layout, .rejected, [body])
        let config = root + "/config.json"
        try DurableFile.write(Array(#"{"ad_network_ids": ["network1.skadnetwork"]}"#.utf8), to: config)
        let refused = run(["reverify", "--config", config, "--data", root, "--date", "\(Self.day)"])
        #expect(refused.status == .success, "\(refused.stderr)")
        #expect(refused.stdout.contains("0 moved") && refused.stdout.contains("1 not accepted (ad-network)"), "\(refused.stdout)")
        #expect(try Self.records(layout, .postbacks).isEmpty, "never counted what the door refused")
        #expect(try Self.records(layout, .rejected).count == 1)

        try DurableFile.write(Array(#"{"ad_network_ids": ["network1.skadnetwork", "COM.EXAMPLE"]}"#.utf8), to: config)
        let accepted = run(["reverify", "--config", config, "--data", root, "--date", "\(Self.day)"])
        #expect(accepted.stdout.contains("1 moved"), "\(accepted.stdout)")
        #expect(try Self.records(layout, .postbacks).map(\.dedupKey) == ["6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:0"])
        #expect(try Self.records(layout, .rejected).isEmpty)
    }

    /// Development postbacks: a receiver without `allow_development` refuses them, and so does
    /// reverify with its config, also when a test key now verifies them.
    @Test func reverifyAppliesTheDoorsDevelopmentPolicy() throws {
        let (layout, keyFile) = try Self.crashStore()
        try DurableFile.write(Array(#"{"trust_keys": []}"#.utf8), to: layout.root + "/config.json")
        let refused = run([
            "reverify", "--config", layout.root + "/config.json", "--data", layout.root, "--date", "\(Self.day)",
            "--trust-kid", "apple-cas-identifier/1=\(keyFile)",
        ])
        #expect(refused.status == .usageOrIOError && refused.stderr.contains("--allow-dev"), "\(refused.stderr)")
        let policy = AcceptancePolicy(allowsDevelopment: false, adNetworkIDs: nil)
        let report = try Reverification(layout: layout, verifier: Self.standInVerifier, acceptance: policy).run(
            from: Self.day, to: Self.day)
        #expect(report.moved.isEmpty)
        // The four quarantined ones verify now (development, refused); the rest still do not verify.
        #expect(report.unchanged == ["not accepted (development)": 4, "invalid-signature": 4], "\(report.unchanged)")
        #expect(try Self.records(layout, .postbacks).isEmpty)
    }

    @Test func theCommandNeedsTheReceiversConfig() {
        let result = run(["reverify", "--data", TestServer.temporaryDirectory(), "--date", "\(Self.day)"])
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.contains("--config FILE is required"), "\(result.stderr)")
    }

    // MARK: memory

    /// One day's reverify reads the store a line at a time: its peak memory does not hold the
    /// stored bodies of every day (before: every stored body of every day, here 100 MiB, was in memory).
    @Test func oneDaysReverifyDoesNotHoldTheStoredBodies() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            Issue.record("postback binary not found at \(Self.binary); run `swift build` first")
            return
        }
        // The same store twice, with 64 KiB bodies (100 MiB) and with 64-byte ones: what the large
        // bodies add to the peak is what a run holds of them, whatever this build's own overhead
        // (a sanitizer's, a debug build's).
        func run(bodyBytes: Int) throws -> Int {
            let root = TestServer.temporaryDirectory()
            let layout = StoreLayout(root: root)
            // One postback that verifies now, so the stored spool must be searched for its key.
            try Self.writeSegment(layout, .rejected, [try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")])
            try DurableFile.write(Array("{}".utf8), to: root + "/config.json")
            // Four days of 400 stored records each (with 64 KiB bodies: 100 MiB).
            let verified = PostbackVerifier(
                policy: VerificationPolicy(allowsDevelopment: true, testKeys: [TestPostbacks.trusted])
            )
            .verify(body: try TestPostbacks.signer.sign(SKAdNetworkTestPostback(version: "4.0", transactionID: "stored")))
            let padding = [UInt8](repeating: UInt8(ascii: "x"), count: bodyBytes)
            for offset in 0..<4 {
                let day = Self.day.adding(days: offset - 3)
                var bytes: [UInt8] = []
                for index in 0..<400 {
                    var record = SpoolRecord(
                        receivedAt: UTCTimestamp(
                            microsecondsSinceEpoch: Int64(day.daysSinceEpoch) * 86_400_000_000 + Int64(index)),
                        writer: "rx1", route: "skadnetwork", result: verified, body: padding)
                    record.dedupKey = "stored-\(offset)-\(index):0"
                    bytes += record.encoded()
                }
                try DurableFile.makeDirectories(layout.partition(.postbacks, day: day))
                try DurableFile.write(bytes, to: layout.partition(.postbacks, day: day) + "/part-rx1-000001.jsonl")
            }
            let rejected = layout.partition(.rejected, day: Self.day) + "/part-rx1-000001.jsonl"
            let (status, peakKiB) = try Self.peakMemory(
                ["reverify", "--config", root + "/config.json", "--data", root, "--date", "\(Self.day)"]
            ) {
                // Its last write to the store: the source segment rewritten without the moved record.
                (try? FileManager.default.attributesOfItem(atPath: rejected)[.size] as? Int) == 0
            }
            #expect(status == 0)
            #expect(try Self.records(layout, .postbacks).count == 401, "the day's 400 and the one that verifies now")
            return peakKiB
        }
        let small = try run(bodyBytes: 64)
        let large = try run(bodyBytes: 64 << 10)
        #expect(large - small < 35 << 10, "peak RSS \(large) KiB with 100 MiB of stored bodies, \(small) KiB with 100 KiB")
    }

    /// Runs the built `postback` and returns its exit status and peak resident memory (`VmHWM`, KiB),
    /// read once `done()` holds, while the process is kept from exiting: its standard output is a
    /// full pipe, so its first line of output (the summary, after the work) blocks until the pipe
    /// is drained. (`wait4`'s `ru_maxrss` would count the test process's own memory: a spawned child
    /// starts from its parent's.)
    static func peakMemory(_ arguments: [String], done: () -> Bool) throws -> (status: Int32, peakKiB: Int) {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw SystemCallError(operation: "pipe", path: "", errorNumber: errno) }
        defer { close(pipeEnds[0]) }
        let capacity = Int(fcntl(pipeEnds[1], 1032))  // F_GETPIPE_SZ (Linux), not in Glibc's module
        #expect(capacity > 0)
        try FileDescriptorIO.writeAll([UInt8](repeating: 0x20, count: capacity), to: pipeEnds[1], path: "pipe")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        // Under AddressSanitizer, freed memory is held in a quarantine (256 MiB) that would count as
        // the run's own; without it the peak is the program's. Other builds ignore the variable.
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = [environment["ASAN_OPTIONS"], "quarantine_size_mb=0"].compactMap { $0 }.joined(
            separator: ":")
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        let spawned = posix_spawn(&pid, binary, &actions, nil, argv, envp)
        close(pipeEnds[1])
        guard spawned == 0 else { throw SystemCallError(operation: "posix_spawn", path: binary, errorNumber: spawned) }
        let finished = eventually(300) { done() }
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while (try? FileDescriptorIO.read(pipeEnds[0], into: &buffer, path: "pipe")) ?? 0 > 0 {}
        var exit: Int32 = 0
        while waitpid(pid, &exit, 0) < 0, errno == EINTR {}
        #expect(finished, "the run did not finish its work")
        return ((exit >> 8) & 0xFF, peak ?? Int.max)
    }
}
