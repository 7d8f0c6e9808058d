package import Basics

/// Why a postback was not accepted, in words a user can act on.
package struct PostbackRejection: Error, Sendable, Equatable, CustomStringConvertible {
    package let status: VerificationStatus
    package let reason: String
    /// What could be told about the postback before the problem, for reports on rejected input.
    package var postbackProtocol: PostbackProtocol?
    package var version: String?
    /// The parser's error when the body is not JSON (`reason` says it in words): its `offset` counts
    /// bytes from the start of the JSON, after a byte-order mark the body began with.
    package var jsonError: JSONParseError?

    package init(
        _ status: VerificationStatus, _ reason: String, protocol postbackProtocol: PostbackProtocol? = nil, version: String? = nil
    ) {
        self.status = status
        self.reason = reason
        self.postbackProtocol = postbackProtocol
        self.version = version
    }

    static func malformed(_ reason: String) -> PostbackRejection { PostbackRejection(.malformed, reason) }

    /// A body that is not JSON: malformed, with the parser's error kept as it is.
    static func notJSON(_ error: JSONParseError) -> PostbackRejection {
        var rejection = PostbackRejection(.malformed, "invalid JSON: \(error)")
        rejection.jsonError = error
        return rejection
    }

    package var description: String { "\(status.rawValue): \(reason)" }
}

/// The verdict on one postback. Exactly one of these, named as in the CLI's `--json` output.
package enum VerificationStatus: String, Sendable, CaseIterable, Codable {
    /// Apple's (or an allowed test key's) signature verifies over the exact signed message.
    case verified
    /// Well-formed, but the signature does not verify with the key the postback calls for.
    case invalidSignature = "invalid-signature"
    /// Not a postback we can read: bad JSON, a missing or mistyped field, a value out of range.
    case malformed
    /// A SKAdNetwork `version` with no documented signature layout.
    case unsupportedVersion = "unsupported-version"
    /// The key named (an AdAttributionKit `kid`) is unknown, or is a development key that was not allowed.
    case untrustedKey = "untrusted-key"
}

/// Why a postback went to the quarantine spool (`raw/unverifiable/`): a closed set, used as a metric label.
package enum QuarantineReason: String, Sendable, CaseIterable {
    /// A SKAdNetwork `version` with no documented signature layout.
    case unknownVersion = "unknown-version"
    /// An AdAttributionKit `kid` that is not one of Apple's keys.
    case unknownKeyID = "unknown-kid"
    /// Verified, but a signed value is one we do not know yet (a flag `unrecognized`).
    case unrecognizedSignedValue = "unrecognized-signed-value"
}
