package import Basics

/// The config file's `forward` key (docs/forwarding.md): the partner destinations, kept as written
/// and parsed by `ForwardSettings.parseList` when forwarding starts (secrets are read then).
package struct ForwardingConfiguration: ConfigurationSection {
    package static let keys = ["forward"]

    /// The destinations as written; nil: no forwarding.
    package var forward: JSONValue?
    /// The config file's directory (header secrets read from files are relative to it).
    package var configurationDirectory = "."

    package init() {}

    /// Forwarding seals every 60 s: a postback waits for its segment to be sealed before it is forwarded.
    package var sealingAgeSeconds: Double? { forward == nil ? nil : 60 }

    package mutating func read(_ member: ConfigurationMember) throws(ConfigurationError) {
        guard case .array = member.value else { throw member.fail("an array of destinations (docs/forwarding.md)") }
        forward = member.value
        configurationDirectory = member.directory
    }
}
