package import Basics
package import Dispatch
import Locking
package import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// The webhook receiver: libmicrohttpd in front, the verifier and the spool behind.
///
/// Threads: libmicrohttpd runs a pool of `threads` epoll threads (one per core by default) that
/// parse HTTP. A postback's connection is then *suspended* and its body queued for as many verifying
/// threads (`VerificationQueue`), which check the postbacks waiting together (one shared modular
/// inversion) and encode records. Each record goes to a spool writer, whose group commit resumes the
/// connection with the reply once the fdatasync covering it returned. So no HTTP thread ever waits on
/// a signature check or the disk, and one sync covers every request that arrived meanwhile. A
/// watchdog thread enforces the absolute timeouts.
///
/// Replies: 200 once stored or already stored (duplicate), 400 with an RFC 9457 problem for a
/// rejected postback (kept in the rejected spool), 413 over the body limit, 404 and 405, and 500
/// whenever the record could not be made durable, and for every request until storage recovers.
///
/// The rooms: `WritableStore` (PostbackStore) opens the store; `HTTPDaemon` owns libmicrohttpd;
/// `RequestHandler` is the request state machine behind its callbacks, `RequestHandler+Routes` the
/// answers per route, `Readiness` what `/readyz` says, `PostbackIngest` what happens to a body.
package final class PostbackServer: Sendable {
    /// The port actually listened on (useful with port 0).
    package let port: Int
    /// `host:port` actually listened on.
    package let address: String
    package let configuration: ServerConfiguration
    private let store: WritableStore
    private let handler: RequestHandler
    private let daemon: Locked<HTTPDaemon?>
    /// The private signing listener (`signing_listen`): its own daemon and handler; nil without it.
    private let signing: (handler: RequestHandler, daemon: Locked<HTTPDaemon?>)?
    /// The port the signing listener got (useful with port 0); nil without `signing_listen`.
    package let signingPort: Int?
    private let lifecycle = Locked(Lifecycle.running)
    /// Left when the first `shutdown` is done; later callers wait on it.
    private let stopped = DispatchGroup()

    private enum Lifecycle { case running, stopping, stopped }

    /// Recovers the store, binds the socket and starts serving.
    /// - Parameter storage: the spool's file operations; tests pass one that injects faults.
    /// - Parameter sharedDedupKeys: keys stored elsewhere (other receivers' shipped segments), added to
    ///   the recovered dedup index before the first request; `serve` passes `SharedDedupKeys` when shipping.
    package static func start(
        configuration: ServerConfiguration, storage: any SpoolStorage = POSIXSpoolStorage(),
        log: ServerLog, sharedDedupKeys: (@Sendable (StoreLayout) -> [String])? = nil
    ) throws(ServerError) -> PostbackServer {
        do {
            try configuration.validate()
        } catch {
            throw ServerError(error.description)
        }
        let listenAddress: ListenAddress
        do { listenAddress = try ListenAddress(configuration.listen) } catch { throw ServerError(error.description) }

        let metrics = ServerMetrics()
        let (store, ingest) = try openIngest(
            configuration: configuration, storage: storage, log: log, metrics: metrics, sharedDedupKeys: sharedDedupKeys)
        let readiness = Readiness(
            store: store, dataDirectory: configuration.dataDirectory, bodyLimitBytes: configuration.bodyLimitBytes)
        let impressions: ImpressionService?
        do {
            impressions = try ImpressionService.start(configuration: configuration, log: log)
        } catch {
            store.close()
            throw error
        }
        let socket: (descriptor: Int32, port: Int)
        do {
            socket = try listenAddress.bind()
        } catch {
            impressions?.webAds?.stop()
            store.close()
            throw error
        }
        let handler = RequestHandler(
            configuration: configuration, ingest: ingest, readiness: readiness, metrics: metrics, log: log,
            impressions: impressions)
        if let impressions {
            handler.metricsSources.withLock {
                $0.append { impressions.metrics.render(webAds: impressions.webAds?.currentStatus) }
            }
        }
        let daemon: HTTPDaemon
        do {
            daemon = try HTTPDaemon(listenDescriptor: socket.descriptor, configuration: configuration, handler: handler)
        } catch {
            close(socket.descriptor)
            handler.stop()
            store.close()
            throw error
        }
        var signing: (handler: RequestHandler, daemon: HTTPDaemon, port: Int)?
        if let signingListen = configuration.signing.listen, let impressions {
            do {
                signing = try startSigningListener(
                    signingListen, configuration: configuration, ingest: ingest, readiness: readiness, metrics: metrics,
                    log: log, impressions: impressions)
            } catch {
                daemon.quiesce()  // its deinit then closes the listening socket too
                handler.stop()
                store.close()
                throw error
            }
        }
        let bound = ListenAddress(host: listenAddress.host, port: socket.port)
        log.info(
            "listening",
            [
                "address": .string(bound.description), "writer": .string(configuration.writerID),
                "threads": .int(configuration.threads), "allow_development": .bool(configuration.allowsDevelopment),
                // As configured; postbacks are matched against them ignoring ASCII case.
                "ad_network_ids": .string(configuration.acceptedAdNetworkIDs.map { $0.sorted().joined(separator: ",") } ?? "*"),
            ])
        return PostbackServer(
            port: socket.port, address: bound.description, configuration: configuration, store: store,
            handler: handler, daemon: daemon, signing: signing)
    }

    /// Opens the store for this configuration (its writers' events counted and logged) and the
    /// ingest over it: the receiver's one way to a `PostbackIngest`, which the in-process tests take too.
    static func openIngest(
        configuration: ServerConfiguration, storage: any SpoolStorage, log: ServerLog, metrics: ServerMetrics,
        sharedDedupKeys: (@Sendable (StoreLayout) -> [String])? = nil
    ) throws(ServerError) -> (store: WritableStore, ingest: PostbackIngest) {
        let store: WritableStore
        do {
            store = try WritableStore.open(
                dataDirectory: configuration.dataDirectory, writerID: configuration.writerID,
                options: .init(
                    segmentBytes: configuration.segmentBytes, commitGatherSeconds: configuration.commitGatherSeconds,
                    segmentMaxAgeSeconds: configuration.effectiveSegmentMaxAgeSeconds, storage: storage,
                    additionalDedupKeys: sharedDedupKeys),
                damaged: { damage in
                    log.warning(
                        "damaged spool line skipped",
                        ["path": .string(damage.path), "line": .int(damage.line), "problem": .string(damage.problem)])
                },
                events: { spool, event in logAndCount(event, of: spool, metrics: metrics, log: log) })
        } catch {
            throw ServerError("\(error)")
        }
        log.info(
            "store recovered",
            [
                "data_dir": .string(configuration.dataDirectory), "writer": .string(configuration.writerID),
                "segments": .int(store.recovered.segments), "records": .int(store.recovered.records),
                "dedup_keys": .int(store.recovered.dedupKeys), "seconds": .double(store.recovered.seconds),
            ])
        let ingest = PostbackIngest(
            configuration: configuration, postbacks: store.postbacks, rejected: store.rejected,
            unverifiable: store.unverifiable, conflicts: store.conflicts, metrics: metrics, log: log)
        return (store, ingest)
    }

    /// Binds `signing_listen` and starts its daemon: the same request state machine, serving only
    /// the signing route and `/livez`.
    private static func startSigningListener(
        _ text: String, configuration: ServerConfiguration, ingest: PostbackIngest, readiness: Readiness,
        metrics: ServerMetrics, log: ServerLog, impressions: ImpressionService
    ) throws(ServerError) -> (handler: RequestHandler, daemon: HTTPDaemon, port: Int) {
        let address: ListenAddress
        do { address = try ListenAddress(text) } catch { throw ServerError("signing_listen: \(error.description)") }
        let socket = try address.bind()
        let handler = RequestHandler(
            configuration: configuration, ingest: ingest, readiness: readiness, metrics: metrics, log: log,
            impressions: impressions, signingListener: true)
        do {
            let daemon = try HTTPDaemon(listenDescriptor: socket.descriptor, configuration: configuration, handler: handler)
            log.info(
                "signing service listening",
                [
                    "address": .string(ListenAddress(host: address.host, port: socket.port).description),
                    "kids": .string(impressions.keys.map(\.kid).joined(separator: ",")),
                ])
            return (handler, daemon, socket.port)
        } catch {
            close(socket.descriptor)
            handler.stop()
            throw error
        }
    }

    private init(
        port: Int, address: String, configuration: ServerConfiguration, store: WritableStore, handler: RequestHandler,
        daemon: HTTPDaemon, signing: (handler: RequestHandler, daemon: HTTPDaemon, port: Int)?
    ) {
        self.port = port
        self.address = address
        self.configuration = configuration
        self.store = store
        self.handler = handler
        self.daemon = Locked(daemon)
        self.signing = signing.map { ($0.handler, Locked($0.daemon)) }
        self.signingPort = signing?.port
        stopped.enter()
    }

    /// Whether `/readyz` answers 200: storage healthy, not full or read-only, and not shutting down.
    package var isReady: Bool { handler.isReady }

    /// The receiver's log, for what runs beside it.
    package var log: ServerLog { handler.log }

    /// Whether a spool writer may still append to this segment (shipping takes only sealed ones).
    package func isSegmentOpen(_ path: String) -> Bool { store.isSegmentOpen(path) }

    /// Appends another component's Prometheus text (shipping's `postback_delivery_*`) to `/metrics`.
    package func addMetricsSource(_ render: @escaping @Sendable () -> String) {
        handler.metricsSources.withLock { $0.append(render) }
    }

    /// Renders `service`'s metric families on every scrape of `/metrics`, while it lives (held weakly:
    /// the service may hold the receiver).
    package func addMetrics(of service: any Service) {
        addMetricsSource { [weak service] in service?.renderMetrics() ?? "" }
    }

    /// Graceful stop: stop accepting connections, let requests in progress finish (up to
    /// `shutdownGraceSeconds`), close the segments (every acknowledged record is already synced),
    /// release the writer lock. Safe to call more than once and from several threads; returns when done.
    package func shutdown() { shutdown(until: .now() + configuration.shutdownGraceSeconds) }

    /// As `shutdown()`, the requests in progress given until `deadline`.
    private func shutdown(until deadline: DispatchTime) {
        let first = lifecycle.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .stopping
            return true
        }
        guard first else {
            stopped.wait()
            return
        }
        defer {
            lifecycle.withLock { $0 = .stopped }
            stopped.leave()
        }
        let log = handler.log
        log.info("shutting down: no new connections; finishing requests in progress")
        handler.beginDraining()
        daemon.withLock { $0?.quiesce() }
        // The signing listener holds no postbacks: it stops with the requests it has begun.
        if let signing {
            signing.handler.beginDraining()
            signing.daemon.withLock { $0?.quiesce() }
        }

        // Requests already begun may finish (their responses say Connection: close).
        handler.waitForRequests(until: deadline)
        if let signing {
            signing.handler.waitForRequests(until: deadline)
            signing.daemon.withLock { $0 = nil }
            signing.handler.stop()
        }
        // No connection may stay suspended when the daemon stops: wait for the writers to resume them.
        guard handler.closeIntake(waitingUntil: deadline + 30) else {
            // The writer thread is stuck in a write or fdatasync; closing the writers would wait for
            // it forever. Nothing unsynced was acknowledged, so leave it and let the process end.
            log.error("storage did not answer within the shutdown grace period; exiting without stopping the HTTP daemon")
            handler.abandon()
            daemon.withLock { $0?.abandon() }
            return
        }
        // A request admitted just before commits closed was resumed above, but its reply may not be
        // sent yet (the count drops when the writer resumes the connection, before the worker
        // writes). Give the replies in progress a moment, so a stored postback is answered.
        handler.waitForRequests(until: .now() + 2)
        // The last reference: HTTPDaemon.deinit stops libmicrohttpd, then closes the listening socket.
        daemon.withLock { $0 = nil }
        handler.stop()
        store.close()
        log.info("stopped: every acknowledged postback is synced")
    }
}

