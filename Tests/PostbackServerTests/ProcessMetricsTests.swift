import BuildStamp
import Foundation
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackServer

/// `/metrics` has what every Prometheus dashboard expects: build info, the standard process set,
/// and verdicts split by environment.
@Suite struct ProcessMetricsTests {
    @Test func buildInfoAndStandardProcessMetrics() throws {
        let server = try TestServer()
        defer { server.stop() }
        let before = Date().timeIntervalSince1970
        #expect(
            try server.metric(#"postback_build_info{version="\#(BuildInfo.version)",commit="\#(BuildInfo.commit)"}"#) == 1)
        let text = try server.get("/metrics").text
        for family in [
            "process_cpu_seconds_total counter", "process_resident_memory_bytes gauge", "process_virtual_memory_bytes gauge",
            "process_open_fds gauge", "process_max_fds gauge", "process_start_time_seconds gauge",
        ] {
            #expect(text.contains("# TYPE \(family)\n"), "\(family)")
        }
        let resident = try #require(try server.metric("process_resident_memory_bytes"))
        let virtual = try #require(try server.metric("process_virtual_memory_bytes"))
        #expect(resident > 1_000_000 && resident < virtual, "resident \(resident), virtual \(virtual)")
        let open = try #require(try server.metric("process_open_fds"))
        let maximum = try #require(try server.metric("process_max_fds"))
        // The listening socket, the spool files and the standard streams are open at least.
        #expect(open >= 5 && open <= maximum, "open \(open), max \(maximum)")
        // The test process started this server: its start time is before now, and not hours ago.
        let start = try #require(try server.metric("process_start_time_seconds"))
        #expect(start <= before + 1 && start > before - 3600, "start \(start), now \(before)")
        #expect(try #require(try server.metric("process_cpu_seconds_total")) > 0)
    }

    @Test func verdictsAreLabelledWithTheirEnvironment() throws {
        let server = try TestServer()
        defer { server.stop() }
        // Signed with a trusted test key: verified, and always development.
        #expect(
            try server.post(TestPostbacks.skan4(transactionID: UUID().uuidString.lowercased(), conversionValue: 3)).status == 200)
        #expect(try server.post(Array("not json".utf8)).status == 400)
        #expect(
            try server.metric(
                #"postback_verdicts_total{protocol="skadnetwork",version="4.0",status="verified",environment="development"}"#)
                == 1)
        #expect(
            try server.metric(
                #"postback_verdicts_total{protocol="unknown",version="unknown",status="malformed",environment="none"}"#) == 1)
    }

    @Test func statFieldsAreReadAfterACommandNameWithSpacesAndParentheses() throws {
        // The sample comes from this test process; sanity of the parsed values is what can be checked.
        let sample = try #require(ProcessMetrics.sample())
        #expect(sample.residentBytes > 0 && sample.virtualBytes >= sample.residentBytes)
        #expect(sample.startTimeSeconds > 1_600_000_000)
    }
}
