import Basics
internal import COpenSSL

/// The differential test of the P-256 table path (`P256KeyTable`) against EVP, shared by
/// P256KeyTableTests (small counts) and the `ecdsa-differential` tool (millions, scripts/ecdsa-differential).
///
/// Valid signatures are built from the ECDSA equation itself, so every edge case can be aimed at:
/// with the private key d, any nonce k and any s, the digest e = s·k − r·d makes (r, s) valid; for a
/// key known only as a point Q, any u1, u2 give R = u1·G + u2·Q, r = x(R) mod n, s = r/u2, e = u1·s.
/// Each valid signature is then mutated (bit flips in r, s, the digest and the DER bytes; r or s
/// set to 0, n, n ± 1, n − 1; swapped) and every case is judged by both paths, and by the table path
/// inside a batch's shared inversion. (`ECDSABatch.areValidSignatures` is compared in the unit tests.)
package final class ECDSADifferential {
    /// One signature check as both paths saw it.
    package struct Disagreement: CustomStringConvertible {
        package let kind: String
        package let keyDER: [UInt8]
        package let signature: [UInt8]
        package let digest: [UInt8]
        package let table: Bool
        package let batch: Bool
        package let evp: Bool

        package var description: String {
            "\(kind): table \(table), batch \(batch), EVP \(evp); key \(hexString(keyDER)) signature \(hexString(signature)) digest \(hexString(digest))"
        }
    }

    package struct Report {
        package var checked = 0
        package var valid = 0
        /// Cases by kind, to show each edge case was reached.
        package var kinds: [String: Int] = [:]
        /// The kinds of which at least one case was valid (by EVP).
        package var validKinds: Set<String> = []
        package var disagreements: [Disagreement] = []
    }

    /// The keys, built once and shared by all generators (one per thread).
    package final class Keys: @unchecked Sendable {
        // @unchecked Sendable: immutable after init; the secrets are only read.
        /// Keys with a known private key: random ones and d = 1, 2, n − 1 (Q = G, 2G, −G).
        let signing: [(key: ECDSAPublicKey, secret: [UInt8])]
        /// Keys whose x coordinate is tiny (0, 1, 2, ...: the first few that lie on the curve).
        let smallCoordinate: [ECDSAPublicKey]
        /// Keys made so that a valid signature's R has x(R) ≥ n: r = x(R) − n, the "r + n" branch.
        let wrapping: [(key: ECDSAPublicKey, r: [UInt8], s: [UInt8], digest: [UInt8])]

        package init(randomKeys: Int = 6, wrappingKeys: Int = 8, smallCoordinateKeys: Int = 4) throws {
            let math = Math()
            var signing: [(ECDSAPublicKey, [UInt8])] = []
            for index in 0..<(randomKeys + 3) {
                let secret = math.bignum()
                switch index {
                case 0: BN_set_word(secret, 1)
                case 1: BN_set_word(secret, 2)
                case 2: BN_sub(secret, math.order, BN_value_one())
                default: math.randomScalar(secret)
                }
                let point = math.point()
                EC_POINT_mul(math.group, point, secret, nil, nil, math.context)
                signing.append((try math.publicKey(point), math.bytes(secret)))
            }
            self.signing = signing

            var small: [ECDSAPublicKey] = []
            var x: UInt = 0
            while small.count < smallCoordinateKeys {
                let point = math.point()
                let coordinate = math.bignum()
                BN_set_word(coordinate, x)
                if EC_POINT_set_compressed_coordinates(math.group, point, coordinate, Int32(x & 1), math.context) == 1 {
                    small.append(try math.publicKey(point))
                }
                ERR_clear_error()
                x += 1
            }
            self.smallCoordinate = small

            // R with p > x(R) ≥ n is found by trying x = n, n + 1, ...; then Q = u2⁻¹·(R − u1·G).
            var wrapping: [(ECDSAPublicKey, [UInt8], [UInt8], [UInt8])] = []
            let candidate = math.bignum()
            BN_copy(candidate, math.order)
            while wrapping.count < wrappingKeys {
                let target = math.point()
                BN_add_word(candidate, 1)
                guard
                    EC_POINT_set_compressed_coordinates(math.group, target, candidate, Int32(wrapping.count & 1), math.context)
                        == 1
                else {
                    ERR_clear_error()
                    continue
                }
                let u1 = math.bignum()
                let u2 = math.bignum()
                let inverse = math.bignum()
                let r = math.bignum()
                let s = math.bignum()
                let e = math.bignum()
                math.randomScalar(u1)
                math.randomScalar(u2)
                let key = math.point()
                let fromG = math.point()
                EC_POINT_mul(math.group, fromG, u1, nil, nil, math.context)
                EC_POINT_invert(math.group, fromG, math.context)
                EC_POINT_add(math.group, key, target, fromG, math.context)
                BN_mod_inverse(inverse, u2, math.order, math.context)
                EC_POINT_mul(math.group, key, nil, key, inverse, math.context)
                BN_sub(r, candidate, math.order)
                BN_mod_mul(s, r, inverse, math.order, math.context)
                BN_mod_mul(e, u1, s, math.order, math.context)
                wrapping.append((try math.publicKey(key), math.bytes(r), math.bytes(s), math.bytes(e)))
            }
            self.wrapping = wrapping
        }

        /// Every key, for checking that each one got its table.
        package var all: [ECDSAPublicKey] { signing.map(\.key) + smallCoordinate + wrapping.map(\.key) }
    }

    private let keys: Keys
    private let math = Math()
    private var report = Report()
    private var pending:
        [(kind: String, key: ECDSAPublicKey, signature: [UInt8], digest: SHA256.Digest, verdict: Bool, evp: Bool)] = []
    private var round = 0

    package init(keys: Keys) { self.keys = keys }

    /// Generates and checks at least `count` cases; returns what was seen.
    package func run(count: Int) -> Report {
        while report.checked + pending.count < count {
            generateRound()
            if pending.count >= 64 { checkBatch() }
        }
        checkBatch()
        return report
    }

    // MARK: Generation

    private func generateRound() {
        round += 1
        math.releaseTemporaries()
        let (key, secret) = keys.signing[round % keys.signing.count]
        let d = math.bignum(bytes: secret)
        let k = math.bignum()
        let r = math.bignum()
        let s = math.bignum()
        let e = math.bignum()
        let t = math.bignum()
        math.randomScalar(k)
        math.xOfMultiple(of: k, into: r)  // r = x(k·G) mod n
        guard !BN_is_zero(r).isTrue else { return }

        // The base: a random digest signed the usual way, s = k⁻¹·(e + r·d).
        math.randomBytes(e, count: 32)
        BN_mod_mul(t, r, d, math.order, math.context)
        BN_mod_add(t, t, e, math.order, math.context)
        BN_mod_inverse(s, k, math.order, math.context)
        BN_mod_mul(s, s, t, math.order, math.context)
        guard !BN_is_zero(s).isTrue else { return }
        mutations(of: "signed", key: key, r: r, s: s, e: e)

        // An aimed case each round, in turn: valid unless its name says otherwise.
        switch round % 7 {
        case 0:  // s = n − 1 and s = 1: e = s·k − r·d.
            BN_sub(s, math.order, BN_value_one())
            math.digest(forNonce: k, r: r, s: s, secret: d, into: e)
            mutations(of: "s=n-1", key: key, r: r, s: s, e: e)
            BN_set_word(s, 1)
            math.digest(forNonce: k, r: r, s: s, secret: d, into: e)
            mutations(of: "s=1", key: key, r: r, s: s, e: e)
        case 1:  // u1·G = u2·Q, so R = 2·u2·Q (EC_POINT_add doubles): e = r·d, s = 2·r·d/k.
            BN_mod_mul(e, r, d, math.order, math.context)
            BN_mod_lshift1(t, e, math.order, math.context)
            BN_mod_inverse(s, k, math.order, math.context)
            BN_mod_mul(s, s, t, math.order, math.context)
            mutations(of: "u1G=u2Q", key: key, r: r, s: s, e: e)
        case 2:  // R = infinity: e = −r·d, any s. Never valid.
            BN_mod_mul(e, r, d, math.order, math.context)
            BN_sub(e, math.order, e)
            math.randomScalar(s)
            add("infinity (invalid)", key: key, r: r, s: s, e: e)
        case 3:  // R = Q and R = −Q: r = x(Q) mod n, e = d·(s − r) or −d·(s + r).
            math.xOfMultiple(of: d, into: r)
            math.randomScalar(s)
            BN_mod_sub(t, s, r, math.order, math.context)
            BN_mod_mul(e, t, d, math.order, math.context)
            mutations(of: "R=Q", key: key, r: r, s: s, e: e)
            BN_mod_add(t, s, r, math.order, math.context)
            BN_mod_mul(e, t, d, math.order, math.context)
            BN_sub(e, math.order, e)
            mutations(of: "R=-Q", key: key, r: r, s: s, e: e)
        case 4:  // u1 = 0: digest 0 and digest n (reduced to 0); s = r·d/k. Then a digest above n.
            BN_zero_ex(e)
            BN_mod_mul(t, r, d, math.order, math.context)
            BN_mod_inverse(s, k, math.order, math.context)
            BN_mod_mul(s, s, t, math.order, math.context)
            mutations(of: "e=0", key: key, r: r, s: s, e: e)
            BN_copy(e, math.order)
            add("e=n", key: key, r: r, s: s, e: e)
            // A digest above n (probability 2^-32 at random), valid for its reduction t: e = n + t with
            // t < 2^216, below 2^256 − n (≈ 2^224), and s = k⁻¹·(t + r·d).
            let reduced = math.bignum()
            math.randomBytes(reduced, count: 27)
            BN_add(e, math.order, reduced)
            BN_mod_mul(t, r, d, math.order, math.context)
            BN_mod_add(t, t, reduced, math.order, math.context)
            BN_mod_inverse(s, k, math.order, math.context)
            BN_mod_mul(s, s, t, math.order, math.context)
            mutations(of: "e>n", key: key, r: r, s: s, e: e)
        case 5:  // A key whose x coordinate is tiny (d unknown): R = u1·G + u2·Q.
            let small = keys.smallCoordinate[(round / 7) % keys.smallCoordinate.count]
            math.randomScalar(k)  // u1
            math.randomScalar(t)  // u2
            guard math.signatureFromPoint(key: small, u1: k, u2: t, r: r, s: s, e: e) else { return }
            mutations(of: "small-x key", key: small, r: r, s: s, e: e)
        default:  // x(R) ≥ n: r = x(R) − n is valid; r = x(R) itself is out of range.
            let wrap = keys.wrapping[(round / 7) % keys.wrapping.count]
            math.set(r, bytes: wrap.r)
            math.set(s, bytes: wrap.s)
            math.set(e, bytes: wrap.digest)
            mutations(of: "x(R)>=n", key: wrap.key, r: r, s: s, e: e)
            BN_add(t, r, math.order)
            add("r=x(R)>=n (invalid)", key: wrap.key, r: t, s: s, e: e)
        }
    }

    /// A valid (r, s, e) and its variants: high-S, bit flips, out-of-range values, swapped, DER damage.
    private func mutations(of kind: String, key: ECDSAPublicKey, r: OpaquePointer, s: OpaquePointer, e: OpaquePointer) {
        add(kind, key: key, r: r, s: s, e: e)
        let t = math.bignum()
        let u = math.bignum()
        BN_sub(t, math.order, s)
        add(kind + " high-S", key: key, r: r, s: t, e: e)
        if BN_num_bits(e) <= 256 {
            BN_add(t, e, math.order)
            if BN_num_bits(t) <= 256 { add(kind + " e+n", key: key, r: r, s: s, e: t) }
        }
        for (name, value) in [("r", r), ("s", s), ("digest", e)] {
            BN_copy(t, value)
            flipBit(t, Int32.random(in: 0..<256))
            add(kind + " flip-\(name)", key: key, r: name == "r" ? t : r, s: name == "s" ? t : s, e: name == "digest" ? t : e)
        }
        // One out-of-range or swapped variant per call, in turn.
        let which = report.checked + pending.count
        switch which % 9 {
        case 0:
            BN_zero_ex(t)
            add(kind + " r=0", key: key, r: t, s: s, e: e)
        case 1:
            BN_zero_ex(t)
            add(kind + " s=0", key: key, r: r, s: t, e: e)
        case 2: add(kind + " r=n", key: key, r: math.order, s: s, e: e)
        case 3: add(kind + " s=n", key: key, r: r, s: math.order, e: e)
        case 4:
            BN_add(t, r, math.order)
            add(kind + " r+n", key: key, r: t, s: s, e: e)
        case 5:
            BN_add(t, s, math.order)
            add(kind + " s+n", key: key, r: r, s: t, e: e)
        case 6:
            BN_sub(t, math.order, BN_value_one())
            add(kind + " r=n-1", key: key, r: t, s: s, e: e)
        case 7: add(kind + " swapped", key: key, r: s, s: r, e: e)
        default:
            BN_copy(u, r)
            BN_set_negative(u, 1)
            add(kind + " r<0", key: key, r: u, s: s, e: e)
        }
        var der = math.der(r: r, s: s)
        let bit = Int.random(in: 0..<(der.count * 8))
        der[bit / 8] ^= UInt8(1 << (bit % 8))
        add(kind + " flip-der", key: key, signature: der, digest: math.digest(e))
    }

    private func flipBit(_ value: OpaquePointer, _ bit: Int32) {
        if BN_is_bit_set(value, bit) == 1 { BN_clear_bit(value, bit) } else { BN_set_bit(value, bit) }
    }

    private func add(_ kind: String, key: ECDSAPublicKey, r: OpaquePointer, s: OpaquePointer, e: OpaquePointer) {
        add(kind, key: key, signature: math.der(r: r, s: s), digest: math.digest(e))
    }

    private func add(_ kind: String, key: ECDSAPublicKey, signature: [UInt8], digest: SHA256.Digest) {
        let verdict = signature.withUnsafeBytes { key.isValidSignature(derSignature: $0, digest: digest) }
        let evp = signature.withUnsafeBytes { key.isValidSignatureByEVP(derSignature: $0, digest: digest) }
        pending.append((kind, key, signature, digest, verdict, evp))
    }

    /// Runs the pending cases through the batch path `postback verify` uses (one shared inversion,
    /// every signature checked on its own inside it), and records all three verdicts.
    private func checkBatch() {
        let batch = ECDSABatch.withSharedInversion(of: pending.map(\.signature)) {
            pending.map { check in
                check.signature.withUnsafeBytes { check.key.isValidSignature(derSignature: $0, digest: check.digest) }
            }
        }
        for (index, check) in pending.enumerated() {
            report.checked += 1
            report.kinds[check.kind, default: 0] += 1
            if check.evp {
                report.valid += 1
                report.validKinds.insert(check.kind)
            }
            if check.verdict != check.evp || batch[index] != check.evp {
                report.disagreements.append(
                    Disagreement(
                        kind: check.kind, keyDER: check.key.derRepresentation, signature: check.signature,
                        digest: check.digest.bytes, table: check.verdict, batch: batch[index], evp: check.evp))
            }
        }
        pending.removeAll(keepingCapacity: true)
    }
}

