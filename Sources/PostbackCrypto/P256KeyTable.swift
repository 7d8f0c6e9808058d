internal import COpenSSL

/// ECDSA P-256 verification against one fixed public key Q, with a precomputed table of Q's
/// multiples, on OpenSSL's own arithmetic (no field arithmetic of ours).
///
/// `ECDSA_do_verify` computes R = u1·G + u2·Q with a table only for the generator G; for an unknown Q
/// it must compute u2·Q from scratch, most of the cost of a verify. The keys this program trusts are
/// fixed at start-up, so each gets a second `EC_GROUP` whose generator is Q, and OpenSSL's
/// `EC_GROUP_precompute_mult` (the same comb table nistz256 ships for G) makes u2·Q as cheap as u1·G.
/// The result must agree with EVP on every input (WycheproofTests, P256KeyTableTests, the
/// differential run in scripts/ecdsa-differential, the FuzzSignature fuzzer); the EVP path in
/// `ECDSAPublicKey` stays the reference and the fallback.
///
/// Immutable after init; the per-call OpenSSL state (a BN_CTX) comes from a pool, so one table is
/// shared by all threads.
final class P256KeyTable: @unchecked Sendable {
    // @unchecked Sendable: the groups and numbers below are never written after init, and OpenSSL's
    // point multiplication only reads a group and its table.
    /// The standard P-256 group: OpenSSL's built-in table for G.
    private let curveGroup: OpaquePointer
    /// P-256 with Q as its generator, carrying the table of Q's multiples.
    private let keyGroup: OpaquePointer
    private let order: OpaquePointer
    private let prime: OpaquePointer
    /// p − n: an x coordinate equal to r + n exists only for r below it.
    private let primeMinusOrder: OpaquePointer
    /// The Montgomery contexts for n and p (the same for every key).
    private let montgomery: P256Montgomery
    /// P-256's order n, shared by every key (never freed). nonisolated(unsafe): only ever read.
    nonisolated(unsafe) static let order: OpaquePointer = {
        let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
        defer { EC_GROUP_free(group) }
        return BN_dup(EC_GROUP_get0_order(group))!
    }()
    /// Per-call OpenSSL state, reused: creating and freeing the two points cost 4 K instructions a verify.
    private let scratch: ContextPool<VerificationScratch>

