import Basics
import Foundation
import NumbersAPI
import PostbackClient
import PostbackServer
import Reporting

#if canImport(Glibc)
    import Glibc
#endif

/// `postback api`: the read-only numbers API on a listener of its own, and its tokens
/// (`postback api token create|list|revoke`). Argument handling only: the API is `NumbersAPI`.
enum ApiCommand {
    static let usage = """
        usage: postback api --data DIR --listen HOST:PORT --tokens FILE [--threads N]
                           [--rate-limit N] [--audit-log FILE] [--behind-tls] [--session-hours N]
                           [--cache-mib N] [--trusted-proxies CIDRS]
                           [--mirror DIR [--refresh-seconds N]]
               postback api token create --tokens FILE --name NAME --apps IDS|all
                                         --networks IDS|all [--expires YYYY-MM-DD]
               postback api token list --tokens FILE
               postback api token revoke --tokens FILE --name NAME

        Serves the published aggregates of DIR (what 'postback aggregate' wrote) read-only over
        HTTP, on its own listener (never the receiver's): the tables and their typed columns, a
        table's rows of up to \(APIQuery.maximumDays) days (JSON, CSV or Parquet, at most \(APIQuery.maximumLimit) rows a page),
        and the report's first-screen figures (docs/api.md). GET /openapi.json describes it.
        People sign in with their token at /dashboard/ and read the report's first screen of
        their scope there. Put it behind TLS (deploy/nginx.conf, locations /api/ and /dashboard/).

        Every request needs a token ('Authorization: Bearer pbk_…'), scoped to apps and ad
        networks: answers hold only rows of those apps AND networks, and every total is over them.

          --data DIR         the store whose agg/ 'postback aggregate' published, or
                             s3://BUCKET/PREFIX (AWS_* variables; see docs/deployment.md) with --mirror
          --mirror DIR       for a bucket: the local copy served, brought up to date at start and
                             every --refresh-seconds (default 300, 10 to 86400); a day changes in
                             the copy when its manifest does (manifests are put in place last)
          --listen HOST:PORT where to listen, e.g. 127.0.0.1:8090 (port 0: any free port)
          --tokens FILE      the tokens file (mode 0600: refused if its group or others can read it);
                             read again whenever it changes, so a revoked token is refused at once
          --threads N        threads answering requests (default 4, 1 to 64)
          --rate-limit N     requests a minute per token (default 120, 1 to 10000000; bursts of 30)
          --audit-log FILE   append the audit lines (one JSON line per request: token name,
                             query, status, rows, bytes) to FILE instead of standard error
          --behind-tls       it is reached only through TLS (nginx): the dashboard's session
                             cookie is Secure, and a sign-in's Origin must be https://
          --session-hours N  how long a dashboard session lasts (default 8, 1 to 168); a revoked
                             or expired token ends its sessions at once
          --cache-mib N      memory for the days read and the summaries answered (default 256,
                             0 to 65536; least recently used out first); a day re-published is
                             read again, never answered from memory
          --trusted-proxies CIDRS  comma-separated proxies (e.g. 127.0.0.1/32) whose
                             X-Forwarded-For names the client in the audit line; without it
                             the socket's peer is the client and the header is ignored

        Slow clients: headers within 5 s, the reply read within 10 s, 30 s idle between requests;
        at most 256 connections (a silent one shed first), 32 from one address without proxies.

        token create: prints a new token once (the file keeps only a salted SHA-256 of it).
          --name NAME        a name for the audit log and 'token list' (letters, digits . _ - @)
          --apps IDS|all     the app IDs it may read, comma-separated, or 'all' (say it: never implied)
          --networks IDS|all the ad network IDs it may read, or 'all'
          --expires DAY      the last day (UTC) it is accepted
        token list: each token's name, scope, expiry and whether it is revoked (never a secret).
        token revoke: refuses the token from the next request on.

        Exit status: 0 success (serving: stopped by SIGTERM or SIGINT); 2 usage or I/O error.
        """

