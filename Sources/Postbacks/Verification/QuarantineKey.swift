import PostbackCrypto

/// The key a quarantined copy is deduplicated by (issue 24), in the receiver (`raw/unverifiable/`'s
/// own dedup index), in the nightly job's quarantine counts and so in `postback reverify`'s moves.
///
/// A quarantined postback may have no dedup key (an unknown SKAdNetwork version is not parsed), or
/// one nobody vouches for (the `postback-identifier` of a JWS under an unknown `kid`): keying those
/// by a claimed identifier would let anyone who posts first with that identifier make the genuine
/// copy a "duplicate", acknowledged and lost. So only a verified postback (quarantined for a value
/// we cannot place) is keyed by its signed dedup key; anything else by its bytes: a device's retry
/// is the same bytes, and any other body is stored too.
package enum QuarantineKey {
    package static func make(status: VerificationStatus, dedupKey: String?, body: [UInt8]) -> String {
        if status == .verified, let dedupKey { return dedupKey }
        return "sha256:\(SHA256.hash(body))"
    }
}