/// P-256 scalar and point arithmetic for generating test signatures (OpenSSL's, like the verifier's).
private final class Math {
    let group: OpaquePointer
    let order: OpaquePointer
    let context: OpaquePointer
    private var owned: [OpaquePointer] = []
    private var points: [OpaquePointer] = []

    init() {
        group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
        order = EC_GROUP_get0_order(group)
        context = BN_CTX_new()
    }

    deinit {
        releaseTemporaries()
        BN_CTX_free(context)
        EC_GROUP_free(group)
    }

    /// A number freed by the next `releaseTemporaries` (or with this object).
    func bignum() -> OpaquePointer {
        let value = BN_new()!
        owned.append(value)
        return value
    }

    /// Frees every number and point made so far: the generator calls it at the start of each round.
    func releaseTemporaries() {
        owned.forEach { BN_free($0) }
        points.forEach { EC_POINT_free($0) }
        owned.removeAll(keepingCapacity: true)
        points.removeAll(keepingCapacity: true)
    }

    func bignum(bytes: [UInt8]) -> OpaquePointer {
        let value = bignum()
        set(value, bytes: bytes)
        return value
    }

    func set(_ value: OpaquePointer, bytes: [UInt8]) { BN_bin2bn(bytes, Int32(bytes.count), value) }

