import Foundation
import PostbackCrypto
import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// `verify(batch:)` shares one modular inversion between a batch's signatures; every result must be
/// the one `verify(body:)` gives the same body alone.
@Suite struct BatchVerificationTests {
    @Test func batchResultsEqualSingleResults() throws {
        let synthetic = SyntheticPostbacks(kinds: [.skan3_0, .skan4_0, .aak, .skan2_0, .skan2_2])
        var bodies: [[UInt8]] = []
        for index in 0..<60 {
            let description = synthetic.postback(index, seed: 17)
            let signer =
                index % 5 == 3
                ? TestKeys.signer192 : (index % 7 == 0 ? TestPostbackSigner(key: TestKeys.otherP256) : TestKeys.signer256)
            var body = try signer.sign(description)
            if index % 6 == 1, let position = body.lastIndex(of: UInt8(ascii: "A")) { body[position] = UInt8(ascii: "B") }
            bodies.append(body)
            if index % 10 == 2 { bodies.append(body) }  // the same signature twice in one batch
        }
        bodies.append(Array("{\"version\":\"4.0\"".utf8))
        bodies.append([])
        for name in try Fixtures.appleVectorNames() { bodies.append(try Fixtures.appleVector(name)) }

        let verifier = TestKeys.devVerifier
        let batch = verifier.verify(batch: bodies)
        #expect(batch.count == bodies.count)
        for (index, body) in bodies.enumerated() {
            let alone = verifier.verify(body: body)
            #expect(batch[index].status == alone.status, "body \(index)")
            #expect(batch[index].keyName == alone.keyName, "body \(index)")
            #expect(batch[index].reason == alone.reason, "body \(index)")
            #expect(batch[index].environment == alone.environment, "body \(index)")
        }
        let verified = batch.filter { $0.status == .verified }.count
        #expect(verified > 30 && verified < bodies.count - 10, "\(verified) of \(bodies.count) verified")
    }

    /// Records that could not be read whole are malformed, in place; the rest keep their order.
    @Test func recordsWithProblemsStayInPlace() throws {
        let synthetic = SyntheticPostbacks(kinds: [.skan4_0, .aak])
        let bodies = try (0..<4).map { try TestKeys.signer256.sign(synthetic.postback($0, seed: 3)) }
        let records = [
            InputRecord(source: "a:1", bytes: bodies[0], problem: nil),
            InputRecord(source: "a:2", bytes: [], problem: "record longer than 1 MiB"),
            InputRecord(source: "a:3", bytes: bodies[1], problem: nil),
            InputRecord(source: "a:4", bytes: bodies[2], problem: nil),
        ]
        let results = TestKeys.devVerifier.verify(records: records)
        #expect(results.map(\.status) == [.verified, .malformed, .verified, .verified])
        #expect(results[1].reason?.contains("longer than 1 MiB") == true)
        #expect(results[2].postback?.dedupKey == TestKeys.devVerifier.verify(body: bodies[1]).postback?.dedupKey)
    }
}
