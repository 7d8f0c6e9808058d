import Basics
import Foundation
import PostbackClient
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

/// scripts/partner-server: a partner's postback API on loopback whose answers the test scripts
/// (500, 429 + Retry-After, 400, hang, close) and which records every request it gets.
final class PartnerServer: @unchecked Sendable {
    struct Request {
        let time: Double
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
        var idempotencyKey: String? { headers["idempotency-key"] }
    }

    let process = Process()
    let recordFile: String
    let port: Int
    var url: String { "http://127.0.0.1:\(port)/skan/postbacks" }

    init() throws {
        recordFile = NSTemporaryDirectory() + "partner-\(UUID().uuidString).jsonl"
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [ObjectStoreServer.repository + "/scripts/partner-server", recordFile]
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw TestFailure("scripts/partner-server did not print its port: \(line)")
        }
        self.port = port
    }

    deinit {
        // SIGKILL: the test process blocks most signals, and a child inherits that mask (SIGTERM would wait forever).
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        unlink(recordFile)
    }

    /// The next answers, one per request (then 200 again, or the default).
    func script(_ actions: [String]) throws {
        let body = Array(try JSONSerialization.data(withJSONObject: actions))
        _ = try HTTPClient().post("http://127.0.0.1:\(port)/_script", body: body)
    }

    /// The answer when the script is empty: "500" for an outage, "ok" to end it.
    func setDefault(_ action: String) throws {
        _ = try HTTPClient().post("http://127.0.0.1:\(port)/_default", body: Array("\"\(action)\"".utf8))
    }

    /// The most postback requests the partner was answering at once.
    func maxInFlight() throws -> Int {
        Int(try HTTPClient().get("http://127.0.0.1:\(port)/_max_in_flight").text) ?? 0
    }

    /// Connections that carried a postback request.
    func connections() throws -> Int {
        Int(try HTTPClient().get("http://127.0.0.1:\(port)/_connections").text) ?? 0
    }

    var requests: [Request] {
        let text = (try? String(contentsOfFile: recordFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let body = (object["body"] as? String ?? "").unicodeScalars.map { UInt8($0.value) }
            return Request(
                time: object["time"] as? Double ?? 0, status: object["status"] as? Int ?? 0,
                headers: object["headers"] as? [String: String] ?? [:], body: body)
        }
    }

    /// Idempotency keys the partner answered 2xx for, with how often.
    var acceptedKeys: [String: Int] {
        var keys: [String: Int] = [:]
        for request in requests where (200..<300).contains(request.status) { keys[request.idempotencyKey ?? "", default: 0] += 1 }
        return keys
    }
}

/// Every verified record in a receiver's data directory.
func verifiedRecords(_ root: String) throws -> [SpoolRecord] {
    let layout = StoreLayout(root: root)
    var records: [SpoolRecord] = []
    for day in try layout.days(.postbacks) {
        for segment in try layout.segments(.postbacks, day: day) {
            let reader = try SegmentReader(path: segment.path)
            while let entry = try reader.next() { if case .record(let record, _) = entry { records.append(record) } }
        }
    }
    return records
}
