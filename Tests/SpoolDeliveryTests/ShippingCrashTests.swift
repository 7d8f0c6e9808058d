import Foundation
import PostbackClient
import PostbackCrypto
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `postback serve --ship-to` binary killed with SIGKILL while it uploads, then restarted:
/// every acknowledged postback ends up in the bucket, and no object is ever written with other bytes.
@Suite("kill -9 of a shipping receiver", .serialized, .enabled(if: ObjectStoreServer.available))
struct ShippingCrashTests {
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("postback").path
    }

    /// Starts the binary; returns it and its address.
    func startReceiver(directory: String, store: ObjectStoreServer, logName: String) throws -> (Process, String) {
        try startReceiver(directory: directory, environment: store.environment, logName: logName)
    }

    /// Starts the binary with `environment` added to this process's.
    func startReceiver(directory: String, environment: [String: String], logName: String) throws -> (Process, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--config", "\(directory)/config.json", "--log-level", "debug"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let logPath = "\(directory)/\(logName)"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        process.currentDirectoryURL = URL(fileURLWithPath: directory)  // data_dir "data" is relative
        try process.run()
        var address: Substring?
        _ = eventually(30) {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            address = log.firstMatch(of: /"msg":"listening","address":"(127\.0\.0\.1:\d+)"/)?.output.1
            return address != nil
        }
        guard let address else { throw TestFailure("the receiver did not start: see \(logPath)") }
        return (process, String(address))
    }

    func pendingSegments(_ address: String) -> Double? {
        guard let text = try? HTTPClient(timeoutSeconds: 5).get("http://\(address)/metrics").text else { return nil }
        let series = "postback_delivery_pending_segments{destination=\"s3\",spool=\"postbacks\"} "
        return text.split(separator: "\n").first { $0.hasPrefix(series) }.flatMap { Double($0.dropFirst(series.count)) }
    }

    @Test func killedMidUploadThenRestartedShipsEverythingOnce() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            Issue.record("postback binary not found at \(Self.binary); run `swift build` first")
            return
        }
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let directory = NSTemporaryDirectory() + "postback-kill-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(TestPostbacks.key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(directory)/test-key.pem"))
        // Small segments sealed every 0.1 s: uploads are in progress nearly all the time.
        try Data(
            """
            {"listen": "127.0.0.1:0", "data_dir": "data", "writer_id": "rx-kill", "allow_development": true,
             "trust_keys": ["test-key.pem"], "segment_bytes": 16384, "segment_max_age_seconds": 0.1,
             "ship_to": "s3://\(store.bucket)/killed"}
            """.utf8
        ).write(to: URL(fileURLWithPath: "\(directory)/config.json"))

        let client = try store.client(prefix: "killed/")
        var (process, address) = try startReceiver(directory: directory, store: store, logName: "first.log")
        var acknowledged = 0
        for index in 0..<300 {
            if (try? HTTPClient(timeoutSeconds: 5).post(
                "http://\(address)/.well-known/skadnetwork/report-attribution/",
                body: TestPostbacks.body(index, seed: 99)
            ).status) == 200 {
                acknowledged += 1
            }
            if index == 150 {
                // Let shipping begin (the first scan runs 2 s after start).
                _ = eventually(10) { ((try? client.list(relativePrefix: "raw/postbacks/").count) ?? 0) > 0 }
            }
            if index == 250 {
                // Mid-flight: shipping has begun and is still going.
                kill(process.processIdentifier, SIGKILL)
                break
            }
        }
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let shippedBeforeKill = try client.list(relativePrefix: "raw/postbacks/").count
        #expect(shippedBeforeKill > 0)

        (process, address) = try startReceiver(directory: directory, store: store, logName: "second.log")
        defer { if process.isRunning { process.terminate() } }
        // No new postbacks after the restart, so every local segment is sealed and must reach the bucket.
        var local: [String: [UInt8]] = [:]
        var objects: [String: [UInt8]] = [:]
        let root = "\(directory)/data"
        let converged = try eventually(60) {
            local = [:]
            for spool in ["raw/postbacks", "raw/rejected"] {
                let enumerator = FileManager.default.enumerator(atPath: "\(root)/\(spool)")
                while let next = enumerator?.nextObject() as? String {
                    guard next.hasSuffix(".jsonl") else { continue }
                    local["\(spool)/\(next)"] = Array(try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(spool)/\(next)")))
                }
            }
            objects = try bucketObjects(client)
            return !local.isEmpty && objects == local
        }
        #expect(converged, "bucket: \(objects.keys.sorted()), local: \(local.keys.sorted())")
        #expect(pendingSegments(address) == 0)
        process.terminate()
        process.waitUntilExit()
        #expect(transactionCount(objects) >= acknowledged)
        let logs = (try? String(contentsOfFile: "\(directory)/second.log", encoding: .utf8)) ?? ""
        #expect(!logs.contains("different bytes"))
    }
}