    func point() -> OpaquePointer {
        let value = EC_POINT_new(group)!
        points.append(value)
        return value
    }

    func randomScalar(_ value: OpaquePointer) {
        repeat { BN_priv_rand_range(value, order) } while BN_is_zero(value).isTrue
    }

    func randomBytes(_ value: OpaquePointer, count: Int) {
        var bytes = [UInt8](repeating: 0, count: count)
        RAND_bytes(&bytes, Int32(count))
        set(value, bytes: bytes)
    }

    func bytes(_ value: OpaquePointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int((BN_num_bits(value) + 7) / 8))
        BN_bn2bin(value, &out)
        return out
    }

    /// x(k·G) mod n.
    func xOfMultiple(of k: OpaquePointer, into r: OpaquePointer) {
        let p = point()
        EC_POINT_mul(group, p, k, nil, nil, context)
        EC_POINT_get_affine_coordinates(group, p, r, nil, context)
        BN_nnmod(r, r, order, context)
    }

    /// e = s·k − r·d mod n: the digest for which (r, s) is a valid signature with nonce k.
    func digest(forNonce k: OpaquePointer, r: OpaquePointer, s: OpaquePointer, secret d: OpaquePointer, into e: OpaquePointer) {
        let t = bignum()
        BN_mod_mul(e, s, k, order, context)
        BN_mod_mul(t, r, d, order, context)
        BN_mod_sub(e, e, t, order, context)
    }

    /// R = u1·G + u2·Q, r = x(R) mod n, s = r/u2, e = u1·s: valid for Q without its private key.
    func signatureFromPoint(
        key: ECDSAPublicKey, u1: OpaquePointer, u2: OpaquePointer, r: OpaquePointer, s: OpaquePointer, e: OpaquePointer
    ) -> Bool {
        let q = point()
        let sum = point()
        let octets = Array(key.derRepresentation.suffix(65))
        guard EC_POINT_oct2point(group, q, octets, octets.count, context) == 1,
            EC_POINT_mul(group, sum, u1, q, u2, context) == 1,
            EC_POINT_get_affine_coordinates(group, sum, r, nil, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        BN_nnmod(r, r, order, context)
        let inverse = bignum()
        BN_mod_inverse(inverse, u2, order, context)
        BN_mod_mul(s, r, inverse, order, context)
        BN_mod_mul(e, u1, s, order, context)
        return !BN_is_zero(r).isTrue
    }

    /// DER `ECDSA-Sig-Value` of any r and s, even out of range or negative.
    func der(r: OpaquePointer, s: OpaquePointer) -> [UInt8] {
        let signature = ECDSA_SIG_new()
        defer { ECDSA_SIG_free(signature) }
        ECDSA_SIG_set0(signature, BN_dup(r), BN_dup(s))
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(signature, &out)
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(max(length, 0))))
    }

    /// The 32-byte digest whose value is e (which must be below 2^256).
    func digest(_ e: OpaquePointer) -> SHA256.Digest {
        var digest = SHA256.Digest()
        Swift.withUnsafeMutableBytes(of: &digest.storage) { out in
            _ = BN_bn2binpad(e, out.baseAddress?.assumingMemoryBound(to: UInt8.self), 32)
        }
        return digest
    }

    /// The uncompressed point as a DER SubjectPublicKeyInfo, parsed (and checked) like any key.
    func publicKey(_ point: OpaquePointer) throws -> ECDSAPublicKey {
        var octets = [UInt8](repeating: 0, count: 65)
        guard EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &octets, 65, context) == 65 else {
            throw CryptoError(.library, "encoding a test key")
        }
        return try ECDSAPublicKey(derRepresentation: p256SubjectPublicKeyInfoPrefix + octets)
    }
}

/// A P-256 SubjectPublicKeyInfo up to its uncompressed point: SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING.
private let p256SubjectPublicKeyInfoPrefix: [UInt8] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A,
    0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
]

private func hexString(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

extension Int32 {
    fileprivate var isTrue: Bool { self != 0 }
}
