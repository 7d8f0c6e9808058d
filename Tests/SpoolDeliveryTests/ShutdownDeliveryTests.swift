import Foundation
import PostbackClient
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `postback serve --ship-to` binary stopped with SIGTERM: it seals its open segment and
/// ships it before exiting (`shutdown_delivery_seconds`), so a receiver scaled down leaves nothing
/// behind; with the store down it gives up after that time and exits 0, the segments kept locally.
@Suite("SIGTERM ships the last segments before exit", .serialized, .enabled(if: ObjectStoreServer.available))
struct ShutdownDeliveryTests {
    /// A receiver whose segments are never sealed by age while it runs (300 s): only the shutdown
    /// seals them. Posts `count` postbacks, sends SIGTERM, waits for the exit; returns its exit
    /// status, how long the stop took, the data directory and the log.
    func postThenStop(
        store: ObjectStoreServer, prefix: String, count: Int, shutdownDeliverySeconds: Double?,
        beforeStop: () -> Void = {}
    ) throws -> (status: Int32, stopSeconds: Double, directory: String, log: String) {
        let directory = NSTemporaryDirectory() + "postback-shutdown-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(TestPostbacks.key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(directory)/test-key.pem"))
        let setting = shutdownDeliverySeconds.map { ", \"shutdown_delivery_seconds\": \($0)" } ?? ""
        try Data(
            """
            {"listen": "127.0.0.1:0", "data_dir": "data", "writer_id": "rx-stop", "allow_development": true,
             "trust_keys": ["test-key.pem"], "segment_max_age_seconds": 300, "shared_dedup_days": 0,
             "ship_to": "s3://\(store.bucket)/\(prefix)"\(setting)}
            """.utf8
        ).write(to: URL(fileURLWithPath: "\(directory)/config.json"))
        let (process, address) = try ShippingCrashTests().startReceiver(directory: directory, store: store, logName: "serve.log")
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        for index in 0..<count {
            let status = try HTTPClient(timeoutSeconds: 10).post(
                "http://\(address)/.well-known/skadnetwork/report-attribution/", body: TestPostbacks.body(index, seed: 7)
            ).status
            #expect(status == 200)
        }
        beforeStop()
        let started = Date()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let log = (try? String(contentsOfFile: "\(directory)/serve.log", encoding: .utf8)) ?? ""
        return (process.terminationStatus, Date().timeIntervalSince(started), directory, log)
    }

    /// The receiver's local segments of the verified spool: relative path → bytes.
    func localPostbackSegments(_ directory: String) throws -> [String: [UInt8]] {
        let root = "\(directory)/data"
        var segments: [String: [UInt8]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: "\(root)/raw/postbacks")
        while let next = enumerator?.nextObject() as? String {
            guard next.hasSuffix(".jsonl") else { continue }
            segments["raw/postbacks/\(next)"] = Array(try Data(contentsOf: URL(fileURLWithPath: "\(root)/raw/postbacks/\(next)")))
        }
        return segments
    }

    @Test func sigtermShipsTheOpenSegmentBeforeExiting() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let run = try postThenStop(store: store, prefix: "stopped", count: 40, shutdownDeliverySeconds: nil)
        #expect(run.status == 0)
        let local = try localPostbackSegments(run.directory)
        let shipped = try bucketObjects(try store.client(prefix: "stopped/"), under: "raw/postbacks/")
        #expect(transactionCount(local) == 40)
        #expect(shipped == local, "bucket: \(shipped.keys.sorted()), local: \(local.keys.sorted())")
        #expect(run.log.contains("every sealed segment delivered before exit"))
    }

    /// The control: with the setting at 0 the same run leaves the segment on local disk only.
    @Test func withZeroSecondsNothingIsShippedAtExit() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let run = try postThenStop(store: store, prefix: "kept", count: 10, shutdownDeliverySeconds: 0)
        #expect(run.status == 0)
        #expect(transactionCount(try localPostbackSegments(run.directory)) == 10)
        #expect(try bucketObjects(try store.client(prefix: "kept/"), under: "raw/postbacks/").isEmpty)
        #expect(!run.log.contains("delivering the sealed segments before exit"))
    }

    /// The store down at shutdown: the receiver retries for the configured time, says what it left,
    /// exits 0, and the segments are still on local disk for the next start.
    @Test func storeDownAtShutdownGivesUpInTimeAndKeepsTheSegments() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let run = try postThenStop(store: store, prefix: "down", count: 10, shutdownDeliverySeconds: 2) { store.stop() }
        #expect(run.status == 0)
        #expect(run.stopSeconds >= 2 && run.stopSeconds < 30, "stop took \(run.stopSeconds) s")
        #expect(run.log.contains("segments not delivered before exit"))
        #expect(transactionCount(try localPostbackSegments(run.directory)) == 10)
    }

    /// Forwarding takes the same path: a SIGTERM forwards the open segment's postbacks before exit.
    @Test func sigtermForwardsTheOpenSegmentBeforeExiting() throws {
        let partner = try PartnerServer()
        let directory = NSTemporaryDirectory() + "postback-shutdown-forward-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(TestPostbacks.key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(directory)/test-key.pem"))
        try Data(
            """
            {"listen": "127.0.0.1:0", "data_dir": "data", "writer_id": "rx-stop-forward", "allow_development": true,
             "trust_keys": ["test-key.pem"], "segment_max_age_seconds": 300,
             "forward": [{"name": "partner", "url": "\(partner.url)"}]}
            """.utf8
        ).write(to: URL(fileURLWithPath: "\(directory)/config.json"))
        let (process, address) = try ShippingCrashTests().startReceiver(
            directory: directory, environment: [:], logName: "serve.log")
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        for index in 0..<20 {
            let status = try HTTPClient(timeoutSeconds: 10).post(
                "http://\(address)/.well-known/skadnetwork/report-attribution/", body: TestPostbacks.body(index, seed: 8)
            ).status
            #expect(status == 200)
        }
        #expect(partner.requests.isEmpty)  // nothing sealed yet: nothing forwarded while it runs
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let stored = try verifiedRecords("\(directory)/data").compactMap(\.dedupKey)
        #expect(stored.count == 20)
        #expect(Set(partner.acceptedKeys.keys) == Set(stored))
    }
}
