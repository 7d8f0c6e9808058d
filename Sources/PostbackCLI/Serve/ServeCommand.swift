import Basics
import Dispatch
import Locking
import PostbackServer
import PostbackStore
import Postbacks
import SpoolDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// `postback serve`: the webhook receiver (the server itself is `PostbackServer`).
enum ServeCommand {
    static let usage = """
        usage: postback serve [--config FILE] [--listen HOST:PORT] [--data DIR] [--writer-id ID]
                              [--allow-dev] [--trust-key PEM]... [--log-level LEVEL] [--log-format FORMAT]
                              [--ship-to s3://BUCKET/PREFIX]

        Receives SKAdNetwork and AdAttributionKit postbacks over HTTP, verifies them and stores
        them durably: 200 only once a postback is synced to disk, 500 whenever it is not.

          --config FILE        JSON config (see docs/serve.md); flags override it. Relative paths
                               in it are relative to the config file's directory
          --listen HOST:PORT   address to listen on (default 127.0.0.1:8080; port 0 picks one;
                               0.0.0.0:PORT for all interfaces)
          --data DIR           data directory (default ./data)
          --writer-id ID       names this receiver's files (default: the host name); receivers
                               sharing a data directory each need their own
          --allow-dev          store development postbacks (marked development)
          --trust-key PEM      also trust this test key (needs --allow-dev); repeatable
          --log-level LEVEL    debug, info (default), warning or error
          --log-format FORMAT  auto (default): start-up errors as plain text when stderr is a
                               terminal, JSON lines otherwise; json: always JSON lines. Once
                               serving, logs are JSON lines (one object per line) on stderr
          --ship-to URL        also upload sealed segments to s3://BUCKET/PREFIX (credentials and
                               endpoint from AWS_* variables; see docs/deployment.md)

        Endpoints: POST /.well-known/skadnetwork/report-attribution/,
        POST /.well-known/appattribution/report-attribution/, the config's ad_network_path,
        GET /livez, /readyz, /metrics; with web_ads, POST /.well-known/skadnetwork/get-signed-payload.
        With signing_listen (a private address), the impression signing service: POST /impressions/sign
        there (docs/impressions.md). SIGTERM, SIGINT or SIGALRM stops it gracefully (exit 0);
        SIGHUP, SIGUSR1 and SIGUSR2 are logged and ignored.

        Exit status: 0 stopped by SIGTERM, SIGINT or SIGALRM; 2 usage or config error, or it could not
        start (address in use, data directory not writable, another receiver with the same
        writer id).
        """

