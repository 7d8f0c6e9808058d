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
        let report = try Reverification(layout: server.layout, verifier: Self.standInVerifier).run(from: today, to: today)
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
        let again = try Reverification(layout: server.layout, verifier: Self.standInVerifier).run(from: today, to: today)
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
            PostbackCommand.run(["reverify", "--data", TestServer.temporaryDirectory(), "--date", "\(today)"], io: io)
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
        let production = PostbackVerifier()
        func write(_ spool: StoreLayout.Spool, _ bodies: [[UInt8]]) throws {
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
        try write(.unverifiable, (1...4).map { newKidPostback("REVERIFY-CRASH-\($0)") })
        let testKeySigned = newKidPostback("REVERIFY-CRASH-5", kid: "apple-cas-identifier/0")
        // Signed by a key nobody trusts: rejected before and after.
        let stranger = TestPostbackSigner(key: try ECDSAPrivateKey(generatingOn: .p256))
        let forged = try stranger.sign(AdAttributionKitTestPostback(postbackIdentifier: "REVERIFY-CRASH-6"))
        let otherKey = try stranger.sign(AdAttributionKitTestPostback(postbackIdentifier: "REVERIFY-CRASH-7"))
        try write(.rejected, [testKeySigned, testKeySigned, forged, otherKey])
        let keyFile = root + "/test-key.pem"
        try DurableFile.write(Array(TestPostbacks.key.publicKey.pemRepresentation.utf8), to: keyFile)
        return (layout, keyFile)
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
            "reverify", "--data", layout.root, "--date", "\(day)", "--allow-dev", "--trust-key", keyFile,
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
}
