internal import COpenSSL
import Locking

/// A pool of initialised OpenSSL contexts (EVP_PKEY_CTX for a key, EVP_MD_CTX for hashing, a table's
/// verification scratch).
///
/// A context is mutable and must not be used by two threads at once, but setting one up costs about
/// as much as the hashing we do per postback. So the pool keeps the contexts it has made and hands
/// them out one caller at a time; with two cores it stays at two or three entries.
final class ContextPool<Context>: Sendable {
    /// A context that may cross threads: only the holder that took it from the pool uses it.
    private struct Handle: @unchecked Sendable { let context: Context }

    private let free = Locked<[Handle]>([])
    private let make: @Sendable () -> Context?
    private let destroy: @Sendable (Context) -> Void

    /// - Parameters:
    ///   - make: creates and initialises a new context, or returns nil on failure.
    ///   - destroy: frees a context.
    init(make: @escaping @Sendable () -> Context?, destroy: @escaping @Sendable (Context) -> Void) {
        self.make = make
        self.destroy = destroy
    }

    deinit {
        for handle in free.withLock({ $0 }) { destroy(handle.context) }
    }

    /// Runs `body` with a context no other thread holds. Returns nil if no context could be made.
    func withContext<R>(_ body: (Context) -> R) -> R? {
        let handle = free.withLock { $0.popLast() } ?? make().map(Handle.init)
        guard let handle else { return nil }
        defer { free.withLock { $0.append(handle) } }
        return body(handle.context)
    }
}

extension ContextPool where Context == OpaquePointer {
    /// A pool of EVP_PKEY_CTXs, freed with EVP_PKEY_CTX_free.
    convenience init(make: @escaping @Sendable () -> OpaquePointer?) {
        self.init(make: make, destroy: { EVP_PKEY_CTX_free($0) })
    }
}
