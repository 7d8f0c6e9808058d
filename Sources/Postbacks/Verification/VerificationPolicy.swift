public import PostbackCrypto

/// A user-supplied key trusted for testing (`--trust-key FILE`), e.g. the key of a local signer that
/// mints synthetic postbacks. Postbacks it verifies are always reported as development.
public struct TrustedTestKey: Sendable {
    public let name: String
    public let key: ECDSAPublicKey

    public init(name: String, key: ECDSAPublicKey) {
        self.name = name
        self.key = key
    }
}

/// Which keys besides Apple's production keys a verifier accepts.
public struct VerificationPolicy: Sendable {
    /// Accept AdAttributionKit development keys and the test keys. Off in production.
    public var allowsDevelopment: Bool
    /// Extra keys, tried only when `allowsDevelopment` is set, and tried *before* Apple's key: whoever
    /// passes a test key is sending mostly test traffic, so this saves a failed check per postback.
    public var testKeys: [TrustedTestKey]
    /// Keys standing in for an AdAttributionKit `kid` that is not one of Apple's keys in this release
    /// (`--trust-kid KID=PEM`), e.g. to take quarantined postbacks back with `postback reverify`.
    /// Tried only when `allowsDevelopment` is set; what they verify is development.
    public var standInKeyIDs: [String: TrustedTestKey]

    public init(allowsDevelopment: Bool = false, testKeys: [TrustedTestKey] = [], standInKeyIDs: [String: TrustedTestKey] = [:]) {
        self.allowsDevelopment = allowsDevelopment
        self.testKeys = testKeys
        self.standInKeyIDs = standInKeyIDs
    }

    /// Apple's production keys only.
    public static let production = VerificationPolicy()
}
