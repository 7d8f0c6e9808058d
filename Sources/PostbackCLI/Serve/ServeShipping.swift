import Basics
import Dispatch
import PostbackClient
package import PostbackServer
package import PostbackStore
package import SpoolDelivery

/// `serve`'s shipping of sealed segments to an object store (`ship_to`): the S3 destination behind
/// `SpoolDeliveryWorker`, its log lines and its metrics. The object store being down never touches
/// ingestion or `/readyz`: segments wait on local disk and the worker retries with backoff.
package enum ServeShipping {
    /// Starts shipping for a running server; nil when `ship_to` is not set. Throws on configuration
    /// errors (a bad URL, missing credentials), not on an unreachable store.
    /// `environment` replaces the process environment (tests); `scanIntervalSeconds` and `backoff`
    /// are the worker's (tests shorten them).
    package static func start(
        server: PostbackServer, log: ServerLog, environment: [String: String]? = nil,
        scanIntervalSeconds: Double = 2, backoff: Backoff = Backoff()
    ) throws -> DeliveryService? {
        let configuration = server.configuration
        guard let client = try client(configuration, environment: environment) else { return nil }
        let location = client.location
        let settings = client.settings
        do {
            try client.checkAccess()
        } catch {
            log.warning(
                "object store not reachable at start: segments stay on local disk and are shipped when it is back; /readyz stays ready",
                ["ship_to": .string(location.description), "error": .string("\(error)")])
        }
        let workerConfiguration = SpoolDeliveryWorker.Configuration(
            layout: StoreLayout(root: configuration.dataDirectory), writerID: configuration.writerID,
            // Weak both ways (the server's metrics hold the worker): no cycle keeps either alive. A
            // server gone is treated as "open", so nothing is shipped on its word.
            isOpen: { [weak server] path in server?.isSegmentOpen(path) ?? true }, scanIntervalSeconds: scanIntervalSeconds,
            backoff: backoff,
            localRetentionSeconds: configuration.sections[ShippingConfiguration.self].localRetentionHours.map { $0 * 3600 })
        let worker = try SpoolDeliveryWorker(
            configuration: workerConfiguration, destination: ObjectStoreDestination(client: client)
        ) { event in
            switch event {
            case .delivered(let segment):
                log.debug("segment shipped", ["path": .string(segment.relativePath), "bytes": .int(segment.size)])
            case .destinationDown(let error):
                log.warning(
                    "object store unavailable: segments stay on local disk and are retried with backoff; /readyz stays ready",
                    ["ship_to": .string(location.description), "error": .string(error)])
            case .destinationUp:
                log.info("object store available again: shipping the backlog", ["ship_to": .string(location.description)])
            case .conflict(let segment, let detail):
                log.error(
                    "segment not shipped: the bucket holds different bytes under its name",
                    ["path": .string(segment.path), "detail": .string(detail)])
            case .damaged(let segment, let detail):
                log.error(
                    "segment not shipped: damaged at rest since it was sealed; restore it from a backup",
                    ["path": .string(segment.path), "detail": .string(detail)])
            case .removedLocally(let path):
                log.info("shipped segment removed locally after local_retention_hours", ["path": .string(path)])
            case .localProblem(let detail):
                log.error("shipping stopped by a local problem; retrying", ["detail": .string(detail)])
            }
        }
        let service = DeliveryService(
            workers: [("object store", worker)], log: log, render: { worker.renderMetrics() }, stop: { worker.stop() })
        server.addMetrics(of: service)
        log.info(
            "shipping sealed segments",
            [
                "ship_to": .string(location.description), "endpoint": .string(URLRedaction.redacted(settings.endpoint)),
                "segment_max_age_seconds": .double(configuration.effectiveSegmentMaxAgeSeconds ?? 0),
            ])
        return service
    }

    /// The S3 client for `ship_to`; nil when it is not set.
    private static func client(_ configuration: ServerConfiguration, environment: [String: String]?) throws -> S3Client? {
        let configuration = configuration.sections[ShippingConfiguration.self]
        guard let shipTo = configuration.shipTo else { return nil }
        var settings = try S3Settings.fromEnvironment(
            environment, endpoint: configuration.objectStoreEndpoint, region: configuration.objectStoreRegion,
            addressing: configuration.objectStoreAddressing.flatMap(S3Settings.Addressing.init(rawValue:)))
        if let idle = configuration.objectStoreIdleTimeoutSeconds { settings.idleTimeoutSeconds = idle }
        return try S3Client(location: S3Location(url: shipTo), settings: settings)
    }

    /// What `PostbackServer.start` adds to its dedup index (`shared_dedup_days`): the keys every
    /// receiver shipped to the bucket in those days. nil when not shipping or set to 0. An object store
    /// that cannot be read is logged and skipped, never a reason not to start: ingestion does not wait
    /// for the store, and the nightly job still dedups exactly across receivers.
    package static func sharedDedupKeys(
        _ configuration: ServerConfiguration, log: ServerLog,
        environment: [String: String]? = nil
    ) throws -> (@Sendable (StoreLayout) -> [String])? {
        let days = configuration.sections[ShippingConfiguration.self].effectiveSharedDedupDays
        // The client is made here so that a bad URL or missing credentials stop `serve` at once; the
        // closure (run by the store's start-up) makes its own, since clients are not shared across threads.
        guard days > 0, let checked = try client(configuration, environment: environment) else { return nil }
        let location = checked.location
        let settings = checked.settings
        return { layout in
            let window = SharedDedupKeys.window(days: days)
            let started = DispatchTime.now().uptimeNanoseconds
            do {
                let loaded = try SharedDedupKeys.load(
                    client: S3Client(location: location, settings: settings), layout: layout, days: window)
                log.info(
                    "dedup keys read from the object store",
                    [
                        "ship_to": .string(location.description), "days": .int(days), "objects": .int(loaded.objectsRead),
                        "objects_on_local_disk": .int(loaded.objectsLocal), "bytes": .int(loaded.bytesRead),
                        "keys": .int(loaded.keys.count),
                        "seconds": .double(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9),
                    ])
                return loaded.keys
            } catch {
                log.warning(
                    "cannot read other receivers' dedup keys from the object store: serving with this receiver's own; "
                        + "a retry stored by another receiver may be stored here too (the nightly job counts it once)",
                    ["ship_to": .string(location.description), "error": .string("\(error)")])
                return []
            }
        }
    }
}
