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

/// A receiver on loopback that ships to the test's SeaweedFS, started the way `serve` starts it.
final class ShippingReceiver: @unchecked Sendable {
    static let key = try! ECDSAPrivateKey(generatingOn: .p256)
    static let signer = TestPostbackSigner(key: key)
    static let synthetic = SyntheticPostbacks(kinds: [.skan4_0, .aak, .skan3_0])

    let server: PostbackServer
    let worker: DeliveryService
    let dataDirectory: String
    let logs = LogCapture()

    init(
        store: ObjectStoreServer, prefix: String, writerID: String, dataDirectory: String? = nil,
        retentionSeconds: Double? = nil, sharedDedupDays: Int? = nil,
        backoff: Backoff = Backoff(initialSeconds: 0.05, maximumSeconds: 0.3)
    ) throws {
        let directory = dataDirectory ?? NSTemporaryDirectory() + "postback-ship-\(UUID().uuidString)"
        self.dataDirectory = directory
        var configuration = ServerConfiguration()
        configuration.listen = "127.0.0.1:0"
        configuration.dataDirectory = directory
        configuration.writerID = writerID
        configuration.allowsDevelopment = true
        configuration.testKeys = [TrustedTestKey(name: "test:shipping.pem", key: Self.key.publicKey)]
        configuration.threads = 2
        configuration.sections = ConfigurationSections(DeliveryConfiguration.sections)
        configuration.sections[ShippingConfiguration.self].shipTo = "s3://\(store.bucket)/\(prefix)"
        configuration.segmentMaxAgeSeconds = 0.2
        configuration.sections[ShippingConfiguration.self].localRetentionHours = retentionSeconds.map { $0 / 3600 }
        configuration.sections[ShippingConfiguration.self].sharedDedupDays = sharedDedupDays
        let log = logs.log
        let sharedKeys = try ServeShipping.sharedDedupKeys(configuration, log: log, environment: store.environment)
        let server = try PostbackServer.start(configuration: configuration, log: log, sharedDedupKeys: sharedKeys)
        self.server = server
        // The wiring `serve` uses (log lines, metrics), with a shorter scan interval and backoff.
        worker = try ServeShipping.start(
            server: server, log: log, environment: store.environment, scanIntervalSeconds: 0.1, backoff: backoff)!
    }

    func stop() {
        server.shutdown()
        worker.stop()
    }

    static func body(_ index: Int, seed: UInt64) -> [UInt8] { try! signer.sign(synthetic.postback(index, seed: seed)) }

    func post(_ body: [UInt8]) throws -> Int {
        try HTTPClient().post("http://127.0.0.1:\(server.port)/.well-known/skadnetwork/report-attribution/", body: body).status
    }

    func get(_ path: String) throws -> HTTPResponse { try HTTPClient().get("http://127.0.0.1:\(server.port)\(path)") }

    func metric(_ series: String) throws -> Double? {
        for line in try get("/metrics").text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// Every local segment of this receiver: relative path → bytes.
    func localSegments() throws -> [String: [UInt8]] {
        let layout = StoreLayout(root: dataDirectory)
        var segments: [String: [UInt8]] = [:]
        for spool in StoreLayout.Spool.allCases {
            for day in try layout.days(spool) {
                for segment in try layout.segments(spool, day: day) {
                    segments[String(segment.path.dropFirst(dataDirectory.count + 1))] = Array(
                        try Data(contentsOf: URL(fileURLWithPath: segment.path)))
                }
            }
        }
        return segments
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
        let receiver = try ShippingReceiver(store: store, prefix: "fleet", writerID: "rx-a")
        for index in 0..<60 { #expect(try receiver.post(ShippingReceiver.body(index, seed: 1)) == 200) }
        #expect(try receiver.post(Array("{\"not\": \"a postback\"}".utf8)) == 400)
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
        let receiver = try ShippingReceiver(store: store, prefix: "outage", writerID: "rx-b")
        for index in 0..<20 { #expect(try receiver.post(ShippingReceiver.body(index, seed: 2)) == 200) }
        let client = try store.client(prefix: "outage/")
        #expect(try eventually { try transactionCount(bucketObjects(client)) == 20 })
        store.stop()
        // Ingestion goes on while the store is down, /readyz stays ready, the backlog shows.
        for index in 20..<80 { #expect(try receiver.post(ShippingReceiver.body(index, seed: 2)) == 200) }
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
        var receiver = try ShippingReceiver(store: store, prefix: "crash", writerID: "rx-c", dataDirectory: directory)
        for index in 0..<30 { #expect(try receiver.post(ShippingReceiver.body(index, seed: 3)) == 200) }
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
        receiver = try ShippingReceiver(store: store, prefix: "crash", writerID: "rx-c", dataDirectory: directory)
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
        let first = try ShippingReceiver(store: store, prefix: "shared", writerID: "rx-1", retentionSeconds: 0)
        let second = try ShippingReceiver(store: store, prefix: "shared", writerID: "rx-2")
        for index in 0..<40 {
            #expect(try first.post(ShippingReceiver.body(index, seed: 4)) == 200)
            #expect(try second.post(ShippingReceiver.body(index, seed: 5)) == 200)
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
