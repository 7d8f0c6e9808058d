import Basics
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import SpoolDelivery
import TestSupport
import Testing

@testable import PostbackCLI

#if canImport(Glibc)
    import Glibc
#endif

extension TestServer.Shipping {
    /// Shipping to the test's SeaweedFS under `prefix`.
    init(store: ObjectStoreServer, prefix: String, localRetentionSeconds: Double? = nil, sharedDedupDays: Int? = nil) {
        self.init(
            url: "s3://\(store.bucket)/\(prefix)", environment: store.environment,
            localRetentionSeconds: localRetentionSeconds, sharedDedupDays: sharedDedupDays)
    }
}

/// Every object under `prefix`: relative key → bytes.
func bucketObjects(_ client: S3Client, under relativePrefix: String = "raw/") throws -> [String: [UInt8]] {
    var objects: [String: [UInt8]] = [:]
    for object in try client.list(relativePrefix: relativePrefix) {
        objects[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
    }
    return objects
}

/// The dedup keys of every record in the given segment bytes.
func transactionCount(_ segments: [String: [UInt8]], spool: String = "raw/postbacks/") -> Int {
    segments.filter { $0.key.hasPrefix(spool) }.values.reduce(0) { $0 + $1.filter { $0 == 0x0A }.count }
}

@Suite("serve ships sealed segments to a real SeaweedFS", .serialized, .enabled(if: ObjectStoreServer.available))
struct ServeShippingTests {
    @Test func shipsEverySealedSegmentByteForByte() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let receiver = try TestServer(writerID: "rx-a", shipping: .init(store: store, prefix: "fleet"))
        for index in 0..<60 { #expect(try receiver.post(TestPostbacks.body(index, seed: 1)).status == 200) }
        #expect(try receiver.post(Array("{\"not\": \"a postback\"}".utf8)).status == 400)
        let client = try store.client(prefix: "fleet/")
        // Sealed by age, then shipped: the bucket ends up holding exactly the local segments.
        let shipped = try eventually {
            try bucketObjects(client) == receiver.localSegments() && transactionCount(receiver.localSegments()) == 60
        }
        #expect(shipped)
        #expect(try bucketObjects(client).keys.contains { $0.hasPrefix("raw/rejected/dt=") })
        #expect(
            try eventually {
                try receiver.metric("postback_delivery_pending_segments{destination=\"s3\",spool=\"postbacks\"}") == 0
            })
        #expect(try receiver.metric("postback_delivery_destination_up{destination=\"s3\"}") == 1)
        #expect(try (receiver.metric("postback_delivery_segments_total{destination=\"s3\",spool=\"postbacks\"}") ?? 0) >= 1)
        receiver.stop()
    }

    @Test func storeDownThenBackLosesNothingAndStaysReady() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let receiver = try TestServer(writerID: "rx-b", shipping: .init(store: store, prefix: "outage"))
        for index in 0..<20 { #expect(try receiver.post(TestPostbacks.body(index, seed: 2)).status == 200) }
        let client = try store.client(prefix: "outage/")
        #expect(try eventually { try transactionCount(bucketObjects(client)) == 20 })
        store.stop()
        // Ingestion goes on while the store is down, /readyz stays ready, the backlog shows.
        for index in 20..<80 { #expect(try receiver.post(TestPostbacks.body(index, seed: 2)).status == 200) }
        #expect(try receiver.get("/readyz").status == 200)
        #expect(try eventually { try receiver.metric("postback_delivery_destination_up{destination=\"s3\"}") == 0 })
        #expect(
            try eventually {
                try (receiver.metric("postback_delivery_pending_segments{destination=\"s3\",spool=\"postbacks\"}") ?? 0) >= 1
            })
        #expect(try (receiver.metric("postback_delivery_errors_total{destination=\"s3\"}") ?? 0) >= 1)
        #expect(
            receiver.logs.lines.withLock {
                $0.contains { $0.contains("object store unavailable") && $0.contains("readyz stays ready") }
            })
        try store.start()
        let backlogShipped = try eventually(30) { try bucketObjects(client) == receiver.localSegments() }
        #expect(backlogShipped)
        #expect(try transactionCount(bucketObjects(client)) == 80)
        #expect(try eventually { try receiver.metric("postback_delivery_destination_up{destination=\"s3\"}") == 1 })
        #expect(receiver.logs.lines.withLock { $0.contains { $0.contains("object store available again") } })
        receiver.stop()
    }

    @Test func crashAfterUploadBeforeLedgerIsIdempotentAndConflictsAreNeverOverwritten() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let directory = NSTemporaryDirectory() + "postback-ship-\(UUID().uuidString)"
        var receiver = try TestServer(dataDirectory: directory, writerID: "rx-c", shipping: .init(store: store, prefix: "crash"))
        for index in 0..<30 { #expect(try receiver.post(TestPostbacks.body(index, seed: 3)).status == 200) }
        let client = try store.client(prefix: "crash/")
        #expect(try eventually { try bucketObjects(client) == receiver.localSegments() })
        receiver.stop()
        // The ledger lost (as if the process died after the uploads, before recording them): a
        // restart delivers the same segments again, finds them there with the same checksum, records them.
        let ledger = DeliveryLedger.path(root: directory, destination: "s3", writerID: "rx-c")
        #expect(unlink(ledger) == 0)
        // And one segment in the bucket replaced by different bytes behind the receiver's back.
        let local = try receiver.localSegments()
        let victim = local.keys.filter { $0.hasPrefix("raw/postbacks/") }.sorted().first!
        try client.delete(relativeKey: victim)
        let forged = Array("{\"forged\":true}\n".utf8)
        try client.putBytes(relativeKey: victim, bytes: forged, checksumSHA256: checksum(forged))
        receiver = try TestServer(dataDirectory: directory, writerID: "rx-c", shipping: .init(store: store, prefix: "crash"))
        #expect(try eventually { try receiver.metric("postback_delivery_conflicts{destination=\"s3\"}") == 1 })
        #expect(
            try eventually {
                try (receiver.metric("postback_delivery_segments_total{destination=\"s3\",spool=\"postbacks\"}") ?? 0)
                    + (receiver.metric("postback_delivery_segments_total{destination=\"s3\",spool=\"rejected\"}") ?? 0)
                    == Double(local.count - 1)
            })
        #expect(try client.getBytes(relativeKey: victim) == forged)
        #expect(FileManager.default.fileExists(atPath: directory + "/" + victim))
        #expect(receiver.logs.lines.withLock { $0.contains { $0.contains(victim) && $0.contains("different bytes") } })
        receiver.stop()
    }

    @Test func twoReceiversShareOneBucketAndRetentionKeepsTheNewest() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let first = try TestServer(writerID: "rx-1", shipping: .init(store: store, prefix: "shared", localRetentionSeconds: 0))
        let second = try TestServer(writerID: "rx-2", shipping: .init(store: store, prefix: "shared"))
        for index in 0..<40 {
            #expect(try first.post(TestPostbacks.body(index, seed: 4)).status == 200)
            #expect(try second.post(TestPostbacks.body(index, seed: 5)).status == 200)
            if index % 10 == 9 { usleep(300_000) }  // several segments each
        }
        let client = try store.client(prefix: "shared/")
        #expect(try eventually { try transactionCount(bucketObjects(client)) == 80 })
        let objects = try bucketObjects(client)
        #expect(objects.keys.contains { $0.contains("part-rx-1-") } && objects.keys.contains { $0.contains("part-rx-2-") })
        #expect(transactionCount(objects.filter { $0.key.contains("part-rx-1-") }) == 40)
        // Retention 0 removed the first receiver's shipped segments, all but the newest of each spool.
        #expect(try eventually { try first.localSegments().keys.filter { $0.hasPrefix("raw/postbacks/") }.count == 1 })
        #expect(try (first.metric("postback_delivery_local_removed_total{destination=\"s3\"}") ?? 0) >= 1)
        first.stop()
        second.stop()
    }
}
