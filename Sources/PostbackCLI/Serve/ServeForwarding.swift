package import PostbackServer
package import PostbackStore
package import SpoolDelivery

/// `serve`'s forwarding of verified postbacks to partners (`forward`, docs/forwarding.md): one
/// delivery worker per destination, its log lines and its metrics. A partner being down never
/// touches ingestion or `/readyz`: postbacks wait in the spool and are retried with backoff.
package enum ServeForwarding {
    /// Starts forwarding for a running server; nil when `forward` is not set. Throws on configuration
    /// errors (a bad destination, a missing secret), not on an unreachable partner.
    package static func start(
        server: PostbackServer, log: ServerLog, environment: [String: String]? = nil,
        scanIntervalSeconds: Double = 2, backoff: Backoff = Backoff()
    ) throws -> DeliveryService? {
        let configuration = server.configuration
        let section = configuration.sections[ForwardingConfiguration.self]
        guard let forward = section.forward else { return nil }
        let settings = try ForwardSettings.parseList(
            forward, relativeTo: section.configurationDirectory, environment: environment)
        guard !settings.isEmpty else { return nil }
        let urls = Dictionary(uniqueKeysWithValues: settings.map { ($0.name, $0.urlForDisplay) })
        let forwarding = try PartnerForwarding(
            settings: settings, layout: StoreLayout(root: configuration.dataDirectory), writerID: configuration.writerID,
            // Weak: the server's metrics hold the forwarding. A server gone counts as "open": nothing is sent on its word.
            isOpen: { [weak server] path in server?.isSegmentOpen(path) ?? true }, scanIntervalSeconds: scanIntervalSeconds,
            backoff: backoff
        ) { name, event in
            // Names and URLs without their query only: header values and query strings (API keys) are never logged.
            let url = ServerLog.Value.string(urls[name] ?? "")
            switch event {
            case .delivered(let segment):
                log.debug("segment forwarded", ["destination": .string(name), "url": url, "path": .string(segment.relativePath)])
            case .destinationDown(let error):
                log.warning(
                    "partner unavailable: postbacks stay in the spool and are retried with backoff; /readyz stays ready",
                    ["destination": .string(name), "url": url, "error": .string(error)])
            case .destinationUp:
                log.info("partner available again: forwarding the backlog", ["destination": .string(name), "url": url])
            case .conflict(let segment, let detail):
                log.error(
                    "segment not forwarded",
                    ["destination": .string(name), "path": .string(segment.path), "detail": .string(detail)])
            case .damaged(let segment, let detail):
                log.error(
                    "segment not forwarded: damaged at rest since it was sealed; restore it from the object store's copy or a backup",
                    ["destination": .string(name), "path": .string(segment.path), "detail": .string(detail)])
            case .removedLocally:
                break
            case .localProblem(let detail):
                log.error(
                    "forwarding stopped by a local problem; retrying", ["destination": .string(name), "detail": .string(detail)])
            }
        }
        let service = DeliveryService(
            workers: forwarding.forwarders.map { ($0.destination.name, $0.worker) }, log: log,
            render: { forwarding.renderMetrics() }, stop: { forwarding.stop() })
        server.addMetrics(of: service)
        for destination in settings {
            log.info(
                "forwarding verified postbacks",
                [
                    "destination": .string(destination.name), "url": .string(destination.urlForDisplay),
                    "concurrency": .int(destination.concurrency),
                    "segment_max_age_seconds": .double(configuration.effectiveSegmentMaxAgeSeconds ?? 0),
                ])
        }
        return service
    }
}
