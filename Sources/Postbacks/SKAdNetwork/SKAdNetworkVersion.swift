public import PostbackCrypto

/// The SKAdNetwork versions with a documented signature layout.
///
/// Dispatch (spec §3.5): no `version` key means 1.0; `"2.0"` uses the P-192 key; 2.1 and later use
/// P-256. Any other string is unsupported rather than guessed at. Versions are compared as strings,
/// never parsed as numbers (`4.0` would become `4`, and the signature covers the text).
public enum SKAdNetworkVersion: String, Sendable, CaseIterable, Comparable, Codable {
    case v1_0 = "1.0"
    case v2_0 = "2.0"
    case v2_1 = "2.1"
    case v2_2 = "2.2"
    case v3_0 = "3.0"
    case v4_0 = "4.0"

    /// Apple signs 1.0 and 2.0 with a P-192 key, 2.1 onwards with P-256.
    public var curve: Curve { self <= .v2_0 ? .p192 : .p256 }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
