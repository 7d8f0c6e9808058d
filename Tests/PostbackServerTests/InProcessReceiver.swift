import Dispatch
import Locking
import PostbackStore
import Postbacks
import TestSupport

@testable import PostbackServer

/// The receiver without HTTP: the same store, policy and executor (`PostbackIngest`) a live server
/// opens (`PostbackServer.openIngest`), fed one body at a time on the calling thread as a verifying
/// thread would be. For every rule about what is stored and answered; the HTTP layer's own rules
/// (framing, routes, limits, shutdown) need `TestServer`.
final class InProcessReceiver: ReceiverUnderTest, Sendable {
    let dataDirectory: String
    let logs: LogCapture
    private let store: WritableStore
    private let ingest: PostbackIngest
    let skadnetworkURL = Route.skadnetwork
    let appAttributionURL = Route.appAttribution

    init(
        dataDirectory: String? = nil, writerID: String = "test", storage: any SpoolStorage = POSIXSpoolStorage(),
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        let configuration = ServerConfiguration.forTests(dataDirectory: dataDirectory, writerID: writerID, configure: configure)
        try configuration.validate()
        (self.dataDirectory, logs) = (configuration.dataDirectory, LogCapture())
        (store, ingest) = try PostbackServer.openIngest(
            configuration: configuration, storage: storage, log: logs.log, metrics: ServerMetrics())
    }

    /// Closes the store (its segments and writer lock), as a receiver's shutdown does.
    func stop() { store.close() }

    struct NoAnswer: Error {}

    /// The reply `body` gets on `route` (`host`: the request's Host header; `client`: its address);
    /// throws when none came within 10 s.
    func post(_ body: [UInt8], to route: Route? = nil, host: String? = nil, client: String = "127.0.0.1") throws -> HTTPReply {
        let route = route ?? .skadnetwork
        let answer = Locked<HTTPReply?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let received = PostbackIngest.Received(
            body: body, route: route, copy: ingest.configuration.copy(forHost: host), client: client)
        ingest.ingest([
            .init(received: received) { reply in
                answer.withLock { $0 = reply.reply }
                answered.signal()
            }
        ])
        guard answered.wait(timeout: .now() + 10) == .success, let reply = answer.withLock({ $0 }) else { throw NoAnswer() }
        return reply
    }

    func metricsPage() -> String { ingest.metricsPage(ready: true, openConnections: 0).text }
}
