import PostbackCrypto
import Testing

/// The precomputed-table path against EVP (the reference). The long run is scripts/ecdsa-differential.
@Suite struct P256KeyTableTests {
    /// Random signatures, each mutated, and every aimed edge case: the table, the batch and EVP agree.
    @Test func agreesWithEVPOnMutatedAndEdgeCaseSignatures() throws {
        let keys = try ECDSADifferential.Keys(randomKeys: 3, wrappingKeys: 3, smallCoordinateKeys: 2)
        if ECDSAVerificationPath.configured == .precomputedTable {
            for key in keys.all { #expect(key.usesPrecomputedTable) }
        }
        let report = ECDSADifferential(keys: keys).run(count: 6_000)
        #expect(report.disagreements.isEmpty, "\(report.disagreements.prefix(3).map(\.description))")
        #expect(report.checked >= 6_000)
        // Both verdicts occur, and every aimed case was reached with its valid form accepted.
        #expect(report.valid > report.checked / 10 && report.valid < report.checked / 2)
        for kind in [
            "signed", "s=n-1", "s=1", "u1G=u2Q", "infinity (invalid)", "R=Q", "R=-Q", "e=0", "e=n",
            "small-x key", "x(R)>=n", "r=x(R)>=n (invalid)", "signed high-S", "signed flip-der", "signed r=0",
            "signed s=n", "signed r+n", "signed swapped", "signed r<0", "x(R)>=n high-S", "e>n", "e>n high-S",
        ] {
            #expect(report.kinds[kind, default: 0] > 0, "no \(kind) case generated")
        }
    }

    /// The aimed valid cases really are valid (so agreement on them means both paths said yes).
    @Test func aimedCasesAreValidThroughEVP() throws {
        let keys = try ECDSADifferential.Keys(randomKeys: 1, wrappingKeys: 2, smallCoordinateKeys: 1)
        let report = ECDSADifferential(keys: keys).run(count: 1_500)
        #expect(report.disagreements.isEmpty, "\(report.disagreements.prefix(3).map(\.description))")
        #expect(
            report.validKinds.isSuperset(of: [
                "signed", "signed high-S", "s=n-1", "s=1", "u1G=u2Q", "R=Q", "R=-Q",
                "e=0", "e=n", "e>n", "small-x key", "x(R)>=n", "x(R)>=n high-S",
            ]),
            "valid kinds: \(report.validKinds.sorted())")
        #expect(
            report.validKinds.isDisjoint(with: [
                "infinity (invalid)", "r=x(R)>=n (invalid)", "signed r=0", "signed s=0",
                "signed r=n", "signed s=n", "signed r+n", "signed s+n", "signed r<0",
            ]))
    }

    /// A batch mixing keys with and without tables, bad encodings and empty signatures gives each check
    /// the verdict it gets alone.
    @Test func batchGivesEachCheckItsOwnVerdict() throws {
        let p256 = try ECDSAPrivateKey(generatingOn: .p256)
        let other = try ECDSAPrivateKey(generatingOn: .p256)
        let p192 = try ECDSAPrivateKey(generatingOn: .p192)
        var checks: [ECDSABatch.Check] = []
        for index in 0..<40 {
            let message = Array("postback \(index)".utf8)
            let signer = [p256, other, p192][index % 3]
            var der = try signer.derSignature(for: message)
            if index % 5 == 1 { der[der.count - 1] ^= 1 }
            if index % 7 == 2 { der = [] }
            if index % 11 == 3 { der += [0] }
            let key = index % 13 == 4 ? other.publicKey : signer.publicKey
            checks.append(.init(key: key, derSignature: der, digest: SHA256.hash(message)))
        }
        let batch = ECDSABatch.areValidSignatures(checks)
        let alone = checks.map { check in
            check.derSignature.withUnsafeBytes { check.key.isValidSignature(derSignature: $0, digest: check.digest) }
        }
        let evp = checks.map { check in
            check.derSignature.withUnsafeBytes { check.key.isValidSignatureByEVP(derSignature: $0, digest: check.digest) }
        }
        #expect(batch == alone)
        #expect(batch == evp)
        #expect(batch.filter { $0 }.count > 10 && batch.contains(false))
        #expect(ECDSABatch.areValidSignatures([]) == [])
        #expect(ECDSABatch.areValidSignatures(Array(checks.prefix(1))) == [alone[0]])
    }

    @Test func p192KeysStayOnEVP() throws {
        #expect(!(try ECDSAPrivateKey(generatingOn: .p192)).publicKey.usesPrecomputedTable)
    }
}
