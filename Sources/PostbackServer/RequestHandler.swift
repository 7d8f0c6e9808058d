import Basics
import Dispatch
import Foundation
import Locking
import Postbacks
import Synchronization

/// One HTTP request's state, from the request line to the completed notification.
///
/// libmicrohttpd calls back for one connection on one thread at a time, so the plain fields need no
/// lock; only `answer`, set by the verifying or the spool writer's thread, is locked.
final class RequestState: @unchecked Sendable {
    enum Stage { case new, receiving, waiting, done }

    var stage = Stage.new
    var route = Route.unknown
    var body: [UInt8] = []
    var tooLarge = false
    var startedProcessing: UInt64 = 0
    /// What `PostbackIngest` completed the postback with.
    let answer = Locked<PostbackIngest.Answer?>(nil)
    /// The client's address, captured when the headers are in (`RequestHandler.clientAddress`).
    var client = ""
    /// The client address counted in `RequestHandler.clientRequests` while this request is in progress.
    var countedClient: String?

    /// Since the body was complete (`startedProcessing`).
    var secondsProcessing: Double { Double(DispatchTime.now().uptimeNanoseconds - startedProcessing) / 1e9 }
}

/// The target of libmicrohttpd's callbacks (`HTTPDaemon`): each request's state machine, from the
/// request line through headers and body to the reply, and the connection bookkeeping around it.
///
/// A postback's connection is *suspended* once its record is handed to a spool writer; the writer's
/// group commit resumes it with the reply once the fdatasync covering it returned. So no HTTP thread
/// waits on the disk. The operational routes' answers are in `RequestHandler+Routes.swift`.
final class RequestHandler: HTTPResponder {
    let configuration: ServerConfiguration
    let ingest: PostbackIngest
    let metrics: ServerMetrics
    let log: ServerLog
    /// The listener this handler serves (the receiver's, or the private signing one) and its routes.
    let listener: Route.Listener
    /// The signing service and web-ad payloads; nil when neither is configured.
    let impressions: ImpressionService?
    let watchdog: ConnectionWatchdog
    let readiness: Readiness
    let metricsSources = Locked<[@Sendable () -> String]>([])

    /// Requests begun (request line seen) and not yet completed; shutdown lets them finish.
    let requestsInProgress = InProgress()
    /// Connections suspended while their record is being committed; closed once shutdown takes no
    /// more postbacks in. The daemon may only stop when none is left.
    let commitsInProgress = InProgress()
    /// Set when shutdown starts: replies say `Connection: close`, `/readyz` says not ready.
    let draining = Atomic<Bool>(false)
    /// Postbacks waiting for their signature check, and the threads that check them in batches
    /// (nil on the signing listener, which takes no postbacks).
    let verifications: VerificationQueue?

    /// Requests in progress per client address, when `per_ip_connection_limit` is applied by client
    /// rather than by socket peer (behind `trusted_proxies`). Entries leave at 0, so the map holds at
    /// most one entry per request in progress.
    private let clientRequests = Locked<[String: Int]>([:])

    /// - Parameter signingListener: serves the private signing listener (`signing_listen`), which
    ///   takes no postbacks (so it has no verifying threads), instead of the receiver's.
    init(
        configuration: ServerConfiguration, ingest: PostbackIngest, readiness: Readiness, metrics: ServerMetrics, log: ServerLog,
        impressions: ImpressionService? = nil, signingListener: Bool = false
    ) {
        self.configuration = configuration
        self.ingest = ingest
        self.readiness = readiness
        self.metrics = metrics
        self.log = log
        self.impressions = impressions
        self.listener =
            signingListener
            ? .signing
            : .receiver(adNetworkPath: configuration.adNetworkPath.map(Route.normalize), webAds: impressions?.webAds != nil)
        self.verifications =
            signingListener
            ? nil
            : VerificationQueue(threads: configuration.threads, consumer: ingest)
        let shortest = min(configuration.headerTimeoutSeconds, configuration.bodyTimeoutSeconds, configuration.idleTimeoutSeconds)
        let sampler = ingest.logSampler
        self.watchdog = ConnectionWatchdog(
            interval: max(0.02, min(0.25, shortest / 4)), onTick: { sampler.reportIfDue() },
            onTimeout: { phase in
                metrics.timedOutConnections.increment(phase.name)
                if sampler.allows(.slowConnection) { log.info("slow connection closed", ["phase": .string(phase.name)]) }
            })
    }

    var isReady: Bool { readinessProblems().isEmpty }

    /// Why `/readyz` says not ready; none when ready.
    func readinessProblems() -> [String] { readiness.problems(shuttingDown: draining.load(ordering: .relaxed)) }

