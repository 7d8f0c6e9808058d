/// The outcome of checking one postback: a result, not an error, because rejecting forged or broken
/// input is the verifier's ordinary work.
package struct VerificationResult: Sendable {
    package let status: VerificationStatus
    /// The parsed postback; nil when it could not be parsed.
    package let postback: Postback?
    package let postbackProtocol: PostbackProtocol?
    package let version: String?
    /// The key that verified it, or for a failed check the key(s) it was checked against.
    package let keyName: String?
    /// Nil only when the body could not be read far enough to tell.
    package let environment: PostbackEnvironment?
    /// Why it was not verified; nil when verified.
    package let reason: String?
    /// A SKAdNetwork test-mode postback (`source-app-id` 0): test traffic, reported as development.
    package let isTestMode: Bool

    package var isVerified: Bool { status == .verified }
    /// The postback's signed identifier and window (`Postback.dedupKey`), plus `/development` for a
    /// development postback (issue 24, spec §11). A SKAdNetwork test-mode postback is signed without
    /// its `source-app-id` of 0, so adding `"source-app-id": 0` to a genuine production postback that
    /// has none gives a body that verifies as test mode over exactly the genuine message: keyed alike,
    /// the copy posted first would make the genuine one a duplicate. Production keys are unchanged.
    package var dedupKey: String? {
        guard let key = postback?.dedupKey else { return nil }
        return environment == .development ? key + Self.developmentKeySuffix : key
    }

    /// What a development postback's dedup key ends with.
    package static let developmentKeySuffix = "/development"
    /// Values not taken exactly as sent. They never change `status`: the signature alone does.
    package var flags: [PostbackFlag] { postback?.flags ?? [] }

    /// Why this postback cannot be judged or counted *yet*, or nil. A receiver answers 200 and keeps
    /// such a postback in `raw/unverifiable/` (never counted) instead of refusing it: it usually means
    /// Apple shipped something new, and `postback reverify` can take it back once we know it.
    package var quarantineReason: QuarantineReason? {
        switch status {
        case .unsupportedVersion: return .unknownVersion
        // An unknown kid; a development key that was not allowed is a refusal, not news from Apple.
        case .untrustedKey where environment == nil && postbackProtocol == .adattributionkit: return .unknownKeyID
        case .verified where flags.hasUnrecognized: return .unrecognizedSignedValue
        default: return nil
        }
    }

    init(
        status: VerificationStatus, postback: Postback?, keyName: String?, environment: PostbackEnvironment?,
        reason: String?, isTestMode: Bool = false
    ) {
        self.status = status
        self.postback = postback
        self.postbackProtocol = postback?.postbackProtocol
        self.version = postback?.version
        self.keyName = keyName
        self.environment = environment
        self.reason = reason
        self.isTestMode = isTestMode
    }

    /// A verdict for input that never got as far as the parser (an over-long line, empty input).
    package static func malformed(reason: String) -> VerificationResult {
        VerificationResult(rejection: PostbackRejection(.malformed, reason))
    }

    package init(rejection: PostbackRejection) {
        self.status = rejection.status
        self.postback = nil
        self.postbackProtocol = rejection.postbackProtocol
        self.version = rejection.version
        self.keyName = nil
        self.environment = nil
        self.reason = rejection.reason
        self.isTestMode = false
    }
}
