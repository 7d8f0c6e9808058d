import Basics

/// What a receiver does with a verdict: store it (counted), quarantine it (kept, never counted), or
/// refuse it (400). The receiver's door (`PostbackIngest`) and `postback reverify` both decide with
/// `decide(_:)`, so reverify never takes into the counted spool what the door refused.
package struct AcceptancePolicy: Sendable {
    package enum Decision: Sendable, Equatable {
        /// Stored and counted. `configuredSpelling` is the `ad_network_ids` entry it matched when
        /// that differs from the postback's own spelling (compared ignoring ASCII case).
        case store(configuredSpelling: String?)
        /// Kept in `raw/unverifiable/`, answered 200, never counted.
        case quarantine(QuarantineReason)
        /// Answered 400 and kept in `raw/rejected/`; `policy` names the receiver's setting that refused
        /// a verified postback, nil when it did not verify.
        case reject(reason: String, policy: Setting?)
    }

    /// The receiver's settings that can refuse a verified postback (their raw values are the
    /// metrics' `reason` label and the problem type's suffix).
    package enum Setting: String, Sendable, Equatable {
        /// `allow_development` is off.
        case development
        /// `ad_network_ids` does not name the postback's ad network.
        case adNetwork = "ad-network"
    }

    /// Development postbacks (AdAttributionKit development keys, SKAdNetwork test mode, test keys) are
    /// stored as development; off: refused.
    package let allowsDevelopment: Bool
    /// `ad_network_ids` by their ASCII-lower-cased form, to the spelling configured; nil accepts all.
    private let adNetworkSpellings: [String: String]?

    /// - Parameter adNetworkIDs: the ad network ids accepted (`ad_network_ids`), compared ignoring
    ///   ASCII case; nil accepts all.
    package init(allowsDevelopment: Bool, adNetworkIDs: Set<String>?) {
        self.allowsDevelopment = allowsDevelopment
        adNetworkSpellings = adNetworkIDs.map { ids in
            var spellings: [String: String] = [:]
            // Sorted, so which of two spellings differing only in case is named does not vary by run.
            for id in ids.sorted() where spellings[id.asciiLowercased] == nil { spellings[id.asciiLowercased] = id }
            return spellings
        }
    }

    /// The configured spelling of `adNetworkID` (compared without regard to ASCII case), or nil when
    /// it is not accepted. Always non-nil when every ad network is accepted.
    package func acceptedSpelling(ofAdNetworkID adNetworkID: String) -> String? {
        guard let spellings = adNetworkSpellings else { return adNetworkID }
        return spellings[adNetworkID.asciiLowercased]
    }

    /// The one rule: not verified → refused, unless it is news from Apple (quarantine); verified →
    /// refused for development without `allowsDevelopment` or for an ad network not accepted, else
    /// quarantined for a signed value not known yet, else stored.
    package func decide(_ result: VerificationResult) -> Decision {
        var rejection: (reason: String, policy: Setting?)?
        var configuredSpelling: String?
        if !result.isVerified {
            rejection = (result.reason ?? result.status.rawValue, nil)
        } else if result.environment == .development, !allowsDevelopment {
            rejection = (
                "development postback (\(result.isTestMode ? "SKAdNetwork test mode" : "key \(result.keyName ?? "?")")); this receiver does not accept development postbacks (allow_development is off)",
                .development
            )
        } else if let network = result.postback?.attribution.adNetworkID {
            if let configured = acceptedSpelling(ofAdNetworkID: network) {
                if configured != network { configuredSpelling = configured }
            } else {
                rejection = (
                    "ad-network-id \"\(JSONWriter.escapedForMessage(network))\" is not one this receiver accepts (ad_network_ids, compared ignoring ASCII case)",
                    .adNetwork
                )
            }
        }
        if rejection == nil || !result.isVerified, let quarantine = result.quarantineReason { return .quarantine(quarantine) }
        if let rejection { return .reject(reason: rejection.reason, policy: rejection.policy) }
        return .store(configuredSpelling: configuredSpelling)
    }
}
