package import PostbackServer

#if canImport(Glibc)
    import Glibc
#endif

/// The numbers API's listener: a socket of its own and a libmicrohttpd daemon (`HTTPDaemon`) that
/// calls `NumbersAPI`. Never the receiver's listener: `postback api` runs apart from `postback serve`.
package final class APIServer: Sendable {
    /// The port it listens on (the kernel's choice when asked for port 0).
    package let port: Int
    private let daemon: HTTPDaemon

    /// Binds `address` and starts answering with `api` on `threads` threads.
    /// - Throws: `ServerError` when the address cannot be bound or the daemon cannot start.
    package init(address: ListenAddress, api: NumbersAPI, threads: Int = 4) throws(ServerError) {
        let socket = try address.bind()
        do {
            daemon = try HTTPDaemon(
                listenDescriptor: socket.descriptor,
                limits: .init(
                    threads: threads, connectionLimit: api.settings.timeouts.connectionLimit,
                    // Behind trusted proxies every peer is a proxy: a per-address limit would throttle it.
                    perIPConnectionLimit: api.settings.trustedProxies.isEmpty ? api.settings.perAddressConnectionLimit : 0,
                    idleTimeoutSeconds: api.settings.timeouts.idleSeconds),
                responder: api)
        } catch {
            close(socket.descriptor)
            throw error
        }
        port = socket.port
    }

    /// Takes no new connections; the daemon stops when this object goes.
    package func quiesce() { daemon.quiesce() }
}