    // MARK: Shutdown (`PostbackServer.shutdown`, in this order)

    /// Replies say `Connection: close` from now on, and `/readyz` says not ready.
    func beginDraining() { draining.store(true, ordering: .relaxed) }

    /// Waits for the requests begun to complete; false if some had not by `deadline`.
    @discardableResult
    func waitForRequests(until deadline: DispatchTime) -> Bool { requestsInProgress.waitUntilNone(deadline: deadline) }

    /// Takes no more postbacks in (they are answered 500, never acknowledged) and waits for those
    /// taken to be answered and their connections resumed; false if storage had not answered by
    /// `deadline` (then the daemon must not be stopped: connections are still suspended).
    func closeIntake(waitingUntil deadline: DispatchTime) -> Bool {
        commitsInProgress.close()
        return commitsInProgress.waitUntilNone(deadline: deadline)
    }

    /// Stops the watchdog and the verifying threads: once the daemon is gone, or it was abandoned.
    func stop() {
        watchdog.stop()
        verifications?.stop()
        impressions?.webAds?.stop()
    }

    /// Storage hangs with connections suspended: the daemon is left running for the process to end;
    /// only the watchdog stops (the verifying threads are left as they are).
    func abandon() { watchdog.stop() }

    // MARK: Callbacks

    // The daemon keeps what these return and hands it back: a connection's `ConnectionWatchdog.Track`,
    // a request's `RequestState` (so `unsafeDowncast`, without a dynamic cast per callback).

    /// A libmicrohttpd diagnostic.
    func libraryLogged(_ message: String) {
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        if ingest.logSampler.allows(.library) { log.warning("libmicrohttpd", ["detail": .string(text)]) }
        // The one place every answer libmicrohttpd makes itself (400, 413, 414, 431, …) shows up,
        // also those made before any request callback.
        if let code = ServerMetrics.libraryResponseCode(inLogMessage: text) { metrics.libraryResponse(code: code) }
    }

    /// A connection was accepted: its watchdog track, which `HTTPDaemon` keeps until `connectionClosed`.
    func connectionOpened(_ connection: HTTPConnection) -> AnyObject {
        let peer = connection.peerAddress
        let track = ConnectionWatchdog.Track(
            descriptor: connection.descriptor,
            client: IPAddress.client(peer, ipv6PrefixLength: configuration.clientIPv6PrefixLength), peerAddress: peer)
        // A new connection gets the short header deadline, not the keep-alive idle timeout: one
        // that sends nothing is gone within seconds.
        track.enter(.new, seconds: configuration.headerTimeoutSeconds)
        if let refusal = watchdog.admit(track, limit: configuration.connectionLimit) {
            metrics.refusedConnections.increment(refusal)
        }
        return track
    }

    func connectionClosed(_ state: AnyObject) {
        watchdog.unregister(unsafeDowncast(state, to: ConnectionWatchdog.Track.self))
    }

    /// The request line arrived: the headers must follow within the header timeout. The state
    /// returned is the request's until `requestCompleted` (`HTTPDaemon` keeps it).
    func requestBegan(on connection: HTTPConnection) -> AnyObject {
        if let track = connection.track {
            // A new connection's first request keeps the deadline counted from the accept.
            if track.phase == .new {
                track.continueAs(.headers)
            } else {
                track.enter(.headers, seconds: configuration.headerTimeoutSeconds)
            }
        }
        requestsInProgress.enter()
        return RequestState()
    }

    /// One call of the request's state machine: what the connection is to do next.
    func handle(_ state: AnyObject, on connection: HTTPConnection, line: HTTPRequestLine, chunk: HTTPBodyChunk) -> HTTPStep {
        let request = unsafeDowncast(state, to: RequestState.self)
        switch request.stage {
        case .new:
            if connection.track?.refusesRequests == true { return .refuse }
            // RFC 9112 §3.2: an HTTP/1.1 request must name its Host (libmicrohttpd answers without).
            let lacksHost = line.isHTTP11 && !connection.hasHeader("Host")
            return begin(request, connection: connection, path: line.path, method: line.methodName, lacksHost: lacksHost)
        case .receiving:
            if chunk.count > 0 {
                if request.tooLarge || request.body.count + chunk.count > configuration.bodyLimitBytes {
                    // Keep reading (and dropping) so the 413 can be sent once the body ends.
                    request.tooLarge = true
                    request.body = []
                } else {
                    chunk.append(to: &request.body)
                }
                chunk.consumed()
                return .proceed
            }
            connection.track?.enter(.processing, seconds: nil)
            if request.tooLarge {
                request.stage = .done
                return send(tooLarge(), route: request.route, on: connection, closing: true)
            }
            guard request.route.receivesPostbacks else {
                // Answered only now, after the body (empty for GETs): answering GETs from the first
                // call makes libmicrohttpd close the connection instead of keeping it alive.
                request.stage = .done
                let body = request.body
                request.body = []
                return send(
                    answer(
                        request.route, body: body, signingKey: { connection.header(ImpressionService.keyHeader) },
                        client: request.client),
                    route: request.route, on: connection)
            }
            return process(request, connection: connection)
        case .waiting:
            guard let answer = request.answer.withLock({ $0 }) else { return .proceed }
            request.stage = .done
            return send(answer.reply, route: request.route, on: connection, seconds: request.secondsProcessing)
        case .done:
            return .proceed
        }
    }

