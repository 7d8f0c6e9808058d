import Basics
import Foundation
import Locking
import PostbackStore
import TestSupport
import Testing

@testable import SpoolDelivery

/// A partner on a flaky link, as the network-fault part saw it: each attempt delivers one line of the
/// segment (the cursor moves) and then one request fails.
private final class OneLineThenAFailure: ResumableDeliveryDestination, @unchecked Sendable {
    let name = "flaky"
    let lineBytes: Int
    /// The worker, to read what its backoff counts at each attempt.
    let worker = Locked<SpoolDeliveryWorker?>(nil)
    let countedAtEachAttempt = Locked<[Int]>([])

    init(lineBytes: Int) { self.lineBytes = lineBytes }

    func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws {
        throw DeliveryFailure(.retry, "needs a cursor")
    }

    func deliver(_ segment: SealedSegment, from cursor: SegmentCursor) throws {
        let counted = worker.withLock { $0?.status.consecutiveFailures } ?? 0
        countedAtEachAttempt.withLock { $0.append(counted) }
        let next = cursor.offset + lineBytes
        if next >= segment.size { return }
        try cursor.advance(to: next)
        throw DeliveryFailure(.retry, "one request lost")
    }
}

@Suite("delivery backoff")
struct DeliveryBackoffTests {
    @Test func anAttemptThatDeliveredSomethingRestartsTheBackoff() throws {
        let root = TemporaryDirectory("backoff").path
        let layout = StoreLayout(root: root)
        let partition = layout.partition(.postbacks, day: UTCDay("2026-12-01")!)
        try FileManager.default.createDirectory(atPath: partition, withIntermediateDirectories: true)
        let line = "{\"line\":\"x\"}\n"
        let lines = 8
        try String(repeating: line, count: lines).write(
            toFile: partition + "/" + StoreLayout.segmentName(writer: "w", sequence: 1), atomically: true, encoding: .utf8)
        let destination = OneLineThenAFailure(lineBytes: line.utf8.count)
        let worker = try SpoolDeliveryWorker(
            configuration: .init(
                layout: layout, writerID: "w", spools: [.postbacks], isOpen: { _ in false }, scanIntervalSeconds: 0.05,
                backoff: Backoff(initialSeconds: 0.01, maximumSeconds: 0.05)),
            destination: destination)
        destination.worker.withLock { $0 = worker }
        defer {
            worker.stop()
            destination.worker.withLock { $0 = nil }  // the two point at each other: LeakSanitizer reports the cycle
        }
        #expect(eventually(30) { worker.status.deliveredSegments[.postbacks] == 1 })
        let counted = destination.countedAtEachAttempt.withLock { $0 }
        // Every attempt moved the cursor before its failure: the worker never counted more than one
        // failure in a row (it counted 1, 2, 3, … up to 7 before, and waited ever longer).
        #expect(counted.count >= lines, "\(counted)")
        #expect(counted.allSatisfy { $0 <= 1 }, "\(counted)")
        #expect(worker.status.consecutiveFailures == 0)
    }
}
