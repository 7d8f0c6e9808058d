import PostbackServer
import PostbackStore
import Testing

/// The config file: every key, and loud errors for bad ones.
@Suite struct ConfigurationTests {
    private func parse(_ text: String) throws(ServerConfiguration.ConfigurationError) -> ServerConfiguration {
        try ServerConfiguration.parse(Array(text.utf8), relativeTo: "/etc/postback")
    }

    @Test func everyKeyIsRead() throws {
        let configuration = try parse(
            """
            {"listen": "0.0.0.0:9000", "data_dir": "/var/lib/postback", "writer_id": "rx-7",
             "ad_network_path": "/network/postbacks/", "ad_network_ids": ["a.skadnetwork", "b.adattributionkit"],
             "allow_development": true, "trust_keys": ["keys/test.pem", "/abs/other.pem"], "body_limit_bytes": 1000,
             "header_timeout_seconds": 2.5, "body_timeout_seconds": 3, "idle_timeout_seconds": 4,
             "connection_limit": 50, "per_ip_connection_limit": 5, "segment_bytes": 1048576, "commit_gather_ms": 2, "threads": 3,
             "shutdown_grace_seconds": 7, "log_level": "debug",
             "trusted_proxies": ["10.0.0.0/8", "::1"], "rejected_bytes_per_day": 5000, "rejected_bytes_per_client_per_day": 600, "rejected_body_keep_bytes": 100,
             "reserved_free_bytes": 7000}
            """)
        #expect(configuration.listen == "0.0.0.0:9000")
        #expect(configuration.dataDirectory == "/var/lib/postback")
        #expect(configuration.writerID == "rx-7")
        #expect(configuration.adNetworkPath == "/network/postbacks/")
        #expect(configuration.acceptedAdNetworkIDs == ["a.skadnetwork", "b.adattributionkit"])
        #expect(configuration.allowsDevelopment)
        #expect(configuration.trustKeyPaths == ["/etc/postback/keys/test.pem", "/abs/other.pem"], "relative to the config file")
        #expect(configuration.bodyLimitBytes == 1000)
        #expect(configuration.headerTimeoutSeconds == 2.5)
        #expect(configuration.bodyTimeoutSeconds == 3)
        #expect(configuration.idleTimeoutSeconds == 4)
        #expect(configuration.connectionLimit == 50)
        #expect(configuration.perIPConnectionLimit == 5)
        #expect(configuration.segmentBytes == 1 << 20)
        #expect(configuration.commitGatherSeconds == 0.002)
        #expect(configuration.threads == 3)
        #expect(configuration.shutdownGraceSeconds == 7)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.trustedProxies == [CIDR("10.0.0.0/8")!, CIDR("::1")!])
        #expect(configuration.rejectedBytesPerDay == 5000)
        #expect(configuration.rejectedBytesPerClientPerDay == 600)
        #expect(configuration.rejectedBodyKeepBytes == 100)
        #expect(configuration.reservedFreeBytes == 7000)
    }

    @Test func defaultsWithoutAFile() throws {
        let configuration = try parse("{}")
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.dataDirectory == "./data")
        #expect(configuration.bodyLimitBytes == 65536)
        #expect(configuration.acceptedAdNetworkIDs == nil, "all ad networks when unset")
        #expect(!configuration.allowsDevelopment)
        #expect(configuration.headerTimeoutSeconds == 5, "a silent new connection is closed within seconds")
        #expect(configuration.trustedProxies.isEmpty, "X-Forwarded-For ignored unless configured")
        #expect(configuration.rejectedBytesPerDay == 256 << 20 && configuration.reservedFreeBytes == 256 << 20)
    }

    @Test(arguments: [
        (#"{"listne": "x"}"#, "unknown key"),
        (#"{"listen": 8080}"#, "listen must be a string"),
        (#"{"listen": "localhost"}"#, "HOST:PORT"),
        (#"{"listen": "127.0.0.1:70000"}"#, "port"),
        (#"{"writer_id": "../x"}"#, "writer_id"),
        (#"{"body_limit_bytes": -1}"#, "body_limit_bytes"),
        (#"{"body_limit_bytes": 1.5}"#, "body_limit_bytes"),
        (#"{"allow_development": "yes"}"#, "true or false"),
        (#"{"trust_keys": ["k.pem"]}"#, "allow_development"),
        (#"{"ad_network_ids": "a"}"#, "array of strings"),
        (#"{"ad_network_path": "postbacks"}"#, "absolute path"),
        (#"{"ad_network_path": "/livez"}"#, "collides"),
        (#"{"header_timeout_seconds": 0}"#, "seconds"),
        (#"{"log_level": "loud"}"#, "log_level"),
        (#"{"trusted_proxies": ["10.0.0.0/40"]}"#, "not an address or CIDR"),
        (#"{"trusted_proxies": ["proxy.example.com"]}"#, "not an address or CIDR"),
        (#"{"rejected_bytes_per_day": -1}"#, "rejected_bytes_per_day"),
        (#"{"commit_gather_ms": 500}"#, "milliseconds"),
        (#"{"a": 1, "a": 2}"#, "duplicate"),
        ("[]", "JSON object"),
    ])
    func badConfigurationIsRejectedWithAReason(text: String, expected: String) {
        do throws(ServerConfiguration.ConfigurationError) {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(text): \(error.description)")
        }
    }

    /// `shutdown_delivery_seconds` takes 0 (no delivery at exit), unlike the other timeouts.
    @Test func shutdownDeliverySecondsAcceptsZeroNotLess() throws {
        #expect(try parse("{}").shutdownDeliverySeconds == 20)
        #expect(try parse(#"{"shutdown_delivery_seconds": 0}"#).shutdownDeliverySeconds == 0)
        #expect(try parse(#"{"shutdown_delivery_seconds": 45.5}"#).shutdownDeliverySeconds == 45.5)
        for bad in [#"{"shutdown_delivery_seconds": -1}"#, #"{"shutdown_delivery_seconds": "20"}"#] {
            do throws(ServerConfiguration.ConfigurationError) {
                _ = try parse(bad)
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.description.contains("shutdown_delivery_seconds must be a number of seconds from 0"), "\(error)")
            }
        }
        do throws(ServerConfiguration.ConfigurationError) {
            _ = try parse(#"{"header_timeout_seconds": 0}"#)
            Issue.record("accepted a zero header timeout")
        } catch {
            #expect(error.description.contains("above 0"))
        }
    }

    /// A body limit the spool could not read back is refused: 512 KiB escaped as JSON (6 bytes a
    /// byte at worst) stays under `SegmentReader.maximumLineBytes`; more could write a line every
    /// reader calls corrupt.
    @Test func bodyLimitsKeepEveryRecordReadable() throws {
        #expect(ServerConfiguration.maximumBodyBytes * 6 + 64 * 1024 < SegmentReader.maximumLineBytes)
        #expect(try parse(#"{"body_limit_bytes": 524288, "rejected_body_keep_bytes": 524288}"#).bodyLimitBytes == 524288)
        for key in ["body_limit_bytes", "rejected_body_keep_bytes"] {
            do throws(ServerConfiguration.ConfigurationError) {
                _ = try parse("{\"\(key)\": 524289}")
                Issue.record("accepted \(key) 524289")
            } catch {
                #expect(error.description.contains("\(key) must be a whole number from"), "\(error)")
                #expect(error.description.contains("524288"))
            }
        }
    }
}
