import Basics
import Dispatch
import Foundation
import PostbackCrypto
import PostbackServer
import Reporting

/// The dashboard on the API's listener (docs/api.md, "Dashboard"): people sign in with their token
/// and read the report's first screen over its scope (`DashboardPage`).
///
/// - `GET /dashboard/`: the sign-in form (or, signed in, on to the report).
/// - `POST /dashboard/session`: a form body with the token (at most `maximumBody` bytes); a token the
///   API accepts opens a session (`DashboardSessions`) and sets its cookie: `HttpOnly`,
///   `SameSite=Strict`, `Path=/dashboard/`, `Max-Age` the session's lifetime, and `Secure` when the
///   API is reached through TLS (`Settings.behindTLS`). The cookie holds a random session id, never
///   the token.
/// - `GET /dashboard/report?from=&to=&app=&network=&environment=`: the page, for a live session whose token is
///   still accepted; otherwise back to the sign-in form (303), the session ended.
/// - `POST /dashboard/session/end`: signs out.
///
/// Cross-site requests: the cookie is `SameSite=Strict`, so a browser sends it only from the
/// dashboard's own pages; a POST whose `Origin` is present and not the dashboard's own is refused
/// (403) as well. Every page is sent with `Cache-Control: no-store` and a Content-Security-Policy
/// that allows no script, only the page's own stylesheet (by its hash) and forms to itself.
package final class Dashboard: Sendable {
    /// How the dashboard is reached and how long its sessions last.
    package struct Settings: Sendable {
        /// Seconds a session lasts (the cookie's `Max-Age`); 8 hours unless set.
        package var sessionSeconds = 8 * 3600
        /// The API is reached only through TLS (nginx in front, `--behind-tls`): cookies are `Secure`
        /// and a POST's `Origin` must be `https://` the request's host.
        package var behindTLS = false

        package init() {}
    }

    /// The largest form body taken (a token is 85 bytes).
    package static let maximumBody = 1024
    package static let cookieName = "postback_session"

    let settings: Settings
    let sessions: DashboardSessions
    let tokens: TokenStore
    let dataDirectory: String
    let toolVersion: String
    let today: @Sendable () -> UTCDay
    let log: @Sendable (String) -> Void
    /// The API's per-token limit, which each page of the report counts against.
    let limiter: RateLimiter

    /// The policy every page is sent with: no script, no plugin, nothing framed, forms to itself, the
    /// inline stylesheet allowed by its SHA-256 alone.
    let contentSecurityPolicy: String

    init(
        settings: Settings, tokens: TokenStore, limiter: RateLimiter, dataDirectory: String, toolVersion: String,
        today: @escaping @Sendable () -> UTCDay, log: @escaping @Sendable (String) -> Void
    ) {
        self.limiter = limiter
        self.settings = settings
        self.sessions = DashboardSessions(lifetime: settings.sessionSeconds)
        self.tokens = tokens
        self.dataDirectory = dataDirectory
        self.toolVersion = toolVersion
        self.today = today
        self.log = log
        let styleHash = Base64.encode(SHA256.hash(Array(DashboardPage.css.utf8)).bytes, alphabet: .standard)
        contentSecurityPolicy =
            "default-src 'none'; style-src 'sha256-\(styleHash)'; img-src 'self' data:; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'"
    }

    /// One request to a dashboard path, as `NumbersAPI` read it.
    struct Request {
        var method: String
        var path: String
        var arguments: [(name: String, value: String?)]
        var header: (String) -> String?
        var body: [UInt8]
    }

    static func handles(_ path: String) -> Bool { path == "/dashboard" || path.hasPrefix(DashboardPage.basePath) }

    /// Whether a request may carry a body: the two form POSTs.
    static func takesBody(method: String, path: String) -> Bool {
        method == "POST" && (path == DashboardPage.sessionPath || path == DashboardPage.signOutPath)
    }

    /// The answer, and the name of the token whose session it served (for the audit line).
    func answer(_ request: Request) -> (reply: HTTPReply, tokenName: String?) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        switch (request.method, request.path) {
        case ("GET", "/dashboard"):
            return (redirect(DashboardPage.basePath), nil)
        case ("GET", DashboardPage.basePath):
            if case .signedIn = signedIn(request, now: now) { return (redirect(DashboardPage.reportPath), nil) }
            return (page(200, DashboardPage.signIn(message: nil)), nil)
        case ("POST", DashboardPage.sessionPath):
            return signIn(request, now: now)
        case ("POST", DashboardPage.signOutPath):
            guard isSameOrigin(request) else { return (forbidden(), nil) }
            if let id = cookie(request) { sessions.close(id) }
            return (redirect(DashboardPage.basePath, cookie: clearedCookie), nil)
        case ("GET", DashboardPage.reportPath):
            switch signedIn(request, now: now) {
            case .signedIn(let token):
                if let wait = limiter.admit(token.name, now: now) {
                    var reply = page(429, DashboardPage.problem("Too many pages for this token: try again in \(wait) s."))
                    reply.headers.append(("Retry-After", String(wait)))
                    return (reply, token.name)
                }
                return (report(request, token: token), token.name)
            case .signedOut: return (redirect(DashboardPage.basePath, cookie: clearedCookie), nil)
            case .unavailable: return (unavailable(), nil)
            }
        case (_, DashboardPage.basePath), (_, DashboardPage.sessionPath), (_, DashboardPage.signOutPath),
            (_, DashboardPage.reportPath), (_, "/dashboard"):
            let allowed = Self.takesBody(method: "POST", path: request.path) ? "POST" : "GET"
            var reply = page(405, DashboardPage.problem("That method is not allowed here."))
            reply.headers.append(("Allow", allowed))
            return (reply, nil)
        default:
            return (page(404, DashboardPage.problem("There is no such page.")), nil)
        }
    }

    // MARK: Sessions

    private enum SignedIn {
        case signedIn(APIToken)
        case signedOut
        case unavailable
    }

    /// The session the request's cookie names, if it is live and its token is still accepted; a
    /// token refused now ends all of its sessions.
    private func signedIn(_ request: Request, now: Double) -> SignedIn {
        guard let id = cookie(request), let session = sessions.session(id, now: now) else { return .signedOut }
        switch tokens.current(id: session.tokenID, today: today()) {
        case .accepted(let token): return .signedIn(token)
        case .refused:
            sessions.close(tokenID: session.tokenID)
            return .signedOut
        case .unavailable(let reason):
            log("the tokens file cannot be used: \(reason)")
            return .unavailable
        }
    }

    /// The answer to the sign-in form, and the name of the token that signed in.
    private func signIn(_ request: Request, now: Double) -> (reply: HTTPReply, tokenName: String?) {
        guard isSameOrigin(request) else { return (forbidden(), nil) }
        let type = request.header("Content-Type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
        guard type?.lowercased() == "application/x-www-form-urlencoded",
            let token = Self.formValue("token", in: request.body)
        else {
            return (page(400, DashboardPage.signIn(message: "Give your token in the form.")), nil)
        }
        switch tokens.authenticate("Bearer " + token.trimmingCharacters(in: .whitespaces), today: today()) {
        case .accepted(let record):
            let id: String
            do {
                id = try sessions.open(tokenID: record.id, now: now)
            } catch {
                log("a dashboard session could not be opened: \(error)")
                return (unavailable(), nil)
            }
            return (redirect(DashboardPage.reportPath, cookie: sessionCookie(id)), record.name)
        case .refused:
            return (
                page(401, DashboardPage.signIn(message: "That token is not accepted: it is unknown, revoked or expired.")), nil
            )
        case .unavailable(let reason):
            log("the tokens file cannot be used: \(reason)")
            return (unavailable(), nil)
        }
    }

    /// The session id the `Cookie` header carries.
    private func cookie(_ request: Request) -> String? {
        guard let header = request.header("Cookie") else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == Self.cookieName {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    private func sessionCookie(_ id: String) -> String {
        "\(Self.cookieName)=\(id); Path=\(DashboardPage.basePath); Max-Age=\(settings.sessionSeconds); HttpOnly; "
            + "SameSite=Strict" + (settings.behindTLS ? "; Secure" : "")
    }

    private var clearedCookie: String {
        "\(Self.cookieName)=; Path=\(DashboardPage.basePath); Max-Age=0; HttpOnly; SameSite=Strict"
            + (settings.behindTLS ? "; Secure" : "")
    }

    /// A POST's `Origin`, when present, must be the dashboard's own: this scheme and the request's `Host`.
    private func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.header("Origin") else { return true }
        guard let host = request.header("Host"), !host.isEmpty else { return false }
        return origin == (settings.behindTLS ? "https://" : "http://") + host
    }

    /// The value of `name` in a form body (`application/x-www-form-urlencoded`).
    static func formValue(_ name: String, in body: [UInt8]) -> String? {
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    // MARK: The report

    private func report(_ request: Request, token: APIToken) -> HTTPReply {
        let query: APIQuery
        do {
            query = try Self.query(
                request.arguments, default: DashboardPage.defaultChoice(dataDirectory: dataDirectory, today: today()))
        } catch {
            return page(400, DashboardPage.problem(error.detail))
        }
        let choice = DashboardPage.Choice(
            from: query.from, to: query.to, app: query.app, network: query.network, environment: query.environment)
        var report = ReportRequest(
            dataDirectory: dataDirectory, from: choice.from, to: choice.to, outputPath: "", toolVersion: toolVersion)
        report.scope = query.scope(within: token.scope)
        report.environment = query.environment
        do {
            return page(200, try DashboardPage.page(report, choice: choice, readerScope: token.scope, reader: token.name).page)
        } catch  where error.code == .noAggregates {
            do {
                return page(
                    200, try DashboardPage.emptyRange(report, choice: choice, readerScope: token.scope, reader: token.name))
            } catch {
                return failed(error)
            }
        } catch {
            return failed(error)
        }
    }

    /// The form's days, app, network and environment, read as the API reads them (`APIQuery`): a day not given is
    /// `fallback`'s, an empty app or network is all of them.
    /// - Throws: `APIProblem` (400) for an unknown argument, a bad day or range.
    static func query(_ arguments: [(name: String, value: String?)], default fallback: DashboardPage.Choice)
        throws(APIProblem) -> APIQuery
    {
        var given = arguments.filter { $0.value?.isEmpty == false }
        for (name, day) in [("from", fallback.from), ("to", fallback.to)] where !given.contains(where: { $0.name == name }) {
            given.append((name, day.description))
        }
        return try APIQuery(given, allowed: ["from", "to", "app", "network", "environment"])
    }

    // MARK: Answers

    private func page(_ status: Int, _ html: String) -> HTTPReply {
        HTTPReply(status: status, contentType: "text/html; charset=utf-8", body: Array(html.utf8), headers: securityHeaders)
    }

    private var securityHeaders: [(name: String, value: String)] {
        [
            ("Content-Security-Policy", contentSecurityPolicy), ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"), ("X-Frame-Options", "DENY"),
        ]
    }

    private func redirect(_ location: String, cookie: String? = nil) -> HTTPReply {
        var headers = securityHeaders + [("Location", location)]
        if let cookie { headers.append(("Set-Cookie", cookie)) }
        return HTTPReply(status: 303, contentType: "text/plain; charset=utf-8", body: [], headers: headers)
    }

    private func forbidden() -> HTTPReply {
        page(403, DashboardPage.problem("This form can only be sent from the dashboard's own pages."))
    }

    private func unavailable() -> HTTPReply {
        page(503, DashboardPage.problem("The dashboard cannot answer now; its operator has been told."))
    }

    private func failed(_ error: ReportError) -> HTTPReply {
        log("dashboard: \(error)")
        return page(500, DashboardPage.problem("A published file could not be read; the API's log says why."))
    }
}
