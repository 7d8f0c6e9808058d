import Basics
import Foundation
import PostbackClient
import PostbackServer
import PostbackStore
import Postbacks
import TestSupport
import Testing

/// Every route and status: what HTTP itself decides against the real server, what the policy
/// stores and answers in process (`InProcessReceiver`, the same store and executor).
@Suite struct ReceiverRoutesTests {
    @Test func verifiedPostbackIsStoredAndAnswered200() throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestPostbacks.body(0, seed: 11)
        let response = try server.post(body)
        #expect(response.status == 200)
        #expect(response.contentType == "application/json")
        #expect(response.text.contains(#""status":"stored""#))

        let records = try server.records(.postbacks)
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record.body == body, "the body is stored byte for byte")
        #expect(record.status == .verified)
        #expect(record.environment == .development, "test-key postbacks are always development")
        #expect(record.route == "skadnetwork-developer-copy")
        #expect(record.writer == "test")
        #expect(record.keyName == "test:server-tests.pem")
        #expect(record.dedupKey != nil)
        #expect(record.attribution != nil)
        #expect(try server.records(.rejected).isEmpty)
    }

    @Test func everyPostbackPathWithAndWithoutTrailingSlash() throws {
        let server = try TestServer { $0.adNetworkPath = "/network/postbacks" }
        defer { server.stop() }
        let paths = [
            ("/.well-known/skadnetwork/report-attribution/", "skadnetwork-developer-copy"),
            ("/.well-known/skadnetwork/report-attribution", "skadnetwork-developer-copy"),
            ("/.well-known/appattribution/report-attribution/", "appattribution-developer-copy"),
            ("/.well-known/appattribution/report-attribution", "appattribution-developer-copy"),
            ("/network/postbacks", "ad-network"),
            ("/network/postbacks/", "ad-network"),
        ]
        for (index, (path, _)) in paths.enumerated() {
            let response = try server.post(TestPostbacks.body(index, seed: 12), to: server.base + path)
            #expect(response.status == 200, "\(path)")
        }
        let routes = try server.records(.postbacks).map(\.route)
        #expect(routes == paths.map(\.1))
    }

    @Test func duplicateIsAnswered200AndStoredOnceWithTheFirstValues() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let id = UUID().uuidString.lowercased()
        let first = TestPostbacks.skan4(transactionID: id, conversionValue: 10)
        // The conversion value is not signed: a replay with another value still verifies.
        let replay = TestPostbacks.skan4(transactionID: id, conversionValue: 42)
        #expect(try server.post(first).status == 200)
        let again = try server.post(first)
        #expect(again.status == 200)
        #expect(again.text.contains(#""status":"duplicate""#))
        let conflicting = try server.post(replay)
        #expect(conflicting.status == 200)
        let records = try server.records(.postbacks)
        #expect(records.count == 1)
        #expect(records.first?.attribution?.fineValue == 10, "the first copy wins")
        #expect(try server.metric(#"postback_duplicates_total{protocol="skadnetwork"}"#) == 2)
    }

    @Test func concurrentIdenticalPostbacksAreStoredOnce() throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestPostbacks.body(0, seed: 13)
        let url = server.skadnetworkURL
        let statuses = concurrently(24) { _ in (try? HTTPClient().post(url, body: body))?.status ?? -1 }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(try server.records(.postbacks).count == 1)
        #expect(try server.metric(#"postback_duplicates_total{protocol="skadnetwork"}"#) == 23)
    }

    @Test func manyConcurrentUniquePostbacksAreAllStored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let bodies = (0..<200).map { TestPostbacks.body($0, seed: 14) }
        let statuses = postConcurrently(bodies, to: server.skadnetworkURL, workers: 8)
        #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 })
        let stored = try server.records(.postbacks)
        #expect(stored.count == 200)
        #expect(Set(stored.map(\.body)) == Set(bodies))
        // Group commit: fewer syncs than postbacks is expected under concurrency, never more.
        let syncs = try #require(try server.metric("postback_fsync_duration_seconds_count"))
        #expect(syncs >= 1 && syncs <= 200)
    }

    @Test func malformedBodyGets400ProblemAndIsKeptInTheRejectedStore() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let body = Array(#"{"version":"4.0","ad-network-id":"x"#.utf8)
        let response = try server.post(body, to: server.appAttributionURL)
        #expect(response.status == 400)
        #expect(response.contentType == "application/problem+json")
        guard case .object(let problem) = try StrictJSONParser.parse(response.body) else {
            Issue.record("not an object")
            return
        }
        #expect(problem["type"] == .string("urn:postback:problem:malformed"))
        #expect(problem["status"].flatMap { if case .number(let n) = $0 { return n.text } else { return nil } } == "400")
        #expect(problem["title"] != nil)
        #expect(problem["verdict"] == .string("malformed"))
        let rejected = try server.records(.rejected)
        #expect(rejected.count == 1)
        #expect(rejected.first?.body == body)
        #expect(rejected.first?.status == .malformed)
        #expect(rejected.first?.route == "appattribution-developer-copy")
        #expect(rejected.first?.reason?.isEmpty == false)
        #expect(try server.records(.postbacks).isEmpty)
    }

    @Test func badSignatureGets400AndIsRejected() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        // Change a signed field: the signature no longer covers the message.
        let good = String(
            decoding: TestPostbacks.skan4(transactionID: UUID().uuidString.lowercased(), conversionValue: 1), as: UTF8.self)
        let forged = Array(
            good.replacingOccurrences(of: #""source-identifier":"1234""#, with: #""source-identifier":"1235""#).utf8)
        let response = try server.post(forged)
        #expect(response.status == 400)
        #expect(response.text.contains("urn:postback:problem:invalid-signature"))
        let rejected = try server.records(.rejected)
        #expect(rejected.map(\.status) == [.invalidSignature])
        #expect(rejected.first?.reason?.contains("does not verify") == true)
        #expect(try server.records(.postbacks).isEmpty)
        #expect(
            try server.metric(
                #"postback_verdicts_total{protocol="skadnetwork",version="4.0",status="invalid-signature",environment="production"}"#
            ) == 1)
    }

    @Test func developmentPostbacksAreRejectedWhereNotAllowed() throws {
        let server = try InProcessReceiver {
            $0.allowsDevelopment = false
            $0.testKeys = []
        }
        defer { server.stop() }
        let response = try server.post(TestPostbacks.body(0, seed: 15))
        #expect(response.status == 400, "a test key is not trusted in production")
        #expect(try server.records(.postbacks).isEmpty)
        #expect(try server.records(.rejected).count == 1)
    }

    @Test func applesDevelopmentKeyPostbackIsStoredAsDevelopmentOnlyWhereAllowed() throws {
        // Apple's own AdAttributionKit example, signed with apple-development-identifier/1.
        let body = try ReplayTests.apple("aak_apple-doc_developer-settings_apple-development-identifier-1.json")

        let production = try InProcessReceiver {
            $0.allowsDevelopment = false
            $0.testKeys = []
        }
        let refused = try production.post(body, to: production.appAttributionURL)
        production.stop()
        #expect(refused.status == 400)
        #expect(refused.contentType == "application/problem+json")
        #expect(refused.text.contains("development"))
        #expect(try production.records(.postbacks).isEmpty)
        let rejected = try #require(try production.records(.rejected).first)
        #expect(rejected.reason?.contains("apple-development-identifier/1") == true)

        let development = try InProcessReceiver { $0.allowsDevelopment = true }
        defer { development.stop() }
        #expect(try development.post(body, to: development.appAttributionURL).status == 200)
        let stored = try #require(try development.records(.postbacks).first)
        #expect(stored.environment == .development, "never counted as production")
        #expect(stored.keyName == "apple-development-identifier/1")
        #expect(stored.body == body)
    }

    @Test func otherAdNetworksAreRejectedWithAReason() throws {
        let server = try InProcessReceiver { $0.acceptedAdNetworkIDs = ["ours.skadnetwork"] }
        defer { server.stop() }
        let ours = TestPostbacks.skan4(
            transactionID: UUID().uuidString.lowercased(), conversionValue: 1, adNetworkID: "ours.skadnetwork")
        let theirs = TestPostbacks.skan4(
            transactionID: UUID().uuidString.lowercased(), conversionValue: 1, adNetworkID: "theirs.skadnetwork")
        #expect(try server.post(ours).status == 200)
        let response = try server.post(theirs)
        #expect(response.status == 400)
        #expect(response.text.contains("urn:postback:problem:not-accepted-ad-network"))
        let rejected = try #require(try server.records(.rejected).first)
        #expect(rejected.reason?.contains("theirs.skadnetwork") == true)
        #expect(rejected.status == .verified, "the signature did verify; the policy rejected it")
        #expect(try server.records(.postbacks).count == 1)
    }

    /// Issue 24 item 1: real postbacks carry `KBD757YWX3.skadnetwork`; a configured
    /// `kbd757ywx3.skadnetwork` must accept it (and the other way round), stored as signed.
    @Test func adNetworkIDsAreMatchedIgnoringASCIICase() throws {
        let server = try TestServer { $0.acceptedAdNetworkIDs = ["kbd757ywx3.skadnetwork", "Com.Example"] }
        defer { server.stop() }
        let upper = TestPostbacks.skan4(
            transactionID: UUID().uuidString.lowercased(), conversionValue: 1, adNetworkID: "KBD757YWX3.skadnetwork")
        #expect(try server.post(upper).status == 200)
        // Apple's own 4.0 example names com.example; the configuration spells it Com.Example.
        let apple = try Fixtures.appleVector("skan-4.0_apple-doc_web-ad-tier-high.json")
        #expect(try server.post(apple).status == 200)
        let stored = try server.records(.postbacks)
        #expect(stored.map(\.attribution?.adNetworkID) == ["KBD757YWX3.skadnetwork", "com.example"], "stored as signed")
        #expect(server.logs.contains(#""configured":"kbd757ywx3.skadnetwork""#), "the log names the configured spelling")
        #expect(server.logs.contains(#""ad_network_ids":"Com.Example,kbd757ywx3.skadnetwork""#))
        // Only ASCII case is folded: a different id is still refused.
        let other = TestPostbacks.skan4(
            transactionID: UUID().uuidString.lowercased(), conversionValue: 1, adNetworkID: "KBD757YWX4.skadnetwork")
        #expect(try server.post(other).status == 400)
    }

    @Test func oversizedBodyGets413() throws {
        let server = try TestServer { $0.bodyLimitBytes = 2048 }
        defer { server.stop() }
        let big = [UInt8](repeating: UInt8(ascii: " "), count: 2049)
        let response = try server.post(big)
        #expect(response.status == 413)
        #expect(response.contentType == "application/problem+json")
        #expect(try server.post([UInt8](repeating: UInt8(ascii: " "), count: 2048)).status == 400, "at the limit is fine")
        #expect(try server.records(.postbacks).isEmpty)
    }

    @Test func oversizedChunkedBodyGets413() throws {
        let server = try TestServer { $0.bodyLimitBytes = 1024 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port)
        let chunk = String(repeating: "a", count: 600)
        connection.send(
            "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        connection.send("258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        let reply = String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 413"), "\(reply.prefix(80))")
    }

    @Test func wrongMethodsGet405AndUnknownPaths404() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try HTTPClient()
        let get = try client.get(server.skadnetworkURL)
        #expect(get.status == 405)
        #expect(get.headers["allow"] == "POST")
        let put = try client.perform(method: "PUT", url: server.appAttributionURL, body: [0x7B, 0x7D])
        #expect(put.status == 405)
        let postLivez = try client.post(server.base + "/livez", body: [])
        #expect(postLivez.status == 405)
        #expect(postLivez.headers["allow"] == "GET, HEAD")
        let unknown = try client.post(server.base + "/.well-known/skadnetwork/other", body: [])
        #expect(unknown.status == 404)
        #expect(unknown.contentType == "application/problem+json")
        #expect(try client.get(server.base + "/").status == 404)
    }

    @Test func healthAndMetricsEndpoints() throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(try server.get("/livez").status == 200)
        let ready = try server.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.text.contains("ready"))
        _ = try server.post(TestPostbacks.body(0, seed: 16))
        _ = try server.post(Array("not json".utf8))
        let metrics = try server.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.contentType?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = metrics.text
        for name in [
            "postback_http_requests_total", "postback_verdicts_total", "postback_duplicates_total",
            "postback_fsync_duration_seconds_bucket", "postback_spool_bytes_total", "postback_storage_healthy",
            "postback_dedup_keys", "postback_ready",
        ] {
            #expect(text.contains("# TYPE \(name.replacingOccurrences(of: "_bucket", with: ""))"), "\(name)")
        }
        #expect(try server.metric(#"postback_http_requests_total{route="skadnetwork-developer-copy",code="200"}"#) == 1)
        #expect(try server.metric(#"postback_http_requests_total{route="skadnetwork-developer-copy",code="400"}"#) == 1)
        #expect(try server.metric(#"postback_http_requests_total{route="livez",code="200"}"#) == 1)
        #expect(try server.metric("postback_dedup_keys") == 1)
        #expect(try server.metric(#"postback_spool_records_total{spool="rejected"}"#) == 1)
        #expect((try server.metric(#"postback_spool_bytes_total{spool="postbacks"}"#) ?? 0) > 500)

        // Text exposition format: each family once, its samples right under its own TYPE line.
        var seenFamilies: Set<String> = []
        var currentFamily: (name: String, type: String)?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ").map(String.init)
                #expect(parts.count == 4, "\(line)")
                #expect(seenFamilies.insert(parts[2]).inserted, "family \(parts[2]) declared twice")
                currentFamily = (parts[2], parts[3])
                continue
            }
            if line.hasPrefix("#") { continue }
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            guard let family = currentFamily else {
                Issue.record("sample before any TYPE: \(line)")
                continue
            }
            let allowed = family.type == "histogram" ? ["_bucket", "_sum", "_count"].map { family.name + $0 } : [family.name]
            #expect(allowed.contains(name), "sample \(name) sits under family \(family.name)")
            #expect(Double(line.split(separator: " ").last ?? "") != nil, "\(line)")
        }
    }
}
