import Basics
package import PostbackCrypto

/// Apple's published postback verification keys, compiled in so the binary works on its own.
///
/// The same keys are in `Keys/*.pem` with their sources; a test checks the two copies agree.
package enum AppleKey: String, Sendable, CaseIterable {
    /// SKAdNetwork 1.0 and 2.0 (P-192).
    /// https://developer.apple.com/documentation/storekit/skadnetwork-1-release-notes and
    /// https://developer.apple.com/documentation/storekit/skadnetwork-2-release-notes
    case skadnetworkP192 = "apple-skadnetwork-p192"
    /// SKAdNetwork 2.1 and later (P-256).
    /// https://developer.apple.com/documentation/storekit/verifying-an-install-validation-postback
    case skadnetworkP256 = "apple-skadnetwork-p256"
    /// AdAttributionKit production `kid` (byte-identical to the SKAdNetwork P-256 key).
    /// https://developer.apple.com/documentation/adattributionkit/verifying-a-postback
    case casIdentifier0 = "apple-cas-identifier/0"
    /// AdAttributionKit development postbacks from end-to-end Developer Mode flows.
    case developmentIdentifier0 = "apple-development-identifier/0"
    /// AdAttributionKit development postbacks from the on-device Developer Settings tool.
    case developmentIdentifier1 = "apple-development-identifier/1"

    /// The key's name: for AdAttributionKit keys, the exact JWS `kid`.
    package var name: String { rawValue }

    package var environment: PostbackEnvironment {
        switch self {
        case .skadnetworkP192, .skadnetworkP256, .casIdentifier0: return .production
        case .developmentIdentifier0, .developmentIdentifier1: return .development
        }
    }

    /// The file in `Keys/` holding this key as PEM.
    package var fileName: String { rawValue.replacingSlashes + ".pem" }

    /// Base64 DER SubjectPublicKeyInfo, verbatim from Apple's pages (spec §3.3, §4.3).
    package var subjectPublicKeyInfoBase64: String {
        switch self {
        case .skadnetworkP192:
            return "MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG"
        case .skadnetworkP256, .casIdentifier0:
            return
                "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="
        case .developmentIdentifier0:
            return
                "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELeEDzpJEP+/qRSE5hJVC1p1J0ssUnQGMzBBbvnACBok8OVGGLgxL0myrKiy6lvRtSlLRsWit87i+vftD8AEqeQ=="
        case .developmentIdentifier1:
            return
                "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YzdO7eM97s/IJ25kdW5CZ3A14USE5IJ5Ha/vhWaxI6UBI1ZxCEvjrKxVluVGe6qWwF1BDFq+QHqKfH5u+wxHQ=="
        }
    }

    /// The AdAttributionKit key for a JWS `kid`, compared exactly (after JSON unescaping).
    package init?(keyID: String) {
        switch keyID {
        case AppleKey.casIdentifier0.rawValue: self = .casIdentifier0
        case AppleKey.developmentIdentifier0.rawValue: self = .developmentIdentifier0
        case AppleKey.developmentIdentifier1.rawValue: self = .developmentIdentifier1
        default: return nil
        }
    }

    /// The SKAdNetwork key for a version.
    package init(for version: SKAdNetworkVersion) {
        self = version.curve == .p192 ? .skadnetworkP192 : .skadnetworkP256
    }
}

extension String {
    fileprivate var replacingSlashes: String { String(map { $0 == "/" ? "-" : $0 }) }
}

/// The parsed Apple keys, loaded once per process. Loading checks each point is on its curve; a key
/// that fails to load is a build defect, so it stops the process rather than verifying nothing.
package final class AppleKeyring: Sendable {
    package static let shared = AppleKeyring()

    private let keys: [AppleKey: ECDSAPublicKey]

    private init() {
        var keys: [AppleKey: ECDSAPublicKey] = [:]
        for appleKey in AppleKey.allCases {
            do {
                let der = Base64.decode(appleKey.subjectPublicKeyInfoBase64, alphabet: .standard).value ?? []
                keys[appleKey] = try ECDSAPublicKey(derRepresentation: der)
            } catch {
                fatalError("compiled-in Apple key \(appleKey.name) does not load: \(error)")
            }
        }
        self.keys = keys
    }

    package subscript(key: AppleKey) -> ECDSAPublicKey { keys[key]! }
}

/// Ad networks known by name. Apple Ads sends SKAdNetwork 1.0–3.0 postbacks since April 2025 with
/// `ad-network-id` `com.apple.ads` and one `campaign-id` per placement (docs/postback-spec.md §12).
package enum KnownAdNetwork {
    package static let appleAdsID = "com.apple.ads"

    /// Apple Ads' campaign ids, one per placement, as measurement partners document them.
    package static let appleAdsPlacements: [Int64: String] = [
        10: "search results", 20: "search tab", 30: "Today tab", 40: "product pages",
    ]

    /// "Apple Ads" for Apple's own network; nil for any other id. Compared ASCII case-insensitively,
    /// as ad network ids are (the signature still covers the case that was sent).
    package static func name(of adNetworkID: String) -> String? {
        adNetworkID.asciiLowercased == appleAdsID ? "Apple Ads" : nil
    }

    /// "Apple Ads, search results" for an Apple Ads campaign id; nil otherwise.
    package static func describe(adNetworkID: String, campaignID: Int64?) -> String? {
        guard let name = name(of: adNetworkID) else { return nil }
        guard let campaignID, let placement = appleAdsPlacements[campaignID] else { return name }
        return "\(name), \(placement)"
    }
}
