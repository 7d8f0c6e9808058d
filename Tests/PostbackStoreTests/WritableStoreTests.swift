import Basics
import Foundation
import PostbackCrypto
import PostbackStore
import PostbackTesting
import Postbacks
import Testing

/// Opening a store for writing: one writer id at a time, recovery's numbers, and refusal of a store
/// whose segments cannot all be read.
@Suite struct WritableStoreTests {
    private func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "postback-store-tests-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func oneWriterIDAtATimeAndRecoveryContinuesItsSegments() throws {
        let directory = temporaryDirectory()
        let store = try WritableStore.open(dataDirectory: directory, writerID: "rx")
        for spool in StoreLayout.Spool.allCases {
            #expect(FileManager.default.fileExists(atPath: store.layout.spoolDirectory(spool)))
        }
        let locked = #expect(throws: StoreError.self, "the writer id is locked") {
            _ = try WritableStore.open(dataDirectory: directory, writerID: "rx")
        }
        #expect(locked?.code == .writerIDInUse && locked?.writerID == "rx")
        #expect(locked?.path == WriterLock.path(layout: store.layout, writerID: "rx"))
        let invalid = #expect(throws: StoreError.self) { _ = try WritableStore.open(dataDirectory: directory, writerID: "r/x") }
        #expect(invalid?.code == .invalidWriterID)
        let committed = DispatchSemaphore(value: 0)
        let body = try RecoveryScanTests.signer.sign(SyntheticPostbacks(kinds: [.skan4_0]).postback(0, seed: 91))
        let result = RecoveryScanTests.verifier.verify(body: body)
        let dedupKey = try #require(result.dedupKey)
        let record = SpoolRecord(
            receivedAt: .now(), writer: "rx", route: "skadnetwork-developer-copy", result: result, body: body)
        store.postbacks.submit(line: record.encoded(), day: record.receivedAt.day, dedupKey: dedupKey) { outcome in
            #expect(outcome == .stored)
            committed.signal()
        }
        #expect(committed.wait(timeout: .now() + 10) == .success)
        store.close()

        let reopened = try WritableStore.open(dataDirectory: directory, writerID: "rx")
        defer { reopened.close() }
        #expect(reopened.recovered.segments == 1)
        #expect(reopened.recovered.records == 1)
        #expect(reopened.recovered.dedupKeys == 1)
        #expect(reopened.postbacks.dedupKeyCount == 1)
    }

    /// A segment a crash left open (no seal: its writer never sealed it) is sealed, as it is, when the
    /// writer id opens the store again; only the newest two of each spool, and never another
    /// writer's (it may be open in a running receiver).
    @Test func openingSealsTheSegmentsACrashLeftOpen() throws {
        let directory = temporaryDirectory()
        let layout = StoreLayout(root: directory)
        let day = UTCDay("2026-12-04")!
        let partition = layout.partition(.postbacks, day: day)
        try FileManager.default.createDirectory(atPath: partition, withIntermediateDirectories: true)
        var written: [String: [UInt8]] = [:]
        for (writer, sequence) in [("rx", 1), ("rx", 2), ("rx", 3), ("other", 1)] {
            let path = partition + "/" + StoreLayout.segmentName(writer: writer, sequence: sequence)
            // A torn last line, as a crash leaves it: sealed as it is, since it never changes again.
            let bytes = Array("{\"torn\":\(sequence)".utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            written[String(path.dropFirst(directory.count + 1))] = bytes
        }
        let store = try WritableStore.open(dataDirectory: directory, writerID: "rx")
        store.close()
        let seals = SegmentSeals.load(root: directory, day: day)
        let name = { (writer: String, sequence: Int) in
            "raw/postbacks/dt=\(day)/" + StoreLayout.segmentName(writer: writer, sequence: sequence)
        }
        #expect(seals[name("rx", 1)] == nil, "older than the two newest: predates seals")
        for sequence in [2, 3] {
            #expect(seals[name("rx", sequence)] == [SegmentSeals.seal(of: written[name("rx", sequence)]!)])
        }
        #expect(seals[name("other", 1)] == nil, "another writer's segment is never sealed here")

        // Opening again records nothing twice.
        try WritableStore.open(dataDirectory: directory, writerID: "rx").close()
        #expect(SegmentSeals.load(root: directory, day: day)[name("rx", 3)]?.count == 1)
    }

    @Test func setAsideNamesWhyASegmentStays() throws {
        let layout = StoreLayout(root: temporaryDirectory())
        let partition = layout.partition(.postbacks, day: UTCDay("2026-03-10")!)
        try FileManager.default.createDirectory(atPath: partition, withIntermediateDirectories: true)
        let segment = partition + "/" + StoreLayout.segmentName(writer: "rx", sequence: 1)
        let cases: [(String, StoreError.Code)] = [
            ("raw/postbacks/not-a-segment", .notASegment),
            (segment, .noSuchSegment),
        ]
        for (path, code) in cases {
            let error = #expect(throws: StoreError.self, "\(path)") { _ = try DamagedSegments.setAside(path, layout: layout) }
            #expect(error?.code == code, "\(path): \(String(describing: error))")
        }
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: segment))
        let unsealed = #expect(throws: StoreError.self) { _ = try DamagedSegments.setAside(segment, layout: layout) }
        #expect(unsealed?.code == .unsealed && unsealed?.path == segment)
    }

    @Test func anUnreadableSegmentIsRefusedAfterReportingDamage() throws {
        let directory = temporaryDirectory()
        let partition = directory + "/raw/postbacks/dt=2026-03-10"
        try FileManager.default.createDirectory(atPath: partition + "/part-other-000002.jsonl", withIntermediateDirectories: true)
        try Data("{\"torn".utf8).write(to: URL(fileURLWithPath: partition + "/part-other-000001.jsonl"))
        var damaged: [String] = []
        do {
            let store = try WritableStore.open(dataDirectory: directory, writerID: "rx", damaged: { damaged.append($0.path) })
            store.close()
            Issue.record("opened a store with an unreadable segment")
        } catch {
            guard let error = error as? StoreError, error.code == .unreadableSegments else {
                Issue.record("expected unreadableSegments, got \(error)")
                return
            }
            let problems = error.problems
            #expect(problems.count == 1 && problems[0].contains("part-other-000002.jsonl"))
            #expect(error.description.contains("so their postbacks could be stored twice"))
        }
        #expect(damaged == [partition + "/part-other-000001.jsonl"], "damage is reported before the refusal")
    }
}
