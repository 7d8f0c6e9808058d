import Locking

/// The receiver's defences against slow clients (`ConnectionWatchdog`: an absolute deadline per phase
/// of a connection — the headers, the body, the reply's reading, the keep-alive idle time — and
/// shedding silent connections at the connection limit) for another `HTTPResponder` on an
/// `HTTPDaemon` (the numbers API). The responder returns `connectionOpened`'s value as its connection
/// state and calls the others at each phase.
package final class ListenerWatchdog: Sendable {
    package struct Timeouts: Sendable {
        /// From the accept (or the end of the last reply's idle time) to the end of the headers.
        package var headerSeconds = 5.0
        /// For the body after the headers, and for the client to read the reply once queued.
        package var bodySeconds = 10.0
        /// Keep-alive between requests.
        package var idleSeconds = 30.0
        /// Open connections past which a silent one (or a slow reader) is shed, or the new one closed.
        package var connectionLimit = 256

        package init() {}
    }

    package let timeouts: Timeouts
    private let watchdog: ConnectionWatchdog
    private let closed = Locked<[String: Int]>([:])

    /// - Parameter onTimeout: told the phase (`headers`, `body`, `replying`, `idle`, `new`) of each
    ///   connection closed for its deadline.
    package init(timeouts: Timeouts, onTimeout: @escaping @Sendable (String) -> Void = { _ in }) {
        self.timeouts = timeouts
        let closed = closed
        let shortest = min(timeouts.headerSeconds, timeouts.bodySeconds, timeouts.idleSeconds)
        watchdog = ConnectionWatchdog(interval: max(0.02, min(0.25, shortest / 4))) { phase in
            closed.withLock { $0[phase.name, default: 0] += 1 }
            onTimeout(phase.name)
        }
    }

    deinit { watchdog.stop() }

    /// Connections closed for their deadline, by phase.
    package var timedOut: [String: Int] { closed.withLock { $0 } }

    /// The connection's state for `HTTPDaemon` (its watchdog track), under the header deadline; past
    /// the connection limit a silent connection is shed. `refused` is told why one was.
    package func connectionOpened(_ connection: HTTPConnection, refused: (String) -> Void = { _ in }) -> AnyObject {
        let peer = connection.peerAddress
        let track = ConnectionWatchdog.Track(
            descriptor: connection.descriptor, client: IPAddress.client(peer, ipv6PrefixLength: 64), peerAddress: peer)
        track.enter(.new, seconds: timeouts.headerSeconds)
        if let refusal = watchdog.admit(track, limit: timeouts.connectionLimit) { refused(refusal.rawValue) }
        return track
    }

    package func connectionClosed(_ state: AnyObject) {
        watchdog.unregister(unsafeDowncast(state, to: ConnectionWatchdog.Track.self))
    }

    /// A request line came: its headers must follow within the header deadline (a new connection's
    /// first request keeps the one counted from the accept).
    package func requestBegan(on connection: HTTPConnection) {
        guard let track = connection.track else { return }
        if track.phase == .new { track.continueAs(.headers) } else { track.enter(.headers, seconds: timeouts.headerSeconds) }
    }

    /// The headers are in: the body (if any) must come within the body deadline.
    package func headersReceived(on connection: HTTPConnection) {
        connection.track?.enter(.body, seconds: timeouts.bodySeconds)
    }

    /// Working on the answer: no deadline.
    package func processing(on connection: HTTPConnection) { connection.track?.enter(.processing, seconds: nil) }

    /// The reply is queued: the client must take it within the body deadline.
    package func replyQueued(on connection: HTTPConnection) {
        connection.track?.enter(.replying, seconds: timeouts.bodySeconds)
    }

    /// The reply is out: the keep-alive idle deadline starts.
    package func requestCompleted(on connection: HTTPConnection?) {
        if let track = connection?.track, track.phase == .replying || track.phase == .body {
            track.enter(.idle, seconds: timeouts.idleSeconds)
        }
    }
}
