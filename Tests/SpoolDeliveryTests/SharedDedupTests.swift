import Basics
import Foundation
import PostbackClient
import PostbackStore
import TestSupport
import Testing

@testable import SpoolDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// `shared_dedup_days`: a receiver that starts after others shipped knows their keys (a device's
/// retry that lands on it is answered 200 and not stored again), and its own segments removed
/// locally after retention are known again from the bucket.
@Suite(
    "receivers sharing a bucket dedup live against each other's shipped keys", .serialized,
    .enabled(if: ObjectStoreServer.available))
struct SharedDedupTests {
    @Test func aReceiverStartedLaterKnowsTheKeysOthersShipped() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let first = try TestServer(writerID: "rx-1", shipping: .init(store: store, prefix: "dedup"))
        for index in 0..<30 { #expect(try first.post(TestPostbacks.body(index, seed: 6)).status == 200) }
        let client = try store.client(prefix: "dedup/")
        #expect(try eventually { try transactionCount(bucketObjects(client)) == 30 })

        let second = try TestServer(writerID: "rx-2", shipping: .init(store: store, prefix: "dedup"))
        #expect(
            second.logs.lines.withLock {
                $0.contains { $0.contains("dedup keys read from the object store") && $0.contains("\"keys\":30") }
            })
        // The same 30 postbacks retried at the second receiver, then 5 new ones: only the new are stored.
        for index in 0..<35 { #expect(try second.post(TestPostbacks.body(index, seed: 6)).status == 200) }
        #expect(try transactionCount(second.localSegments()) == 5)
        #expect(try duplicates(second) == 30)

        // The control: with shared_dedup_days 0 the same retries are stored again.
        let third = try TestServer(writerID: "rx-3", shipping: .init(store: store, prefix: "dedup", sharedDedupDays: 0))
        for index in 0..<3 { #expect(try third.post(TestPostbacks.body(index, seed: 6)).status == 200) }
        #expect(try transactionCount(third.localSegments()) == 3)
        first.stop()
        second.stop()
        third.stop()
    }

    @Test func ownSegmentsRemovedAfterRetentionAreKnownAgainFromTheBucket() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let directory = NSTemporaryDirectory() + "postback-shared-dedup-\(UUID().uuidString)"
        var receiver = try TestServer(
            dataDirectory: directory, writerID: "rx-r",
            shipping: .init(store: store, prefix: "retained", localRetentionSeconds: 0))
        for index in 0..<40 {
            #expect(try receiver.post(TestPostbacks.body(index, seed: 7)).status == 200)
            if index % 10 == 9 { usleep(300_000) }  // several segments, all but the newest removed
        }
        #expect(try eventually { try receiver.localSegments().keys.filter { $0.hasPrefix("raw/postbacks/") }.count == 1 })
        let keptLocally = try transactionCount(receiver.localSegments())
        #expect(keptLocally < 40)
        receiver.stop()

        receiver = try TestServer(
            dataDirectory: directory, writerID: "rx-r",
            shipping: .init(store: store, prefix: "retained", localRetentionSeconds: 0))
        for index in 0..<40 { #expect(try receiver.post(TestPostbacks.body(index, seed: 7)).status == 200) }
        #expect(try duplicates(receiver) == 40)
        receiver.stop()
    }

    @Test func anUnreachableStoreAtStartUpIsLoggedAndServingGoesOn() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        store.stop()
        let receiver = try TestServer(writerID: "rx-d", shipping: .init(store: store, prefix: "down"))
        #expect(receiver.logs.lines.withLock { $0.contains { $0.contains("cannot read other receivers' dedup keys") } })
        #expect(try receiver.post(TestPostbacks.body(0, seed: 8)).status == 200)
        #expect(try receiver.get("/readyz").status == 200)
        receiver.stop()
    }

    /// `postback_duplicates_total`, summed over its protocol labels.
    private func duplicates(_ receiver: TestServer) throws -> Double {
        try receiver.get("/metrics").text.split(separator: "\n").filter { $0.hasPrefix("postback_duplicates_total{") }
            .reduce(0) { $0 + (Double($1.split(separator: " ").last ?? "") ?? 0) }
    }

    /// The chunks of a download, fed to `LineSplitter` as `load` does.
    @Test func linesAreSplitWhateverTheChunkBounds() {
        let text = Array("{\"a\":1}\r\n{\"b\":2}\n\(String(repeating: "x", count: 50))\n{\"c\":3}\ntorn".utf8)
        for chunkSize in [1, 2, 3, 7, 64, text.count] {
            var splitter = LineSplitter(maximumLineBytes: 40, chunkBytes: 16)
            var lines: [String] = []
            var offset = 0
            while offset < text.count {
                let end = min(text.count, offset + chunkSize)
                text[offset..<end].withUnsafeBytes { chunk in
                    splitter.feed(chunk) { line in
                        // An over-long line (the 50 x's, over the 40 allowed here) is passed over.
                        if let bytes = line.bytes { lines.append(String(decoding: bytes, as: UTF8.self)) }
                    }
                }
                offset = end
            }
            // The CR before a newline is dropped, the torn tail is never a line.
            #expect(lines == ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"], "chunk size \(chunkSize)")
            #expect(splitter.bytesConsumed == text.count - "torn".utf8.count)
        }
    }
}
