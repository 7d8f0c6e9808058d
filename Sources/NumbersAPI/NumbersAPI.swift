import AggregateSchema
import Aggregation
package import Basics
import Dispatch
package import PostbackServer
import Reporting

/// The read-only numbers API over the published aggregates, as an `HTTPResponder` on a listener of
/// its own (`postback api`), never the receiver's. Every request but `/openapi.json` and `/livez`
/// needs a token (`TokenStore`); its rate is limited per token (`RateLimiter`) and one audit line
/// written (`AuditLog`). The token's `DataScope`, narrowed by the query's `app` and `network`, is
/// handed to the loaders, which apply it to every row as it is read: nothing computed afterwards
/// sees a row outside it.
///
/// Routes (the OpenAPI document, `OpenAPIDocument`, is their one description):
/// `GET /v1/tables`, `GET /v1/tables/{table}/rows`, `GET /v1/summary`, `GET /openapi.json`, `GET /livez`;
/// and the dashboard for people, under `/dashboard/` (`Dashboard`).
package final class NumbersAPI: HTTPResponder {
    package struct Settings: Sendable {
        package var dataDirectory: String
        package var toolVersion: String
        package var requestsPerMinute = 120
        package var burst = 30
        /// The dashboard's sessions and how it is reached (`Dashboard`).
        package var dashboard = Dashboard.Settings()
        /// The most memory (estimated) the days read and the summaries answered are kept in
        /// (`PublishedDayCache`, `SummaryCache`): re-read only when re-published.
        package var cacheBytes = PublishedDayCache.defaultMaximumBytes
        /// The listener's deadlines and connection limit (the receiver's watchdog, `ListenerWatchdog`).
        package var timeouts = ListenerWatchdog.Timeouts()
        /// Proxies whose `X-Forwarded-For` (or `Forwarded`) names the client in the audit line; none:
        /// the socket's peer is the client, whatever a header says.
        package var trustedProxies: [CIDR] = []
        /// Open connections from one address (libmicrohttpd's limit; none behind trusted proxies).
        package var perAddressConnectionLimit = 32

        package init(dataDirectory: String, toolVersion: String) {
            self.dataDirectory = dataDirectory
            self.toolVersion = toolVersion
        }
    }

    let settings: Settings
    let tokens: TokenStore
    let limiter: RateLimiter
    let audit: AuditLog
    let dashboard: Dashboard
    /// The day tables' rows as read, whole and unscoped: only `PublishedRows` reads them.
    let days: PublishedDayCache
    let summaries: SummaryCache
    /// Slow clients' deadlines and the connection limit.
    package let watchdog: ListenerWatchdog
    /// The operator's log: failures to read the aggregates, an unusable tokens file.
    let log: @Sendable (String) -> Void
    /// Today (UTC), for token expiry; a test sets it.
    let today: @Sendable () -> UTCDay

    package init(
        settings: Settings, tokens: TokenStore, audit: AuditLog, log: @escaping @Sendable (String) -> Void,
        today: @escaping @Sendable () -> UTCDay = { UTCTimestamp.now().day }
    ) {
        self.settings = settings
        self.tokens = tokens
        self.limiter = RateLimiter(perMinute: settings.requestsPerMinute, burst: settings.burst)
        self.audit = audit
        // One bound for both: the days take most of it; summaries are a few KiB each.
        days = PublishedDayCache(maximumBytes: settings.cacheBytes - settings.cacheBytes / 16)
        summaries = SummaryCache(maximumBytes: settings.cacheBytes / 16)
        watchdog = ListenerWatchdog(timeouts: settings.timeouts)
        self.log = log
        self.today = today
        self.dashboard = Dashboard(
            settings: settings.dashboard, tokens: tokens, limiter: limiter, dataDirectory: settings.dataDirectory,
            toolVersion: settings.toolVersion, today: today, log: log)
    }

    // MARK: HTTPResponder

    /// A request's progress: its headers seen, the body bytes that came (only the dashboard's form
    /// POSTs take any, at most `Dashboard.maximumBody`).
    final class Request {
        var headersSeen = false
        var takesBody = false
        var body: [UInt8] = []
        var bodyBytes = 0
        var answered = false
        let started = DispatchTime.now().uptimeNanoseconds
    }

    package func connectionOpened(_ connection: HTTPConnection) -> AnyObject {
        watchdog.connectionOpened(connection) { reason in self.log("a connection closed at the connection limit (\(reason))") }
    }
    package func connectionClosed(_ state: AnyObject) { watchdog.connectionClosed(state) }
    package func requestBegan(on connection: HTTPConnection) -> AnyObject {
        watchdog.requestBegan(on: connection)
        return Request()
    }
    package func requestCompleted(_ request: AnyObject?, on connection: HTTPConnection?, termination: Int32) {
        watchdog.requestCompleted(on: connection)
    }
    package func libraryLogged(_ message: String) { log("libmicrohttpd: \(message)") }

    package func handle(_ state: AnyObject, on connection: HTTPConnection, line: HTTPRequestLine, chunk: HTTPBodyChunk)
        -> HTTPStep
    {
        let request = unsafeDowncast(state, to: Request.self)
        if !request.headersSeen {
            request.headersSeen = true
            request.takesBody = Dashboard.takesBody(method: line.methodName, path: line.path)
            watchdog.headersReceived(on: connection)
            // A declared body is refused before it is read; the connection then closes.
            if let length = connection.header("Content-Length"), length != "0",
                !request.takesBody || (Int(length) ?? .max) > Dashboard.maximumBody
            {
                request.answered = true
                return reply(APIProblem.bodyNotAllowed.reply, request, connection: connection, line: line, closing: true)
            }
            return .proceed
        }
        if chunk.count > 0 {
            request.bodyBytes += chunk.count
            if request.takesBody, request.bodyBytes <= Dashboard.maximumBody { chunk.append(to: &request.body) }
            chunk.consumed()
            return .proceed
        }
        guard !request.answered else { return .proceed }
        request.answered = true
        if request.bodyBytes > (request.takesBody ? Dashboard.maximumBody : 0) {
            return reply(APIProblem.bodyNotAllowed.reply, request, connection: connection, line: line, closing: true)
        }
        // Answered only now, after the (empty) body: libmicrohttpd keeps the connection alive then.
        watchdog.processing(on: connection)
        var tokenName: String?
        var rows: Int?
        let arguments = connection.queryArguments()
        let answer: HTTPReply
        if Dashboard.handles(line.path) {
            (answer, tokenName) = dashboard.answer(
                .init(
                    method: line.methodName, path: line.path, arguments: arguments, header: { connection.header($0) },
                    body: request.body))
        } else {
            do {
                (answer, rows) = try route(
                    method: line.methodName, path: line.path, arguments: arguments,
                    authorization: { connection.header("Authorization") }, tokenName: &tokenName)
            } catch {
                if let detail = error.logDetail { log("\(line.methodName) \(line.path): \(detail)") }
                answer = error.reply
            }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - request.started) / 1e6
        audit.record(
            .init(
                time: UTCTimestamp.now(), token: tokenName, method: line.methodName, path: line.path, query: arguments,
                status: answer.status, rows: rows, bytes: answer.body.count, milliseconds: elapsed,
                client: ClientAddress.of(connection, trusted: settings.trustedProxies)))
        watchdog.replyQueued(on: connection)
        return .reply(answer, closing: false)
    }

    private func reply(
        _ answer: HTTPReply, _ request: Request, connection: HTTPConnection, line: HTTPRequestLine, closing: Bool
    ) -> HTTPStep {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - request.started) / 1e6
        audit.record(
            .init(
                time: UTCTimestamp.now(), token: nil, method: line.methodName, path: line.path, query: [],
                status: answer.status, rows: nil, bytes: answer.body.count, milliseconds: elapsed,
                client: ClientAddress.of(connection, trusted: settings.trustedProxies)))
        watchdog.replyQueued(on: connection)
        return .reply(answer, closing: closing)
    }

    // MARK: Routes

    /// The answer to one request, without HTTP: what the tests call too.
    /// - Parameter tokenName: set to the token's name once it is accepted (for the audit line).
    package func route(
        method: String, path: String, arguments: [(name: String, value: String?)], authorization: () -> String?,
        tokenName: inout String?
    ) throws(APIProblem) -> (reply: HTTPReply, rows: Int?) {
        guard method == "GET" else { throw .methodNotAllowed(method) }
        switch path {
        case "/livez":
            return (HTTPReply(status: 200, contentType: "application/json", body: Array("{\"status\":\"alive\"}\n".utf8)), nil)
        case OpenAPIDocument.path:
            return (HTTPReply(status: 200, contentType: "application/json", body: OpenAPIDocument.bytes), nil)
        default: break
        }
        guard path == "/v1/tables" || path == "/v1/summary" || (path.hasPrefix("/v1/tables/") && path.hasSuffix("/rows")) else {
            throw .notFound("no such endpoint; GET \(OpenAPIDocument.path) describes the API")
        }
        let token: APIToken
        switch tokens.authenticate(authorization(), today: today()) {
        case .accepted(let accepted): token = accepted
        case .refused: throw .unauthorized
        case .unavailable(let reason):
            log("the tokens file cannot be used: \(reason)")
            throw .unavailable("the API's tokens file cannot be read; its operator has been told")
        }
        tokenName = token.name
        if let wait = limiter.admit(token.name, now: Double(DispatchTime.now().uptimeNanoseconds) / 1e9) {
            throw .tooManyRequests(retryAfter: wait, perMinute: limiter.perMinute)
        }
        if path == "/v1/tables" {
            guard arguments.isEmpty else { throw .badQuery("GET /v1/tables takes no arguments") }
            return (tableList(for: token.scope), nil)
        }
        if path == "/v1/summary" {
            let query = try APIQuery(arguments, allowed: APIQuery.summaryArguments)
            let reply = try summaries.answer(
                query: query, scope: query.scope(within: token.scope), dataDirectory: settings.dataDirectory,
                today: today()
            ) { () throws(APIProblem) in
                try SummaryEndpoint.answer(
                    query: query, scope: query.scope(within: token.scope), dataDirectory: settings.dataDirectory,
                    toolVersion: settings.toolVersion)
            }
            return (reply, nil)
        }
        let name = String(path.dropFirst("/v1/tables/".count).dropLast("/rows".count))
        // A table this scope may not read answers exactly as one that does not exist.
        guard let table = APITables.served(to: token.scope).first(where: { $0.name == name }) else {
            throw .notFound("no such table; GET /v1/tables lists them")
        }
        let query = try APIQuery(arguments, allowed: APIQuery.rowsArguments)
        let answer = try RowsEndpoint.answer(
            table: table, query: query, scope: query.scope(within: token.scope), dataDirectory: settings.dataDirectory,
            cache: days)
        return (answer.reply, answer.rows)
    }

    /// `GET /v1/tables`: the tables this token may read, each with its columns and their SQL types
    /// (`dt` first), and the token's own scope.
    func tableList(for scope: DataScope) -> HTTPReply {
        var json = JSONWriter(reservingCapacity: 8192)
        json.beginObject()
        json.key("scope")
        json.beginObject()
        json.field("apps", scope.apps.text)
        json.field("networks", scope.networks.text)
        json.endObject()
        json.field("maximum_days", APIQuery.maximumDays)
        json.field("maximum_limit", APIQuery.maximumLimit)
        json.key("tables")
        json.beginArray()
        for table in APITables.served(to: scope) {
            json.beginObject()
            json.field("name", table.name)
            json.key("columns")
            json.beginArray()
            for (name, type) in [(APITables.dayColumn, "DATE")] + table.columns.map({ ($0.name, $0.sqlType) }) {
                json.beginObject()
                json.field("name", name)
                json.field("type", type)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return HTTPReply(status: 200, contentType: "application/json", body: json.bytes + [0x0A])
    }
}
