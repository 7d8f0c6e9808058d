internal import COpenSSL

/// P-256's modular arithmetic for verification (modulo the order n and the prime p) in the Montgomery
/// domain, through OpenSSL's BN_MONT_CTX and BN_mod_mul_montgomery.
///
/// BN_mod_mul is a full multiplication and division (about 2.8 K instructions for 256-bit numbers here),
/// a Montgomery multiplication with a prepared context about 630. With R = 2^256,
/// mont(a, b) = a·b·R⁻¹ mod n, so a value kept as w·R ("Montgomery form") gives mont(x, w·R) = x·w in
/// ordinary form: the verifier keeps every s⁻¹ in Montgomery form and gets u1 and u2 directly.
/// Inputs must be below the modulus. n and p are the same for every P-256 key, so the contexts are
/// built once; OpenSSL only reads a BN_MONT_CTX after BN_MONT_CTX_set, so all threads share them.
final class P256Montgomery: @unchecked Sendable {
    // @unchecked Sendable: the contexts and numbers below are never written after init.
    /// Nil only if OpenSSL could not build the contexts; the tables then stay off (EVP verifies).
    static let shared = P256Montgomery()

    /// Montgomery context modulo the order n.
    let order: OpaquePointer
    /// Montgomery context modulo the prime p.
    let prime: OpaquePointer
    /// R² mod n: one Montgomery multiplication by it turns x into x·R, x's Montgomery form.
    private let orderRSquared: OpaquePointer
    private let orderValue: OpaquePointer

    private init?() {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            ERR_clear_error()
            return nil
        }
        defer { EC_GROUP_free(group) }
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        guard let order = BN_MONT_CTX_new(), let prime = BN_MONT_CTX_new(), let primeValue = BN_new(),
            let orderValue = BN_dup(EC_GROUP_get0_order(group)), let orderRSquared = BN_new()
        else {
            ERR_clear_error()
            return nil
        }
        defer { BN_free(primeValue) }
        self.order = order
        self.prime = prime
        self.orderRSquared = orderRSquared
        self.orderValue = orderValue
        // R² mod n as the Montgomery form of R mod n, itself that of 1.
        guard EC_GROUP_get_curve(group, primeValue, nil, nil, nil) == 1,
            BN_MONT_CTX_set(order, orderValue, context) == 1, BN_MONT_CTX_set(prime, primeValue, context) == 1,
            BN_to_montgomery(orderRSquared, BN_value_one(), order, context) == 1,
            BN_to_montgomery(orderRSquared, orderRSquared, order, context) == 1
        else {
            ERR_clear_error()
            return nil
        }
    }

    deinit {
        BN_MONT_CTX_free(order)
        BN_MONT_CTX_free(prime)
        BN_free(orderRSquared)
        BN_free(orderValue)
    }

    /// `inverse` = s⁻¹·R mod n, the Montgomery form of s⁻¹, for one s in [1, n).
    func setInverseInMontgomeryForm(_ inverse: OpaquePointer, of s: OpaquePointer, context: OpaquePointer) -> Bool {
        guard BN_mod_inverse(inverse, s, orderValue, context) != nil,
            BN_to_montgomery(inverse, inverse, order, context) == 1
        else {
            ERR_clear_error()
            return false
        }
        return true
    }

    /// s⁻¹·R mod n (Montgomery form) for each s in [1, n), in order, with one BN_mod_inverse for all
    /// (Montgomery's trick). The caller frees the results; nil on allocation failure.
    func inversesInMontgomeryForm(of values: [OpaquePointer], context: OpaquePointer) -> [OpaquePointer]? {
        // The products stay in ordinary form, each Montgomery multiplication adding a factor R⁻¹:
        // prefix[i] = (s0·s1·…·si)·R^−i. Every s is in [1, n) and n is prime, so no product is zero.
        var prefix: [OpaquePointer] = []
        var inverses: [OpaquePointer] = []
        defer { prefix.forEach { BN_free($0) } }
        func failed() -> [OpaquePointer]? {
            inverses.forEach { BN_free($0) }
            ERR_clear_error()
            return nil
        }
        guard let last = values.indices.last, let running = BN_new() else { return values.isEmpty ? [] : nil }
        defer { BN_free(running) }
        for s in values {
            guard let product = BN_new() else { return failed() }
            prefix.append(product)
            let ok =
                prefix.count == 1
                ? BN_copy(product, s) != nil
                : BN_mod_mul_montgomery(product, prefix[prefix.count - 2], s, order, context) == 1
            guard ok else { return failed() }
        }
        // The walk back keeps running = (s0·…·si)⁻¹·R^(i+1); at i = last that is prefix[last]⁻¹·R.
        guard BN_mod_inverse(running, prefix[last], orderValue, context) != nil,
            BN_mod_mul_montgomery(running, running, orderRSquared, order, context) == 1
        else { return failed() }
        // si⁻¹·R = mont(running, prefix[i−1]) (the powers of R cancel), then mont(running, si) is
        // (s0·…·si−1)⁻¹·R^i; at i = 0, running itself is s0⁻¹·R.
        for position in stride(from: last, through: 0, by: -1) {
            guard let w = BN_new() else { return failed() }
            inverses.append(w)
            let ok =
                position == 0
                ? BN_copy(w, running) != nil
                : BN_mod_mul_montgomery(w, running, prefix[position - 1], order, context) == 1
                    && BN_mod_mul_montgomery(running, running, values[position], order, context) == 1
            guard ok else { return failed() }
        }
        return inverses.reversed()
    }
}
