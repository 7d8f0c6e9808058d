import Basics
import Foundation
import Locking
import PostbackStore
import TestSupport
import Testing

@testable import SpoolDelivery

/// A destination that records what it was given.
private final class RecordingDestination: DeliveryDestination, @unchecked Sendable {
    let name = "recording"
    let delivered = Locked<[String]>([])

    func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws {
        delivered.withLock { $0.append(segment.relativePath) }
    }
}

@Suite("damaged segments are not delivered")
struct DamagedSegmentTests {
    /// A segment whose bytes no longer match its seal is never delivered (the far side would keep the
    /// damage, and the bucket's copy is the remedy), is counted and reported; an intact sealed one
    /// and one without a seal are delivered.
    @Test func aSegmentThatNoLongerMatchesItsSealStaysLocal() throws {
        let root = TemporaryDirectory("damaged").path
        let layout = StoreLayout(root: root)
        let day = UTCDay("2026-12-01")!
        let partition = layout.partition(.postbacks, day: day)
        try FileManager.default.createDirectory(atPath: partition, withIntermediateDirectories: true)
        let recorder = SegmentSeals.Recorder(root: root, spool: .postbacks, writerID: "w")
        var paths: [String] = []
        for sequence in 1...3 {
            let path = partition + "/" + StoreLayout.segmentName(writer: "w", sequence: sequence)
            let bytes = Array("{\"line\":\"\(sequence)\",\"conversion_value\":42}\n".utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            if sequence < 3 { try recorder.record(path, day: day, SegmentSeals.seal(of: bytes)) }  // 3: never sealed
            paths.append(String(path.dropFirst(root.count + 1)))
        }
        // Segment 1 is damaged at rest: one digit changed, the same size, still a valid line.
        let damaged = partition + "/" + StoreLayout.segmentName(writer: "w", sequence: 1)
        var bytes = [UInt8](try #require(FileManager.default.contents(atPath: damaged)))
        bytes[bytes.count - 3] = UInt8(ascii: "3")
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))

        let destination = RecordingDestination()
        let events = Locked<[String]>([])
        let worker = try SpoolDeliveryWorker(
            configuration: .init(
                layout: layout, writerID: "w", spools: [.postbacks], isOpen: { _ in false }, scanIntervalSeconds: 0.05),
            destination: destination
        ) { event in
            if case .damaged(let segment, let detail) = event {
                events.withLock { $0.append("\(segment.relativePath): \(detail)") }
            }
        }
        defer { worker.stop() }
        #expect(eventually(30) { worker.status.deliveredSegments[.postbacks] == 2 && worker.status.damagedSegments == 1 })
        #expect(destination.delivered.withLock { $0 } == [paths[1], paths[2]])
        let reported = events.withLock { $0 }
        #expect(reported.count == 1 && reported[0].hasPrefix(paths[0]), "\(reported)")
        #expect(worker.renderMetrics().contains("postback_delivery_damaged_segments{destination=\"recording\"} 1"))
    }
}
