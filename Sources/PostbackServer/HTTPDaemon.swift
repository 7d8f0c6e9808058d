import CMicroHTTPD
import CMicroHTTPDShim
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What `HTTPDaemon`'s C callbacks call, in Swift terms: the receiver's `RequestHandler`, or another
/// listener's responder (the numbers API). The connection's and the request's state are the
/// responder's own objects; the daemon keeps each in libmicrohttpd's slot from `connectionOpened` to
/// `connectionClosed`, and from `requestBegan` to `requestCompleted`, and hands it back.
package protocol HTTPResponder: AnyObject, Sendable {
    /// A connection was accepted: the object kept for it until `connectionClosed`.
    func connectionOpened(_ connection: HTTPConnection) -> AnyObject
    func connectionClosed(_ state: AnyObject)
    /// The request line arrived: the object kept for the request until `requestCompleted`.
    func requestBegan(on connection: HTTPConnection) -> AnyObject
    /// One call of the request's state machine: what the connection is to do next.
    func handle(_ request: AnyObject, on connection: HTTPConnection, line: HTTPRequestLine, chunk: HTTPBodyChunk) -> HTTPStep
    /// A request ended (`request` nil if no request line was seen; `connection` nil if it is gone).
    func requestCompleted(_ request: AnyObject?, on connection: HTTPConnection?, termination: Int32)
    /// A libmicrohttpd diagnostic.
    func libraryLogged(_ message: String)
}

