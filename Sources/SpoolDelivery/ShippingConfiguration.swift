package import Basics

/// The config file's shipping keys (`ship_to` and its object store; docs/deployment.md), read by
/// `serve`'s shipping and nothing else. A new shipping key is a case here and its line in `keys`.
package struct ShippingConfiguration: ConfigurationSection {
    package static let keys = [
        "ship_to", "object_store_endpoint", "object_store_region", "object_store_addressing",
        "object_store_idle_timeout_seconds", "local_retention_hours", "shared_dedup_days",
    ]

    /// `s3://bucket/prefix` to ship sealed segments to; nil: local disk only. Endpoint, region and
    /// credentials come from the AWS environment variables unless set here.
    package var shipTo: String?
    package var objectStoreEndpoint: String?
    package var objectStoreRegion: String?
    /// `path` or `virtual`; nil: path style with a custom endpoint, virtual-host style on AWS.
    package var objectStoreAddressing: String?
    /// An object store request that moves no byte for this long is abandoned and retried; nil: 30 s.
    package var objectStoreIdleTimeoutSeconds: Double?
    /// Remove a shipped segment locally once it is this old; nil keeps every segment.
    package var localRetentionHours: Double?
    /// UTC days (today and the days before) of every receiver's shipped segments whose keys join the
    /// live dedup index at start-up; nil: 2 when shipping; 0: none.
    package var sharedDedupDays: Int?

    package init() {}

    /// The days of shipped segments read into the dedup index at start-up.
    package var effectiveSharedDedupDays: Int { shipTo == nil ? 0 : sharedDedupDays ?? 2 }

    /// Shipping takes sealed segments: an open one is sealed after 300 s when shipping.
    package var sealingAgeSeconds: Double? { shipTo == nil ? nil : 300 }

    package mutating func read(_ member: ConfigurationMember) throws(ConfigurationError) {
        switch member.key {
        case "ship_to": shipTo = try member.optionalString()
        case "object_store_endpoint": objectStoreEndpoint = try member.optionalString()
        case "object_store_region": objectStoreRegion = try member.optionalString()
        case "object_store_addressing": objectStoreAddressing = try member.optionalString()
        case "object_store_idle_timeout_seconds": objectStoreIdleTimeoutSeconds = try member.seconds()
        case "local_retention_hours": localRetentionHours = try member.hours()
        case "shared_dedup_days": sharedDedupDays = try member.integer(in: 0...400)
        default: preconditionFailure("\(member.key) is not a shipping key")
        }
    }

    package func validate(in sections: ConfigurationSections) throws(ConfigurationError) {
        if let shipTo, !shipTo.hasPrefix("s3://") {
            throw ConfigurationError("ship_to must be an s3://bucket/prefix URL, got \"\(JSONWriter.escapedForMessage(shipTo))\"")
        }
        if let addressing = objectStoreAddressing, addressing != "path", addressing != "virtual" {
            throw ConfigurationError("object_store_addressing must be path or virtual")
        }
        if localRetentionHours != nil, shipTo == nil {
            throw ConfigurationError("local_retention_hours removes shipped segments; it needs ship_to")
        }
        if let sharedDedupDays, sharedDedupDays > 0, shipTo == nil {
            throw ConfigurationError("shared_dedup_days reads the keys other receivers shipped; it needs ship_to")
        }
        if localRetentionHours != nil, sections[ForwardingConfiguration.self].forward != nil {
            // Retention consults the shipping ledger only; it would remove segments a partner has not received.
            throw ConfigurationError(
                "local_retention_hours cannot be combined with forward yet (it would remove segments not yet forwarded); remove one of them"
            )
        }
    }
}

/// The sections of the config file that `SpoolDelivery`'s services own, in the order they are listed.
package enum DeliveryConfiguration {
    package static let sections: [any ConfigurationSection.Type] = [
        ShippingConfiguration.self, ForwardingConfiguration.self,
    ]
}
