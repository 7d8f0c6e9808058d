import Foundation
import PostbackClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("S3 client against a real SeaweedFS", .serialized, .enabled(if: ObjectStoreServer.available))
struct S3ClientTests {
    /// The client's own error, thrown again as such (a test that expects nothing else fails on any other).
    private static func typed(_ body: () throws -> Void) throws(ClientError) {
        do { try body() } catch let error as ClientError { throw error } catch {
            Issue.record("not a ClientError: \(error)")
        }
    }

    @Test func putGetListHeadDeleteWithHiveKeys() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let client = try store.client(prefix: "store/one")
        // '=', spaces, '+' and non-ASCII must all be encoded the way SigV4 canonicalizes them.
        let keys = [
            "raw/postbacks/dt=2026-01-01/part-rx1-000001.jsonl", "agg/campaign_daily/dt=2026-01-01/part-00000.csv",
            "odd/a b+c~d/é.txt",
        ]
        for (position, key) in keys.enumerated() {
            let bytes = Array("object \(position)\n".utf8)
            try client.putBytes(relativeKey: key, bytes: bytes, checksumSHA256: checksum(bytes))
            #expect(try client.getBytes(relativeKey: key) == bytes)
            #expect(try client.head(relativeKey: key) == S3Client.ObjectHead(size: bytes.count, checksumSHA256: checksum(bytes)))
        }
        #expect(try client.list(relativePrefix: "").map(\.relativeKey) == keys.sorted())
        #expect(try client.list(relativePrefix: "raw/postbacks/dt=2026-01-01/").map(\.relativeKey) == [keys[0]])
        // Another prefix of the same bucket sees none of them.
        #expect(try store.client(prefix: "store/two").list(relativePrefix: "").isEmpty)
        try client.delete(relativeKey: keys[2])
        #expect(try client.head(relativeKey: keys[2]) == nil)
        #expect(try client.getBytes(relativeKey: keys[2]) == nil)
    }

    @Test func listingFollowsContinuationTokens() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let client = try store.client(prefix: "paged")
        let keys = (0..<23).map { "raw/postbacks/dt=2026-02-0\($0 % 3 + 1)/part-w-\(String(format: "%06d", $0)).jsonl" }
        for key in keys {
            try client.putBytes(relativeKey: key, bytes: Array(key.utf8), checksumSHA256: checksum(Array(key.utf8)))
        }
        let listed = try client.list(relativePrefix: "raw/", pageSize: 5)
        #expect(listed.map(\.relativeKey) == keys.sorted())
        #expect(listed.allSatisfy { $0.size == $0.relativeKey.utf8.count })
    }

    @Test func storeVerifiesChecksumAndConditionalCreate() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let client = try store.client()
        let bytes = Array("the real bytes\n".utf8)
        let mismatch = #expect(throws: ClientError.self) {
            try client.putBytes(relativeKey: "k", bytes: bytes, checksumSHA256: checksum(Array("other bytes".utf8)))
        }
        #expect(mismatch?.code == .status && mismatch?.status == 400, "\(String(describing: mismatch))")
        #expect(try client.head(relativeKey: "k") == nil)
        try client.putBytes(relativeKey: "k", bytes: bytes, checksumSHA256: checksum(bytes), createOnly: true)
        let other = Array("different\n".utf8)
        let exists = #expect(throws: ClientError.self) {
            try client.putBytes(relativeKey: "k", bytes: other, checksumSHA256: checksum(other), createOnly: true)
        }
        #expect(exists?.code == .alreadyExists && exists?.target == "k")
        #expect(try client.getBytes(relativeKey: "k") == bytes)
    }

    @Test func streamsLargeObjectsBothWays() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        let client = try store.client()
        var bytes = [UInt8](repeating: 0, count: 9 << 20)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
        let path = NSTemporaryDirectory() + "s3-large-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { unlink(path) }
        try client.putFile(
            relativeKey: "big.bin", path: path, size: bytes.count, checksumSHA256: checksum(bytes), createOnly: true)
        var chunks = 0
        var received: [UInt8] = []
        #expect(
            try client.get(relativeKey: "big.bin") { chunk in
                chunks += 1
                received.append(contentsOf: chunk)
                return true
            })
        #expect(received == bytes)
        #expect(chunks > 1)
    }

    @Test func wrongCredentialsAndMissingBucketSayWhatToFix() throws {
        let store = try ObjectStoreServer()
        defer { withExtendedLifetime(store) {} }  // the server lives until the test ends
        do throws(ClientError) {
            try Self.typed { try store.client(secret: "wrong").checkAccess() }
            Issue.record("wrong credentials were accepted")
        } catch {
            #expect(error.code == .status && error.status == 403)
            #expect(error.description.contains("403"))
            #expect(error.description.contains("AWS_SECRET_ACCESS_KEY"))
            #expect(!error.isTransient)
        }
        do throws(ClientError) {
            try Self.typed { try store.client(bucket: "no-such-bucket").checkAccess() }
            Issue.record("a missing bucket was accepted")
        } catch {
            #expect(error.code == .status && error.storeCode == "NoSuchBucket")
            #expect(error.description.contains("NoSuchBucket"))
            #expect(error.description.contains("create the bucket"))
        }
        store.stop()
        do throws(ClientError) {
            try Self.typed { try store.client().checkAccess() }
            Issue.record("a stopped store answered")
        } catch {
            #expect(error.code == .unreachable)
            #expect(error.isTransient)
        }
    }

    @Test func locationsAndSettingsParseLikeAWSTools() throws {
        #expect(try S3Location(url: "s3://acme-postback/store") == S3Location(bucket: "acme-postback", prefix: "store/"))
        #expect(try S3Location(url: "s3://acme-postback") == S3Location(bucket: "acme-postback", prefix: ""))
        for url in ["s3://Bad_Bucket/x", "/local/path"] {
            let error = #expect(throws: ClientError.self, "\(url)") { try S3Location(url: url) }
            #expect(error?.code == .configuration, "\(url)")
        }
        let aws = try S3Settings.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_DEFAULT_REGION": "eu-west-1",
        ])
        #expect(aws.endpoint == "https://s3.eu-west-1.amazonaws.com")
        #expect(aws.addressing == .virtual)
        let custom = try S3Settings.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000/",
            "AWS_SESSION_TOKEN": "t",
        ])
        #expect(custom.endpoint == "http://127.0.0.1:9000")
        #expect(custom.addressing == .path)
        #expect(custom.sessionToken == "t")
        let missing = #expect(throws: ClientError.self) { _ = try S3Settings.fromEnvironment([:]) }
        #expect(missing?.code == .configuration)
        #expect(missing?.description.contains("AWS_ACCESS_KEY_ID") == true)
        #expect(S3KeyEncoding.encode("raw/dt=2026-01-01/a b", keepSlash: true) == "raw/dt%3D2026-01-01/a%20b")
        #expect(S3KeyEncoding.encode("a/b", keepSlash: false) == "a%2Fb")
    }
}

