import Foundation
import PostbackClient
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 13: what a hostile client could reach (the metrics page, the disk, the queue). Each test
/// fails on the receiver before the fix; scripts/hostile-clients runs the same attacks at scale.
@Suite struct HostileClientTests {
    // MARK: 1. /metrics

    static let hostileVersions =
        [
            "x\"} 1\npostback_injected_by_attacker 42\n# {y=\"",
            "x\"} 1\npostback_storage_healthy{spool=\"postbacks\"} 1\n# {y=\"",
            "4.0\n", "back\\slash", "",
        ] + (0..<50).map { "v\($0)" }

    @Test func hostileVersionsNeitherForgeSeriesNorBreakTheMetricsPage() throws {
        let server = try TestServer()
        defer { server.stop() }
        for version in Self.hostileVersions {
            var json = JSONWriter(reservingCapacity: 128)
            json.beginObject()
            json.field("version", version)
            json.endObject()
            // Refused (400), or quarantined as an unknown version (200): the page below is the point.
            #expect([200, 400].contains(try server.post(json.bytes).status))
        }
        let page = try server.get("/metrics").text
        let parsed = try PrometheusParser.parse(page)
        #expect(!parsed.families.contains("postback_injected_by_attacker"))
        #expect(
            parsed.samples.filter { $0.name == "postback_storage_healthy" }.count == StoreLayout.Spool.allCases.count,
            "one per spool, none forged")
        let versions = Set(parsed.samples.filter { $0.name == "postback_verdicts_total" }.compactMap { $0.labels["version"] })
        #expect(versions.isSubset(of: MetricLabels.versions.values.union([MetricLabels.other])), "\(versions)")
        #expect(versions.contains(MetricLabels.other))
    }

    @Test func labelValuesAreEscapedPerTheTextFormat() {
        #expect(MetricLabels.escape(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
        #expect(MetricLabels.series("m", ["k": "x\"} 1\n"]) == #"m{k="x\"} 1\n"}"#)
        #expect(MetricLabels.versions.label("4.0") == "4.0")
        #expect(MetricLabels.versions.label("4.0\n") == "other")
        #expect(MetricLabels.versions.label(nil) == "other")
    }

    // MARK: 2. The rejected store

    @Test func rejectedRecordsStayWithinTheDailyBudgetAndLargeBodiesKeepAPrefix() throws {
        let server = try TestServer {
            $0.rejectedBytesPerDay = 64 << 10
            $0.rejectedBodyKeepBytes = 256
        }
        defer { server.stop() }
        let large = Array("{\"version\":\"4.0\",\"pad\":\"\(String(repeating: "a", count: 2000))\"}".utf8)
        #expect(try server.post(large).status == 400)
        for index in 0..<200 {
            #expect(
                try server.post(
                    Array("{\"version\":\"4.0\",\"n\":\(index),\"pad\":\"\(String(repeating: "b", count: 600))\"}".utf8)
                ).status == 400)
        }
        #expect(try server.post(TestPostbacks.body(0, seed: 1301)).status == 200)
        let records = try server.records(.rejected)
        let first = try #require(records.first)
        #expect(first.bodyReduction?.kept == .prefix && first.body == Array(large.prefix(256)))
        #expect(first.bodyReduction?.byteCount == large.count)
        #expect(records.contains { $0.bodyReduction?.kept == SpoolRecord.BodyReduction.Kept.none && $0.body.isEmpty })
        let bytes = try server.segments(.rejected).reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int) ?? 0)
        }
        #expect(bytes <= 64 << 10)
        #expect(try server.metric(#"postback_rejected_not_stored_total{reason="daily-budget"}"#) ?? 0 > 0)
        #expect(try server.records(.postbacks).count == 1)
    }

    @Test func belowTheFreeSpaceFloorRejectedRecordsAreNotWrittenButPostbacksAre() throws {
        let server = try TestServer { $0.reservedFreeBytes = 1 << 60 }
        defer { server.stop() }
        #expect(try server.post(Array(#"{"version":"4.0"}"#.utf8)).status == 400)
        #expect(try server.post(TestPostbacks.body(0, seed: 1302)).status == 200)
        #expect(try server.records(.rejected).isEmpty)
        #expect(try server.records(.postbacks).count == 1)
        #expect(try server.metric(#"postback_rejected_not_stored_total{reason="free-space-floor"}"#) == 1)
    }

    @Test func oneFloodingClientCannotSpendTheBudgetOfEveryoneElse() throws {
        let server = try TestServer {
            $0.trustedProxies = [CIDR("127.0.0.1")!]
            $0.rejectedBytesPerClientPerDay = 8 << 10
        }
        defer { server.stop() }
        func reject(from client: String, _ index: Int) -> String { rejectedJunk(on: server, from: client, index) }
        for index in 0..<30 { #expect(reject(from: "203.0.113.1", index).hasPrefix("HTTP/1.1 400")) }
        #expect(reject(from: "203.0.113.2", 99).hasPrefix("HTTP/1.1 400"))
        let records = try server.records(.rejected)
        let flooder = records.filter { $0.client == "203.0.113.1" }
        #expect(flooder.count == 30)
        let whole = flooder.filter { $0.bodyReduction == nil }.count
        #expect(whole > 0 && whole < 10, "whole bodies up to the client's share (8 KiB), then hash and size: \(whole)")
        #expect(
            records.filter { $0.client == "203.0.113.2" }.map { $0.bodyReduction == nil } == [true],
            "another client's rejection is kept whole")

        // The share is per client, not per spelling: every address of one IPv6 /64
        // (`client_ipv6_prefix_length`), and an IPv4 address written as IPv4-mapped IPv6, share one.
        try oneIPv6NetworkOrOneAddressSpelledManyWaysIsOneClient(server, reject)
    }

    private func oneIPv6NetworkOrOneAddressSpelledManyWaysIsOneClient(
        _ server: TestServer, _ reject: (String, Int) -> String
    ) throws {
        // 30 addresses of one /64, each spelled its own way.
        for index in 0..<30 {
            let address =
                index % 2 == 0 ? "2001:db8:1:2::\(String(index + 1, radix: 16))" : "2001:0DB8:0001:0002:0:0:0:\(index + 1)"
            #expect(reject(address, index).hasPrefix("HTTP/1.1 400"))
        }
        // One IPv4 address, plain and IPv4-mapped.
        for index in 0..<30 {
            #expect(reject(index % 2 == 0 ? "203.0.113.7" : "::ffff:203.0.113.7", 100 + index).hasPrefix("HTTP/1.1 400"))
        }
        #expect(reject("2001:db8:1:3::1", 99).hasPrefix("HTTP/1.1 400"))
        let records = try server.records(.rejected)
        let network = records.filter { $0.client?.hasPrefix("2001:") == true && $0.client != "2001:db8:1:3::1" }
        #expect(network.count == 30)
        let wholeFromNetwork = network.filter { $0.bodyReduction == nil }.count
        #expect(wholeFromNetwork > 0 && wholeFromNetwork < 10, "one share for the /64: \(wholeFromNetwork) whole bodies")
        let v4 = records.filter { $0.client?.hasSuffix("203.0.113.7") == true }
        let wholeFromV4 = v4.filter { $0.bodyReduction == nil }.count
        #expect(v4.count == 30 && wholeFromV4 > 0 && wholeFromV4 < 10, "one share for the address: \(wholeFromV4) whole bodies")
        #expect(
            records.filter { $0.client == "2001:db8:1:3::1" }.map { $0.bodyReduction == nil } == [true],
            "another /64's rejection is kept whole")
    }

    @Test func clientSpellings() {
        #expect(IPAddress.client("::ffff:192.0.2.1", ipv6PrefixLength: 64) == "192.0.2.1")
        #expect(IPAddress.client("2001:DB8:0:0:1::1", ipv6PrefixLength: 64) == "2001:db8::/64")
        #expect(IPAddress.client("2001:db8::ffff:1", ipv6PrefixLength: 128) == "2001:db8::ffff:1/128")
        #expect(IPAddress.client("2001:db8:0:1::1", ipv6PrefixLength: 48) == "2001:db8::/48")
        #expect(IPAddress.client("unknown", ipv6PrefixLength: 64) == "unknown")
    }

    /// Behind a trusted proxy, `per_ip_connection_limit` counts requests in progress per forwarded
    /// client address (every connection's peer is the proxy): one client over it gets 429, others
    /// are not affected, and the count goes down when its request ends.
    @Test func perIPLimitBehindATrustedProxyCountsTheForwardedClient() throws {
        let server = try TestServer {
            $0.trustedProxies = [CIDR("127.0.0.1")!]
            $0.perIPConnectionLimit = 1
        }
        defer { server.stop() }
        func post(from client: String, _ body: [UInt8]) throws -> String {
            let connection = try RawConnection(port: server.server.port)
            connection.send(
                "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    + "X-Forwarded-For: \(client)\r\nContent-Length: \(body.count)\r\n\r\n")
            connection.send(body)
            return String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
        }
        // Client A's first request is in progress: headers sent, body not yet.
        let slow = try RawConnection(port: server.server.port)
        slow.send(
            "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.7\r\n"
                + "Content-Length: 400\r\n\r\n{\"version\"")
        usleep(200_000)
        let refused = try post(from: "203.0.113.7", TestPostbacks.body(0, seed: 1501))
        #expect(refused.hasPrefix("HTTP/1.1 429"), "\(refused.prefix(200))")
        #expect(refused.lowercased().contains("retry-after: 1"))
        let other = try post(from: "203.0.113.8", TestPostbacks.body(1, seed: 1501))
        #expect(other.hasPrefix("HTTP/1.1 200"), "another client is not limited: \(other.prefix(200))")
        #expect(try server.metric("postback_client_limited_total") == 1)
        // A's request ends (the client leaves): A may post again.
        shutdown(slow.fd, Int32(SHUT_RDWR))
        usleep(300_000)
        let again = try post(from: "203.0.113.7", TestPostbacks.body(2, seed: 1501))
        #expect(again.hasPrefix("HTTP/1.1 200"), "\(again.prefix(200))")
        #expect(try server.records(.postbacks).count == 2)
    }

    // MARK: 4. Storage health

    @Test func aDeletedPartitionIsNoticedBeforeTheNextReply() throws {
        let server = try TestServer()
        defer { server.stop() }
        let first = TestPostbacks.body(0, seed: 1304)
        #expect(try server.post(first).status == 200)
        for day in try server.layout.days(.postbacks) {
            try FileManager.default.removeItem(atPath: server.layout.partition(.postbacks, day: day))
        }
        let ready = try server.get("/readyz")
        #expect(ready.status == 503 && ready.text.contains("deleted or replaced"))
        let second = TestPostbacks.body(1, seed: 1304)
        #expect(try server.post(second).status == 200)
        #expect(try server.records(.postbacks).map(\.body) == [second], "stored in a file that exists")
        #expect(try server.get("/readyz").status == 200)
        #expect(try server.metric(#"postback_spool_segments_vanished_total{spool="postbacks"}"#) == 1)
    }

    @Test func aReplacedSegmentIsNoticedToo() throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(try server.post(TestPostbacks.body(0, seed: 1305)).status == 200)
        let segment = try #require(try server.segments(.postbacks).first)
        try FileManager.default.removeItem(atPath: segment.path)
        try Data("replaced\n".utf8).write(to: URL(fileURLWithPath: segment.path))
        let second = TestPostbacks.body(1, seed: 1305)
        #expect(try server.post(second).status == 200)
        #expect(try server.records(.postbacks).map(\.body) == [second])
    }

    // MARK: 5. Framing rules

    @Test func framingViolations() {
        func check(_ headers: [(String, String)]) -> Int? {
            HTTPFraming.violation(in: headers.map { (name: $0.0, value: $0.1) })?.status
        }
        #expect(check([("Content-Length", "5")]) == nil)
        #expect(check([("Content-Length", "5"), ("content-length", "5")]) == nil)
        #expect(check([("Content-Length", "5, 5")]) == nil)
        #expect(check([("Transfer-Encoding", "chunked")]) == nil)
        #expect(check([("Content-Length", "5"), ("Transfer-Encoding", "chunked")]) == 400)
        #expect(check([("Content-Length", "5"), ("Content-Length", "6")]) == 400)
        #expect(check([("Content-Length", "+5")]) == 400)
        #expect(check([("Content-Length", "")]) == 400)
        #expect(check([("Content-Length ", "5")]) == 400)
        #expect(check([("Transfer-Encoding", "gzip")]) == 501)
        #expect(check([("Transfer-Encoding", "gzip, chunked")]) == 501)
        // The one-Content-Length fast path agrees with the general rules at its edges.
        #expect(check([("CONTENT-LENGTH", "12")]) == nil)
        #expect(check([("Content-Length", " 7 ")]) == nil)
        #expect(check([("Content-Length", "123456789012345678")]) == nil)
        #expect(check([("Content-Length", "1234567890123456789")]) == 400)
        #expect(check([("Content-Length", "\u{0663}")]) == 400)
        #expect(check([("Content-Length", "5 5")]) == 400)
        #expect(check([("Content-Lengt", "5")]) == nil)
        #expect(check([("Transfer-Encoding", "5")]) == 501)
        #expect(check([("Content\u{0D}Length", "5")]) == nil)
    }

    @Test func routesIgnoreOneTrailingSlash() {
        #expect(Route(path: "/.well-known/skadnetwork/report-attribution/", adNetworkPath: nil) == .skadnetwork)
        #expect(Route(path: "/.well-known/appattribution/report-attribution", adNetworkPath: nil) == .appAttribution)
        #expect(Route(path: "/livez/", adNetworkPath: nil) == .livez)
        #expect(Route(path: "/livez//", adNetworkPath: nil) == .unknown)
        #expect(Route.normalize("/") == "/")
        #expect(Route.normalize("//") == "/")
        #expect(Route.normalize("/postbacks/") == "/postbacks")
        #expect(Route(path: "/postbacks/", adNetworkPath: "/postbacks") == .adNetwork)
        // Not ASCII: characters decide. U+0600 (a prepended mark) and "/" form one character, so
        // the path does not end in a "/" character and keeps its last byte.
        #expect(Route.normalize("/caf\u{E9}/") == "/caf\u{E9}")
        #expect(Route.normalize("/\u{0600}/") == "/\u{0600}/")
    }

    // MARK: 6. Client address

    @Test func clientAddressComesFromTrustedProxiesOnly() throws {
        let trusted = [try #require(CIDR("10.0.0.0/8")), try #require(CIDR("127.0.0.1"))]
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: "198.51.100.9, 203.0.113.7", forwarded: nil, trusted: trusted)
                == "203.0.113.7")
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: "203.0.113.7, 10.1.2.3", forwarded: nil, trusted: trusted)
                == "203.0.113.7")
        #expect(
            ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: "203.0.113.7", forwarded: nil, trusted: trusted) == "192.0.2.1"
        )
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: "not-an-ip", forwarded: nil, trusted: trusted) == "127.0.0.1")
        #expect(
            ClientAddress.resolve(
                peer: "127.0.0.1", forwardedFor: nil, forwarded: #"for="[2001:db8::1]:4711";proto=https"#, trusted: trusted)
                == "2001:db8::1")
        #expect(
            ClientAddress.resolve(peer: "::ffff:10.0.0.5", forwardedFor: "203.0.113.7", forwarded: nil, trusted: trusted)
                == "203.0.113.7")
        #expect(CIDR("10.0.0.0/33") == nil && CIDR("fd00::/8") != nil && CIDR("nope") == nil)
    }

    @Test func rejectedRecordsNameTheClientVerifiedOnesDoNot() throws {
        let server = try TestServer { $0.trustedProxies = [CIDR("127.0.0.1/32")!] }
        defer { server.stop() }
        let junk = try HTTPClient().perform(method: "POST", url: server.skadnetworkURL, body: Array(#"{"version":"4.0"}"#.utf8))
        #expect(junk.status == 400)
        #expect(try server.post(TestPostbacks.body(0, seed: 1306)).status == 200)
        #expect(try server.records(.rejected).map(\.client) == ["127.0.0.1"])
        #expect(try server.records(.postbacks).map(\.client) == [nil])
        #expect(server.logs.contains(#""client":"127.0.0.1""#))
    }

    /// One log line per rejected request let any client flood the log: at most 20 lines a window
    /// (here 1 s) are written, a later line says how many were suppressed, and /metrics counts all.
    @Test func rejectionLogLinesAreRateLimitedAndCountsStayExact() throws {
        let server = try TestServer { $0.logSampleWindowSeconds = 1 }
        defer { server.stop() }
        let rejected = postConcurrently(
            (0..<300).map { Array("{\"version\":\"4.0\",\"n\":\($0)}".utf8) }, to: server.skadnetworkURL, workers: 8)
        #expect(rejected.allSatisfy { $0 == 400 })
        let written = server.logs.all.filter { $0.contains(#""msg":"postback rejected""#) }.count
        #expect(written > 0 && written <= 40, "\(written) rejection lines for 300 rejections")
        usleep(1_500_000)  // the window ends; the watchdog's tick reports it
        let reports = server.logs.all.filter { $0.contains(#""msg":"log lines suppressed""#) && $0.contains("postback rejected") }
        let suppressed = reports.compactMap { line in
            line.firstMatch(of: /"suppressed":(\d+)/).flatMap { Int($0.output.1) }
        }.reduce(0, +)
        #expect(written + suppressed == 300, "\(written) written + \(suppressed) suppressed")
        #expect(try server.metric(#"postback_http_requests_total{route="skadnetwork-developer-copy",code="400"}"#) == 300)
    }

    // MARK: 7. Every answer counted

    @Test func libmicrohttpdsOwnAnswersAreCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3)
        connection.send("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n")
        #expect(String(decoding: connection.readUntilClosed().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 431"))
        #expect(try server.metric(#"postback_http_library_responses_total{code="431"}"#) == 1)
    }

    @Test func aReplyToAClientThatLeftIsCounted() throws {
        let storage = FaultyStorage()
        let server = try TestServer(storage: storage)
        defer { server.stop() }
        let body = TestPostbacks.body(0, seed: 1307)
        storage.holdNextSyncs(true)
        do {
            let connection = try RawConnection(port: server.server.port)
            connection.send(
                "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
            connection.send(body)
            // The postback is inside its group commit's sync when the client goes away (with a reset).
            #expect(storage.syncEntered.wait(timeout: .now() + 10) == .success)
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
        }
        usleep(100_000)
        storage.releaseHeldSyncs()
        let deadline = Date().addingTimeInterval(5)
        var aborted = 0.0
        while aborted == 0, Date() < deadline {
            let page = try server.get("/metrics").text
            aborted = page.split(separator: "\n").filter { $0.hasPrefix("postback_http_requests_aborted_total{") }
                .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
            usleep(20_000)
        }
        #expect(aborted == 1, "the stored postback's reply never reached the client, and /metrics says so")
        #expect(try server.records(.postbacks).map(\.body) == [body], "stored all the same (a device would retry: duplicate)")
    }
}

/// The official Prometheus text parser (`prometheus_client.parser`, Python), from the venv that
/// scripts/setup makes at `.build/venv`: a page it cannot parse fails the test.
enum PrometheusParser {
    struct Sample {
        let name: String
        let labels: [String: String]
    }

    static func parse(_ page: String) throws -> (families: Set<String>, samples: [Sample]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let python = root.appendingPathComponent(".build/venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw ParserMissing(
                description: "\(python) is missing: run scripts/setup (it makes the venv from scripts/requirements-test.txt)")
        }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = []
            for family in text_string_to_metric_families(sys.stdin.read()):
                for sample in family.samples:
                    out.append({"family": family.name, "name": sample.name, "labels": sample.labels})
            print(json.dumps(out))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(page.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ParserMissing(description: "the Prometheus parser rejected /metrics: \(problem)")
        }
        let decoded = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        let samples = decoded.map { Sample(name: $0["name"] as? String ?? "", labels: $0["labels"] as? [String: String] ?? [:]) }
        return (Set(decoded.compactMap { $0["family"] as? String }), samples)
    }

    struct ParserMissing: Error, CustomStringConvertible { let description: String }
}

/// A junk postback of about 850 bytes (answered 400) from `client`, named by a trusted proxy's
/// `X-Forwarded-For`; the raw answer.
func rejectedJunk(on server: TestServer, from client: String, _ index: Int) -> String {
    let body = "{\"version\":\"4.0\",\"n\":\(index),\"pad\":\"\(String(repeating: "z", count: 800))\"}"
    guard let connection = try? RawConnection(port: server.server.port) else { return "" }
    connection.send(
        "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + "X-Forwarded-For: \(client)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
    return String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
}
