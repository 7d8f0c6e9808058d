package import Basics
import PostbackCrypto

extension PostbackVerifier {
    /// Verifies many bodies: each result is exactly what `verify(body:)` gives it, but the batch's
    /// P-256 signatures share one modular inversion (`ECDSABatch.withSharedInversion`), about a third
    /// of a verify once the key's table is built. For `postback verify`, which reads in batches.
    package func verify(batch bodies: [[UInt8]]) -> [VerificationResult] {
        let parsed = bodies.map { body -> Result<Postback, PostbackRejection> in
            do throws(PostbackRejection) { return .success(try Postback(body: body)) } catch { return .failure(error) }
        }
        let signatures = parsed.compactMap { result -> [UInt8]? in
            guard case .success(let postback) = result else { return nil }
            switch postback {
            case .skadnetwork(let skan): return skan.attributionSignature
            case .adAttributionKit(let aak): return ECDSASignature.derFromRaw(aak.jws.signature, curve: .p256)
            }
        }
        return ECDSABatch.withSharedInversion(of: signatures) {
            parsed.map { result in
                switch result {
                case .success(let postback): return verify(postback)
                case .failure(let rejection): return VerificationResult(rejection: rejection)
                }
            }
        }
    }

    /// Verifies records as read by `RecordReader`: a record that could not be read whole is
    /// malformed, the others are verified together as one batch.
    package func verify(records: some Collection<InputRecord>) -> [VerificationResult] {
        var verified = verify(batch: records.filter { $0.problem == nil }.map(\.bytes)).makeIterator()
        return records.map { record in record.problem.map { VerificationResult.malformed(reason: $0) } ?? verified.next()! }
    }
}
