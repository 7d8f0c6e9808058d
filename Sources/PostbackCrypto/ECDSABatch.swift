internal import COpenSSL

/// Many signature checks at once, with one modular inversion for the whole batch.
///
/// After the precomputed tables, s⁻¹ mod n is the largest single cost of a P-256 verify (BN_mod_inverse,
/// about a third). w = s⁻¹ does not depend on the key, so a batch inverts the product of all its s
/// values once and recovers each w with three multiplications (Montgomery's trick). Each verdict is
/// exactly the one `ECDSAPublicKey.isValidSignature` gives: a check whose key has no table (P-192,
/// EVP forced) or whose signature does not parse is judged alone, as it would be outside a batch.
package enum ECDSABatch {
    package struct Check: Sendable {
        package let key: ECDSAPublicKey
        package let derSignature: [UInt8]
        package let digest: SHA256.Digest

        package init(key: ECDSAPublicKey, derSignature: [UInt8], digest: SHA256.Digest) {
            self.key = key
            self.derSignature = derSignature
            self.digest = digest
        }
    }

    /// The verdict of each check, in order.
    package static func areValidSignatures(_ checks: [Check]) -> [Bool] {
        var verdicts = [Bool](repeating: false, count: checks.count)
        // The checks that join the batch: parsed, in range, on a key with a table.
        var members: [(index: Int, table: P256KeyTable, signature: OpaquePointer)] = []
        members.reserveCapacity(checks.count)
        defer { members.forEach { ECDSA_SIG_free($0.signature) } }
        for (index, check) in checks.enumerated() {
            guard let table = check.key.precomputedTable else {
                verdicts[index] = check.derSignature.withUnsafeBytes {
                    check.key.isValidSignature(derSignature: $0, digest: check.digest)
                }
                continue
            }
            // A signature that does not parse or is out of range is invalid on every path.
            guard let signature = check.derSignature.withUnsafeBytes({ P256KeyTable.parsedSignature($0) }) else { continue }
            members.append((index, table, signature))
        }
        guard let first = members.first else { return verdicts }
        if members.count == 1 {
            verdicts[first.index] = checks[first.index].derSignature.withUnsafeBytes {
                first.table.isValidSignature(derSignature: $0, digest: checks[first.index].digest)
            }
            return verdicts
        }

        // Every table shares P256Montgomery.shared (no table exists without it).
        guard let montgomery = P256Montgomery.shared, let context = BN_CTX_new() else { return alone(checks) }
        defer { BN_CTX_free(context) }
        guard
            let inverseOfS = montgomery.inversesInMontgomeryForm(
                of: members.map { ECDSA_SIG_get0_s($0.signature) }, context: context)
        else { return alone(checks) }
        defer { inverseOfS.forEach { BN_free($0) } }
        for (member, w) in zip(members, inverseOfS) {
            verdicts[member.index] = member.table.withScratch { scratch in
                member.table.verify(
                    r: ECDSA_SIG_get0_r(member.signature), inverseOfSInMontgomeryForm: w, digest: checks[member.index].digest,
                    scratch: scratch)
            }
        }
        return verdicts
    }

    /// Runs `body` with s⁻¹ mod n already computed, by one inversion, for every P-256 signature in
    /// `derSignatures`: a verification inside `body` (on this thread) of one of these exact signatures
    /// skips its own BN_mod_inverse. For callers that verify one message at a time through a layer
    /// of their own (the postback verifier), yet have the whole batch's signatures in hand. A
    /// signature not in the list, or not parseable, is verified as usual; verdicts are unchanged.
    package static func withSharedInversion<R>(of derSignatures: [[UInt8]], _ body: () throws -> R) rethrows -> R {
        guard derSignatures.count > 1, ECDSAVerificationPath.configured == .precomputedTable,
            let inverses = SharedInversion(derSignatures)
        else { return try body() }
        return try SharedInversion.$current.withValue(inverses, operation: body)
    }

    /// Every check on its own: the answer when the batch's bookkeeping cannot be allocated.
    private static func alone(_ checks: [Check]) -> [Bool] {
        ERR_clear_error()
        return checks.map { check in
            check.derSignature.withUnsafeBytes { check.key.isValidSignature(derSignature: $0, digest: check.digest) }
        }
    }
}

/// A batch's signatures, parsed strictly once, with s⁻¹ mod n for each (see
/// `ECDSABatch.withSharedInversion`), by exact DER encoding.
final class SharedInversion: @unchecked Sendable {
    // @unchecked Sendable: filled in init, then only read, by the thread whose task-local scope holds it.
    @TaskLocal static var current: SharedInversion?

    /// A parsed signature (0 < r, s < n, strict DER) and w = s⁻¹ mod n in Montgomery form (w·R mod n).
    struct Entry {
        let signature: OpaquePointer
        let inverse: OpaquePointer
        var r: OpaquePointer { ECDSA_SIG_get0_r(signature) }
    }

    private var entries: [SignatureBytes: Entry] = [:]

    /// DER bytes as a dictionary key, hashed in one call (Array's own hashing feeds the hasher a byte
    /// at a time, which showed up in callgrind at 7K instructions a postback).
    struct SignatureBytes: Hashable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// Nil when there is nothing to share (fewer than two parseable signatures) or on allocation failure.
    init?(_ derSignatures: [[UInt8]]) {
        var parsed: [(der: [UInt8], signature: OpaquePointer)] = []
        var kept = 0
        defer { parsed.dropFirst(kept).forEach { ECDSA_SIG_free($0.signature) } }
        for der in Set(derSignatures.map(SignatureBytes.init)).map(\.bytes) {
            if let signature = der.withUnsafeBytes({ P256KeyTable.parsedSignature($0) }) { parsed.append((der, signature)) }
        }
        guard parsed.count > 1, let montgomery = P256Montgomery.shared, let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        guard
            let inverses = montgomery.inversesInMontgomeryForm(
                of: parsed.map { ECDSA_SIG_get0_s($0.signature) }, context: context)
        else { return nil }
        for (entry, w) in zip(parsed, inverses) {
            entries[SignatureBytes(bytes: entry.der)] = Entry(signature: entry.signature, inverse: w)
        }
        kept = parsed.count
    }

    deinit {
        for entry in entries.values {
            ECDSA_SIG_free(entry.signature)
            BN_free(entry.inverse)
        }
    }

    /// This exact DER signature, parsed, with its inverse; nil if it was not in the batch or did not parse.
    func entry(for der: UnsafeRawBufferPointer) -> Entry? {
        entries.isEmpty ? nil : entries[SignatureBytes(bytes: Array(der))]
    }
}
