import Postbacks
import PostbackServer
import PostbackStore
import SpoolDelivery

#if canImport(Glibc)
import Glibc
#endif

/// `postback serve`: the webhook receiver (the server itself is `PostbackServer`).
enum ServeCommand {
    static let usage = """
        usage: postback serve [--config FILE] [--listen HOST:PORT] [--data DIR] [--writer-id ID]
                              [--allow-dev] [--trust-key PEM]... [--log-level LEVEL] [--ship-to s3://BUCKET/PREFIX]

        Receives SKAdNetwork and AdAttributionKit postbacks over HTTP, verifies them and stores
        them durably: 200 only once a postback is synced to disk, 500 whenever it is not.

          --config FILE      JSON config (see docs/serve.md); flags override it
          --listen HOST:PORT address to listen on (default 127.0.0.1:8080; port 0 picks one)
          --data DIR         data directory (default ./data)
          --writer-id ID     names this receiver's files (default: the host name)
          --allow-dev        store development postbacks (marked development)
          --trust-key PEM    also trust this test key (needs --allow-dev); repeatable
          --log-level LEVEL  debug, info (default), warning or error
          --ship-to URL      also upload sealed segments to s3://BUCKET/PREFIX (credentials and
                             endpoint from AWS_* variables; see docs/deployment.md)

        Endpoints: POST /.well-known/skadnetwork/report-attribution/,
        POST /.well-known/appattribution/report-attribution/, the config's ad_network_path,
        GET /livez, /readyz, /metrics. SIGTERM or SIGINT stops it gracefully (exit 0).
        """

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        // Block the stop signals before any thread starts, so every thread inherits the mask and
        // only sigwait below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        return run(words, io: io) { _ in
            var received: Int32 = 0
            sigwait(&signals, &received)
            return received == SIGINT ? "SIGINT" : "SIGTERM"
        }
    }

    /// Runs the server until `waitForStop` returns (the name of what stopped it).
    static func run(_ words: [String], io: CommandIO, waitForStop: (PostbackServer) -> String) -> ExitStatus {
        let configuration: ServerConfiguration
        do {
            configuration = try parse(words)
        } catch let error as HelpRequested {
            _ = error
            io.print(usage)
            return .success
        } catch {
            io.printError("postback serve: \(error)\n\n\(usage)")
            return .usageOrIOError
        }
        let sink = io.standardError
        let log = ServerLog(minimumLevel: configuration.logLevel) { sink.write($0) }
        let server: PostbackServer
        do {
            server = try PostbackServer.start(configuration: configuration, log: log)
        } catch {
            log.error("cannot start", ["detail": .string(error.description)])
            return .usageOrIOError
        }
        let shipping: SpoolDeliveryWorker?
        do {
            shipping = try ServeShipping.start(server: server, log: log)
        } catch {
            log.error("cannot start shipping", ["detail": .string("\(error)")])
            server.shutdown()
            return .usageOrIOError
        }
        let reason = waitForStop(server)
        log.info("stop requested", ["signal": .string(reason)])
        server.shutdown()
        shipping?.stop()
        return .success
    }

    struct HelpRequested: Error {}

    static func parse(_ words: [String]) throws -> ServerConfiguration {
        let arguments = try Arguments(
            words, flags: ["--allow-dev", "--help"],
            options: ["--config", "--listen", "--data", "--writer-id", "--trust-key", "--log-level", "--ship-to"])
        if arguments.has("--help") { throw HelpRequested() }
        guard arguments.positionals.isEmpty else { throw UsageError("unexpected argument '\(arguments.positionals[0])'") }
        var configuration = ServerConfiguration()
        if let path = arguments.value("--config") { configuration = try ServerConfiguration.load(path: path) }
        if let listen = arguments.value("--listen") { configuration.listen = listen }
        if let data = arguments.value("--data") { configuration.dataDirectory = data }
        if let writer = arguments.value("--writer-id") { configuration.writerID = writer }
        if arguments.has("--allow-dev") { configuration.allowsDevelopment = true }
        if let url = arguments.value("--ship-to") { configuration.shipTo = url }
        configuration.trustKeyPaths += arguments.values("--trust-key")
        if let name = arguments.value("--log-level") {
            guard let level = ServerLog.Level(name: name) else { throw UsageError("--log-level must be debug, info, warning or error") }
            configuration.logLevel = level
        }
        try configuration.validate()
        configuration.testKeys = try TrustKeys.load(configuration.trustKeyPaths)
        return configuration
    }
}