    /// Builds the table for a checked P-256 key (an EVP_PKEY). Nil if OpenSSL cannot build it or the
    /// table fails its self-check, in which case the caller stays on EVP.
    init?(publicKey: OpaquePointer) {
        guard let montgomery = P256Montgomery.shared, let curveGroup = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            ERR_clear_error()
            return nil
        }
        guard let keyGroup = Self.keyGroup(curveGroup: curveGroup, publicKey: publicKey),
            let order = BN_dup(EC_GROUP_get0_order(curveGroup)), let prime = BN_new(), let primeMinusOrder = BN_new()
        else {
            EC_GROUP_free(curveGroup)
            ERR_clear_error()
            return nil
        }
        self.montgomery = montgomery
        self.curveGroup = curveGroup
        // nonisolated(unsafe): the pool's closure only passes the group to EC_POINT_new, which reads it.
        nonisolated(unsafe) let pointGroup = curveGroup
        // A VerificationScratch frees its OpenSSL objects when the pool drops it.
        self.scratch = ContextPool(make: { VerificationScratch(curveGroup: pointGroup) }, destroy: { _ in })
        self.keyGroup = keyGroup
        self.order = order
        self.prime = prime
        self.primeMinusOrder = primeMinusOrder
        guard EC_GROUP_get_curve(curveGroup, prime, nil, nil, nil) == 1,
            BN_sub(primeMinusOrder, prime, order) == 1,
            selfCheck()
        else {
            ERR_clear_error()
            return nil
        }
    }

    deinit {
        EC_GROUP_free(curveGroup)
        EC_GROUP_free(keyGroup)
        BN_free(order)
        BN_free(prime)
        BN_free(primeMinusOrder)
    }

    /// A copy of P-256 whose generator is the key's point, with its multiples precomputed.
    private static func keyGroup(curveGroup: OpaquePointer, publicKey: OpaquePointer) -> OpaquePointer? {
        var encoded = [UInt8](repeating: 0, count: 133)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(publicKey, OSSL_PKEY_PARAM_PUB_KEY, &encoded, encoded.count, &length) == 1,
            let point = EC_POINT_new(curveGroup)
        else { return nil }
        defer { EC_POINT_free(point) }
        guard EC_POINT_oct2point(curveGroup, point, encoded, length, nil) == 1,
            EC_POINT_is_at_infinity(curveGroup, point) == 0, EC_POINT_is_on_curve(curveGroup, point, nil) == 1,
            let group = EC_GROUP_dup(curveGroup)
        else { return nil }
        guard EC_GROUP_set_generator(group, point, EC_GROUP_get0_order(curveGroup), EC_GROUP_get0_cofactor(curveGroup)) == 1,
            postback_EC_GROUP_precompute_mult(group, nil) == 1
        else {
            EC_GROUP_free(group)
            return nil
        }
        return group
    }

    /// u·Q through the table must equal u·Q computed the generic way (no table), for a fixed u.
    private func selfCheck() -> Bool {
        guard let context = BN_CTX_new() else { return false }
        defer { BN_CTX_free(context) }
        guard let scalar = BN_new(), let viaTable = EC_POINT_new(curveGroup), let generic = EC_POINT_new(curveGroup) else {
            return false
        }
        defer {
            BN_free(scalar)
            EC_POINT_free(viaTable)
            EC_POINT_free(generic)
        }
        let key = EC_GROUP_get0_generator(keyGroup)
        return BN_set_word(scalar, 0x5DEE_CE66_D1CE_4E5B) == 1
            && BN_lshift(scalar, scalar, 190) == 1 && BN_add_word(scalar, 0x2545_F491) == 1
            && EC_POINT_mul(keyGroup, viaTable, scalar, nil, nil, context) == 1
            && EC_POINT_mul(curveGroup, generic, nil, key, scalar, context) == 1
            && EC_POINT_cmp(curveGroup, viaTable, generic, context) == 0
    }

    /// Checks a DER signature over a SHA-256 digest, exactly as OpenSSL's ECDSA_verify judges it.
    func isValidSignature(derSignature: UnsafeRawBufferPointer, digest: SHA256.Digest) -> Bool {
        // Inside ECDSABatch.withSharedInversion: already parsed (as strictly), s already inverted.
        if let shared = SharedInversion.current?.entry(for: derSignature) {
            return withScratch { scratch in
                verify(r: shared.r, inverseOfSInMontgomeryForm: shared.inverse, digest: digest, scratch: scratch)
            }
        }
        return withParsedSignature(derSignature) { r, s in
            withScratch { scratch in
                let context = scratch.context
                guard let inverse = BN_CTX_get(context),
                    montgomery.setInverseInMontgomeryForm(inverse, of: s, context: context)
                else { return false }
                return verify(r: r, inverseOfSInMontgomeryForm: inverse, digest: digest, scratch: scratch)
            }
        }
    }

    /// Parses a DER `ECDSA-Sig-Value` as strictly as OpenSSL's ECDSA_verify (no BER, no padding, no
    /// trailing bytes) and checks 0 < r, s < n. Runs `body` with r and s, or returns false.
    func withParsedSignature(_ der: UnsafeRawBufferPointer, _ body: (_ r: OpaquePointer, _ s: OpaquePointer) -> Bool) -> Bool {
        guard let signature = Self.parsedSignature(der) else { return false }
        defer { ECDSA_SIG_free(signature) }
        return body(ECDSA_SIG_get0_r(signature), ECDSA_SIG_get0_s(signature))
    }

    /// The ECDSA_SIG (the caller frees it) of a strictly DER-encoded signature with 0 < r, s < n, or nil.
    ///
    /// Accepts exactly what OpenSSL's ECDSA_verify accepts (d2i, then the re-encoding must equal the
    /// input) once the range check has run: for 0 < r, s < n that is the one canonical DER encoding,
    /// SEQUENCE { INTEGER r, INTEGER s } with short-form lengths and minimal, positive integers of at
    /// most 33 bytes, and nothing after it. Read directly rather than through d2i and two i2d calls,
    /// which cost as much as everything else in a verify but the point multiplications; the
    /// Wycheproof encoding cases, the differential's DER bit flips and FuzzSignature hold it to EVP.
    static func parsedSignature(_ der: UnsafeRawBufferPointer) -> OpaquePointer? {
        let bytes = der.bindMemory(to: UInt8.self)
        // 30 len 02 len r 02 len s: at most 2 + 2 × (2 + 33) bytes for values below n.
        guard bytes.count >= 8, bytes.count <= 72, bytes[0] == 0x30, Int(bytes[1]) == bytes.count - 2,
            let r = canonicalPositiveInteger(bytes, at: 2),
            let s = canonicalPositiveInteger(bytes, at: r.upperBound), s.upperBound == bytes.count,
            let base = bytes.baseAddress,
            let signature = ECDSA_SIG_new()
        else { return nil }
        guard let rValue = BN_bin2bn(base + r.lowerBound, Int32(r.count), nil) else {
            ECDSA_SIG_free(signature)
            return nil
        }
        guard let sValue = BN_bin2bn(base + s.lowerBound, Int32(s.count), nil) else {
            BN_free(rValue)
            ECDSA_SIG_free(signature)
            return nil
        }
        // set0 takes ownership of both numbers.
        guard ECDSA_SIG_set0(signature, rValue, sValue) == 1, isInRange(rValue), isInRange(sValue) else {
            ECDSA_SIG_free(signature)
            return nil
        }
        return signature
    }

    /// The content bytes of the DER INTEGER at `offset` (tag 02, a short-form length of 1 to 33), if it
    /// is minimally encoded and non-negative: no leading 00 unless the next byte has its top bit set,
    /// and no top bit set in the first byte (a negative number, outside ECDSA's range anyway).
    private static func canonicalPositiveInteger(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Range<Int>? {
        guard offset + 2 < bytes.count, bytes[offset] == 0x02 else { return nil }
        let length = Int(bytes[offset + 1])
        let start = offset + 2
        guard length >= 1, length <= 33, start + length <= bytes.count, bytes[start] & 0x80 == 0 else { return nil }
        if length > 1, bytes[start] == 0, bytes[start + 1] & 0x80 == 0 { return nil }
        return start..<(start + length)
    }

    /// 0 < value < n, the range ECDSA allows for r and s.
    private static func isInRange(_ value: OpaquePointer) -> Bool {
        BN_is_zero(value) == 0 && BN_is_negative(value) == 0 && BN_ucmp(value, Self.order) < 0
    }

    /// The verification proper, given r and w = s⁻¹ mod n in Montgomery form (w·R mod n, see
    /// `P256Montgomery`): R = u1·G + u2·Q with u1 = e·w, u2 = r·w, valid iff R is not infinity and
    /// x(R) mod n = r.
    ///
    /// x(R) = X/Z² in Jacobian coordinates, and x(R) < p, so x(R) mod n = r means x(R) = r or (only when
    /// r < p − n) x(R) = r + n; both are checked as X = candidate·Z² (mod p), with no inversion of Z.
    func verify(
        r: OpaquePointer, inverseOfSInMontgomeryForm inverse: OpaquePointer, digest: SHA256.Digest,
        scratch: VerificationScratch
    ) -> Bool {
        let context = scratch.context
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        guard let e = BN_CTX_get(context), let u1 = BN_CTX_get(context), let u2 = BN_CTX_get(context),
            let x = BN_CTX_get(context), let z = BN_CTX_get(context), let candidate = BN_CTX_get(context),
            let zSquared = BN_CTX_get(context), let product = BN_CTX_get(context)
        else { return false }
        // The digest is exactly the order's 256 bits: no truncation. A Montgomery multiplication wants
        // inputs below n, and e < 2^256 < 2n, so one subtraction reduces it.
        let converted = digest.withUnsafeBytes { bytes in
            BN_bin2bn(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), e) != nil
        }
        guard converted, BN_ucmp(e, order) < 0 || BN_usub(e, e, order) == 1,
            // mont(x, w·R) = x·w mod n.
            BN_mod_mul_montgomery(u1, e, inverse, montgomery.order, context) == 1,
            BN_mod_mul_montgomery(u2, r, inverse, montgomery.order, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        let fromG = scratch.fromG
        let fromQ = scratch.fromQ
        guard EC_POINT_mul(curveGroup, fromG, u1, nil, nil, context) == 1,
            EC_POINT_mul(keyGroup, fromQ, u2, nil, nil, context) == 1,
            EC_POINT_add(curveGroup, fromG, fromG, fromQ, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        // zSquared = Z²·R mod p (Montgomery form), so mont(candidate, zSquared) = candidate·Z² mod p.
        // Z comes out of OpenSSL reduced; the reduction guards the Montgomery input bound regardless.
        guard EC_POINT_is_at_infinity(curveGroup, fromG) == 0,
            postback_EC_POINT_get_Jprojective_coordinates(curveGroup, fromG, x, nil, z, context) == 1,
            BN_ucmp(z, prime) < 0 || BN_nnmod(z, z, prime, context) == 1,
            BN_to_montgomery(zSquared, z, montgomery.prime, context) == 1,
            BN_mod_mul_montgomery(zSquared, zSquared, zSquared, montgomery.prime, context) == 1,
            BN_mod_mul_montgomery(product, r, zSquared, montgomery.prime, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        if BN_cmp(product, x) == 0 { return true }
        guard BN_cmp(r, primeMinusOrder) < 0,
            BN_add(candidate, r, order) == 1,
            BN_mod_mul_montgomery(product, candidate, zSquared, montgomery.prime, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        return BN_cmp(product, x) == 0
    }

    /// Runs `body` with pooled scratch, its BN_CTX inside its own start/end frame. False if none could be made.
    func withScratch(_ body: (VerificationScratch) -> Bool) -> Bool {
        scratch.withContext { scratch in
            BN_CTX_start(scratch.context)
            defer { BN_CTX_end(scratch.context) }
            return body(scratch)
        } ?? false
    }
}

/// What one verification needs besides its numbers: a BN_CTX and the two points of u1·G + u2·Q.
/// Used by one thread at a time (the table's pool hands it out); freed with the pool.
final class VerificationScratch {
    let context: OpaquePointer
    let fromG: OpaquePointer
    let fromQ: OpaquePointer

    init?(curveGroup: OpaquePointer) {
        guard let context = BN_CTX_new() else { return nil }
        guard let fromG = EC_POINT_new(curveGroup) else {
            BN_CTX_free(context)
            return nil
        }
        guard let fromQ = EC_POINT_new(curveGroup) else {
            BN_CTX_free(context)
            EC_POINT_free(fromG)
            return nil
        }
        self.context = context
        self.fromG = fromG
        self.fromQ = fromQ
    }

    deinit {
        BN_CTX_free(context)
        EC_POINT_free(fromG)
        EC_POINT_free(fromQ)
    }
}
