import Basics
import Foundation
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import PostbackServer

/// The series the shipped alert rules read: a real receiver on loopback, Apple's production sample
/// postbacks posted as an ad network's copy and as a developer copy (by `Host`), and the page
/// scraped as Prometheus would. Expected counts come from the samples' own JSON, not the receiver.
@Suite struct FlowMetricsTests {
    /// POSTs `body` with `Host: host` over a raw connection (an HTTP library sets Host itself).
    static func post(_ body: [UInt8], host: String, port: Int) throws -> String {
        try RawConnection.post(
            body, path: "/.well-known/skadnetwork/report-attribution/",
            headers: ["Host: \(host)", "Content-Type: application/json"], port: port)
    }

    /// The value kind a winning postback's JSON carries, as docs/alerts.md defines it; nil for a
    /// non-winning one (never counted among values).
    static func kind(ofSample json: [String: Any]) -> String? {
        if json["did-win"] as? Bool == false { return nil }
        if let fine = json["conversion-value"] as? Int { return fine == 0 ? "fine-zero" : "fine" }
        return json["coarse-conversion-value"] != nil ? "coarse" : "null"
    }

    @Test func storedPostbacksAreCountedPerNetworkCopyAndValue() throws {
        let server = try TestServer { $0.developerCopyHosts = ["collector.advertiser.example"] }
        defer { server.stop() }
        let samples = [
            "skan-2.2_apple-doc.json", "skan-3.0_apple-doc_winning.json", "skan-3.0_apple-doc_nonwinning.json",
            "skan-4.0_apple-doc_web-ad-tier-high.json", "skan-4.0_apple-doc_web-ad-tier-low.json",
        ]
        var expected: [String: Double] = [:]
        // Apple's samples reuse transaction ids: a later one with a stored id is another copy of a
        // stored postback (its value is not counted twice).
        var stored: Set<String> = []
        for (index, name) in samples.enumerated() {
            let body = try Fixtures.appleVector(name)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            let network = try #require(json["ad-network-id"] as? String)
            // Every other sample as the advertiser's copy, with the port and in capitals: still one host.
            let developer = index % 2 == 1
            let host = developer ? "Collector.Advertiser.Example:443" : "postbacks.network.example"
            let reply = try Self.post(body, host: host, port: server.server.port)
            #expect(reply.hasPrefix("HTTP/1.1 200"), "\(name): \(reply)")
            let copy = developer ? "developer" : "network"
            expected[
                "postback_network_postbacks_total{ad_network=\"\(network)\",environment=\"production\",copy=\"\(copy)\"}",
                default: 0] += 1
            let transaction = "\(json["transaction-id"] ?? "")/\(json["postback-sequence-index"] ?? 0)"
            guard stored.insert(transaction).inserted else { continue }
            if let kind = Self.kind(ofSample: json) {
                expected["postback_network_conversion_values_total{ad_network=\"\(network)\",value=\"\(kind)\"}", default: 0] += 1
            }
        }
        // A retried copy is stored once: counted as a copy that arrived, its value not counted again.
        _ = try Self.post(try Fixtures.appleVector(samples[0]), host: "postbacks.network.example", port: server.server.port)
        expected[
            "postback_network_postbacks_total{ad_network=\"com.example\",environment=\"production\",copy=\"network\"}",
            default: 0] += 1
        // A development postback counts in its own environment and never among values.
        let development = TestPostbacks.skan4(transactionID: "flow-dev-1", conversionValue: 0, adNetworkID: "dev.skadnetwork")
        #expect(try Self.post(development, host: "postbacks.network.example", port: server.server.port).hasPrefix("HTTP/1.1 200"))
        expected[
            "postback_network_postbacks_total{ad_network=\"dev.skadnetwork\",environment=\"development\",copy=\"network\"}"] = 1

        let page = try server.get("/metrics").text
        for (series, value) in expected {
            #expect(try server.metric(series) == value, "\(series) on\n\(page)")
        }
        let networkLines = page.split(separator: "\n").filter {
            $0.hasPrefix("postback_network_postbacks_total{") || $0.hasPrefix("postback_network_conversion_values_total{")
        }
        #expect(networkLines.count == expected.count, "only the expected series: \(networkLines)")
        #expect(!page.contains("ad_network=\"dev.skadnetwork\",value="))
        for network in ["com.example", "example123.skadnetwork"] {
            let last = try #require(
                try server.metric("postback_network_last_postback_timestamp_seconds{ad_network=\"\(network)\"}"))
            #expect(abs(last - Date().timeIntervalSince1970) < 600)
        }
        let available = try #require(try server.metric("postback_data_available_bytes"))
        let size = try #require(try server.metric("postback_data_size_bytes"))
        #expect(available > 0 && available <= size)
    }

    /// With `ad_network_ids`, each configured network has its series from start-up (so a network that
    /// sends nothing after a restart can be found quiet), and none other appears.
    @Test func configuredNetworksArePresentFromStartUp() throws {
        let server = try TestServer { $0.acceptedAdNetworkIDs = ["KBD757YWX3.skadnetwork", "example123.skadnetwork"] }
        defer { server.stop() }
        for network in ["KBD757YWX3.skadnetwork", "example123.skadnetwork"] {
            #expect(
                try server.metric(
                    "postback_network_postbacks_total{ad_network=\"\(network)\",environment=\"production\",copy=\"network\"}")
                    == 0)
            #expect(try server.metric("postback_network_conversion_values_total{ad_network=\"\(network)\",value=\"null\"}") == 0)
        }
        // Posted in another case: counted under the configured spelling.
        var body = String(decoding: try Fixtures.appleVector("skan-3.0_apple-doc_winning.json"), as: UTF8.self)
        body = body.replacingOccurrences(of: "example123.skadnetwork", with: "EXAMPLE123.skadnetwork")
        _ = try server.post(Array(body.utf8))
        let page = try server.get("/metrics").text
        #expect(!page.contains("EXAMPLE123"))
    }

    /// Past `labelLimit` networks (no `ad_network_ids`), later ones share `other`: the page stays bounded.
    @Test func unconfiguredNetworksAreBounded() throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = "/"
        let flow = FlowMetrics(configuration: configuration)
        for index in 0..<(FlowMetrics.labelLimit + 10) {
            let attribution = Attribution(
                postbackProtocol: .skadnetwork, version: "4.0", appID: 1, adNetworkID: "n\(index).skadnetwork", didWin: true,
                fineValue: index % 64)
            flow.accepted(
                attribution, network: attribution.adNetworkID, environment: .production, copy: .network, stored: true, at: .now())
        }
        var page = MetricsPage()
        flow.render(into: &page)
        let networks = Set(
            page.text.split(separator: "\n").filter { $0.hasPrefix("postback_network_postbacks_total{") }.map {
                $0.split(separator: "\"")[1]
            })
        #expect(networks.count == FlowMetrics.labelLimit + 1)
        #expect(networks.contains("other"))
        #expect(
            try #require(page.text.split(separator: "\n").first { $0.contains("ad_network=\"other\",environment") }).hasSuffix(
                " 10"))
    }

    @Test func valueKindsFollowTheDocs() {
        func attribution(fine: Int?, coarse: CoarseConversionValue?) -> Attribution {
            Attribution(
                postbackProtocol: .skadnetwork, version: "4.0", appID: 1, adNetworkID: "a", didWin: true, fineValue: fine,
                coarseValue: coarse)
        }
        #expect(FlowMetrics.ValueKind(attribution(fine: 0, coarse: nil)) == .fineZero)
        #expect(FlowMetrics.ValueKind(attribution(fine: 0, coarse: .high)) == .fineZero)
        #expect(FlowMetrics.ValueKind(attribution(fine: 17, coarse: nil)) == .fine)
        #expect(FlowMetrics.ValueKind(attribution(fine: nil, coarse: .low)) == .coarse)
        #expect(FlowMetrics.ValueKind(attribution(fine: nil, coarse: nil)) == .null)
    }

    /// Every metric the shipped rules read is a family the receiver writes (the rest of its page is
    /// shipping and forwarding, present only when configured: their names must be declared in the
    /// sources); `up` is Prometheus' own.
    @Test func rulesReadOnlyMetricsTheReceiverExposes() throws {
        let rules = try String(
            contentsOf: Fixtures.root.appendingPathComponent("deploy/prometheus/postback-rules.yml"), encoding: .utf8)
        let names = Set(
            rules.matches(of: /\b(postback_[a-z_]+)\b/).map { String($0.output.1) }.filter {
                !$0.hasPrefix("postback_network_postbacks_total_")
            })
        #expect(names.count >= 10)
        let server = try TestServer()
        defer { server.stop() }
        let page = try server.get("/metrics").text
        let declared = try FileManager.default.subpathsOfDirectory(atPath: Fixtures.root.appendingPathComponent("Sources").path)
            .filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: Fixtures.root.appendingPathComponent("Sources/\($0)"), encoding: .utf8) }
            .joined()
        for name in names {
            let onPage = page.contains("# TYPE \(name) ")
            let inSources =
                declared.contains("\"\(name)\"")
                || declared.contains("\"\(name.replacingOccurrences(of: "postback_forward_", with: ""))")
            #expect(
                onPage || (name.hasPrefix("postback_delivery_") || name.hasPrefix("postback_forward_")) && inSources, "\(name)")
        }
    }
}
