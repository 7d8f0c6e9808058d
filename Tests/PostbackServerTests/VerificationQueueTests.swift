import Dispatch
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackServer

/// The default mode's verifying threads: postbacks that wait are checked together (one shared
/// modular inversion), a lone one is never held back for a batch, and every postback still gets the
/// answer it would get alone.
@Suite struct VerificationQueueTests {
    /// Records each batch's job numbers; a batch whose first job is `gate` blocks until `release`.
    final class Recorder: VerificationQueue.Consumer, @unchecked Sendable {
        let batches = Locked<[[Int]]>([])
        let processed = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var gate = -1

        func ingest(_ jobs: [VerificationQueue.Job]) {
            let numbers = jobs.map { Int($0.received.body[0]) }
            if numbers.first == gate {
                started.signal()
                release.wait()
            }
            batches.withLock { $0.append(numbers) }
            for _ in jobs { processed.signal() }
        }

        func job(_ number: Int) -> VerificationQueue.Job {
            let received = PostbackIngest.Received(
                body: [UInt8(number)], route: .skadnetwork, receivedAt: .now(), copy: .network, client: "test")
            return .init(received: received) { _ in }
        }

        /// Waits for `count` jobs to be processed; false if they were not within a generous time.
        func waitForJobs(_ count: Int) -> Bool {
            (0..<count).allSatisfy { _ in processed.wait(timeout: .now() + 30) == .success }
        }
    }

    /// A queue with one thread, busy with job 0 until `recorder.release` is signalled.
    private func busyQueue() -> (Recorder, VerificationQueue) {
        let recorder = Recorder()
        recorder.gate = 0
        let queue = VerificationQueue(threads: 1, consumer: recorder)
        queue.submit(recorder.job(0))
        #expect(recorder.started.wait(timeout: .now() + 30) == .success, "the only thread is busy with job 0")
        return (recorder, queue)
    }

    @Test func aLonePostbackIsCheckedAtOnceAndAlone() {
        let recorder = Recorder()
        let queue = VerificationQueue(threads: 2, consumer: recorder)
        defer { queue.stop() }
        queue.submit(recorder.job(7))
        // Nothing else is ever submitted: a queue that waited for a batch to fill would never answer.
        #expect(recorder.waitForJobs(1))
        #expect(recorder.batches.withLock { $0 } == [[7]])
    }

    @Test func postbacksThatWaitAreCheckedTogetherInArrivalOrder() {
        let (recorder, queue) = busyQueue()
        defer { queue.stop() }
        for number in 1...10 { queue.submit(recorder.job(number)) }
        recorder.release.signal()
        #expect(recorder.waitForJobs(11))
        #expect(recorder.batches.withLock { $0 } == [[0], Array(1...10)])
    }

    @Test func batchesAreCapped() {
        let (recorder, queue) = busyQueue()
        defer { queue.stop() }
        let waiting = VerificationQueue.maximumBatch + 8
        for number in 1...waiting { queue.submit(recorder.job(number)) }
        recorder.release.signal()
        #expect(recorder.waitForJobs(waiting + 1))
        #expect(
            recorder.batches.withLock { $0 }
                == [[0], Array(1...VerificationQueue.maximumBatch), Array((VerificationQueue.maximumBatch + 1)...waiting)])
    }

    @Test func stopChecksWhatIsQueuedFirst() {
        let (recorder, queue) = busyQueue()
        for number in 1...5 { queue.submit(recorder.job(number)) }
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            queue.stop()
            stopped.signal()
        }.start()
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut, "stop waits for the batch in progress")
        recorder.release.signal()
        #expect(stopped.wait(timeout: .now() + 30) == .success)
        #expect(recorder.batches.withLock { $0 } == [[0], [1, 2, 3, 4, 5]], "queued jobs were checked before the threads ended")
    }

    /// The real receiver with one verifying thread and many clients at once, so postbacks wait and are
    /// checked in batches: valid ones, a batch-mate's duplicate, ones signed by a key nobody trusts,
    /// altered ones and malformed ones. Each reply must be the one a lone check of the same body
    /// implies; rounds go on until batches of more than one postback were seen.
    @Test func batchedPostbacksGetTheAnswersALoneCheckGives() throws {
        let server = try TestServer { $0.threads = 1 }
        defer { server.stop() }
        let verifier = PostbackVerifier(
            policy: VerificationPolicy(allowsDevelopment: true, testKeys: [TestPostbacks.trusted]))
        let stranger = TestPostbackSigner(key: try ECDSAPrivateKey(generatingOn: .p256))
        var expectedStored = 0
        var sawBatches = false
        for round in 0..<20 where !sawBatches {
            var bodies: [[UInt8]] = []
            for index in 0..<64 {
                let seed = UInt64(100 + round)
                var body = TestPostbacks.body(index, seed: seed)
                switch index % 6 {
                case 1: body = try stranger.sign(TestPostbacks.synthetic.postback(index, seed: seed))
                case 2: if let position = body.lastIndex(of: UInt8(ascii: "A")) { body[position] = UInt8(ascii: "B") }
                case 3: body = Array(#"{"version":"4.0","#.utf8)
                case 4: body = TestPostbacks.body(index - 4, seed: seed)  // the same postback as a batch-mate
                default: break
                }
                bodies.append(body)
            }
            let sent = bodies
            let replies = concurrently(sent.count) { index in try? HTTPClient().post(server.skadnetworkURL, body: sent[index]) }
            var storedThisRound = Set<String>()
            for (index, reply) in replies.enumerated() {
                let alone = verifier.verify(body: bodies[index])
                let reply = try #require(reply, "round \(round) body \(index): no answer")
                if alone.quarantineReason != nil {
                    #expect(
                        reply.status == 200 && reply.text.contains("quarantined"), "round \(round) body \(index): \(reply.text)")
                } else if alone.status == .verified {
                    #expect(reply.status == 200, "round \(round) body \(index): \(reply.text)")
                    storedThisRound.insert(try #require(alone.dedupKey))
                } else {
                    #expect(reply.status == 400, "round \(round) body \(index): \(reply.text)")
                    #expect(
                        reply.text.contains(#""verdict":"\#(alone.status.rawValue)""#),
                        "round \(round) body \(index): \(reply.text)")
                }
            }
            expectedStored += storedThisRound.count
            let batches = try #require(try server.metric("postback_verification_batch_postbacks_count"))
            let checked = try #require(try server.metric("postback_verification_batch_postbacks_sum"))
            sawBatches = batches < checked
        }
        #expect(sawBatches, "no two postbacks were ever checked together")
        #expect(try server.records(.postbacks).count == expectedStored, "each valid postback (by dedup key) stored once")
    }
}
