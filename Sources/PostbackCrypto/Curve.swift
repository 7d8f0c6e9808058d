/// The NIST prime curves Apple signs postbacks with.
///
/// - P-192 (secp192r1 / prime192v1) for SKAdNetwork 1.0 and 2.0.
/// - P-256 (secp256r1 / prime256v1) for SKAdNetwork 2.1 and later and for AdAttributionKit (ES256).
package enum Curve: String, Sendable, CaseIterable {
    case p192 = "P-192"
    case p256 = "P-256"

    /// Size of one coordinate, of `r` and of `s`, in bytes.
    package var coordinateByteCount: Int {
        switch self {
        case .p192: return 24
        case .p256: return 32
        }
    }

    /// The name OpenSSL's EC key generation takes.
    var openSSLGroupName: String {
        switch self {
        case .p192: return "prime192v1"
        case .p256: return "prime256v1"
        }
    }

    /// By OpenSSL's name for the key's group: the curve itself, not only its size, so that another
    /// 256-bit curve (secp256k1, brainpoolP256r1) is never taken for P-256.
    init?(openSSLGroupName name: String) {
        guard let curve = Curve.allCases.first(where: { $0.openSSLGroupName == name }) else { return nil }
        self = curve
    }
}
