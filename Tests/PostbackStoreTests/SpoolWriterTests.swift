import Dispatch
import Foundation
import Locking
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackStore

/// The store additions on their own: group commit, segment rolling, the dedup index, the fast body
/// encoding.
@Suite struct SpoolWriterTests {
    private func record(_ index: Int, seed: UInt64) -> (line: [UInt8], key: String) {
        let body = TestPostbacks.body(index, seed: seed)
        let result = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true, testKeys: [TestPostbacks.trusted]))
            .verify(body: body)
        let record = SpoolRecord(
            receivedAt: .now(), writer: "unit", route: "skadnetwork-developer-copy", result: result, body: body)
        return (record.encoded(), result.dedupKey!)
    }

    @Test func segmentsRollAtTheSizeLimitWithoutSplittingRecords() throws {
        let layout = StoreLayout(root: TemporaryDirectory.create("postback-store-tests"))
        let writer = SpoolWriter(
            configuration: .init(layout: layout, spool: .postbacks, writerID: "unit", segmentBytes: 4096),
            dedupIndex: DedupIndex())
        let day = UTCTimestamp.now().day
        let records = (0..<20).map { record($0, seed: 31) }
        let outcomes = Locked<[SpoolWriter.Outcome]>([])
        let group = DispatchGroup()
        for entry in records {
            group.enter()
            writer.submit(line: entry.line, day: day, dedupKey: entry.key) { outcome in
                outcomes.withLock { $0.append(outcome) }
                group.leave()
            }
        }
        group.wait()
        writer.close()
        #expect(outcomes.withLock { $0 }.allSatisfy { $0 == .stored })
        let segments = try layout.segments(.postbacks, day: day)
        #expect(segments.count >= 5, "20 records of ~1.3 KiB in 4 KiB segments")
        var total = 0
        for segment in segments {
            let size = try FileManager.default.attributesOfItem(atPath: segment.path)[.size] as! Int
            let reader = try SegmentReader(path: segment.path)
            var count = 0
            while let entry = try reader.next() {
                guard case .record = entry else {
                    Issue.record("damaged line in \(segment.path)")
                    continue
                }
                count += 1
            }
            #expect(count == 1 || size <= 4096, "only a single record may exceed the limit")
            total += count
        }
        #expect(total == 20)
        #expect(segments.map(\.sequence) == Array(1...segments.count))
    }

    /// Every segment the writer seals (rolled at the size limit, or closed at the end) has a seal
    /// with the file's own size and SHA-256, recorded as it was written, not read back.
    @Test func everySealedSegmentHasTheSealOfItsBytes() throws {
        let layout = StoreLayout(root: TemporaryDirectory.create("postback-store-tests"))
        let writer = SpoolWriter(
            configuration: .init(layout: layout, spool: .postbacks, writerID: "unit", segmentBytes: 4096),
            dedupIndex: DedupIndex())
        let day = UTCTimestamp.now().day
        let group = DispatchGroup()
        for index in 0..<12 {
            let entry = record(index, seed: 33)
            group.enter()
            writer.submit(line: entry.line, day: day, dedupKey: entry.key) { _ in group.leave() }
            if index % 3 == 0 { group.wait() }  // several batches, so segments roll between them too
        }
        group.wait()
        writer.close()
        let seals = SegmentSeals.load(root: layout.root, day: day)
        let segments = try layout.segments(.postbacks, day: day)
        #expect(segments.count >= 3)
        #expect(seals.count == segments.count)
        for segment in segments {
            let bytes = [UInt8](try #require(FileManager.default.contents(atPath: segment.path)))
            let name = String(segment.path.dropFirst(layout.root.count + 1))
            #expect(seals[name] == [SegmentSeals.seal(of: bytes)], "\(name)")
        }
    }

    @Test func duplicatesInOneBatchAreWrittenOnce() throws {
        let layout = StoreLayout(root: TemporaryDirectory.create("postback-store-tests"))
        let storage = FaultyStorage()
        storage.holdNextSyncs(true)
        let writer = SpoolWriter(
            configuration: .init(layout: layout, spool: .postbacks, writerID: "unit", storage: storage),
            dedupIndex: DedupIndex())
        let day = UTCTimestamp.now().day
        let first = record(0, seed: 32)
        let outcomes = Locked<[Int: SpoolWriter.Outcome]>([:])
        let group = DispatchGroup()
        func submit(_ tag: Int, _ entry: (line: [UInt8], key: String)) {
            group.enter()
            writer.submit(line: entry.line, day: day, dedupKey: entry.key) { outcome in
                outcomes.withLock { $0[tag] = outcome }
                group.leave()
            }
        }
        // One record blocks in its sync; the next three queue up and form one batch.
        submit(0, record(1, seed: 32))
        #expect(storage.syncEntered.wait(timeout: .now() + 10) == .success)
        submit(1, first)
        submit(2, first)
        submit(3, first)
        storage.holdNextSyncs(false)
        storage.syncRelease.signal()
        group.wait()
        writer.close()
        let result = outcomes.withLock { $0 }
        #expect(result[1] == .stored)
        #expect(result[2] == .duplicate(stored: .unknown) && result[3] == .duplicate(stored: .unknown))
        #expect(writer.dedupKeyCount == 2)
    }

    @Test func dedupIndexPacksUUIDKeysExactly() {
        var index = DedupIndex()
        let lower = "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:0"
        let firstInsert = index.insert(lower)
        let secondInsert = index.insert(lower)
        #expect(firstInsert && !secondInsert)
        #expect(index.contains(lower))
        #expect(!index.contains("6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:1"), "another window is another postback")
        #expect(!index.contains("6AAFB7A5-0170-41B5-BBE4-FE71DEDF1E30:0"), "keys compare exactly, case included")
        let inserted = [
            index.insert("6AAFB7A5-0170-41B5-BBE4-FE71DEDF1E30:0"),
            index.insert("not-a-uuid:0"),
            // A leading zero is a different key; mixed case is kept as a string.
            index.insert("6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:00"),
            index.insert("6aAfb7a5-0170-41b5-bbe4-fe71dedf1e30:0"),
        ]
        #expect(inserted == [true, true, true, true])
        #expect(index.contains("not-a-uuid:0"))
        #expect(index.count == 5)
    }

    /// The quarantine's byte keys (`sha256:` and 64 hex digits) are packed into their 32 bytes, exactly:
    /// another digest, or the same in upper case, is another key.
    @Test func dedupIndexPacksDigestKeysExactly() {
        var index = DedupIndex()
        let digest = "sha256:" + String(repeating: "0123456789abcdef", count: 4)
        let inserted = [index.insert(digest), index.insert(digest)]
        #expect(inserted == [true, false])
        #expect(index.contains(digest))
        #expect(!index.contains("sha256:" + String(repeating: "0123456789abcdef", count: 3) + "0123456789abcdee"))
        #expect(!index.contains(digest.uppercased()), "upper case is another key")
        let upper = index.insert(digest.uppercased())
        #expect(upper && index.contains(digest.uppercased()), "kept as a string")
        #expect(!index.contains(String(digest.dropLast())), "a shorter key is another key")
        #expect(index.count == 2)
    }

    /// The quarantine's index keeps the keys of the newest two UTC days: a day's keys go once a copy of
    /// the day after next arrives, and a copy of a day before the window is not kept.
    @Test func recentDedupIndexKeepsTodayAndYesterdayOnly() {
        let day = UTCDay("2026-12-01")!
        var index = RecentDedupIndex()
        var inserted = [index.insert("first", day: day), index.insert("second", day: day.adding(days: 1))]
        #expect(inserted == [true, true])
        #expect(index.storedValues("first") != nil, "yesterday's keys are kept")
        inserted = [index.insert("first", day: day.adding(days: 1)), index.insert("third", day: day.adding(days: 2))]
        #expect(inserted == [false, true], "a retry the next day is a duplicate")
        #expect(index.storedValues("first") == nil, "the day before yesterday's keys are dropped")
        #expect(index.storedValues("second") != nil && index.count == 2)
        inserted = [index.insert("late", day: day)]
        #expect(inserted == [false], "a day before the window is not kept")
        #expect(index.storedValues("late") == nil && index.count == 2)
    }

    @Test func bodiesRoundTripThroughTheRecordEncoding() throws {
        let bodies: [String] = [
            String(decoding: TestPostbacks.body(0, seed: 33), as: UTF8.self),
            #"{"a":"quote \" and backslash \\ and slash /"}"#,
            "line\nbreak\r\ttab \u{7F} del \u{01} control",
            "invisible \u{2063} separator, bidi \u{202E}, emoji 😀, é",
            "",
        ]
        for text in bodies {
            let body = Array(text.utf8)
            let record = SpoolRecord(receivedAt: .now(), writer: "w", route: "r", result: .malformed(reason: "x"), body: body)
            #expect(try SpoolRecord(line: Array(record.encoded().dropLast())).body == body)
        }
    }
}
