import Foundation
import PostbackStore
import SpoolDelivery
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The ledger and the backoff, without a store.
@Suite struct DeliveryLedgerTests {
    func segment(_ name: String, size: Int = 10) -> SealedSegment {
        SealedSegment(
            path: "/nowhere/\(name)", relativePath: "raw/postbacks/dt=2026-01-01/\(name)", spool: .postbacks, size: size,
            modifiedAt: 0)
    }

    @Test func survivesReopenAndDropsATornLastLine() throws {
        let root = NSTemporaryDirectory() + "ledger-\(UUID().uuidString)"
        let path = DeliveryLedger.path(root: root, destination: "s3", writerID: "rx1")
        #expect(path == root + "/raw/_delivery/s3/rx1.ledger")
        do {
            let ledger = try DeliveryLedger(path: path)
            #expect(ledger.count == 0)
            try ledger.record(segment("part-rx1-000001.jsonl"), sha256Hex: "aa")
            try ledger.record(segment("part-rx1-000002.jsonl"), sha256Hex: "bb")
        }
        // A crash in the middle of the third append.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("raw/postbacks/dt=2026-01-01/part-rx1-000003.jsonl\t1".utf8))
        try handle.close()

        let reopened = try DeliveryLedger(path: path)
        #expect(reopened.count == 2)
        #expect(reopened.contains("raw/postbacks/dt=2026-01-01/part-rx1-000001.jsonl"))
        #expect(!reopened.contains("raw/postbacks/dt=2026-01-01/part-rx1-000003.jsonl"))
        try reopened.record(segment("part-rx1-000003.jsonl", size: 7), sha256Hex: "cc")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 3)
        #expect(text.hasSuffix("raw/postbacks/dt=2026-01-01/part-rx1-000003.jsonl\t7\tcc\n"))
    }

    @Test func backoffGrowsWithJitterUpToTheMaximum() {
        let backoff = Backoff(initialSeconds: 1, maximumSeconds: 60)
        #expect(backoff.delay(afterFailures: 1, unit: 0) == 0.5)
        #expect(backoff.delay(afterFailures: 1, unit: 0.999_999) < 1.000_001)
        #expect(backoff.delay(afterFailures: 4, unit: 0) == 4)
        #expect(backoff.delay(afterFailures: 4, unit: 0.5) == 6)
        #expect(backoff.delay(afterFailures: 50, unit: 0) == 30)
        #expect(backoff.delay(afterFailures: 50, unit: 0.999_999) <= 60)
        let spread = Set((0..<20).map { _ in backoff.delay(afterFailures: 3) })
        #expect(spread.count > 1)
    }
}
