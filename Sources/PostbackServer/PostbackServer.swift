import Basics
import Locking
import CMicroHTTPD
import CMicroHTTPDShim
import Dispatch
import Foundation
import Postbacks
public import PostbackStore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The webhook receiver: libmicrohttpd in front, the verifier and the spool behind.
///
/// Threads: libmicrohttpd runs a pool of `threads` epoll threads (one per core by default). They
/// parse HTTP, check signatures and encode records. A postback's connection is then *suspended* and
/// its record handed to a spool writer; the writer's group commit resumes it with the reply once the
/// fdatasync covering it returned. So no HTTP thread ever waits on the disk, and one sync covers every
/// request that arrived meanwhile. A watchdog thread enforces the absolute timeouts.
///
/// Replies: 200 once stored or already stored (duplicate), 400 with an RFC 9457 problem for a
/// rejected postback (kept in the rejected spool), 413 over the body limit, 404 and 405, and 500
/// whenever the record could not be made durable, and for every request until storage recovers.
public final class PostbackServer: Sendable {
    /// The port actually listened on (useful with port 0).
    public let port: Int
    /// `host:port` actually listened on.
    public let address: String
    public let configuration: ServerConfiguration
    private let core: HTTPCore

    /// Recovers the store, binds the socket and starts serving.
    /// - Parameter storage: the spool's file operations; tests pass one that injects faults.
    /// - Parameter sharedDedupKeys: keys stored elsewhere (other receivers' shipped segments), added to
    ///   the recovered dedup index before the first request; `serve` passes `SharedDedupKeys` when shipping.
    public static func start(configuration: ServerConfiguration, storage: any SpoolStorage = POSIXSpoolStorage(),
                             log: ServerLog, sharedDedupKeys: ((StoreLayout) -> [String])? = nil) throws(ServerError) -> PostbackServer {
        do {
            try configuration.validate()
        } catch {
            throw ServerError(error.description)
        }
        let listenAddress: ListenAddress
        do { listenAddress = try ListenAddress(configuration.listen) } catch { throw ServerError(error.description) }
        let layout = StoreLayout(root: configuration.dataDirectory)
        let lock: WriterLock
        do {
            lock = try WriterLock(layout: layout, writerID: configuration.writerID)
        } catch {
            throw ServerError(error.description)
        }
        for spool in StoreLayout.Spool.allCases {
            do {
                try storage.makeDirectories(layout.spoolDirectory(spool))
            } catch {
                throw ServerError("data directory \(configuration.dataDirectory) is not usable: \(error)")
            }
        }

        let started = DispatchTime.now().uptimeNanoseconds
        var recovery: SpoolRecovery
        do {
            recovery = try SpoolRecovery.scan(layout: layout, writerID: configuration.writerID)
        } catch {
            throw ServerError("cannot recover the store: \(error)")
        }
        for damage in recovery.damage {
            log.warning("damaged spool line skipped", ["path": .string(damage.path), "line": .int(damage.line), "problem": .string(damage.problem)])
        }
        // The dedup keys of a segment that cannot be read are unknown: serving would store a replay
        // of any of its postbacks a second time. Refuse to start until the segment can be read.
        if !recovery.unreadable.isEmpty {
            throw ServerError("cannot recover the store: unreadable spool segment(s), so their postbacks could be stored twice: "
                + recovery.unreadable.joined(separator: "; "))
        }
        log.info("store recovered", [
            "data_dir": .string(configuration.dataDirectory), "writer": .string(configuration.writerID),
            "segments": .int(recovery.segmentsScanned), "records": .int(recovery.recordsScanned),
            "dedup_keys": .int(recovery.dedupIndex.count),
            "seconds": .double(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9),
        ])

        if let sharedDedupKeys {
            for key in sharedDedupKeys(layout) { recovery.dedupIndex.insert(key) }
        }

        let metrics = ServerMetrics()
        func writer(_ spool: StoreLayout.Spool, index: DedupIndex?) -> SpoolWriter {
            let writerConfiguration = SpoolWriter.Configuration(
                layout: layout, spool: spool, writerID: configuration.writerID, segmentBytes: configuration.segmentBytes,
                firstSequence: recovery.nextSequence[spool] ?? 1, storage: storage,
                gatherSeconds: configuration.commitGatherSeconds, segmentMaxAgeSeconds: configuration.effectiveSegmentMaxAgeSeconds)
            return SpoolWriter(configuration: writerConfiguration, dedupIndex: index) { event in
                metrics.writer(spool, event: event)
                switch event {
                case .failed(let error):
                    log.error("storage failure: answering 500 until storage recovers", ["spool": .string(spool.rawValue), "error": .string(error.description)])
                case .recovered:
                    log.info("storage recovered", ["spool": .string(spool.rawValue)])
                case .openedSegment(let path):
                    log.info("segment opened", ["spool": .string(spool.rawValue), "path": .string(path)])
                case .segmentVanished(let path):
                    log.error("open segment deleted or replaced under the receiver: closed it, the next record goes to a new segment",
                              ["spool": .string(spool.rawValue), "path": .string(path)])
                case .committed:
                    break
                }
            }
        }
        let postbacks = writer(.postbacks, index: recovery.dedupIndex)
        let rejected = writer(.rejected, index: nil)
        let unverifiable = writer(.unverifiable, index: nil)
        let ingest = PostbackIngest(configuration: configuration, postbacks: postbacks, rejected: rejected, unverifiable: unverifiable,
                                    metrics: metrics, log: log)

        let socket: (descriptor: Int32, port: Int)
        do {
            socket = try listenAddress.bind()
        } catch {
            postbacks.close()
            rejected.close()
            unverifiable.close()
            throw error
        }
        let core = HTTPCore(configuration: configuration, ingest: ingest, metrics: metrics, log: log, lock: lock)
        do {
            try core.start(listenDescriptor: socket.descriptor)
        } catch {
            close(socket.descriptor)
            core.stopBackground()
            throw error
        }
        let bound = ListenAddress(host: listenAddress.host, port: socket.port)
        log.info("listening", ["address": .string(bound.description), "writer": .string(configuration.writerID),
                               "threads": .int(configuration.threads), "allow_development": .bool(configuration.allowsDevelopment)])
        return PostbackServer(port: socket.port, address: bound.description, configuration: configuration, core: core)
    }