/// The receiver as the first of `serve`'s services: draining is its shutdown (requests in progress
/// until the deadline, then nothing more taken in, the daemon and the store closed).
extension PostbackServer: Service {
    package func drain(until deadline: DispatchTime) { shutdown(until: deadline) }

    /// Waits for the shutdown `drain` began (or makes one with the configured grace).
    package func stop() { shutdown() }

    /// Its own families are on its `/metrics` page already.
    package func renderMetrics() -> String { "" }
}

/// A spool writer's event in the metrics and the log.
private func logAndCount(_ event: SpoolWriter.Event, of spool: StoreLayout.Spool, metrics: ServerMetrics, log: ServerLog) {
    metrics.writer(spool, event: event)
    switch event {
    case .failed(let error):
        log.error(
            "storage failure: answering 500 until storage recovers",
            ["spool": .string(spool.rawValue), "error": .string(error.description)])
    case .recovered:
        log.info("storage recovered", ["spool": .string(spool.rawValue)])
    case .openedSegment(let path):
        log.info("segment opened", ["spool": .string(spool.rawValue), "path": .string(path)])
    case .segmentVanished(let path):
        log.error(
            "open segment deleted or replaced under the receiver: closed it, the next record goes to a new segment",
            ["spool": .string(spool.rawValue), "path": .string(path)])
    case .sealNotRecorded(let path, let error):
        log.warning(
            "sealed segment without its SHA-256 seal: it is stored and counted, but damage at rest would go unnoticed",
            ["spool": .string(spool.rawValue), "path": .string(path), "error": .string(error.description)])
    case .committed:
        break
    }
}
