import Foundation
import Locking
import Testing

@testable import PostbackCLI

/// `--jobs N` means N threads: the map runs exactly `workers` threads, each with the transform it
/// made once, and delivers in submission order however the batches finish.
@Suite struct OrderedParallelMapTests {
    /// Runs 200 batches that sleep a little (so that every free worker takes one) and records the
    /// most that ran at once, the transforms made and the threads that ran them.
    func run(workers: Int) -> (delivered: [Int], mostAtOnce: Int, transformsMade: [Int], threads: Int) {
        let running = Locked((now: 0, most: 0))
        let made = Locked<[Int]>([])
        let threads = Locked<Set<String>>([])
        let delivered = Locked<[Int]>([])
        let map = OrderedParallelMap<Int, Int>(
            workers: workers,
            makeTransform: { worker in
                made.withLock { $0.append(worker) }
                let thread = "\(worker):\(pthread_self())"
                return { batch in
                    running.withLock {
                        $0.now += 1
                        $0.most = max($0.most, $0.now)
                    }
                    threads.withLock { _ = $0.insert(thread) }
                    // Later batches finish sooner, so delivery order is not finishing order.
                    usleep(UInt32(200 + (batch % 7) * 150))
                    running.withLock { $0.now -= 1 }
                    return batch * 10
                }
            },
            deliver: { output in delivered.withLock { $0.append(output) } })
        for batch in 0..<200 { map.submit(batch) }
        map.waitUntilDone()
        return (
            delivered.withLock { $0 }, running.withLock { $0.most }, made.withLock { $0 }.sorted(), threads.withLock { $0.count }
        )
    }

    @Test(arguments: [1, 3])
    func runsExactlyTheWorkersAskedFor(workers: Int) {
        let result = run(workers: workers)
        #expect(result.delivered == (0..<200).map { $0 * 10 })
        #expect(result.mostAtOnce <= workers)
        #expect(result.transformsMade == Array(0..<workers))
        #expect(result.threads <= workers)
        if workers > 1 { #expect(result.mostAtOnce > 1, "the workers should overlap") }
    }
}