/// The libmicrohttpd daemon: `init` starts it on a listening socket with C callbacks that call an
/// `HTTPResponder`, `deinit` stops and frees it. Nothing else holds the daemon's pointer.
///
/// Shutdown: `quiesce()` stops taking connections; dropping the last reference then stops the
/// daemon (it waits for its threads), which closes the listening socket.
package final class HTTPDaemon: @unchecked Sendable {
    /// What the daemon is started with.
    package struct Limits: Sendable {
        package var threads: Int
        package var connectionLimit: Int
        /// 0: none.
        package var perIPConnectionLimit: Int
        package var idleTimeoutSeconds: Double

        package init(threads: Int, connectionLimit: Int, perIPConnectionLimit: Int, idleTimeoutSeconds: Double) {
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.perIPConnectionLimit = perIPConnectionLimit
            self.idleTimeoutSeconds = idleTimeoutSeconds
        }
    }

    /// The responder behind the callbacks' context pointer (a class, so an existential can travel
    /// through `void *`).
    private final class Box {
        let responder: any HTTPResponder
        init(_ responder: any HTTPResponder) { self.responder = responder }
    }

    // @unchecked Sendable: the pointers are set once; libmicrohttpd synchronizes its own use.
    private let daemon: OpaquePointer
    /// The C shim's allocation (the logger, and whether connections are refused), freed with the daemon.
    private let loggerBox: UnsafeMutableRawPointer?
    /// The callbacks' context: kept alive as long as the daemon can call back.
    private let box: Box
    private let abandoned = Atomic<Bool>(false)

    /// Starts serving `listenDescriptor` for the receiver. On failure the caller still owns the socket.
    convenience init(listenDescriptor: Int32, configuration: ServerConfiguration, handler: RequestHandler) throws(ServerError) {
        // Behind trusted proxies every connection's peer is a proxy: the limit is kept per client
        // address instead (`admitClient`), and libmicrohttpd's per-peer one would throttle the proxy.
        let limits = Limits(
            threads: configuration.threads, connectionLimit: configuration.connectionLimit,
            perIPConnectionLimit: configuration.trustedProxies.isEmpty ? configuration.perIPConnectionLimit : 0,
            idleTimeoutSeconds: configuration.idleTimeoutSeconds)
        try self.init(listenDescriptor: listenDescriptor, limits: limits, responder: handler)
    }

    /// Starts serving `listenDescriptor` with `responder`. On failure the caller still owns the socket.
    package init(listenDescriptor: Int32, limits: Limits, responder: any HTTPResponder) throws(ServerError) {
        let box = Box(responder)
        let context = Unmanaged.passUnretained(box).toOpaque()
        var settings = postback_mhd_settings()
        settings.listen_fd = listenDescriptor
        settings.thread_pool_size = UInt32(limits.threads)
        // The limit itself is kept by the responder (the receiver's `watchdog.admit`, which sheds
        // silent connections instead of letting new ones queue); libmicrohttpd's, split between its
        // threads, only backs it up.
        settings.connection_limit = UInt32(min(limits.connectionLimit * 2 + 64 * limits.threads, 4_000_000))
        settings.per_ip_connection_limit = UInt32(limits.perIPConnectionLimit)
        // libmicrohttpd's inactivity timeout backs up the watchdog; whole seconds, rounded up.
        settings.idle_timeout_seconds = UInt32(limits.idleTimeoutSeconds.rounded(.up))
        // Request line and headers must fit here (libmicrohttpd answers 431 otherwise); the body is
        // streamed out of it. It is zeroed for every request, so smaller is cheaper; but a header
        // block that nearly fills it leaves libmicrohttpd no room to answer (it closes the
        // connection in silence). So it is twice `HTTPFraming.headerBytesLimit` (8 KiB, the usual
        // limit of nginx and Apache), which the receiver answers with 431 itself; devices send a
        // few hundred bytes of headers.
        settings.connection_memory_limit = 2 * HTTPFraming.headerBytesLimit
        // Every per-connection and per-request object lives here: the connection's `Track` in
        // libmicrohttpd's socket context from the connection's start to its end, the request's
        // `RequestState` in its request context from the request line to its completion. Each is
        // made by the handler, retained into its slot here and released here, once.
        settings.connection_notify = { context, connection, socketContext, code in
            guard let context, let connection, let socketContext else { return }
            let handler = HTTPDaemon.handler(context)
            // Code 0 is MHD_CONNECTION_NOTIFY_STARTED (the macro does not reach Swift).
            if code == 0 {
                let state = handler.connectionOpened(HTTPConnection(connection))
                socketContext.pointee = Unmanaged.passRetained(state).toOpaque()
            } else if let slot = socketContext.pointee {
                socketContext.pointee = nil
                handler.connectionClosed(Unmanaged<AnyObject>.fromOpaque(slot).takeRetainedValue())
            }
        }
        settings.connection_notify_context = context
        settings.uri_log = { context, _, connection in
            guard let context, let connection else { return nil }
            return Unmanaged.passRetained(HTTPDaemon.handler(context).requestBegan(on: HTTPConnection(connection))).toOpaque()
        }
        settings.uri_log_context = context
        settings.access_handler = { context, connection, url, method, version, data, size, requestContext in
            guard let context, let pointer = connection, let size, let requestContext else { return 0 }
            let handler = HTTPDaemon.handler(context)
            let connection = HTTPConnection(pointer)
            let request: AnyObject
            if let slot = requestContext.pointee {
                request = Unmanaged<AnyObject>.fromOpaque(slot).takeUnretainedValue()
            } else {
                // No request-line notification came (should not happen): the request begins here.
                request = handler.requestBegan(on: connection)
                requestContext.pointee = Unmanaged.passRetained(request).toOpaque()
            }
            let step = handler.handle(
                request, on: connection, line: HTTPRequestLine(url: url, method: method, version: version),
                chunk: HTTPBodyChunk(data: data, size: size))
            return connection.take(step)
        }
        settings.access_context = context
        settings.request_completed = { context, connection, requestContext, termination in
            guard let context, let requestContext else { return }
            let request = requestContext.pointee.map { Unmanaged<AnyObject>.fromOpaque($0).takeRetainedValue() }
            requestContext.pointee = nil
            HTTPDaemon.handler(context).requestCompleted(
                request, on: connection.map(HTTPConnection.init), termination: termination)
        }
        settings.request_completed_context = context
        settings.logger = { context, message in
            guard let context, let message else { return }
            HTTPDaemon.handler(context).libraryLogged(String(cString: message))
        }
        settings.logger_context = context

        var shimBox: UnsafeMutableRawPointer?
        guard let daemon = postback_mhd_start(&settings, &shimBox) else {
            throw ServerError(
                "libmicrohttpd could not start (threads \(limits.threads), connection limit \(limits.connectionLimit))")
        }
        self.daemon = daemon
        self.loggerBox = shimBox
        self.box = box
    }

    /// The responder behind a callback's context pointer (the daemon keeps it alive).
    private static func handler(_ context: UnsafeMutableRawPointer) -> any HTTPResponder {
        Unmanaged<Box>.fromOpaque(context).takeUnretainedValue().responder
    }

    /// Takes no more connections: each new one is closed as soon as it is accepted (the accept
    /// policy in the C shim). Not `MHD_quiesce_daemon`: with an epoll thread pool it races a worker
    /// that removes the listening socket from its epoll set itself, and libmicrohttpd 0.9.75 then
    /// aborts the process ("Failed to remove listen FD from epoll set"; scripts/disk-faults caught it
    /// on SIGTERM). The listening socket stays open until the daemon stops, which closes it.
    package func quiesce() {
        postback_mhd_refuse_connections(loggerBox)
    }

    /// Leaves the daemon running for good (the process is about to end): used when storage hangs
    /// with connections suspended, which libmicrohttpd must not be stopped with.
    func abandon() {
        abandoned.store(true, ordering: .relaxed)
        // Its threads keep calling back: the handler must outlive this object.
        _ = Unmanaged.passRetained(box)
    }

    deinit {
        guard !abandoned.load(ordering: .relaxed) else { return }
        postback_mhd_stop(daemon, loggerBox)
    }
}
