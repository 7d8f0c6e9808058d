import Basics
import Foundation
import PostbackClient
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `postback serve` forwarding to a slow partner, killed with SIGKILL while it delivers,
/// then restarted: every acknowledged postback reaches the partner, repeats carry the same
/// Idempotency-Key and the same bytes, and the API key is in neither logs nor metrics.
@Suite("kill -9 of a forwarding receiver", .serialized)
struct ForwardingCrashTests {
    @Test func killedMidDeliveryThenRestartedLosesNothing() throws {
        let binary = ShippingCrashTests.binary
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            Issue.record("postback binary not found at \(binary); run `swift build` first")
            return
        }
        let partner = try PartnerServer()
        try partner.setDefault("hang:0.01")  // a partner taking 10 ms per postback: deliveries are always in flight
        let apiKey = "pk_\(UUID().uuidString)"
        let directory = NSTemporaryDirectory() + "postback-forward-kill-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(TestPostbacks.key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(directory)/test-key.pem"))
        try Data("\(apiKey)\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/partner.key"))
        try Data(
            """
            {"listen": "127.0.0.1:0", "data_dir": "data", "writer_id": "rx-fwd-kill", "allow_development": true,
             "trust_keys": ["test-key.pem"], "segment_bytes": 16384, "segment_max_age_seconds": 0.1,
             "forward": [{"name": "partner", "url": "\(partner.url)", "concurrency": 2, "timeout_seconds": 5,
                          "headers": {"X-Api-Key": {"file": "partner.key"}}}]}
            """.utf8
        ).write(to: URL(fileURLWithPath: "\(directory)/config.json"))
        let crash = ShippingCrashTests()
        var (process, address) = try crash.startReceiver(directory: directory, environment: [:], logName: "first.log")
        var acknowledged = 0
        for index in 0..<300 {
            if (try? HTTPClient(timeoutSeconds: 5).post(
                "http://\(address)/.well-known/skadnetwork/report-attribution/",
                body: TestPostbacks.body(index, seed: 1818)
            ).status) == 200 {
                acknowledged += 1
            }
            if index == 150 { _ = eventually(20) { !partner.acceptedKeys.isEmpty } }
            if index == 250 { break }
        }
        let beforeKill = partner.requests.count
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(beforeKill > 0)

        (process, address) = try crash.startReceiver(directory: directory, environment: [:], logName: "second.log")
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let records = try verifiedRecords("\(directory)/data")
        #expect(records.count == acknowledged)
        let bodies = Dictionary(records.map { ($0.dedupKey!, $0.body) }) { first, _ in first }
        let delivered = eventually(90) { Set(partner.acceptedKeys.keys).isSuperset(of: bodies.keys) }
        #expect(delivered, "partner holds \(partner.acceptedKeys.count) of \(bodies.count)")
        let requests = partner.requests
        #expect(
            requests.allSatisfy { bodies[$0.idempotencyKey ?? ""] == $0.body }, "a repeat is the same postback under the same key"
        )
        #expect(requests.allSatisfy { $0.headers["x-api-key"] == apiKey })
        let metrics = (try? HTTPClient(timeoutSeconds: 5).get("http://\(address)/metrics").text) ?? ""
        #expect(metrics.contains("postback_forward_delivered_total{destination=\"forward-partner\"}"))
        #expect(!metrics.contains(apiKey))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        for log in ["first.log", "second.log"] {
            let text = (try? String(contentsOfFile: "\(directory)/\(log)", encoding: .utf8)) ?? ""
            #expect(text.contains("forwarding verified postbacks"))
            #expect(!text.contains(apiKey))
        }
        let repeats = partner.acceptedKeys.values.filter { $0 > 1 }.count
        print(
            "forwarding kill -9: \(acknowledged) acknowledged, \(requests.count) requests, \(repeats) postbacks sent twice (same key)"
        )
    }
}
