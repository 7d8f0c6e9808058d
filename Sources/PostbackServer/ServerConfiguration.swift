package import Basics
import PostbackStore
package import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Everything `postback serve` can be told, from its JSON config file and flags (flags win).
///
///     {"listen": "0.0.0.0:8080", "data_dir": "/var/lib/postback", "writer_id": "rx-1",
///      "ad_network_path": "/postbacks", "ad_network_ids": ["example123.skadnetwork"],
///      "allow_development": false, "trust_keys": [], "body_limit_bytes": 65536,
///      "header_timeout_seconds": 5, "body_timeout_seconds": 10, "idle_timeout_seconds": 30,
///      "connection_limit": 1024, "per_ip_connection_limit": 0, "segment_bytes": 134217728,
///      "threads": 2, "shutdown_grace_seconds": 10, "log_level": "info",
///      "trusted_proxies": ["10.0.0.0/8"], "rejected_bytes_per_day": 268435456,
///      "rejected_bytes_per_client_per_day": 4194304, "client_ipv6_prefix_length": 64,
///      "rejected_body_keep_bytes": 4096,
///      "reserved_free_bytes": 268435456,
///      "ship_to": "s3://bucket/prefix", "object_store_endpoint": null, "object_store_region": null,
///      "object_store_addressing": null, "object_store_idle_timeout_seconds": 30, "segment_max_age_seconds": 300,
///      "local_retention_hours": 168, "shutdown_delivery_seconds": 20, "signing_listen": "127.0.0.1:9190",
///      "signing_keys": [{"kid": "2026-12", "path": "network.pem"}], "web_ads": "web-ads.jsonl",
///      "web_ads_limit": 1000000, "web_ad_rate_per_client": 10, "web_ad_burst_per_client": 50}
///
/// Every key is optional; an unknown key is an error (a typo should not silently keep a default).
package struct ServerConfiguration: Sendable {
    /// `HOST:PORT`; port 0 picks a free one (tests).
    package var listen = "127.0.0.1:8080"
    package var dataDirectory = "./data"
    /// Names this receiver's segment files; several receivers sharing a store need different ids.
    package var writerID = ServerConfiguration.defaultWriterID()
    /// The path registered as the ad network's own postback URL, besides Apple's well-known paths.
    package var adNetworkPath: String?
    /// Only postbacks for these ad network ids are stored, compared without regard to ASCII case
    /// (real postbacks carry `KBD757YWX3.skadnetwork`); nil accepts all. Kept as configured.
    package var acceptedAdNetworkIDs: Set<String>?

    /// What this receiver stores, quarantines or refuses (`ad_network_ids`, `allow_development`):
    /// the door and `postback reverify` decide with it.
    package var acceptancePolicy: AcceptancePolicy {
        AcceptancePolicy(allowsDevelopment: allowsDevelopment, adNetworkIDs: acceptedAdNetworkIDs)
    }

    /// Store development postbacks (AdAttributionKit development keys, SKAdNetwork test mode, trusted
    /// test keys), marked as development. Off: they are rejected with a reason.
    package var allowsDevelopment = false
    /// PEM files of extra test keys (`trust_keys`); only used with `allowsDevelopment`.
    package var trustKeyPaths: [String] = []
    /// The loaded `trustKeyPaths` (the CLI loads them).
    package var testKeys: [TrustedTestKey] = []
    package var bodyLimitBytes = 64 << 10
    /// From the request line to the end of the headers; on a new connection, from the accept (so a
    /// connection that sends nothing is closed this soon, not after the idle timeout).
    package var headerTimeoutSeconds = 5.0
    /// From the end of the headers to the end of the body.
    package var bodyTimeoutSeconds = 10.0
    /// A keep-alive connection with no request in progress (also libmicrohttpd's inactivity timeout).
    package var idleTimeoutSeconds = 30.0
    package var connectionLimit = 1024
    /// 0 means no per-address limit (devices behind carrier NAT share addresses).
    package var perIPConnectionLimit = 0
    package var segmentBytes = 128 << 20
    /// Under load, how long a group commit lets its batch gather before the fdatasync (0: never).
    package var commitGatherSeconds = 0.0005
    /// HTTP worker threads (the epoll pool), and as many verifying threads (`VerificationQueue`).
    package var threads = ServerConfiguration.processorCount()
    /// How long a shutdown waits for requests in progress.
    package var shutdownGraceSeconds = 10.0
    package var logLevel = ServerLog.Level.info
    /// Peers (a reverse proxy, a load balancer) whose `X-Forwarded-For` / `Forwarded` names the client.
    package var trustedProxies: [CIDR] = []
    /// Host names (ASCII-lower-cased, no port) whose requests carry advertisers' developer copies;
    /// every other request is an ad network's copy. Only the metrics tell them apart.
    package var developerCopyHosts: Set<String> = []

    /// The copy a request to `host` (its `Host` header, port and case ignored) carries.
    package func copy(forHost host: String?) -> PostbackCopy {
        guard !developerCopyHosts.isEmpty, var name = host?.asciiLowercased else { return .network }
        if name.hasPrefix("[") {
            name = String(name.prefix { $0 != "]" }) + "]"
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return developerCopyHosts.contains(name) ? .developer : .network
    }
    /// Bytes of rejected records a day. Past 7/8 of it a rejected body is kept only as its SHA-256
    /// and size; at the budget nothing more is stored that day (still answered 400, and counted).
    package var rejectedBytesPerDay = 256 << 20
    /// Of that, whole rejected records from one client (beyond: hash and size only).
    package var rejectedBytesPerClientPerDay = 4 << 20
    /// IPv6 addresses sharing this many leading bits are one client for the per-client shares (a
    /// /64 is one subscriber's network: anyone holding one has 2⁶⁴ addresses). IPv4: each address.
    package var clientIPv6PrefixLength = 64
    /// The window of the log lines clients can cause (`LogSampler`; not a config key: tests shorten it).
    package var logSampleWindowSeconds = LogSampler.defaultWindowSeconds
    /// A rejected body larger than this is kept as its first this-many bytes plus SHA-256 and size.
    package var rejectedBodyKeepBytes = 4096
    /// Free space kept for verified postbacks: rejected records are not written below it.
    package var reservedFreeBytes = 256 << 20
    /// Seal an open segment after this long (so it can be shipped or forwarded); nil: as soon as the
    /// services of the file's sections need (`ConfigurationSection.sealingAgeSeconds`), else never.
    package var segmentMaxAgeSeconds: Double?
    /// At shutdown, after the last segments are sealed: how long to keep shipping and forwarding
    /// them before exiting (what is left waits on local disk for the next start); 0: do not wait.
    package var shutdownDeliverySeconds = 20.0
    /// The sections of the config file other services own (shipping, forwarding: `SpoolDelivery`),
    /// each read by its own type; `parse` is told which.
    package var sections = ConfigurationSections()
    /// The impression signing service and Safari's web ads (`signing_listen`, `signing_keys`, `web_ads…`).
    package var signing = SigningConfiguration()

    package init() {}

    /// The largest `body_limit_bytes` and `rejected_body_keep_bytes`: a body escaped as JSON takes up
    /// to 6 bytes a byte, and a record must stay under the 4 MiB line the spool readers accept.
    package static let maximumBodyBytes = 512 << 10

    /// The maximum segment age the spool writers use.
    package var effectiveSegmentMaxAgeSeconds: Double? { segmentMaxAgeSeconds ?? sections.sealingAgeSeconds }

    package typealias ConfigurationError = Basics.ConfigurationError

    /// Reads a config file. Relative paths in it (`data_dir`, `trust_keys`) are taken relative to the
    /// file's directory, so the config means the same whatever directory the receiver starts in.
    /// `sections`: the other services' sections the file may hold.
    package static func load(
        path: String, sections: [any ConfigurationSection.Type] = []
    ) throws(ConfigurationError) -> ServerConfiguration {
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: 1 << 20)
        } catch {
            throw ConfigurationError("config \(error)")
        }
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        do {
            return try parse(bytes, relativeTo: directory, sections: sections)
        } catch {
            throw ConfigurationError("config \(path): \(error.description)")
        }
    }

    /// Parses config JSON (see the type's comment for the keys).
    package static func parse(
        _ bytes: [UInt8], relativeTo directory: String = ".", sections: [any ConfigurationSection.Type] = []
    ) throws(ConfigurationError) -> ServerConfiguration {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes)
        } catch {
            throw ConfigurationError("not valid JSON: \(error.described(in: bytes))")
        }
        guard case .object(let object) = value else { throw ConfigurationError("must be a JSON object") }
        var configuration = ServerConfiguration()
        configuration.sections = ConfigurationSections(sections)
        let knownKeys = knownKeys + configuration.sections.keys
        for member in object.members {
            let reader = ConfigurationMember(key: member.key, value: member.value, directory: directory)
            if try configuration.sections.read(reader) { continue }
            if SigningConfiguration.keys.contains(member.key) {
                try configuration.signing.read(reader)
                continue
            }
            switch member.key {
            case "listen": configuration.listen = try reader.string()
            case "data_dir": configuration.dataDirectory = reader.relative(try reader.string())
            case "writer_id": configuration.writerID = try reader.string()
            case "ad_network_path": configuration.adNetworkPath = try reader.optionalString()
            case "ad_network_ids": configuration.acceptedAdNetworkIDs = try reader.optionalStrings().map(Set.init)
            case "allow_development": configuration.allowsDevelopment = try reader.bool()
            case "trust_keys":
                configuration.trustKeyPaths = try reader.optionalStrings()?.map(reader.relative) ?? []
            // At most 512 KiB, kept or stored: escaped as JSON (up to 6 bytes a byte) a record must stay
            // under the 4 MiB line every spool reader accepts (`SegmentReader.maximumLineBytes`).
            case "body_limit_bytes":
                configuration.bodyLimitBytes = try reader.integer(in: 1...ServerConfiguration.maximumBodyBytes)
            case "header_timeout_seconds": configuration.headerTimeoutSeconds = try reader.seconds()
            case "body_timeout_seconds": configuration.bodyTimeoutSeconds = try reader.seconds()
            case "idle_timeout_seconds": configuration.idleTimeoutSeconds = try reader.seconds()
            case "connection_limit": configuration.connectionLimit = try reader.integer(in: 1...1_000_000)
            case "per_ip_connection_limit": configuration.perIPConnectionLimit = try reader.integer(in: 0...1_000_000)
            case "segment_bytes": configuration.segmentBytes = try reader.integer(in: 4096...(1 << 40))
            case "commit_gather_ms": configuration.commitGatherSeconds = try reader.milliseconds()
            case "threads": configuration.threads = try reader.integer(in: 1...256)
            case "thread_per_connection": throw ConfigurationError(Self.threadPerConnectionRefusal)
            case "shutdown_grace_seconds": configuration.shutdownGraceSeconds = try reader.seconds()
            case "trusted_proxies":
                configuration.trustedProxies = try (reader.optionalStrings() ?? []).map { text throws(ConfigurationError) in
                    guard let cidr = CIDR(text) else {
                        throw ConfigurationError(
                            "trusted_proxies: \"\(JSONWriter.escapedForMessage(text))\" is not an address or CIDR (like 10.0.0.0/8 or fd00::/8)"
                        )
                    }
                    return cidr
                }
            case "developer_copy_hosts":
                configuration.developerCopyHosts = Set(
                    try (reader.optionalStrings() ?? []).map { text throws(ConfigurationError) in
                        let name = text.asciiLowercased
                        guard !name.isEmpty, !name.contains(where: { $0 == ":" || $0 == "/" || $0 == " " }) || name.hasPrefix("[")
                        else {
                            throw ConfigurationError(
                                "developer_copy_hosts: \"\(JSONWriter.escapedForMessage(text))\" is not a host name (like collector.example.com, without a port or scheme)"
                            )
                        }
                        return name
                    })
            case "rejected_bytes_per_day": configuration.rejectedBytesPerDay = try reader.integer(in: 0...(1 << 50))
            case "rejected_bytes_per_client_per_day":
                configuration.rejectedBytesPerClientPerDay = try reader.integer(in: 0...(1 << 50))
            case "client_ipv6_prefix_length": configuration.clientIPv6PrefixLength = try reader.integer(in: 1...128)
            case "rejected_body_keep_bytes":
                configuration.rejectedBodyKeepBytes = try reader.integer(in: 0...ServerConfiguration.maximumBodyBytes)
            case "reserved_free_bytes": configuration.reservedFreeBytes = try reader.integer(in: 0...(1 << 60))
            case "segment_max_age_seconds": configuration.segmentMaxAgeSeconds = try reader.seconds()
            case "shutdown_delivery_seconds": configuration.shutdownDeliverySeconds = try reader.seconds(allowingZero: true)
            case "log_level":
                let text = try reader.string()
                guard let level = ServerLog.Level(name: text) else {
                    throw ConfigurationError(
                        "log_level must be debug, info, warning or error, got \"\(JSONWriter.escapedForMessage(text))\"")
                }
                configuration.logLevel = level
            default:
                let hint = Suggestion.closest(to: member.key, in: knownKeys).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw ConfigurationError(
                    "unknown key \"\(JSONWriter.escapedForMessage(member.key))\"\(hint); known keys: \(knownKeys.joined(separator: ", "))"
                )
            }
        }
        try configuration.validate()
        return configuration
    }

    /// Why `thread_per_connection` is refused: the mode is gone, and what took its place.
    package static let threadPerConnectionRefusal =
        "thread_per_connection is no longer a setting: the receiver has one threading mode, the epoll pool and as many verifying threads (\"threads\"), which measured at less CPU per postback; remove the key"

    /// The keys `parse` reads itself (the sections it is given add theirs), for "did you mean" on a typo.
    package static let knownKeys =
        [
            "listen", "data_dir", "writer_id", "ad_network_path", "ad_network_ids", "allow_development", "trust_keys",
            "body_limit_bytes", "header_timeout_seconds", "body_timeout_seconds", "idle_timeout_seconds", "connection_limit",
            "per_ip_connection_limit", "segment_bytes", "commit_gather_ms", "threads",
            "shutdown_grace_seconds", "trusted_proxies", "developer_copy_hosts", "rejected_bytes_per_day",
            "rejected_bytes_per_client_per_day",
            "client_ipv6_prefix_length", "rejected_body_keep_bytes", "reserved_free_bytes", "segment_max_age_seconds",
            "log_level",
            "shutdown_delivery_seconds",
        ] + SigningConfiguration.keys

    /// Checks what parsing alone cannot (also after flags were applied).
    package func validate() throws(ConfigurationError) {
        guard StoreLayout.isValidWriterID(writerID) else {
            throw ConfigurationError(
                "writer_id \"\(JSONWriter.escapedForMessage(writerID))\" must be 1–64 letters, digits, '.', '_' or '-' (not starting with '.')"
            )
        }
        guard !dataDirectory.isEmpty else { throw ConfigurationError("data_dir is empty") }
        if let path = adNetworkPath {
            guard path.hasPrefix("/"), !path.contains("?"), !path.contains("#") else {
                throw ConfigurationError(
                    "ad_network_path must be an absolute path like /postbacks, got \"\(JSONWriter.escapedForMessage(path))\"")
            }
            guard Route.builtIn(Route.normalize(path)) == nil else {
                throw ConfigurationError("ad_network_path \(path) collides with a built-in path")
            }
        }
        if !trustKeyPaths.isEmpty, !allowsDevelopment {
            throw ConfigurationError("trust_keys are test keys; set allow_development to accept postbacks they sign")
        }
        _ = try ListenAddress(listen)
        try sections.validate()
        try signing.validate(in: sections)
    }

    /// The host name, made into a valid writer id; `rx1` if there is none.
    package static func defaultWriterID() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "rx1" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let cleaned = String(
            name.unicodeScalars.map { scalar -> Character in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
                    ? Character(scalar) : "-"
            }.prefix(64))
        return StoreLayout.isValidWriterID(cleaned) ? cleaned : "rx1"
    }

    static func processorCount() -> Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
