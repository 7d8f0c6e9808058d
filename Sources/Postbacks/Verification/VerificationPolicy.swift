package import PostbackCrypto

/// A user-supplied key trusted for testing (`--trust-key FILE`), e.g. the key of a local signer that
/// mints synthetic postbacks. Postbacks it verifies are always reported as development.
package struct TrustedTestKey: Sendable {
    package let name: String
    package let key: ECDSAPublicKey

    package init(name: String, key: ECDSAPublicKey) {
        self.name = name
        self.key = key
    }
}

/// Which keys besides Apple's production keys a verifier accepts.
package struct VerificationPolicy: Sendable {
    /// Accept AdAttributionKit development keys and the test keys. Off in production.
    package var allowsDevelopment: Bool
    /// Extra keys, tried only when `allowsDevelopment` is set, and tried *before* Apple's key: whoever
    /// passes a test key is sending mostly test traffic, so this saves a failed check per postback.
    package var testKeys: [TrustedTestKey]
    /// Keys standing in for an AdAttributionKit `kid` that is not one of Apple's keys in this release
    /// (`--trust-kid KID=PEM`), e.g. to take quarantined postbacks back with `postback reverify`.
    /// Tried only when `allowsDevelopment` is set; what they verify is development.
    package var standInKeyIDs: [String: TrustedTestKey]

    package init(allowsDevelopment: Bool = false, testKeys: [TrustedTestKey] = [], standInKeyIDs: [String: TrustedTestKey] = [:])
    {
        self.allowsDevelopment = allowsDevelopment
        self.testKeys = testKeys
        self.standInKeyIDs = standInKeyIDs
    }

    /// Apple's production keys only.
    package static let production = VerificationPolicy()
}
