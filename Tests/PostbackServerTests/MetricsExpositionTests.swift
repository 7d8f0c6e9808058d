import Foundation
import PostbackStore
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackServer

/// The receiver's `/metrics` page, byte for byte, for a known state: every family, label and value
/// format (counters, gauges, histograms, per-spool families, empty families). The expected page is
/// `Tests/Vectors/metrics/receiver.txt`; with POSTBACK_UPDATE_METRICS_PAGE=1 the test rewrites it
/// (only when a metric is meant to change: the page is what dashboards read).
@Suite struct MetricsExpositionTests {
    static let expectedPath = Fixtures.root.appendingPathComponent("Tests/Vectors/metrics/receiver.txt").path

    static func knownState() -> ServerMetrics {
        let metrics = ServerMetrics()
        metrics.request(route: .skadnetwork, code: 200, seconds: 0.0007)
        metrics.request(route: .skadnetwork, code: 200, seconds: 0.03)
        metrics.request(route: .appAttribution, code: 400, seconds: 3)
        metrics.request(route: .metrics, code: 200, seconds: nil)
        metrics.request(route: .unknown, code: 404, seconds: nil)
        metrics.libraryResponse(code: 431)
        metrics.libraryResponse(code: 99)
        metrics.verificationBatch.observe(1)
        metrics.verificationBatch.observe(7)
        metrics.verdict(.malformed(reason: "not JSON"))
        metrics.verdict(
            VerificationResult(rejection: PostbackRejection(.invalidSignature, "bad", protocol: .skadnetwork, version: "4.0")))
        metrics.verdict(
            VerificationResult(rejection: PostbackRejection(.malformed, "odd", protocol: .skadnetwork, version: "9\"\n")))
        metrics.duplicate(protocol: .skadnetwork)
        metrics.duplicate(protocol: nil)
        metrics.policyRejection("development")
        metrics.policyRejection("something\"else")
        metrics.flags([
            PostbackFlag(field: .version, action: .normalized, raw: "4", note: ""),
            PostbackFlag(field: .appID, action: .dropped, raw: "x", note: ""),
        ])
        _ = metrics.unknownMembers([PostbackFlag(field: .jwsClaim, action: .unrecognized, raw: "new\"claim\\", note: "")])
        metrics.conflictingCopy(route: .skadnetwork, fields: [.conversionValue, .countryCode])
        metrics.conflictsNotStored.increment("daily-budget")
        metrics.quarantined.increment(.unknownVersion)
        metrics.writer(.postbacks, event: .committed(records: 3, bytes: 3000, syncSeconds: 0.002))
        metrics.writer(.postbacks, event: .openedSegment(path: "p"))
        metrics.writer(.rejected, event: .failed(StorageError(operation: "write", path: "r", errorNumber: 5)))
        metrics.writer(.unverifiable, event: .segmentVanished(path: "u"))
        metrics.timedOutConnections.increment("headers")
        metrics.abortedRequests.increment(.clientLeft)
        metrics.refusedConnections.increment(.silentShed)
        metrics.rejectedBodiesReduced.increment(.hash)
        metrics.rejectedNotStored.increment("free-space-floor")
        metrics.quarantineNotStored.increment("daily-budget")
        metrics.clientLimited.increment()
        return metrics
    }

    @Test func receiverPageIsUnchanged() throws {
        let gauges = ServerMetrics.Gauges(
            ready: true, storageHealthy: [.postbacks: true, .rejected: false, .unverifiable: true], dedupKeys: 42,
            openConnections: 3)
        let page =
            Self.knownState().render(gauges).text
            + ServerMetrics().render(ServerMetrics.Gauges(ready: false, storageHealthy: [:], dedupKeys: 0, openConnections: 0))
            .text
        if ProcessInfo.processInfo.environment["POSTBACK_UPDATE_METRICS_PAGE"] == "1" {
            try FileManager.default.createDirectory(
                atPath: (Self.expectedPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(page.utf8).write(to: URL(fileURLWithPath: Self.expectedPath))
        }
        let expected = try String(contentsOfFile: Self.expectedPath, encoding: .utf8)
        #expect(page == expected)
    }
}
