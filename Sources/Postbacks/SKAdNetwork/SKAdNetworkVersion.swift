package import PostbackCrypto

/// The SKAdNetwork versions with a documented signature layout.
///
/// Dispatch (spec §3.5): no `version` key means 1.0; `"2.0"` uses the P-192 key; 2.1 and later use
/// P-256. Any other string is unsupported rather than guessed at. Versions are compared as strings,
/// never parsed as numbers (`4.0` would become `4`, and the signature covers the text).
package enum SKAdNetworkVersion: String, Sendable, CaseIterable, Comparable, Codable {
    case v1_0 = "1.0"
    case v2_0 = "2.0"
    case v2_1 = "2.1"
    case v2_2 = "2.2"
    case v3_0 = "3.0"
    case v4_0 = "4.0"

    /// Apple signs 1.0 and 2.0 with a P-192 key, 2.1 onwards with P-256.
    package var curve: Curve { self <= .v2_0 ? .p192 : .p256 }

    // What each version carries (spec §3.2), asked by name instead of comparing versions in place.

    /// 2.0+: `version` is signed (1.0 has no version key), as are `redownload` and `source-app-id`,
    /// and the postback may carry a conversion value.
    package var hasSignedVersion: Bool { self >= .v2_0 }
    /// 2.0+: `redownload` (signed, required).
    package var hasRedownload: Bool { self >= .v2_0 }
    /// 2.0+: `source-app-id` (signed, optional).
    package var hasSourceAppID: Bool { self >= .v2_0 }
    /// 2.0+: `conversion-value` (unsigned).
    package var hasConversionValue: Bool { self >= .v2_0 }
    /// 2.2+: `fidelity-type` (signed, required).
    package var hasFidelityType: Bool { self >= .v2_2 }
    /// 3.0+: `did-win` (signed, required): non-winning postbacks exist.
    package var hasDidWin: Bool { self >= .v3_0 }
    /// 4.0: three conversion windows, told apart by the signed `postback-sequence-index`.
    package var hasConversionWindows: Bool { self >= .v4_0 }
    /// 4.0: the 2–4 digit `source-identifier` replaces `campaign-id`.
    package var hasSourceIdentifier: Bool { self >= .v4_0 }
    /// 4.0: `source-domain` (signed, optional; web ads).
    package var hasSourceDomain: Bool { self >= .v4_0 }
    /// 4.0: `coarse-conversion-value` (unsigned), next to or instead of a fine value.
    package var hasCoarseValues: Bool { self >= .v4_0 }

    /// The version whose text is `text` has conversion windows; false for an unknown version.
    /// Byte-level, for the aggregation hot path (a spool field is a byte slice, not a String).
    package static func hasConversionWindows(versionText text: UnsafeRawBufferPointer) -> Bool {
        for version in versionsWithConversionWindows where version.count == text.count {
            var index = 0
            while index < text.count, version[index] == text[index] { index += 1 }
            if index == text.count { return true }
        }
        return false
    }

    /// The texts of the versions with conversion windows (`["4.0"]`), for byte-level checks.
    package static let versionsWithConversionWindows: [[UInt8]] = allCases.filter(\.hasConversionWindows).map {
        Array($0.rawValue.utf8)
    }

    package static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