    private init(port: Int, address: String, configuration: ServerConfiguration, core: HTTPCore) {
        self.port = port
        self.address = address
        self.configuration = configuration
        self.core = core
    }

    /// Whether `/readyz` answers 200: storage healthy, not full or read-only, and not shutting down.
    public var isReady: Bool { core.isReady }

    /// Whether a spool writer may still append to this segment (shipping takes only sealed ones).
    public func isSegmentOpen(_ path: String) -> Bool {
        core.ingest.postbacks.isOpen(path) || core.ingest.rejected.isOpen(path) || core.ingest.unverifiable.isOpen(path)
    }

    /// Appends another component's Prometheus text (shipping's `postback_delivery_*`) to `/metrics`.
    public func addMetricsSource(_ render: @escaping @Sendable () -> String) { core.metricsSources.withLock { $0.append(render) } }

    /// Graceful stop: stop accepting connections, let requests in progress finish (up to
    /// `shutdownGraceSeconds`), close the segments (every acknowledged record is already synced),
    /// release the writer lock. Safe to call more than once; returns when done.
    public func shutdown() { core.shutdown() }
}


/// A libmicrohttpd pointer handed between threads; libmicrohttpd itself synchronizes its use.
struct MHDPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// One HTTP request's state, from the request line to the completed notification.
///
/// libmicrohttpd calls back for one connection on one thread at a time, so the plain fields need no
/// lock; only `reply`, set by the spool writer's thread, is locked.
final class RequestState: @unchecked Sendable {
    enum Stage { case new, receiving, waiting, done }

    var stage = Stage.new
    var route = Route.unknown
    var body: [UInt8] = []
    var tooLarge = false
    var startedProcessing: UInt64 = 0
    let reply = Locked<HTTPReply?>(nil)
    /// The client address counted in `HTTPCore.clientRequests` while this request is in progress.
    var countedClient: String?
}