/// A store that accepts connections (the kernel's backlog) and never answers: a stalled or
/// black-holed connection, no reset, no byte back.
@Suite("S3 client against a silent store")
struct S3ClientSilentStoreTests {
    @Test func aSilentConnectionIsAbandonedAtTheIdleLimitNotTheRequestLimit() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, generic, &length) == 0
            }
        }
        #expect(bound)
        var settings = S3Settings(
            endpoint: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))", region: "us-east-1", accessKeyID: "key",
            secretAccessKey: "secret")
        settings.timeoutSeconds = 120
        settings.idleTimeoutSeconds = 1
        let client = try S3Client(location: S3Location(url: "s3://bucket/prefix"), settings: settings)
        let bytes = Array("a sealed segment\n".utf8)
        // Before the idle limit, a PUT to a silent store waited for the whole request limit (300 s by
        // default), and shipping with it: libcurl's message says which limit ended it.
        let failure = #expect(throws: ClientError.self) {
            try client.putBytes(relativeKey: "k", bytes: bytes, checksumSHA256: checksum(bytes), createOnly: true)
        }
        guard let failure, failure.code == .unreachable else {
            Issue.record("expected the store to be unreachable, got \(String(describing: failure))")
            return
        }
        #expect(failure.message.contains("too slow"), "\(failure.message)")
        #expect(failure.isTransient)
    }

}