    static let syntax = CommandSyntax(
        "api", usage: usage, flags: ["--behind-tls"],
        options: [
            "--data", "--listen", "--tokens", "--threads", "--rate-limit", "--audit-log", "--session-hours", "--cache-mib",
            "--trusted-proxies", "--mirror", "--refresh-seconds",
        ])
    static let tokenSyntax = CommandSyntax("api token", usage: usage)
    static let createSyntax = CommandSyntax(
        "api token create", usage: usage, options: ["--tokens", "--name", "--apps", "--networks", "--expires"])
    static let listSyntax = CommandSyntax("api token list", usage: usage, options: ["--tokens"])
    static let revokeSyntax = CommandSyntax("api token revoke", usage: usage, options: ["--tokens", "--name"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        if words.first == "token" {
            return tokenSyntax.dispatch(
                Array(words.dropFirst()), io: io, to: [("create", create), ("list", list), ("revoke", revoke)])
        }
        return serve(words, io: io)
    }

    // MARK: Tokens

    private static func create(_ words: [String], io: CommandIO) -> ExitStatus {
        do {
            let arguments = try createSyntax.parse(words)
            try arguments.requireNoPositionals()
            let path = try tokensPath(arguments)
            guard let name = arguments.value("--name") else { throw CommandError.usage("--name NAME is required") }
            guard APIToken.isValidName(name) else {
                throw CommandError.usage("--name must be 1 to 64 letters, digits or . _ - @, got '\(name)'")
            }
            let apps = try members(arguments, "--apps", what: "app IDs")
            let networks = try members(arguments, "--networks", what: "ad network IDs")
            var expires: UTCDay? = nil
            let today = UTCTimestamp.now().day
            if let text = arguments.value("--expires") {
                guard let day = UTCDay(text) else {
                    throw CommandError.usage("--expires must be a day YYYY-MM-DD, got '\(text)'")
                }
                guard day >= today else { throw CommandError.usage("--expires \(day) is in the past") }
                expires = day
            }
            var tokens = try TokenFile.read(path, missingIsEmpty: true)
            guard !tokens.contains(where: { $0.name == name }) else {
                throw CommandError.usage("the tokens file already has a token named \(name) (revoke it, or choose another name)")
            }
            let minted = try APIToken.mint(
                name: name, scope: DataScope(apps: apps, networks: networks), expires: expires, today: today)
            tokens.append(minted.record)
            try TokenFile.write(tokens, to: path)
            io.print(minted.text)
            io.printError(
                "postback api: token \(name) created (apps \(apps.text), networks \(networks.text)"
                    + (expires.map { ", until \($0)" } ?? "") + "); it is shown only this once")
            return .success
        } catch {
            return finish(error, syntax: createSyntax, io: io)
        }
    }

    private static func list(_ words: [String], io: CommandIO) -> ExitStatus {
        do {
            let arguments = try listSyntax.parse(words)
            try arguments.requireNoPositionals()
            let tokens = try TokenFile.read(try tokensPath(arguments))
            io.print("name\tapps\tnetworks\texpires\tcreated\trevoked")
            for token in tokens {
                io.print(
                    [
                        token.name, token.scope.apps.text, token.scope.networks.text, token.expires?.description ?? "-",
                        token.created.description, token.revoked?.description ?? "-",
                    ].joined(separator: "\t"))
            }
            return .success
        } catch {
            return finish(error, syntax: listSyntax, io: io)
        }
    }

    private static func revoke(_ words: [String], io: CommandIO) -> ExitStatus {
        do {
            let arguments = try revokeSyntax.parse(words)
            try arguments.requireNoPositionals()
            let path = try tokensPath(arguments)
            guard let name = arguments.value("--name") else { throw CommandError.usage("--name NAME is required") }
            var tokens = try TokenFile.read(path)
            guard let index = tokens.firstIndex(where: { $0.name == name }) else {
                throw CommandError.usage("the tokens file has no token named \(name)")
            }
            if tokens[index].revoked == nil { tokens[index].revoked = UTCTimestamp.now().day }
            try TokenFile.write(tokens, to: path)
            io.printError("postback api: token \(name) revoked; a running 'postback api' refuses it from its next request")
            return .success
        } catch {
            return finish(error, syntax: revokeSyntax, io: io)
        }
    }

    private static func tokensPath(_ arguments: Arguments) throws(CommandError) -> String {
        guard let path = arguments.value("--tokens") else { throw CommandError.usage("--tokens FILE is required") }
        return path
    }

    /// `--apps` / `--networks`: required, `all` or a list; never an implicit "everything".
    private static func members(_ arguments: Arguments, _ option: String, what: String) throws(CommandError)
        -> DataScope.Members
    {
        guard let text = arguments.value(option) else {
            throw CommandError.usage("\(option) is required: the \(what) the token may read, comma-separated, or 'all'")
        }
        guard let members = DataScope.Members(text: text) else {
            throw CommandError.usage("\(option) must be 'all' or \(what) separated by commas, got '\(text)'")
        }
        return members
    }

    private static func finish(_ error: any Error, syntax: CommandSyntax, io: CommandIO) -> ExitStatus {
        if let failure = error as? TokenFile.Failure {
            io.printError("postback api: \(failure)")
            return .usageOrIOError
        }
        if (error as? CommandError).map({ $0.code != .usage && $0.code != .helpRequested }) ?? true {
            io.printError("postback api: \(error)")
            return .usageOrIOError
        }
        return syntax.finish(error, io: io)
    }

    // MARK: Serving

    private static func serve(_ words: [String], io: CommandIO) -> ExitStatus {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        let server: APIServer
        do {
            let arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            guard let data = arguments.value("--data") else { throw CommandError.usage("--data DIR is required") }
            guard let listen = arguments.value("--listen") else { throw CommandError.usage("--listen HOST:PORT is required") }
            let tokensPath = try tokensPath(arguments)
            let bucket = S3Location.isObjectStoreURL(data) ? data : nil
            if bucket == nil {
                try UserPaths.requireDirectory(data, option: "--data", holding: "agg/ from 'postback aggregate'")
            } else if arguments.value("--mirror") == nil {
                throw CommandError.usage("--data s3://… needs --mirror DIR: the local copy the API serves and keeps current")
            }
            let refreshSeconds = try arguments.integer("--refresh-seconds", default: 300, in: 10...86_400)
            let address: ListenAddress
            do {
                address = try ListenAddress(listen)
            } catch {
                throw CommandError.usage("--listen: \(error)")
            }
            let threads = try arguments.integer("--threads", default: 4, in: 1...64)
            let rate = try arguments.integer("--rate-limit", default: 120, in: 1...10_000_000)
            let sessionHours = try arguments.integer("--session-hours", default: 8, in: 1...168)
            let cacheMiB = try arguments.integer(
                "--cache-mib", default: PublishedDayCache.defaultMaximumBytes >> 20, in: 0...65_536)
            let tokens = try TokenStore(path: tokensPath)
            var audit = io.standardError
            if let path = arguments.value("--audit-log") {
                let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else {
                    throw CommandError.usage(
                        "--audit-log: " + SystemCallError(operation: "open", path: path, errorNumber: errno).reason)
                }
                audit = FileDescriptorSink(descriptor: fd)
            }
            var served = data
            if let bucket, let mirror = arguments.value("--mirror") {
                // Served from a local copy, brought up to date now and every --refresh-seconds.
                let fetched = try ObjectStoreJobs.mirrorPublished(url: bucket, into: mirror)
                io.printError("postback api: \(URLRedaction.redacted(bucket)) mirrored into \(mirror) (\(fetched) files fetched)")
                let errors = io.standardError
                Thread.detachNewThread {
                    while true {
                        sleep(UInt32(refreshSeconds))
                        do {
                            try ObjectStoreJobs.mirrorPublished(url: bucket, into: mirror)
                        } catch {
                            // The last copy keeps being served; the next pass tries again.
                            errors.write(Array("postback api: mirroring \(URLRedaction.redacted(bucket)): \(error)\n".utf8))
                        }
                    }
                }
                served = mirror
            }
            var settings = NumbersAPI.Settings(dataDirectory: served, toolVersion: "postback \(PostbackCommand.version)")
            settings.requestsPerMinute = rate
            settings.dashboard.sessionSeconds = sessionHours * 3600
            settings.dashboard.behindTLS = arguments.has("--behind-tls")
            settings.cacheBytes = cacheMiB << 20
            if let text = arguments.value("--trusted-proxies") {
                settings.trustedProxies = try text.split(separator: ",").map { part throws(CommandError) in
                    guard let cidr = CIDR(String(part)) else {
                        throw CommandError.usage("--trusted-proxies: '\(part)' is not an address or CIDR block")
                    }
                    return cidr
                }
            }
            let auditSink = audit
            let errors = io.standardError
            let api = NumbersAPI(
                settings: settings, tokens: tokens, audit: AuditLog { auditSink.write(Array(($0 + "\n").utf8)) },
                log: { errors.write(Array("postback api: \($0)\n".utf8)) })
            // Blocked before the daemon's threads start, so only sigwait below sees them.
            if io.isProcess {
                pthread_sigmask(SIG_BLOCK, &signals, nil)
                signal(SIGPIPE, SIG_IGN)
            }
            server = try APIServer(address: address, api: api, threads: threads)
            io.printError(
                "postback api: listening on \(ListenAddress(host: address.host, port: server.port)) (GET /openapi.json)")
        } catch {
            return finish(error, syntax: syntax, io: io)
        }
        guard io.isProcess else { return .success }
        var received: Int32 = 0
        sigwait(&signals, &received)
        server.quiesce()
        io.printError("postback api: stopped (\(received == SIGTERM ? "SIGTERM" : "SIGINT"))")
        return .success
    }
}
