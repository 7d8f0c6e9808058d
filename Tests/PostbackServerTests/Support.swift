import Dispatch
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension FaultyStorage {
    /// Lets the held sync, and every later one, go on.
    func releaseHeldSyncs() {
        holdNextSyncs(false)
        syncRelease.signal()
    }
}

/// A postback POSTed on its own thread and held inside its group commit's fdatasync (by
/// `FaultyStorage`) until `storage.releaseHeldSyncs()`: a request in flight, for the shutdown tests.
final class HeldPostback: Sendable {
    private let answer = Locked<Int?>(nil)
    private let answered = DispatchSemaphore(value: 0)

    /// Returns once the postback is inside the sync.
    init(_ body: [UInt8], to url: String, storage: FaultyStorage) {
        storage.holdNextSyncs(true)
        Thread { [self] in
            let status = (try? HTTPClient().post(url, body: body))?.status
            answer.withLock { $0 = status }
            answered.signal()
        }.start()
        #expect(storage.syncEntered.wait(timeout: .now() + 10) == .success, "the postback reached the group commit's sync")
    }

    /// The status it was answered with; nil when no answer came within 10 s.
    func status() -> Int? {
        answered.wait(timeout: .now() + 10) == .success ? answer.withLock { $0 } : nil
    }
}

extension TestServer {
    /// Starts `stop()` on its own thread; the semaphore is signalled once it returned.
    func stopInBackground() -> DispatchSemaphore {
        let stopped = DispatchSemaphore(value: 0)
        Thread { [self] in
            stop()
            stopped.signal()
        }.start()
        return stopped
    }
}

/// Runs `body` on `count` threads at once (released together) and returns their results in order.
func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Locked<[Int: T]>([:])
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            start.wait()
            let result = body(index)
            results.withLock { $0[index] = result }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return (0..<count).map { index in results.withLock { $0[index]! } }
}

/// POSTs `bodies` to `url` from `workers` clients at once (each kept alive); the statuses, -1 for no answer.
func postConcurrently(_ bodies: [[UInt8]], to url: String, workers: Int) -> [Int] {
    concurrently(workers) { worker in
        guard let client = try? HTTPClient() else { return [-1] }
        return stride(from: worker, to: bodies.count, by: workers).map { (try? client.post(url, body: bodies[$0]))?.status ?? -1 }
    }.flatMap { $0 }
}
