import CMicroHTTPD
import CMicroHTTPDShim
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The libmicrohttpd daemon: `init` starts it on a listening socket with `RequestHandler`'s C
/// callbacks, `deinit` stops and frees it. Nothing else holds the daemon's pointer.
///
/// Shutdown: `quiesce()` stops taking connections; dropping the last reference then stops the
/// daemon (it waits for its threads), which closes the listening socket.
final class HTTPDaemon: @unchecked Sendable {
    // @unchecked Sendable: the pointers are set once; libmicrohttpd synchronizes its own use.
    private let daemon: OpaquePointer
    /// The C shim's allocation (the logger, and whether connections are refused), freed with the daemon.
    private let loggerBox: UnsafeMutableRawPointer?
    /// The callbacks' context: kept alive as long as the daemon can call back.
    private let handler: RequestHandler
    private let abandoned = Atomic<Bool>(false)

    /// Starts serving `listenDescriptor`. On failure the caller still owns the socket.
    init(listenDescriptor: Int32, configuration: ServerConfiguration, handler: RequestHandler) throws(ServerError) {
        let context = Unmanaged.passUnretained(handler).toOpaque()
        var settings = postback_mhd_settings()
        settings.listen_fd = listenDescriptor
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
                let track = handler.connectionOpened(HTTPConnection(connection))
                socketContext.pointee = Unmanaged.passRetained(track).toOpaque()
            } else if let slot = socketContext.pointee {
                socketContext.pointee = nil
                handler.connectionClosed(Unmanaged<ConnectionWatchdog.Track>.fromOpaque(slot).takeRetainedValue())
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
            let request: RequestState
            if let slot = requestContext.pointee {
                request = Unmanaged<RequestState>.fromOpaque(slot).takeUnretainedValue()
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
            let request = requestContext.pointee.map { Unmanaged<RequestState>.fromOpaque($0).takeRetainedValue() }
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

        var box: UnsafeMutableRawPointer?
        guard let daemon = postback_mhd_start(&settings, &box) else {
            throw ServerError(
                "libmicrohttpd could not start (threads \(configuration.threads), connection limit \(configuration.connectionLimit))"
            )
        }
        self.daemon = daemon
        self.loggerBox = box
        self.handler = handler
    }

    /// The handler behind a callback's context pointer (the daemon keeps it alive).
    private static func handler(_ context: UnsafeMutableRawPointer) -> RequestHandler {
        Unmanaged<RequestHandler>.fromOpaque(context).takeUnretainedValue()
    }

    /// Takes no more connections: each new one is closed as soon as it is accepted (the accept
    /// policy in the C shim). Not `MHD_quiesce_daemon`: with an epoll thread pool it races a worker
    /// that removes the listening socket from its epoll set itself, and libmicrohttpd 0.9.75 then
    /// aborts the process ("Failed to remove listen FD from epoll set"; scripts/disk-faults caught it
    /// on SIGTERM). The listening socket stays open until the daemon stops, which closes it.
    func quiesce() {
        postback_mhd_refuse_connections(loggerBox)
    }

    /// Leaves the daemon running for good (the process is about to end): used when storage hangs
    /// with connections suspended, which libmicrohttpd must not be stopped with.
    func abandon() {
        abandoned.store(true, ordering: .relaxed)
        // Its threads keep calling back: the handler must outlive this object.
        _ = Unmanaged.passRetained(handler)
    }

    deinit {
        guard !abandoned.load(ordering: .relaxed) else { return }
        postback_mhd_stop(daemon, loggerBox)
    }
}
