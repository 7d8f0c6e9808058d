internal import COpenSSL
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// An ECDSA public key on P-192 or P-256, loaded once and shared between threads.
///
/// Verification hashes the message with SHA-256 and checks an ECDSA signature over the digest. High-S
/// signatures are accepted: Apple's own postbacks often have s > n/2, and ECDSA itself accepts both.
///
/// A P-256 key verifies through a table of its precomputed multiples (`P256KeyTable`, about twice as
/// fast), built on its first verification; EVP is the reference, the fallback when no table can be
/// built, and the only path when `POSTBACK_ECDSA_PATH=evp` (see `ECDSAVerificationPath`).
package final class ECDSAPublicKey: @unchecked Sendable {
    // @unchecked Sendable: `key` is never mutated after init, and OpenSSL allows an EVP_PKEY to be used
    // from several threads at once for read-only operations. The only per-call mutable OpenSSL state,
    // the EVP_PKEY_CTX, is taken from `verifyContexts` so that no two threads share one.
    private let key: EVPKey
    private let verifyContexts: ContextPool<OpaquePointer>
    /// The P-256 table, once built (or known not to be available).
    private let table = Locked<TableState>(.notBuilt)

    private enum TableState {
        case notBuilt
        case built(P256KeyTable)
        case unavailable
    }

    /// The curve the key lies on.
    package let curve: Curve
    /// The DER SubjectPublicKeyInfo, exactly as given.
    package let derRepresentation: [UInt8]

    /// Parses a DER SubjectPublicKeyInfo. Trailing bytes, non-EC keys and curves other than P-192 and
    /// P-256 are rejected, and the point must pass OpenSSL's public key check (on the curve).
    package init(derRepresentation der: [UInt8]) throws {
        let parsed = der.withUnsafeBufferPointer { buffer -> EVPKey? in
            guard let start = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = start
            guard let pkey = d2i_PUBKEY(nil, &cursor, buffer.count).map(EVPKey.init(taking:)) else { return nil }
            // d2i_* stops after the first complete object; anything after it is not part of the key.
            guard let end = cursor, start.distance(to: end) == buffer.count else { return nil }
            return pkey
        }
        guard let key = parsed else {
            throw CryptoError(.invalidKey, "parsing DER SubjectPublicKeyInfo (\(der.count) bytes)")
        }
        self.curve = try Self.checkedCurve(of: key.pointer, public: true)
        self.key = key
        self.derRepresentation = der
        self.verifyContexts = Self.verifyPool(for: key)
    }

    /// Parses a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo).
    package convenience init(pemRepresentation pem: String) throws {
        let key = try EVPKey(publicKeyPEM: pem)
        try self.init(owning: key, curve: try Self.checkedCurve(of: key.pointer, public: true))
    }

    /// Takes an EVP_PKEY that is already known to be a checked EC key. If this throws, `key` is freed
    /// with its last holder, like any other.
    /// - Parameter encode: makes the DER SubjectPublicKeyInfo (tests make it fail).
    init(
        owning key: EVPKey, curve: Curve,
        encode: (EVPKey) throws -> [UInt8] = ECDSAPublicKey.subjectPublicKeyInfo
    ) throws {
        self.derRepresentation = try encode(key)
        self.key = key
        self.curve = curve
        self.verifyContexts = Self.verifyPool(for: key)
    }

    /// i2d_PUBKEY: the key's DER SubjectPublicKeyInfo.
    static func subjectPublicKeyInfo(of key: EVPKey) throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(key.pointer, &out)
        guard length > 0, let bytes = out else {
            throw CryptoError(.library, "encoding SubjectPublicKeyInfo")
        }
        defer { CRYPTO_free(bytes, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }

    private static func verifyPool(for key: EVPKey) -> ContextPool<OpaquePointer> {
        ContextPool {
            guard let context = EVP_PKEY_CTX_new(key.pointer, nil) else { return nil }
            guard EVP_PKEY_verify_init(context) == 1 else {
                EVP_PKEY_CTX_free(context)
                ERR_clear_error()
                return nil
            }
            return context
        }
    }

    /// The key as a PEM `PUBLIC KEY` block.
    package var pemRepresentation: String {
        PEM.write { bio in PEM_write_bio_PUBKEY(bio, key.pointer) }
    }

    /// Checks a DER-encoded `ECDSA-Sig-Value` (SKAdNetwork's `attribution-signature`) over `message`.
    ///
    /// OpenSSL re-encodes the parsed signature and compares it with the input, so BER forms, padded
    /// integers and trailing garbage fail here without any help.
    package func isValidSignature(derSignature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        let digest = SHA256.hash(message)
        return withContiguousBytes(derSignature) { signature in
            isValidSignature(derSignature: signature, digest: digest)
        }
    }

    /// Checks a raw `r ‖ s` signature (IEEE P1363, the JWS ES256 form) over `message`.
    ///
    /// The raw form must be exactly twice the coordinate size (64 bytes for P-256); any other length is
    /// invalid rather than "split in half", which is what lets lax converters accept truncated signatures.
    package func isValidSignature(rawSignature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        guard let der = ECDSASignature.derFromRaw(Array(rawSignature), curve: curve) else { return false }
        return isValidSignature(derSignature: der, for: message)
    }

    /// Checks a DER signature over a SHA-256 digest that the caller already computed.
    package func isValidSignature(derSignature: UnsafeRawBufferPointer, digest: SHA256.Digest) -> Bool {
        if let table = precomputedTable {
            return table.isValidSignature(derSignature: derSignature, digest: digest)
        }
        return isValidSignatureByEVP(derSignature: derSignature, digest: digest)
    }

    /// Whether this key verifies through a precomputed table (building it on first use). False for
    /// P-192, when the table could not be built, and when the EVP path is forced.
    package var usesPrecomputedTable: Bool { precomputedTable != nil }

    /// The table for a P-256 key, built on first use: it costs about 30 ms and 150 KB, which a key that
    /// never verifies (or verifies once) should not pay at start-up.
    var precomputedTable: P256KeyTable? {
        guard curve == .p256, ECDSAVerificationPath.configured == .precomputedTable else { return nil }
        return table.withLock { state in
            if case .notBuilt = state {
                state = P256KeyTable(publicKey: key.pointer).map(TableState.built) ?? .unavailable
            }
            if case .built(let table) = state { return table }
            return nil
        }
    }

    /// The reference path: OpenSSL's EVP_PKEY_verify, whatever the configured path.
    package func isValidSignatureByEVP(derSignature: UnsafeRawBufferPointer, digest: SHA256.Digest) -> Bool {
        guard derSignature.count > 0 else { return false }
        let result = verifyContexts.withContext { context in
            digest.withUnsafeBytes { digestBytes in
                EVP_PKEY_verify(
                    context,
                    derSignature.baseAddress?.assumingMemoryBound(to: UInt8.self), derSignature.count,
                    digestBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), digestBytes.count)
            }
        }
        // 1 is valid; 0 is invalid; a negative value is an error (bad DER, for one). Only 1 counts.
        guard result == 1 else {
            ERR_clear_error()
            return false
        }
        return true
    }

    /// The curve of an EC key, after OpenSSL's consistency check of the public (or private) part.
    static func checkedCurve(of key: OpaquePointer, public: Bool) throws -> Curve {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            throw CryptoError(.invalidKey, "key is not an elliptic-curve key", drainingErrorQueue: false)
        }
        var name = [CChar](repeating: 0, count: 64)
        var nameLength = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &nameLength) == 1 else {
            throw CryptoError(
                .invalidKey, "the key names no curve (explicit curve parameters are not accepted; only P-192 and P-256)")
        }
        let groupName = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let curve = Curve(openSSLGroupName: groupName) else {
            throw CryptoError(
                .unsupportedCurve, "unsupported curve \(groupName) (only P-192 and P-256)", drainingErrorQueue: false)
        }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError(.library, "allocating key context") }
        defer { EVP_PKEY_CTX_free(context) }
        let checked = `public` ? EVP_PKEY_public_check(context) : EVP_PKEY_check(context)
        guard checked == 1 else { throw CryptoError(.invalidKey, "key fails OpenSSL's EC key check (point not on curve?)") }
        return curve
    }
}

/// How P-256 signatures are checked, chosen once per process by `POSTBACK_ECDSA_PATH`.
package enum ECDSAVerificationPath: String, Sendable {
    /// Trusted P-256 keys use their precomputed tables (the default).
    case precomputedTable = "table"
    /// Every key uses OpenSSL's EVP_PKEY_verify: the reference, for comparison (`POSTBACK_ECDSA_PATH=evp`).
    case evp

    /// The path for this process: `evp` if POSTBACK_ECDSA_PATH is "evp", else the tables.
    package static let configured: ECDSAVerificationPath =
        getenv("POSTBACK_ECDSA_PATH").map { String(cString: $0) == "evp" } == true ? .evp : .precomputedTable
}

/// Runs `body` over the bytes of `collection`, without copying when they are already contiguous.
func withContiguousBytes<C: Collection<UInt8>, R>(_ collection: C, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let result = collection.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return Array(collection).withUnsafeBytes(body)
}
