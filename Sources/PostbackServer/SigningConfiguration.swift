package import Basics

/// The config file's keys of the ad network's side (docs/impressions.md): the signing service's
/// private listener, the signing keys, and Safari's web ads. A new key is a case in `read` and its
/// name in `keys`.
package struct SigningConfiguration: ConfigurationSection {
    package static let keys = [
        "signing_listen", "signing_keys", "web_ads", "web_ads_limit", "web_ad_rate_per_client", "web_ad_burst_per_client",
    ]

    /// The impression signing service's private listener (`HOST:PORT`, a loopback or private
    /// address, never the public `listen`); nil: no signing service (docs/impressions.md).
    package var listen: String?
    /// `signing_keys`: the ad network's private keys by `kid`, the first the default; the CLI reads
    /// them (`PrivateKeyFile`: owner-only PEM files) into `loadedKeys`.
    package var keyPaths: [(kid: String, path: String)] = []
    /// The loaded `keyPaths`, in the same order.
    package var loadedKeys: [ImpressionSigningKey] = []
    /// `web_ads`: the JSON Lines file of the web ads the network registered, which
    /// `/.well-known/skadnetwork/get-signed-payload` answers for; nil: that path is not served.
    package var webAdsPath: String?
    /// `web_ads_limit`: the most web ads kept; past it the first registered expire (`WebAdRegistry`).
    package var webAdsLimit = 1_000_000
    /// `web_ad_rate_per_client`, `web_ad_burst_per_client`: web-ad payloads signed per second per
    /// client, and at once (`SigningBudget`); a rate of 0 sets no budget.
    package var webAdRatePerClient = 10
    package var webAdBurstPerClient = 50

    package init() {}

    package mutating func read(_ member: ConfigurationMember) throws(ConfigurationError) {
        switch member.key {
        case "signing_listen": listen = try member.optionalString()
        case "signing_keys": keyPaths = try member.signingKeys().map { ($0.kid, member.relative($0.path)) }
        case "web_ads": webAdsPath = try member.optionalString().map(member.relative)
        case "web_ads_limit": webAdsLimit = try member.integer(in: 1...100_000_000)
        case "web_ad_rate_per_client": webAdRatePerClient = try member.integer(in: 0...1_000_000)
        case "web_ad_burst_per_client": webAdBurstPerClient = try member.integer(in: 1...1_000_000)
        default: preconditionFailure("\(member.key) is not a signing key")
        }
    }

    /// The addresses `signing_listen` may use: loopback and private networks (RFC 1918, RFC 6598,
    /// IPv6 unique-local and link-local). The signing service signs anything it is sent, so it must
    /// never be reachable from the internet; a host name cannot be checked and is refused too.
    static let privateNetworks = [
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "::1/128", "fc00::/7", "fe80::/10",
    ].map { CIDR($0)! }
    static let linkLocal = CIDR("fe80::/10")!

    /// An IPv6 address's zone (`fe80::1%eth0` → `fe80::1`, `eth0`), as getaddrinfo reads it when binding.
    static func splitZone(_ host: String) -> (address: String, zone: String?) {
        guard let percent = host.firstIndex(of: "%") else { return (host, nil) }
        return (String(host[..<percent]), String(host[host.index(after: percent)...]))
    }

    package func validate(in sections: ConfigurationSections) throws(ConfigurationError) {
        if let signingListen = listen {
            let address = try ListenAddress(signingListen)
            // A link-local IPv6 address names its interface (its scope): [fe80::1%eth0]:9190.
            let (host, zone) = Self.splitZone(address.host)
            guard let bytes = IPAddress.bytes(host), Self.privateNetworks.contains(where: { $0.contains(bytes) }) else {
                throw ConfigurationError(
                    "signing_listen \(signingListen) must be a loopback or private address (127.0.0.1, 10.x, 172.16–31.x, "
                        + "192.168.x, 100.64–127.x, ::1, fc00::/7, fe80::/10 with its interface): the signing service signs "
                        + "whatever it is sent and must not be public")
            }
            let isLinkLocal = bytes.count == 16 && Self.linkLocal.contains(bytes)
            if let zone {
                guard isLinkLocal, !zone.isEmpty else {
                    throw ConfigurationError(
                        "signing_listen \(signingListen): only a link-local address (fe80::/10) takes an interface "
                            + "(%NAME), e.g. [fe80::1%eth0]:9190")
                }
            } else if isLinkLocal {
                throw ConfigurationError(
                    "signing_listen \(signingListen) is link-local: name its interface, e.g. [\(host)%eth0]:\(address.port)")
            }
            guard !keyPaths.isEmpty || !loadedKeys.isEmpty else {
                throw ConfigurationError("signing_listen needs signing_keys (the ad network's private keys)")
            }
        } else if !keyPaths.isEmpty, webAdsPath == nil {
            throw ConfigurationError("signing_keys are used by signing_listen or web_ads; set one of them")
        }
        if webAdsPath != nil, keyPaths.isEmpty, loadedKeys.isEmpty {
            throw ConfigurationError("web_ads needs signing_keys (its answers are signed with the first key)")
        }
    }
}

extension ConfigurationMember {
    /// `signing_keys`: `[{"kid": "2026-12", "path": "network.pem"}, …]`, at least one, `kid`s distinct.
    fileprivate func signingKeys() throws(ConfigurationError) -> [(kid: String, path: String)] {
        let shape = "an array of {\"kid\": NAME, \"path\": PEM} (docs/impressions.md)"
        guard case .array(let items) = value, !items.isEmpty else { throw fail(shape) }
        var keys: [(kid: String, path: String)] = []
        for item in items {
            guard case .object(let object) = item, object.members.count == 2, case .string(let kid)? = object["kid"],
                case .string(let path)? = object["path"], !kid.isEmpty, !path.isEmpty
            else { throw fail(shape) }
            guard !keys.contains(where: { $0.kid == kid }) else {
                throw ConfigurationError(
                    "signing_keys names kid \"\(JSONWriter.escapedForMessage(kid))\" twice")
            }
            keys.append((kid, path))
        }
        return keys
    }
}