    /// A request ended (`request` nil if libmicrohttpd never told us of its request line; `connection`
    /// nil if it is gone already).
    func requestCompleted(_ state: AnyObject?, on connection: HTTPConnection?, termination: Int32) {
        let request = state.map { unsafeDowncast($0, to: RequestState.self) }
        defer { if request != nil { requestsInProgress.leave() } }
        if let connection { requestCompleted(request, connection: connection, termination: termination) }
    }

    /// Counts what `send` did not: libmicrohttpd's own answers (400, 413, 414, 431, …), and requests
    /// whose reply never reached the client.
    private func requestCompleted(_ request: RequestState?, connection: HTTPConnection, termination: Int32) {
        if let client = request?.countedClient {
            request?.countedClient = nil
            clientRequests.withLock { counts in
                let left = counts[client, default: 1] - 1
                counts[client] = left > 0 ? left : nil
            }
        }
        // The reply is out: the keep-alive idle timeout starts now.
        if let track = connection.track, track.phase == .replying {
            track.enter(.idle, seconds: configuration.idleTimeoutSeconds)
        }
        // `done`: this program queued the reply. Otherwise libmicrohttpd may have answered itself (its
        // logger counts those answers, also the ones made before any request callback).
        if request?.stage != .done {
            let status = connection.replyStatus
            // libmicrohttpd rejected the request itself (a malformed Content-Length, …): where the
            // next request starts is uncertain, so none is taken from this connection.
            if status >= 400 { connection.track?.refuseFurtherRequests() }
        }
        // MHD_REQUEST_TERMINATED_*: 0 completed; 1 error, 2 timeout, 3 shutdown, 4 read error, 5 client abort.
        switch termination {
        case 0: break
        case 2: metrics.abortedRequests.increment(.timeout)
        case 3: metrics.abortedRequests.increment(.shutdown)
        case 4, 5: metrics.abortedRequests.increment(.clientLeft)
        default: metrics.abortedRequests.increment(.error)
        }
    }

    /// The peer's address (read once per connection), or the client a trusted proxy names
    /// (`trusted_proxies`: its headers are read only then).
    private func clientAddress(of connection: HTTPConnection) -> String {
        ClientAddress.of(connection, peer: connection.track?.peerAddress, trusted: configuration.trustedProxies)
    }

    /// The headers are in: framing, route, method and declared length decide what happens next.
    /// Every reply made here, before the body is read, closes the connection and says so
    /// (`Connection: close`), so a client pipelining behind it knows to send its next request anew.
    private func begin(_ request: RequestState, connection: HTTPConnection, path: String, method: String, lacksHost: Bool)
        -> HTTPStep
    {
        let route = Route(path: path, listener: listener)
        request.route = route
        request.client = clientAddress(of: connection)
        let (layout, headerBytes) = connection.headerLayout()
        if let violation = HTTPFraming.violation(layout: layout, headerBytes: headerBytes)
            ?? HTTPFraming.violation(in: connection.framingHeaders())
            ?? (lacksHost
                ? HTTPFraming.Violation(status: 400, detail: "an HTTP/1.1 request must have a Host header (RFC 9112 §3.2)") : nil)
        {
            request.stage = .done
            let (type, title) =
                switch violation.status {
                case 501: ("transfer-coding-not-supported", "Transfer coding not supported")
                case 431: ("header-fields-too-large", "Request header fields too large")
                default: ("bad-framing", "Ambiguous or malformed message framing")
                }
            let reply = HTTPReply.problem(violation.status, type: type, title: title, detail: violation.detail)
            return send(reply, route: route, on: connection, closing: true)
        }
        guard route != .unknown else {
            request.stage = .done
            return send(
                .problem(
                    404, type: "not-found", title: "No such endpoint",
                    detail: "postbacks go to POST \(Route.skadnetworkPath)/ or \(Route.appAttributionPath)/"),
                route: route, on: connection, closing: true)
        }
        guard route.allows(method: method) else {
            request.stage = .done
            var reply = HTTPReply.problem(
                405, type: "method-not-allowed", title: "Method not allowed",
                detail: "\(JSONWriter.escapedForMessage(method)) is not allowed here; use \(route.allowedMethods)")
            reply.headers.append(("Allow", route.allowedMethods))
            return send(reply, route: route, on: connection, closing: true)
        }
        if let declared = connection.header("Content-Length"), let length = Int(declared), length > configuration.bodyLimitBytes {
            // Answered before the body is read; libmicrohttpd then closes the connection.
            request.stage = .done
            return send(tooLarge(), route: route, on: connection, closing: true)
        }
        if let refusal = admitClient(request, connection: connection) {
            request.stage = .done
            return send(refusal, route: route, on: connection, closing: true)
        }
        connection.track?.enter(.body, seconds: configuration.bodyTimeoutSeconds)
        request.stage = .receiving
        return .proceed
    }

