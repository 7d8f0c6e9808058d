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

/// What the tests read from a receiver, live (`TestServer`) or in process (`InProcessReceiver`):
/// its store and its metrics page.
protocol ReceiverUnderTest {
    var dataDirectory: String { get }
    var logs: LogCapture { get }
    /// The `/metrics` page's text.
    func metricsPage() throws -> String
}

extension ReceiverUnderTest {
    var layout: StoreLayout { StoreLayout(root: dataDirectory) }

    /// Every record in `spool`, in segment order.
    func records(_ spool: StoreLayout.Spool) throws -> [SpoolRecord] {
        var records: [SpoolRecord] = []
        for segment in try segments(spool) {
            let reader = try SegmentReader(path: segment.path)
            while let entry = try reader.next() {
                if case .record(let record, _) = entry { records.append(record) }
            }
        }
        return records
    }

    func segments(_ spool: StoreLayout.Spool) throws -> [StoreLayout.Segment] {
        try layout.days(spool).flatMap { try layout.segments(spool, day: $0) }
    }

    /// The value of one metric line (`name{labels}`), or nil when absent.
    func metric(_ series: String) throws -> Double? {
        let text = try metricsPage()
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}

extension ServerConfiguration {
    /// The tests' receiver: loopback on a free port, a new temporary data directory unless one is
    /// given, development postbacks and the test key accepted, two threads; `configure` adjusts the rest.
    static func forTests(
        dataDirectory: String?, writerID: String, configure: (inout ServerConfiguration) -> Void
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.listen = "127.0.0.1:0"
        configuration.dataDirectory = dataDirectory ?? TestServer.temporaryDirectory()
        configuration.writerID = writerID
        configuration.allowsDevelopment = true
        configuration.testKeys = [TestPostbacks.trusted]
        configuration.threads = 2
        configure(&configuration)
        return configuration
    }
}

/// A real server on a loopback port with its own temporary data directory.
final class TestServer: ReceiverUnderTest, Sendable {
    let server: PostbackServer
    let dataDirectory: String
    let logs: LogCapture
    var base: String { "http://127.0.0.1:\(server.port)" }
    var skadnetworkURL: String { base + "/.well-known/skadnetwork/report-attribution/" }
    var appAttributionURL: String { base + "/.well-known/appattribution/report-attribution/" }

    /// - Parameter configure: adjusts the configuration (listen, data dir and writer id are preset).
    init(
        dataDirectory: String? = nil, writerID: String = "test", storage: any SpoolStorage = POSIXSpoolStorage(),
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        let configuration = ServerConfiguration.forTests(dataDirectory: dataDirectory, writerID: writerID, configure: configure)
        (self.dataDirectory, logs) = (configuration.dataDirectory, LogCapture())
        server = try PostbackServer.start(configuration: configuration, storage: storage, log: logs.log)
    }

    static func temporaryDirectory() -> String { TemporaryDirectory.create("postback-server-tests") }

    func stop() { server.shutdown() }

    func post(_ body: [UInt8], to url: String? = nil) throws -> HTTPResponse {
        try HTTPClient().post(url ?? skadnetworkURL, body: body)
    }

    func get(_ path: String) throws -> HTTPResponse {
        try HTTPClient().get(base + path)
    }

    func metricsPage() throws -> String { try get("/metrics").text }
}

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
