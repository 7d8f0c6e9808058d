/// Which handler answers which route. `Route` maps a request path to a route; the postback routes
/// (`Route.receivesPostbacks`) go to `PostbackIngest` through the request state machine
/// (`RequestHandler.process`); the others are answered here, once their body is in: the impression
/// routes by `ImpressionService`, the operational ones (empty body) here.
extension RequestHandler {
    /// - Parameter signingKey: the request's `Signing-Key` header, read only by the signing route.
    /// - Parameter client: the client's address (the one a trusted proxy names), read only by the web-ad route.
    func answer(_ route: Route, body: [UInt8], signingKey: () -> String?, client: String) -> HTTPReply {
        switch route {
        case .impressionSigning:
            guard let impressions else { return .text(404, "no signing service") }
            return impressions.sign(body: body, keyID: signingKey())
        case .webAdPayload:
            guard let impressions else { return .text(404, "no web ads") }
            return impressions.webAdPayload(
                body: body, client: IPAddress.client(client, ipv6PrefixLength: configuration.clientIPv6PrefixLength))
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
            var page = ingest.metricsPage(ready: isReady, openConnections: watchdog.openConnections)
            ProcessMetrics.render(into: &page)
            for source in metricsSources.withLock({ $0 }) { page.append(source()) }
            return .text(200, page.text, contentType: "text/plain; version=0.0.4; charset=utf-8")
        case .skadnetwork, .appAttribution, .adNetwork, .unknown:
            // Postback routes go to `PostbackIngest`, unknown paths get 404 in `begin`: never asked here.
            return .text(500, "no handler")
        }
    }
}
