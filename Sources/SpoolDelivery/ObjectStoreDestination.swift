import Foundation
package import PostbackClient
import PostbackCrypto

/// Delivers sealed segments to an S3-compatible bucket, under the same relative path as on disk
/// (`<prefix>raw/postbacks/dt=…/part-<writer>-<seq>.jsonl`).
///
/// Each upload is a conditional create (`If-None-Match: *`) carrying `x-amz-checksum-sha256`, so the
/// store rejects bytes that do not match and never replaces an object. When the object is already
/// there (a crash after the upload, before the ledger line), its stored checksum (or, if the store
/// does not keep one, its bytes, streamed) is compared: equal is delivered; different is a conflict,
/// never overwritten.
package final class ObjectStoreDestination: DeliveryDestination, @unchecked Sendable {
    package let name = "s3"
    // Used from the delivery thread only (the protocol's contract), hence `@unchecked Sendable`.
    private let client: S3Client

    package init(client: S3Client) {
        self.client = client
    }

    package func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws {
        let checksum = Data(sha256).base64EncodedString()
        do {
            try client.putFile(
                relativeKey: segment.relativePath, path: segment.path, size: segment.size,
                checksumSHA256: checksum, createOnly: true)
        } catch let error as ClientError where error.code == .alreadyExists {
            try Self.compareExisting(client: client, segment: segment, sha256: sha256, checksum: checksum).get()
        }
    }

    private static func compareExisting(client: S3Client, segment: SealedSegment, sha256: [UInt8], checksum: String) -> Result<
        Void, DeliveryFailure
    > {
        let key = client.location.key(segment.relativePath)
        do {
            guard let head = try client.head(relativeKey: segment.relativePath) else {
                return .failure(DeliveryFailure(.retry, "\(key): the store answered 412 but has no such object; will retry"))
            }
            if let stored = head.checksumSHA256 {
                return stored == checksum && head.size == segment.size
                    ? .success(())
                    : .failure(
                        DeliveryFailure(
                            .conflict,
                            "\(key) already exists with different bytes (sha256 \(stored), local \(checksum)); not overwritten, local segment kept"
                        ))
            }
            let hasher = SHA256Hasher()
            _ = try client.get(relativeKey: segment.relativePath) { chunk in
                hasher.update(chunk)
                return true
            }
            return hasher.finalize().bytes == sha256
                ? .success(())
                : .failure(
                    DeliveryFailure(.conflict, "\(key) already exists with different bytes; not overwritten, local segment kept"))
        } catch {
            return .failure(DeliveryFailure(.retry, "\(error)"))
        }
    }
}
