import Basics
import PostbackServer
import SpoolDelivery
import Testing

/// Shipping's and forwarding's sections of the one config file, each read by its own type.
@Suite struct DeliveryConfigurationTests {
    private func parse(_ text: String) throws(ConfigurationError) -> ServerConfiguration {
        try ServerConfiguration.parse(
            Array(text.utf8), relativeTo: "/etc/postback", sections: DeliveryConfiguration.sections)
    }

    @Test func everyShippingAndForwardingKeyIsRead() throws {
        let configuration = try parse(
            """
            {"ship_to": "s3://bucket/prefix", "object_store_endpoint": "http://127.0.0.1:8333",
             "object_store_region": "eu-west-1", "object_store_addressing": "virtual",
             "object_store_idle_timeout_seconds": 12, "shared_dedup_days": 3, "local_retention_hours": 24}
            """)
        let shipping = configuration.sections[ShippingConfiguration.self]
        #expect(shipping.shipTo == "s3://bucket/prefix")
        #expect(shipping.objectStoreEndpoint == "http://127.0.0.1:8333")
        #expect(shipping.objectStoreRegion == "eu-west-1")
        #expect(shipping.objectStoreAddressing == "virtual")
        #expect(shipping.objectStoreIdleTimeoutSeconds == 12)
        #expect(shipping.sharedDedupDays == 3 && shipping.effectiveSharedDedupDays == 3)
        #expect(shipping.localRetentionHours == 24)
        let forwarding = try parse(#"{"forward": [{"name": "p", "url": "https://p.example/x"}]}"#)
            .sections[ForwardingConfiguration.self]
        #expect(forwarding.forward != nil)
        #expect(forwarding.configurationDirectory == "/etc/postback", "secrets read from files are relative to the config")
    }

    /// docs/deployment.md and docs/forwarding.md: segments are sealed after 300 s when shipping, 60 s
    /// when forwarding, never otherwise, unless `segment_max_age_seconds` says.
    @Test func sealingAgeFollowsTheConfiguredServices() throws {
        #expect(try parse("{}").effectiveSegmentMaxAgeSeconds == nil)
        #expect(try parse(#"{"ship_to": "s3://b/p"}"#).effectiveSegmentMaxAgeSeconds == 300)
        #expect(try parse(#"{"forward": []}"#).effectiveSegmentMaxAgeSeconds == 60)
        #expect(try parse(#"{"ship_to": "s3://b/p", "forward": []}"#).effectiveSegmentMaxAgeSeconds == 60)
        #expect(try parse(#"{"ship_to": "s3://b/p", "segment_max_age_seconds": 5}"#).effectiveSegmentMaxAgeSeconds == 5)
        #expect(try parse(#"{"shared_dedup_days": 0}"#).sections[ShippingConfiguration.self].effectiveSharedDedupDays == 0)
        #expect(try parse(#"{"ship_to": "s3://b/p"}"#).sections[ShippingConfiguration.self].effectiveSharedDedupDays == 2)
    }

    @Test(arguments: [
        (#"{"ship_too": "s3://b/p"}"#, #"unknown key "ship_too" (did you mean "ship_to"?)"#),
        (#"{"forwrd": []}"#, #"(did you mean "forward"?)"#),
        (#"{"ship_to": "http://b/p"}"#, "ship_to must be an s3://bucket/prefix URL"),
        (#"{"ship_to": 1}"#, "ship_to must be a string"),
        (#"{"object_store_addressing": "dns"}"#, "object_store_addressing must be path or virtual"),
        (#"{"local_retention_hours": 1}"#, "it needs ship_to"),
        (#"{"shared_dedup_days": 1}"#, "it needs ship_to"),
        (#"{"ship_to": "s3://b/p", "local_retention_hours": 1, "forward": []}"#, "cannot be combined with forward"),
        (#"{"forward": {"name": "p"}}"#, "forward must be an array of destinations"),
    ])
    func mistakesAreRefusedWithAReason(text: String, expected: String) {
        do throws(ConfigurationError) {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(text): \(error.description)")
        }
    }

    @Test func theUnknownKeyMessageListsEverySectionsKeys() {
        do throws(ConfigurationError) {
            _ = try parse(#"{"nope": 1}"#)
            Issue.record("accepted an unknown key")
        } catch {
            for key in ServerConfiguration.knownKeys + ShippingConfiguration.keys + ForwardingConfiguration.keys {
                #expect(error.description.contains(key), "\(key) missing from: \(error.description)")
            }
        }
    }

    @Test func everySectionKeyIsReadByItsSection() {
        for key in ShippingConfiguration.keys + ForwardingConfiguration.keys {
            do throws(ConfigurationError) {
                _ = try parse(#"{"\#(key)": {"wrong": "type"}}"#)
                Issue.record("\(key): an object is the wrong type for every key")
            } catch {
                #expect(!error.description.contains("unknown key"), "\(key): \(error)")
                #expect(error.description.contains(key), "the error names the key: \(error)")
                #expect(error.code == .wrongType && error.key == key, "\(key): \(error.code), \(String(describing: error.key))")
            }
        }
    }
}