    /// `per_ip_connection_limit` behind `trusted_proxies`: at most that many requests in progress per
    /// client address (the one a trusted proxy names); more get 429 and the connection is closed.
    /// Nil when the request may go on (and is then counted until `requestCompleted`).
    private func admitClient(_ request: RequestState, connection: HTTPConnection) -> HTTPReply? {
        let limit = configuration.perIPConnectionLimit
        guard limit > 0, !configuration.trustedProxies.isEmpty else { return nil }
        let client = request.client
        let admitted = clientRequests.withLock { counts -> Bool in
            guard counts[client, default: 0] < limit else { return false }
            counts[client, default: 0] += 1
            return true
        }
        guard admitted else {
            metrics.clientLimited.increment()
            return HTTPReply.retryLater(
                429, route: request.route, retryAfterSeconds: 1, type: "too-many-requests",
                title: "Too many requests in progress from this client",
                detail: "at most \(limit) requests at once per client address (per_ip_connection_limit); retry later")
        }
        request.countedClient = client
        return nil
    }

    /// The whole body is in: `PostbackIngest` takes it and completes with the reply once the record
    /// is durable (or could not be made so); the connection only waits for that, suspended while its
    /// postback waits for a verifying thread (`VerificationQueue`) and then for the group commit, and
    /// the answer resumes it. The count shutdown drains (`commitsInProgress`) covers it.
    private func process(_ request: RequestState, connection: HTTPConnection) -> HTTPStep {
        request.startedProcessing = DispatchTime.now().uptimeNanoseconds
        guard commitsInProgress.enterIfOpen() else {
            request.stage = .done
            return send(.storageUnavailable("the receiver is shutting down"), route: request.route, on: connection)
        }
        let body = request.body
        request.body = []
        request.stage = .waiting
        let received = PostbackIngest.Received(
            body: body, route: request.route, copy: configuration.copy(forHost: connection.header("Host")),
            client: request.client)
        guard let verifications else {
            // The signing listener takes no postbacks (its routes never reach here).
            commitsInProgress.leave()
            request.stage = .done
            return send(.text(500, "no handler"), route: request.route, on: connection)
        }
        return .suspend { [self] resume in
            verifications.submit(
                .init(received: received) { [self] answer in
                    request.answer.withLock { $0 = answer }
                    resume()
                    // Only now may shutdown stop the daemon: the connection is no longer touched here.
                    commitsInProgress.leave()
                })
        }
    }

    private func tooLarge() -> HTTPReply {
        .problem(
            413, type: "body-too-large", title: "Request body too large",
            detail: "the body limit is \(configuration.bodyLimitBytes) bytes; postbacks are about 1 KiB")
    }

    /// The step that queues `reply`, counted. `closing`: the connection ends after it, and the reply says so.
    private func send(
        _ reply: HTTPReply, route: Route, on connection: HTTPConnection, seconds: Double? = nil, closing: Bool = false
    ) -> HTTPStep {
        metrics.request(route: route, code: reply.status, seconds: seconds)
        // Not `idle` before the reply is out: a connection at the limit must not be shed mid-reply,
        // unless its client does not read it (a slow reader, `ConnectionWatchdog.admit`). A client
        // that has not read the whole reply within the body timeout is cut off (phase `replying`).
        connection.track?.enter(.replying, seconds: configuration.bodyTimeoutSeconds)
        return .reply(reply, closing: closing || draining.load(ordering: .relaxed))
    }
}
