import Foundation
import PostbackCrypto
import Testing

/// Wycheproof ECDSA vectors through the same verify calls the postback verifier uses.
/// Counts come from each file's `numberOfTests`, so a loader that silently skipped cases would fail.
@Suite struct WycheproofTests {
    @Test func p256DERSignatures() throws {
        try run(file: "ecdsa_secp256r1_sha256_test.json", curve: .p256) { key, signature, message in
            key.isValidSignature(derSignature: signature, for: message)
        }
    }

    @Test func p256RawSignaturesAsInJWS() throws {
        try run(file: "ecdsa_secp256r1_sha256_p1363_test.json", curve: .p256) { key, signature, message in
            key.isValidSignature(rawSignature: signature, for: message)
        }
    }

    @Test func p192DERSignaturesForSKAdNetwork1And2() throws {
        try run(file: "ecdsa_secp192r1_sha256_test.json", curve: .p192) { key, signature, message in
            key.isValidSignature(derSignature: signature, for: message)
        }
    }

    private func run(
        file: String, curve: Curve,
        verify: (ECDSAPublicKey, [UInt8], [UInt8]) -> Bool
    ) throws {
        let url = Fixtures.vectors.appendingPathComponent("wycheproof/\(file)")
        let vectors = try JSONDecoder().decode(WycheproofFile.self, from: Data(contentsOf: url))
        var executed = 0
        for group in vectors.testGroups {
            let key = try ECDSAPublicKey(derRepresentation: try hex(group.publicKeyDer))
            #expect(key.curve == curve)
            // Every P-256 group's key gets its precomputed table, so these cases run through it.
            #expect(key.usesPrecomputedTable == (curve == .p256 && ECDSAVerificationPath.configured == .precomputedTable))
            for test in group.tests {
                executed += 1
                let accepted = verify(key, try hex(test.sig), try hex(test.msg))
                switch test.result {
                case "valid":
                    #expect(accepted, "tcId \(test.tcId) (\(test.comment), \(test.flags)) should verify")
                case "invalid":
                    #expect(!accepted, "tcId \(test.tcId) (\(test.comment), \(test.flags)) should not verify")
                default:
                    break  // "acceptable": either verdict passes.
                }
            }
        }
        #expect(executed == vectors.numberOfTests, "\(file): ran \(executed) of \(vectors.numberOfTests) cases")
        try compareWithEVP(vectors, curve: curve)
        #expect(executed > 0)
    }
}

/// Every case once more through EVP, through the table, through one batch per group and through the
/// table inside one shared inversion per group: all verdicts must be equal (also for the "acceptable" cases, where Wycheproof allows either).
private func compareWithEVP(_ vectors: WycheproofFile, curve: Curve) throws {
    for group in vectors.testGroups {
        let key = try ECDSAPublicKey(derRepresentation: try hex(group.publicKeyDer))
        var checks: [ECDSABatch.Check] = []
        var evpVerdicts: [Bool] = []
        for test in group.tests {
            let encoded = try hex(test.sig)
            // P1363 files hold raw r ‖ s: the DER the verifier makes of it, or nothing for a wrong length.
            let der = vectors.isRawSignatures ? ECDSASignature.derFromRaw(encoded, curve: curve) ?? [] : encoded
            let digest = SHA256.hash(try hex(test.msg))
            let evp = der.withUnsafeBytes { key.isValidSignatureByEVP(derSignature: $0, digest: digest) }
            let table = der.withUnsafeBytes { key.isValidSignature(derSignature: $0, digest: digest) }
            #expect(table == evp, "tcId \(test.tcId) (\(test.comment)): table \(table), EVP \(evp)")
            checks.append(ECDSABatch.Check(key: key, derSignature: der, digest: digest))
            evpVerdicts.append(evp)
        }
        let batch = ECDSABatch.areValidSignatures(checks)
        let shared = ECDSABatch.withSharedInversion(of: checks.map(\.derSignature)) {
            checks.map { check in
                check.derSignature.withUnsafeBytes { key.isValidSignature(derSignature: $0, digest: check.digest) }
            }
        }
        for (index, test) in group.tests.enumerated()
        where batch[index] != evpVerdicts[index] || shared[index] != evpVerdicts[index] {
            Issue.record(
                "tcId \(test.tcId) (\(test.comment)): batch \(batch[index]), shared inversion \(shared[index]), EVP \(evpVerdicts[index])"
            )
        }
        #expect(batch.count == group.tests.count)
    }
}

private struct WycheproofFile: Decodable {
    let numberOfTests: Int
    let schema: String?
    let testGroups: [Group]

    var isRawSignatures: Bool { schema?.contains("p1363") == true }

    struct Group: Decodable {
        let publicKeyDer: String
        let tests: [Case]
    }

    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let msg: String
        let sig: String
        let result: String
        let flags: [String]
    }
}

func hex(_ text: String) throws -> [UInt8] {
    struct BadHex: Error {}
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { throw BadHex() }
    return try stride(from: 0, to: digits.count, by: 2).map { index in
        guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { throw BadHex() }
        return byte
    }
}

enum Fixtures {
    /// The repository root, found from this file's path so tests run from any working directory.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let vectors = root.appendingPathComponent("Tests/Vectors")
}
