import Foundation
import PostbackClient
import PostbackCrypto
import TestSupport
import Testing

@testable import PostbackCLI

#if canImport(Glibc)
    import Glibc
#endif

/// `aggregate` and `report` with `--data s3://…`, against a real SeaweedFS, compared with the same
/// commands over the same segments on local disk.
@Suite("aggregate and report from a bucket", .serialized, .enabled(if: ObjectStoreServer.available))
struct ObjectStoreJobTests {
    static let schemas = ObjectStoreServer.repository + "/Samples/schemas"

    func useStore(_ store: ObjectStoreServer) {
        for (name, value) in store.environment { setenv(name, value, 1) }
    }

    /// Relative path → bytes of every regular file under `root/relative`, hidden and work files left out.
    func files(_ root: String, under relative: String) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root + "/" + relative)
        while let next = enumerator?.nextObject() as? String {
            let path = root + "/" + relative + "/" + next
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                !next.split(separator: "/").contains(where: { $0.hasPrefix(".") || $0 == "_work" })
            else { continue }
            result[relative + "/" + next] = Array(try! Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return result
    }

    /// A synthetic spool on disk, uploaded to the bucket under `prefix` unchanged.
    func spool(_ store: ObjectStoreServer, prefix: String) throws -> String {
        let local = NSTemporaryDirectory() + "postback-agg-local-\(UUID().uuidString)"
        let made = run([
            "aggregate", "synthesize", "--data", local, "--from", "2026-03-01", "--days", "4", "--per-day", "3000",
            "--segment-mb", "1", "--duplicate-percent", "5", "--seed", "7",
        ])
        #expect(made.status == .success, "\(made.stderr)")
        let client = try store.client(prefix: prefix)
        for (relative, bytes) in files(local, under: "raw") {
            try client.putBytes(relativeKey: relative, bytes: bytes, checksumSHA256: checksum(bytes))
        }
        return local
    }

    @Test func aggregateFromTheBucketIsByteIdenticalToALocalRun() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        useStore(store)
        let local = try spool(store, prefix: "acme/store")
        let url = "s3://\(store.bucket)/acme/store"
        let range = [
            "--from", "2026-03-02", "--to", "2026-03-04", "--lookback-days", "1", "--schemas", Self.schemas, "--jobs", "2",
        ]
        let localRun = run(["aggregate", "--data", local] + range)
        #expect(localRun.status == .success, "\(localRun.stderr)")
        let bucketRun = run(["aggregate", "--data", url] + range)
        #expect(bucketRun.status == .success, "\(bucketRun.stderr)")
        #expect(bucketRun.stdout.split(separator: "\n").count == 3)

        let client = try store.client(prefix: "acme/store/")
        var published: [String: [UInt8]] = [:]
        for object in try client.list(relativePrefix: "agg/") {
            published[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
        }
        let expected = files(local, under: "agg")
        #expect(!expected.isEmpty)
        #expect(published.keys.sorted() == expected.keys.sorted())
        let identical = published == expected
        #expect(identical)
        #expect(try client.head(relativeKey: ObjectStoreJobs.leaseKey) == nil)

        // The report from the bucket is the report from the local store.
        let localPage = NSTemporaryDirectory() + "report-local-\(UUID().uuidString).html"
        let bucketPage = NSTemporaryDirectory() + "report-bucket-\(UUID().uuidString).html"
        let localReport = run(["report", "--data", local, "--from", "2026-03-02", "--to", "2026-03-04", "--out", localPage])
        let bucketReport = run(["report", "--data", url, "--from", "2026-03-02", "--to", "2026-03-04", "--out", bucketPage])
        #expect(localReport.status == .success, "\(localReport.stderr)")
        #expect(bucketReport.status == .success, "\(bucketReport.stderr)")
        let samePage = try Data(contentsOf: URL(fileURLWithPath: localPage)) == Data(contentsOf: URL(fileURLWithPath: bucketPage))
        #expect(samePage)

        // A rerun changes nothing (and uploads nothing: unchanged objects are left alone).
        let again = run(["aggregate", "--data", url] + range)
        #expect(again.status == .success, "\(again.stderr)")
        var republished: [String: [UInt8]] = [:]
        for object in try client.list(relativePrefix: "agg/") {
            republished[object.relativeKey] = try client.getBytes(relativeKey: object.relativeKey)
        }
        let unchanged = republished == expected
        #expect(unchanged)
    }

    @Test func aSecondJobIsStoppedByTheLeaseAndMistakesAreClear() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        useStore(store)
        _ = try spool(store, prefix: "leased")
        let url = "s3://\(store.bucket)/leased"
        let client = try store.client(prefix: "leased/")
        // Another job's live lease.
        let lease = Array(
            "{\"holder\":\"other-host:42\",\"acquired\":\(Int(Date().timeIntervalSince1970)),\"expires\":\(Int(Date().timeIntervalSince1970) + 3600)}\n"
                .utf8)
        try client.putBytes(relativeKey: ObjectStoreJobs.leaseKey, bytes: lease, checksumSHA256: checksum(lease))
        let blocked = run(["aggregate", "--data", url, "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(blocked.status == .usageOrIOError)
        #expect(blocked.stderr.contains("another aggregate job holds") && blocked.stderr.contains("other-host:42"))
        #expect(try client.list(relativePrefix: "agg/").map(\.relativeKey) == [ObjectStoreJobs.leaseKey])
        // An expired lease (its job died) is taken over, and released at the end.
        let stale = Array("{\"holder\":\"dead:1\",\"acquired\":1,\"expires\":2}\n".utf8)
        try client.putBytes(relativeKey: ObjectStoreJobs.leaseKey, bytes: stale, checksumSHA256: checksum(stale))
        let takeover = run(["aggregate", "--data", url, "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(takeover.status == .success, "\(takeover.stderr)")
        #expect(try client.head(relativeKey: ObjectStoreJobs.leaseKey) == nil)
        #expect(try client.head(relativeKey: "agg/_manifests/dt=2026-03-02.json") != nil)

        // A prefix with no spool, a missing bucket, wrong credentials: clear errors, nothing written.
        let empty = run(["aggregate", "--data", "s3://\(store.bucket)/typo", "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(empty.status == .usageOrIOError)
        #expect(empty.stderr.contains("holds no spool"))
        #expect(try store.client(prefix: "typo/").list(relativePrefix: "").isEmpty)
        let missing = run(["aggregate", "--data", "s3://no-such-bucket/x", "--date", "2026-03-02", "--schemas", Self.schemas])
        #expect(missing.stderr.contains("NoSuchBucket"))
        setenv("AWS_SECRET_ACCESS_KEY", "wrong", 1)
        let denied = run(["report", "--data", url, "--date", "2026-03-02", "--out", NSTemporaryDirectory() + "denied.html"])
        #expect(denied.status == .usageOrIOError)
        #expect(denied.stderr.contains("403") && denied.stderr.contains("AWS_SECRET_ACCESS_KEY"))
    }
}