/// Everything the C callbacks reach through their context pointer.
final class HTTPCore: Sendable {
    let configuration: ServerConfiguration
    let ingest: PostbackIngest
    let metrics: ServerMetrics
    let log: ServerLog
    let adNetworkPath: String?
    let watchdog: ConnectionWatchdog
    let metricsSources = Locked<[@Sendable () -> String]>([])
    private let lock: WriterLock

    /// Requests in progress per client address, when `per_ip_connection_limit` is applied by client
    /// rather than by socket peer (behind `trusted_proxies`). Entries leave at 0, so the map holds at
    /// most one entry per request in progress.
    private let clientRequests = Locked<[String: Int]>([:])

    private struct Admission {
        /// False once shutdown stops taking new postbacks in.
        var accepting = true
        /// Connections suspended while their record is being committed.
        var suspended = 0
    }

    private enum Lifecycle { case created, running, stopping, stopped }

    private let daemon = Locked<(handle: MHDPointer?, loggerBox: UnsafeMutableRawPointerBox?)>((nil, nil))
    private let admission = Locked(Admission())
    private let lifecycle = Locked(Lifecycle.created)
    private let activeRequests = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)

    init(configuration: ServerConfiguration, ingest: PostbackIngest, metrics: ServerMetrics, log: ServerLog, lock: WriterLock) {
        self.configuration = configuration
        self.ingest = ingest
        self.metrics = metrics
        self.log = log
        self.lock = lock
        self.adNetworkPath = configuration.adNetworkPath.map(Route.normalize)
        let shortest = min(configuration.headerTimeoutSeconds, configuration.bodyTimeoutSeconds, configuration.idleTimeoutSeconds)
        self.watchdog = ConnectionWatchdog(interval: max(0.02, min(0.25, shortest / 4))) { phase in
            metrics.connectionTimedOut(phase: phase.name)
            log.info("slow connection closed", ["phase": .string(phase.name)])
        }
    }

    var isReady: Bool { readinessProblems().isEmpty }

    /// Why `/readyz` says not ready; none when ready. Besides the writers' health (which a failed write
    /// or sync turns off), one `statvfs` per call notices a full or read-only store while idle, before
    /// a postback fails on it, so a load balancer can move traffic away in time.
    func readinessProblems() -> [String] {
        var problems: [String] = []
        if draining.load(ordering: .relaxed) { problems.append("shutting down") }
        if !ingest.postbacks.isHealthy { problems.append("postbacks spool is not writable") }
        if !ingest.rejected.isHealthy { problems.append("rejected spool is not writable") }
        if !ingest.unverifiable.isHealthy { problems.append("unverifiable spool is not writable") }
        // Asking also makes the writer replace them at once, so the next scrape is ready again.
        for path in ingest.postbacks.vanishedSegments() + ingest.rejected.vanishedSegments() + ingest.unverifiable.vanishedSegments() {
            problems.append("open segment \(path) was deleted or replaced; a new one is being started")
        }
        var info = statvfs()
        if statvfs(configuration.dataDirectory, &info) != 0 {
            problems.append("data directory cannot be examined: \(String(cString: strerror(errno)))")
        } else {
            if info.f_flag & UInt(ST_RDONLY) != 0 { problems.append("data directory is on a read-only file system") }
            // Room for at least two records of the largest accepted body, plus their metadata.
            let available = UInt64(info.f_bavail) * UInt64(info.f_frsize)
            if available < UInt64(2 * configuration.bodyLimitBytes + 65_536) {
                problems.append("data directory is full (\(available) bytes available)")
            }
        }
        return problems
    }

    // MARK: Start and stop

    func start(listenDescriptor: Int32) throws(ServerError) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var settings = postback_mhd_settings()
        settings.listen_fd = listenDescriptor
        settings.thread_per_connection = configuration.threadPerConnection ? 1 : 0
        settings.thread_pool_size = UInt32(configuration.threads)
        // The limit itself is kept by `watchdog.admit` (which sheds silent connections instead of
        // letting new ones queue); libmicrohttpd's, split between its threads, only backs it up.
        settings.connection_limit = UInt32(min(configuration.connectionLimit * 2 + 64 * configuration.threads, 4_000_000))
        // Behind trusted proxies every connection's peer is a proxy: the limit is kept per client
        // address instead (`admitClient`), and libmicrohttpd's per-peer one would throttle the proxy.
        settings.per_ip_connection_limit = configuration.trustedProxies.isEmpty ? UInt32(configuration.perIPConnectionLimit) : 0
        // libmicrohttpd's inactivity timeout backs up the watchdog; whole seconds, rounded up.
        settings.idle_timeout_seconds = UInt32(configuration.idleTimeoutSeconds.rounded(.up))
        // Request line and headers must fit here (libmicrohttpd answers 431 otherwise); the body is
        // streamed out of it. It is zeroed for every request, so smaller is cheaper: 8 KiB is the
        // usual header limit (nginx, Apache), and devices send a few hundred bytes of headers.
        settings.connection_memory_limit = 8 << 10
        settings.access_handler = { context, connection, url, method, _, data, size, requestContext in
            guard let context, let connection, let size, let requestContext else { return 0 }
            let core = Unmanaged<HTTPCore>.fromOpaque(context).takeUnretainedValue()
            return core.handle(connection: connection, url: url, method: method, data: data, size: size, requestContext: requestContext)
        }
        settings.access_context = context
        settings.request_completed = { context, connection, requestContext, termination in
            guard let context, let requestContext else { return }
            let core = Unmanaged<HTTPCore>.fromOpaque(context).takeUnretainedValue()
            let request = requestContext.pointee.map { Unmanaged<RequestState>.fromOpaque($0).takeRetainedValue() }
            requestContext.pointee = nil
            if request != nil { core.activeRequests.subtract(1, ordering: .relaxed) }
            if let connection { core.requestCompleted(request, connection: connection, termination: termination) }
        }
        settings.request_completed_context = context
        settings.connection_notify = { context, connection, socketContext, code in
            guard let context, let connection, let socketContext else { return }
            let core = Unmanaged<HTTPCore>.fromOpaque(context).takeUnretainedValue()
            core.connectionNotification(connection: connection, socketContext: socketContext, started: code == 0 /* MHD_CONNECTION_NOTIFY_STARTED */)
        }
        settings.connection_notify_context = context
        settings.uri_log = { context, _, connection in
            guard let context, let connection else { return nil }
            let core = Unmanaged<HTTPCore>.fromOpaque(context).takeUnretainedValue()
            return core.requestLineReceived(connection: connection)
        }
        settings.uri_log_context = context
        settings.logger = { context, message in
            guard let context, let message else { return }
            let core = Unmanaged<HTTPCore>.fromOpaque(context).takeUnretainedValue()
            let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
            core.log.warning("libmicrohttpd", ["detail": .string(text)])
            // The one place every answer libmicrohttpd makes itself (400, 413, 414, 431, …) shows up,
            // also those made before any request callback.
            if let code = ServerMetrics.libraryResponseCode(inLogMessage: text) { core.metrics.libraryResponse(code: code) }
        }
        settings.logger_context = context

        var box: UnsafeMutableRawPointer?
        guard let handle = postback_mhd_start(&settings, &box) else {
            throw ServerError("libmicrohttpd could not start (threads \(configuration.threads), connection limit \(configuration.connectionLimit))")
        }
        daemon.withLock { $0 = (MHDPointer(pointer: handle), box.map(UnsafeMutableRawPointerBox.init)) }
        lifecycle.withLock { $0 = .running }
    }

    /// Stops the watchdog and the writers (also used when start fails half way).
    func stopBackground() {
        watchdog.stop()
        ingest.postbacks.close()
        ingest.rejected.close()
        ingest.unverifiable.close()
    }

    func shutdown() {
        let proceed = lifecycle.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .stopping
            return true
        }
        guard proceed else {
            // A concurrent caller: wait until the first one is done.
            while lifecycle.withLock({ $0 }) == .stopping { usleep(5000) }
            return
        }
        log.info("shutting down: no new connections; finishing requests in progress")
        draining.store(true, ordering: .relaxed)
        let (handle, box) = daemon.withLock { $0 }
        guard let handle else { return }
        // Quiesced, libmicrohttpd accepts no more connections (the kernel may still queue some; they
        // are reset when the socket closes). Its workers may still use the socket: each removes it
        // from its epoll set, and aborts the process if it is already closed. So it is closed only
        // once the daemon has stopped, as libmicrohttpd's documentation requires.
        let listen = MHD_quiesce_daemon(handle.pointer)

        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(configuration.shutdownGraceSeconds * 1e9)
        // Requests already begun may finish (their responses say Connection: close).
        while activeRequests.load(ordering: .relaxed) > 0, DispatchTime.now().uptimeNanoseconds < deadline { usleep(2000) }
        admission.withLock { $0.accepting = false }
        // No connection may stay suspended when the daemon stops: wait for the writers to resume them.
        while admission.withLock({ $0.suspended }) > 0 {
            if DispatchTime.now().uptimeNanoseconds > deadline + 30_000_000_000 {
                // The writer thread is stuck in a write or fdatasync; closing the writers would wait
                // for it forever. Nothing unsynced was acknowledged, so leave it and let the process end.
                log.error("storage did not answer within the shutdown grace period; exiting without stopping the HTTP daemon")
                watchdog.stop()
                lifecycle.withLock { $0 = .stopped }
                return
            }
            usleep(2000)
        }
        // A request admitted just before `accepting` turned false was resumed above, but its reply may
        // not be sent yet (the counter drops when the writer resumes the connection, before the
        // worker writes). Give the replies in progress a moment, so a stored postback is answered.
        let replyDeadline = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
        while activeRequests.load(ordering: .relaxed) > 0, DispatchTime.now().uptimeNanoseconds < replyDeadline { usleep(1000) }
        postback_mhd_stop(handle.pointer, box?.pointer)
        if listen >= 0 { close(listen) }
        daemon.withLock { $0 = (nil, nil) }
        stopBackground()
        lock.release()
        lifecycle.withLock { $0 = .stopped }
        log.info("stopped: every acknowledged postback is synced")
    }

    // MARK: Callbacks

    fileprivate func connectionNotification(connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>, started: Bool) {
        if started {
            let track = ConnectionWatchdog.Track(descriptor: postback_mhd_connection_fd(connection))
            // A new connection gets the short header deadline, not the keep-alive idle timeout: one
            // that sends nothing is gone within seconds.
            track.enter(.new, seconds: configuration.headerTimeoutSeconds)
            socketContext.pointee = Unmanaged.passRetained(track).toOpaque()
            if let refusal = watchdog.admit(track, limit: configuration.connectionLimit) {
                metrics.connectionRefused(refusal.rawValue)
            }
        } else if let raw = socketContext.pointee {
            let track = Unmanaged<ConnectionWatchdog.Track>.fromOpaque(raw)
            watchdog.unregister(track.takeUnretainedValue())
            track.release()
            socketContext.pointee = nil
        }
    }

    private func track(of connection: OpaquePointer) -> ConnectionWatchdog.Track? {
        guard let raw = postback_mhd_socket_context(connection) else { return nil }
        return Unmanaged<ConnectionWatchdog.Track>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The request line arrived: the headers must follow within the header timeout.
    fileprivate func requestLineReceived(connection: OpaquePointer) -> UnsafeMutableRawPointer? {
        if let track = track(of: connection) {
            // A new connection's first request keeps the deadline counted from the accept.
            if track.phase == .new { track.continueAs(.headers) } else { track.enter(.headers, seconds: configuration.headerTimeoutSeconds) }
        }
        activeRequests.add(1, ordering: .relaxed)
        return Unmanaged.passRetained(RequestState()).toOpaque()
    }

    fileprivate func handle(connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                            data: UnsafePointer<CChar>?, size: UnsafeMutablePointer<Int>,
                            requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> Int32 {
        if requestContext.pointee == nil {
            // No request-line notification came (should not happen): create the state here.
            activeRequests.add(1, ordering: .relaxed)
            requestContext.pointee = Unmanaged.passRetained(RequestState()).toOpaque()
        }
        let request = Unmanaged<RequestState>.fromOpaque(requestContext.pointee!).takeUnretainedValue()
        switch request.stage {
        case .new:
            if track(of: connection)?.refusesRequests == true { return 0 }
            return begin(request, connection: connection, path: url.map { String(cString: $0) } ?? "/",
                         method: method.map { String(cString: $0) } ?? "")
        case .receiving:
            if size.pointee > 0 {
                let count = size.pointee
                if request.tooLarge || request.body.count + count > configuration.bodyLimitBytes {
                    // Keep reading (and dropping) so the 413 can be sent once the body ends.
                    request.tooLarge = true
                    request.body = []
                } else if let data {
                    data.withMemoryRebound(to: UInt8.self, capacity: count) { request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count)) }
                }
                size.pointee = 0
                return 1
            }
            track(of: connection)?.enter(.processing, seconds: nil)
            if request.tooLarge {
                request.stage = .done
                return send(tooLarge(), route: request.route, on: connection, closing: true)
            }
            guard request.route.receivesPostbacks else {
                // Answered only now, after the (empty) body: answering GETs from the first call
                // makes libmicrohttpd close the connection instead of keeping it alive.
                request.stage = .done
                return send(operationalReply(request.route), route: request.route, on: connection)
            }
            return process(request, connection: connection)
        case .waiting:
            guard let reply = request.reply.withLock({ $0 }) else { return 1 }
            request.stage = .done
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - request.startedProcessing) / 1e9
            return send(reply, route: request.route, on: connection, seconds: seconds)
        case .done:
            return 1
        }
    }

    /// The request that was just completed (nil if libmicrohttpd never told us of its request line).
    /// Counts what `send` did not: libmicrohttpd's own answers (400, 413, 414, 431, …), and requests
    /// whose reply never reached the client.
    fileprivate func requestCompleted(_ request: RequestState?, connection: OpaquePointer, termination: Int32) {
        if let client = request?.countedClient {
            request?.countedClient = nil
            clientRequests.withLock { counts in
                let left = counts[client, default: 1] - 1
                counts[client] = left > 0 ? left : nil
            }
        }
        if let track = track(of: connection), track.phase == .replying { track.continueAs(.idle) }
        // `done`: this program queued the reply. Otherwise libmicrohttpd may have answered itself (its
        // logger counts those answers, also the ones made before any request callback).
        if request?.stage != .done {
            let status = Int(postback_mhd_http_status(connection))
            // libmicrohttpd rejected the request itself (a malformed Content-Length, …): where the
            // next request starts is uncertain, so none is taken from this connection.
            if status >= 400 { track(of: connection)?.refuseFurtherRequests() }
        }
        // MHD_REQUEST_TERMINATED_*: 0 completed; 1 error, 2 timeout, 3 shutdown, 4 read error, 5 client abort.
        switch termination {
        case 0: break
        case 2: metrics.requestAborted("timeout")
        case 3: metrics.requestAborted("shutdown")
        case 4, 5: metrics.requestAborted("client-left")
        default: metrics.requestAborted("error")
        }
    }

    /// The peer's address, or the client a trusted proxy names (`trusted_proxies`).
    private func clientAddress(of connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let peer = postback_mhd_client_address(connection, &buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        guard !configuration.trustedProxies.isEmpty else { return peer }
        func header(_ name: String) -> String? { MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) } }
        return ClientAddress.resolve(peer: peer, forwardedFor: header("X-Forwarded-For"), forwarded: header("Forwarded"),
                                     trusted: configuration.trustedProxies)
    }

    /// The request headers the framing checks look at (names as received): `Content-Length`,
    /// `Transfer-Encoding`, and any name with whitespace. Others are skipped without making Strings.
    private func framingHeaders(of connection: OpaquePointer) -> [(name: String, value: String)] {
        final class Collected { var headers: [(name: String, value: String)] = [] }
        let collected = Collected()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, { context, _, key, value in
            guard let context, let key else { return .YES }
            let relevant = strcasecmp(key, "Content-Length") == 0 || strcasecmp(key, "Transfer-Encoding") == 0
                || key[0] == 0 || strpbrk(key, " \t") != nil
            guard relevant else { return .YES }
            let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
            collected.headers.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
            return .YES
        }, Unmanaged.passUnretained(collected).toOpaque())
        return withExtendedLifetime(collected) { collected.headers }
    }

    /// The headers are in: framing, route, method and declared length decide what happens next.
    /// Every reply made here, before the body is read, closes the connection and says so
    /// (`Connection: close`), so a client pipelining behind it knows to send its next request anew.
    private func begin(_ request: RequestState, connection: OpaquePointer, path: String, method: String) -> Int32 {
        let route = Route(path: path, adNetworkPath: adNetworkPath)
        request.route = route
        if let violation = HTTPFraming.violation(in: framingHeaders(of: connection)) {
            request.stage = .done
            let reply = HTTPReply.problem(violation.status, type: violation.status == 501 ? "transfer-coding-not-supported" : "bad-framing",
                                          title: violation.status == 501 ? "Transfer coding not supported" : "Ambiguous or malformed message framing",
                                          detail: violation.detail)
            return send(reply, route: route, on: connection, closing: true)
        }
        guard route != .unknown else {
            request.stage = .done
            return send(.problem(404, type: "not-found", title: "No such endpoint",
                                 detail: "postbacks go to POST \(Route.skadnetworkPath)/ or \(Route.appAttributionPath)/"),
                        route: route, on: connection, closing: true)
        }
        guard route.allows(method: method) else {
            request.stage = .done
            var reply = HTTPReply.problem(405, type: "method-not-allowed", title: "Method not allowed",
                                          detail: "\(JSONWriter.escapedForMessage(method)) is not allowed here; use \(route.allowedMethods)")
            reply.headers.append(("Allow", route.allowedMethods))
            return send(reply, route: route, on: connection, closing: true)
        }
        if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
           let length = Int(String(cString: declared)), length > configuration.bodyLimitBytes {
            // Answered before the body is read; libmicrohttpd then closes the connection.
            request.stage = .done
            return send(tooLarge(), route: route, on: connection, closing: true)
        }
        if let refusal = admitClient(request, connection: connection) {
            request.stage = .done
            return send(refusal, route: route, on: connection, closing: true)
        }
        track(of: connection)?.enter(.body, seconds: configuration.bodyTimeoutSeconds)
        request.stage = .receiving
        return 1
    }

    /// `per_ip_connection_limit` behind `trusted_proxies`: at most that many requests in progress per
    /// client address (the one a trusted proxy names); more get 429 and the connection is closed.
    /// Nil when the request may go on (and is then counted until `requestCompleted`).
    private func admitClient(_ request: RequestState, connection: OpaquePointer) -> HTTPReply? {
        let limit = configuration.perIPConnectionLimit
        guard limit > 0, !configuration.trustedProxies.isEmpty else { return nil }
        let client = clientAddress(of: connection)
        let admitted = clientRequests.withLock { counts -> Bool in
            guard counts[client, default: 0] < limit else { return false }
            counts[client, default: 0] += 1
            return true
        }
        guard admitted else {
            metrics.clientLimited()
            var reply = HTTPReply.problem(429, type: "too-many-requests", title: "Too many requests in progress from this client",
                                          detail: "at most \(limit) requests at once per client address (per_ip_connection_limit); retry later")
            reply.headers.append(("Retry-After", "1"))
            return reply
        }
        request.countedClient = client
        return nil
    }

    /// The whole body is in: verify, then either answer or suspend until the spool writer has the
    /// record on disk.
    private func process(_ request: RequestState, connection: OpaquePointer) -> Int32 {
        request.startedProcessing = DispatchTime.now().uptimeNanoseconds
        guard admission.withLock({ $0.accepting }) else {
            request.stage = .done
            return send(.storageUnavailable("the receiver is shutting down"), route: request.route, on: connection)
        }
        let body = request.body
        request.body = []
        switch ingest.receive(body: body, route: request.route, client: { clientAddress(of: connection) }) {
        case .reply(let reply):
            request.stage = .done
            return send(reply, route: request.route, on: connection)
        case .store(let writer, let line, let day, let dedupKey, let makeReply):
            let admitted = admission.withLock { admission -> Bool in
                guard admission.accepting else { return false }
                admission.suspended += 1
                return true
            }
            guard admitted else {
                request.stage = .done
                return send(.storageUnavailable("the receiver is shutting down"), route: request.route, on: connection)
            }
            request.stage = .waiting
            if configuration.threadPerConnection {
                // This connection's own thread: wait here for the group commit.
                let committed = DispatchSemaphore(value: 0)
                writer.submit(line: line, day: day, dedupKey: dedupKey) { outcome in
                    request.reply.withLock { $0 = makeReply(outcome) }
                    committed.signal()
                }
                committed.wait()
                admission.withLock { $0.suspended -= 1 }
                request.stage = .done
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - request.startedProcessing) / 1e9
                return send(request.reply.withLock { $0 }!, route: request.route, on: connection, seconds: seconds)
            }
            MHD_suspend_connection(connection)
            let handle = MHDPointer(pointer: connection)
            writer.submit(line: line, day: day, dedupKey: dedupKey) { [self] outcome in
                request.reply.withLock { $0 = makeReply(outcome) }
                MHD_resume_connection(handle.pointer)
                // Only now may shutdown stop the daemon: the connection is no longer touched here.
                admission.withLock { $0.suspended -= 1 }
            }
            return 1
        }
    }

    private func tooLarge() -> HTTPReply {
        .problem(413, type: "body-too-large", title: "Request body too large",
                 detail: "the body limit is \(configuration.bodyLimitBytes) bytes; postbacks are about 1 KiB")
    }

    private func operationalReply(_ route: Route) -> HTTPReply {
        switch route {
        case .livez:
            return .json(200) { $0.field("status", "alive") }
        case .readyz:
            let reasons = readinessProblems()
            return .json(reasons.isEmpty ? 200 : 503) { json in
                json.field("status", reasons.isEmpty ? "ready" : "not ready")
                if !reasons.isEmpty {
                    json.key("reasons")
                    json.beginArray()
                    for reason in reasons { json.value(reason) }
                    json.endArray()
                }
            }
        case .metrics:
            let gauges = ServerMetrics.Gauges(
                ready: isReady,
                storageHealthy: [.postbacks: ingest.postbacks.isHealthy, .rejected: ingest.rejected.isHealthy,
                                 .unverifiable: ingest.unverifiable.isHealthy],
                dedupKeys: ingest.postbacks.dedupKeyCount, openConnections: watchdog.openConnections)
            var text = metrics.render(gauges)
            ProcessMetrics.render(into: &text)
            text += metricsSources.withLock { $0 }.map { $0() }.joined()
            return .text(200, text, contentType: "text/plain; version=0.0.4; charset=utf-8")
        default:
            return .text(500, "no handler")
        }
    }

    /// Queues `reply`. `closing`: the connection ends after it, and the reply says so.
    private func send(_ reply: HTTPReply, route: Route, on connection: OpaquePointer, seconds: Double? = nil, closing: Bool = false) -> Int32 {
        let response = reply.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), Self.mustCopy)
        }
        guard let response else { return 0 }
        defer { MHD_destroy_response(response) }
        MHD_add_response_header(response, "Content-Type", reply.contentType)
        for header in reply.headers { MHD_add_response_header(response, header.name, header.value) }
        if closing || draining.load(ordering: .relaxed) { MHD_add_response_header(response, "Connection", "close") }
        metrics.request(route: route, code: reply.status, seconds: seconds)
        // Not `idle` before the reply is out: a connection at the limit must not be shed mid-reply.
        track(of: connection)?.enter(.replying, seconds: configuration.idleTimeoutSeconds)
        return MHD_queue_response(connection, UInt32(reply.status), response) == .YES ? 1 : 0
    }
}

extension HTTPCore {
    /// MHD_RESPMEM_MUST_COPY (the importer gives this enum no usable case names).
    static let mustCopy = MHD_ResponseMemoryMode(rawValue: 2)!
}

/// The logger allocation from the C shim, freed after the daemon stops.
struct UnsafeMutableRawPointerBox: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}