    static let syntax = CommandSyntax(
        "serve", usage: usage, flags: ["--allow-dev"],
        options: ["--config", "--listen", "--data", "--writer-id", "--trust-key", "--log-level", "--log-format", "--ship-to"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        // Block the stop signals before any thread starts, so every thread inherits the mask and
        // only sigwait below sees them.
        // Every signal whose default action would kill the process at once is taken here too: a
        // stray one must never end it without the drain (`stopSignals` and `ignoredSignals`).
        var signals = sigset_t()
        sigemptyset(&signals)
        for (number, _) in stopSignals + ignoredSignals { sigaddset(&signals, number) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        return run(words, io: io) { server in
            while true {
                var received: Int32 = 0
                sigwait(&signals, &received)
                if let stop = stopSignals.first(where: { $0.number == received }) { return stop.name }
                let name = ignoredSignals.first { $0.number == received }?.name ?? "signal \(received)"
                server.log.info("signal ignored", ["signal": .string(name)])
            }
        }
    }

    /// Signals that stop the receiver gracefully (the drain of `shutdown`, exit 0): SIGTERM and SIGINT,
    /// and SIGALRM, whose senders (timers, `timeout -s ALRM`) mean the process to end.
    static let stopSignals: [(number: Int32, name: String)] = [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGALRM, "SIGALRM")]

    /// Signals logged and otherwise ignored. SIGHUP: logs go to stderr, so there is nothing to reopen
    /// (and a closed terminal must not stop a receiver); SIGUSR1 and SIGUSR2 mean nothing here.
    static let ignoredSignals: [(number: Int32, name: String)] = [(SIGHUP, "SIGHUP"), (SIGUSR1, "SIGUSR1"), (SIGUSR2, "SIGUSR2")]

    /// Runs the server until `waitForStop` returns (the name of what stopped it).
    static func run(_ words: [String], io: CommandIO, waitForStop: (PostbackServer) -> String) -> ExitStatus {
        let arguments: Arguments
        let jsonStartupErrors: Bool
        do {
            arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
            switch arguments.value("--log-format") ?? "auto" {
            case "auto": jsonStartupErrors = !io.standardError.isTerminal
            case "json": jsonStartupErrors = true
            case let other: throw CommandError.usage("--log-format must be auto or json, got '\(other)'")
            }
        } catch {
            return syntax.finish(error, io: io)
        }
        let sink = io.standardError
        func startupError(_ message: String) -> ExitStatus {
            if jsonStartupErrors {
                ServerLog(minimumLevel: .error) { sink.write($0) }.error("cannot start", ["detail": .string(message)])
            } else {
                io.printError("postback serve: cannot start: \(message)")
            }
            return .usageOrIOError
        }
        let configuration: ServerConfiguration
        do {
            configuration = try configure(arguments)
        } catch {
            return startupError("\(error)")
        }
        do {
            try PostbackServer.preflight(configuration)
        } catch {
            return startupError(error.description)
        }
        let log = ServerLog(minimumLevel: configuration.logLevel) { sink.write($0) }
        let server: PostbackServer
        do {
            let sharedKeys = try ServeShipping.sharedDedupKeys(configuration, log: log)
            server = try PostbackServer.start(configuration: configuration, log: log, sharedDedupKeys: sharedKeys)
        } catch let error as ServerError {
            return startupError(error.description)
        } catch {
            return startupError("shipping to the object store: \(error)")
        }
        let shipping: DeliveryService?
        do {
            shipping = try ServeShipping.start(server: server, log: log)
        } catch {
            server.shutdown()
            return startupError("shipping to the object store: \(error)")
        }
        let forwarding: DeliveryService?
        do {
            forwarding = try ServeForwarding.start(server: server, log: log)
        } catch {
            server.shutdown()
            shipping?.stop()
            return startupError("forwarding to partners: \(error)")
        }
        let services = services(receiver: server, shipping: shipping, forwarding: forwarding, log: log)
        let reason = waitForStop(server)
        log.info("stop requested", ["signal": .string(reason)])
        services.shutdown()
        return .success
    }

    /// `serve`'s services in the order they stop: the receiver (requests in progress get
    /// `shutdown_grace_seconds`; nothing more is stored), then shipping and forwarding together, which
    /// deliver what its shutdown sealed within `shutdown_delivery_seconds`, so a receiver scaled down
    /// does not leave its last minutes on a disk nobody may start again (the next start delivers the rest).
    static func services(
        receiver: PostbackServer, shipping: DeliveryService?, forwarding: DeliveryService?, log: ServerLog
    ) -> ServiceGroup {
        let deliverySeconds = receiver.configuration.shutdownDeliverySeconds
        return ServiceGroup([
            .init([receiver], seconds: receiver.configuration.shutdownGraceSeconds),
            .init([shipping, forwarding].compactMap { $0 }, seconds: deliverySeconds) {
                log.info("delivering the sealed segments before exit", ["within_seconds": .double(deliverySeconds)])
            },
        ])
    }

    /// The configuration from `--config` and the flags that override it.
    static func configure(_ arguments: Arguments) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let path = arguments.value("--config") {
            configuration = try ServerConfiguration.load(path: path, sections: DeliveryConfiguration.sections)
        }
        if let listen = arguments.value("--listen") { configuration.listen = listen }
        if let data = arguments.value("--data") { configuration.dataDirectory = data }
        if let writer = arguments.value("--writer-id") { configuration.writerID = writer }
        if arguments.has("--allow-dev") { configuration.allowsDevelopment = true }
        if !arguments.values("--trust-key").isEmpty, !configuration.allowsDevelopment {
            throw CommandError.usage("--trust-key keys are test keys; add --allow-dev to accept postbacks they sign")
        }
        if let url = arguments.value("--ship-to") { configuration.sections[ShippingConfiguration.self].shipTo = url }
        configuration.trustKeyPaths += arguments.values("--trust-key")
        if let name = arguments.value("--log-level") {
            guard let level = ServerLog.Level(name: name) else {
                throw CommandError.usage("--log-level must be debug, info, warning or error, got '\(name)'")
            }
            configuration.logLevel = level
        }
        try configuration.validate()
        // A config that names signing keys or web ads decides what is signed: others may not write it.
        if let path = arguments.value("--config"),
            !configuration.signing.keyPaths.isEmpty || configuration.signing.webAdsPath != nil,
            let refusal = SigningFileMode.refusal(path, rule: .ownerWritable, what: "--config \(path)")
        {
            throw CommandError.usage(refusal)
        }
        configuration.testKeys = try TrustKeys.load(configuration.trustKeyPaths)
        configuration.signing.loadedKeys = try configuration.signing.keyPaths.map { entry throws in
            // Read once, here; refused when group- or world-readable; never quoted in a message.
            let key = try PrivateKeyFile.load(entry.path, option: "signing_keys kid \(entry.kid):")
            do throws(PostbackRejection) {
                return ImpressionSigningKey(kid: entry.kid, signer: try ImpressionSigner(key: key))
            } catch {
                throw CommandError.usage("signing_keys kid \(entry.kid): \(entry.path): \(error.reason)")
            }
        }
        return configuration
    }
}
