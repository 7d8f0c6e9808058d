import Basics
internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// SHA-256 through OpenSSL's EVP interface.
package enum SHA256 {
    /// A 32-byte SHA-256 digest, stored inline so hashing on the hot path does not allocate.
    package struct Digest: Sendable, Equatable, CustomStringConvertible {
        typealias Storage = (UInt64, UInt64, UInt64, UInt64)
        var storage: Storage = (0, 0, 0, 0)

        package static let byteCount = 32

        package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try Swift.withUnsafeBytes(of: storage, body)
        }

        package var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

        /// A digest given as its 32 bytes (for tests and fuzzers that choose the digest directly).
        package init(bytes: [UInt8]) {
            precondition(bytes.count == Self.byteCount, "a SHA-256 digest is 32 bytes")
            Swift.withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
        }

        init() {}

        /// Lower-case hex.
        package var description: String { Hex.encode(bytes) }

        package static func == (lhs: Digest, rhs: Digest) -> Bool { lhs.bytes == rhs.bytes }
    }

    /// Hashes `message` in one call.
    package static func hash(_ message: some Collection<UInt8>) -> Digest {
        withContiguousBytes(message) { hash(bytes: $0) }
    }

    package static func hash(bytes: UnsafeRawBufferPointer) -> Digest {
        var digest = Digest()
        var length: UInt32 = 0
        let context = threadDigestContext()
        let ok = Swift.withUnsafeMutableBytes(of: &digest.storage) { out in
            EVP_DigestInit_ex2(context, sha256Algorithm.pointer, nil) == 1
                && EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1
                && EVP_DigestFinal_ex(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length) == 1
        }
        // Only allocation failure makes these fail; stopping is better than a digest of zeros.
        precondition(ok && length == 32, "SHA-256 failed: \(CryptoError.drainErrorQueue())")
        return digest
    }

    /// This thread's digest context, made on first use and freed when the thread ends. EVP_Digest
    /// would allocate and free one per call; one pool shared by all threads put a lock and its
    /// cache line between every two signatures of concurrent workers.
    private static func threadDigestContext() -> OpaquePointer {
        if let context = pthread_getspecific(digestContextKey) { return OpaquePointer(context) }
        guard let context = EVP_MD_CTX_new() else {
            preconditionFailure("EVP_MD_CTX_new failed: \(CryptoError.drainErrorQueue())")
        }
        pthread_setspecific(digestContextKey, UnsafeRawPointer(context))
        return context
    }

    private static let digestContextKey: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { context in EVP_MD_CTX_free(OpaquePointer(context)) }
        precondition(created == 0, "pthread_key_create failed (\(created))")
        return key
    }()
}

/// Incremental SHA-256, for file checksums.
package final class SHA256Hasher {
    private let context: OpaquePointer

    package init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, sha256Algorithm.pointer, nil) == 1 else {
            preconditionFailure("EVP_DigestInit_ex(SHA-256) failed: \(CryptoError.drainErrorQueue())")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    package func update(_ bytes: some Collection<UInt8>) {
        withContiguousBytes(bytes) { update($0) }
    }

    /// The digest of everything passed to `update`. The hasher cannot be used afterwards.
    package func finalize() -> SHA256.Digest {
        var digest = SHA256.Digest()
        var length: UInt32 = 0
        let ok = Swift.withUnsafeMutableBytes(of: &digest.storage) { out in
            EVP_DigestFinal_ex(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        precondition(ok == 1 && length == 32, "EVP_DigestFinal_ex failed")
        return digest
    }
}

/// SHA-256 fetched once: an implicit fetch on every EVP_Digest call goes through OpenSSL's provider
/// lookup and its lock, which shows up when hashing hundreds of thousands of short messages.
private let sha256Algorithm = FetchedDigest(name: "SHA256")

private final class FetchedDigest: Sendable {
    // EVP_MD objects are reference counted and immutable once fetched, so sharing one is safe.
    nonisolated(unsafe) let pointer: OpaquePointer

    init(name: String) {
        guard let pointer = EVP_MD_fetch(nil, name, nil) else {
            preconditionFailure("OpenSSL has no \(name): \(CryptoError.drainErrorQueue())")
        }
        self.pointer = pointer
    }
}
