import PostbackClient
import PostbackServer
import PostbackStore
import SpoolDelivery

/// `serve`'s shipping of sealed segments to an object store (`ship_to`): the S3 destination behind
/// `SpoolDeliveryWorker`, its log lines and its metrics. The object store being down never touches
/// ingestion or `/readyz`: segments wait on local disk and the worker retries with backoff.
enum ServeShipping {
    /// Starts shipping for a running server; nil when `ship_to` is not set. Throws on configuration
    /// errors (a bad URL, missing credentials), not on an unreachable store.
    /// `environment` replaces the process environment (tests); `scanIntervalSeconds` and `backoff`
    /// are the worker's (tests shorten them).
    static func start(server: PostbackServer, log: ServerLog, environment: [String: String]? = nil,
                      scanIntervalSeconds: Double = 2, backoff: Backoff = Backoff()) throws -> SpoolDeliveryWorker? {
        let configuration = server.configuration
        guard let shipTo = configuration.shipTo else { return nil }
        let location = try S3Location(url: shipTo)
        let settings = try S3Settings.fromEnvironment(
            environment, endpoint: configuration.objectStoreEndpoint, region: configuration.objectStoreRegion,
            addressing: configuration.objectStoreAddressing.flatMap(S3Settings.Addressing.init(rawValue:)))
        let client = try S3Client(location: location, settings: settings)
        do {
            try client.checkAccess()
        } catch {
            log.warning("object store not reachable at start: segments stay on local disk and are shipped when it is back; /readyz stays ready",
                        ["ship_to": .string(location.description), "error": .string(error.description)])
        }
        let workerConfiguration = SpoolDeliveryWorker.Configuration(
            layout: StoreLayout(root: configuration.dataDirectory), writerID: configuration.writerID,
            // Weak both ways (the server's metrics hold the worker): no cycle keeps either alive. A
            // server gone is treated as "open", so nothing is shipped on its word.
            isOpen: { [weak server] path in server?.isSegmentOpen(path) ?? true }, scanIntervalSeconds: scanIntervalSeconds, backoff: backoff,
            localRetentionSeconds: configuration.localRetentionHours.map { $0 * 3600 })
        let worker = try SpoolDeliveryWorker(configuration: workerConfiguration, destination: ObjectStoreDestination(client: client)) { event in
            switch event {
            case .delivered(let segment):
                log.debug("segment shipped", ["path": .string(segment.relativePath), "bytes": .int(segment.size)])
            case .destinationDown(let error):
                log.warning("object store unavailable: segments stay on local disk and are retried with backoff; /readyz stays ready",
                            ["ship_to": .string(location.description), "error": .string(error)])
            case .destinationUp:
                log.info("object store available again: shipping the backlog", ["ship_to": .string(location.description)])
            case .conflict(let segment, let detail):
                log.error("segment not shipped: the bucket holds different bytes under its name", ["path": .string(segment.path), "detail": .string(detail)])
            case .removedLocally(let path):
                log.info("shipped segment removed locally after local_retention_hours", ["path": .string(path)])
            case .localProblem(let detail):
                log.error("shipping stopped by a local problem; retrying", ["detail": .string(detail)])
            }
        }
        server.addMetricsSource { [weak worker] in worker?.renderMetrics() ?? "" }
        log.info("shipping sealed segments", ["ship_to": .string(location.description), "endpoint": .string(settings.endpoint),
                                             "segment_max_age_seconds": .double(configuration.effectiveSegmentMaxAgeSeconds ?? 0)])
        return worker
    }
}
