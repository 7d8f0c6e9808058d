#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a pthread mutex, used the way `Synchronization.Mutex` is (`withLock`).
///
/// Why not `Mutex`: on Linux it locks with raw futex system calls, which ThreadSanitizer cannot see,
/// so every access it guards is reported as a race and TSan runs become useless. TSan intercepts
/// pthread mutexes, so with this type its reports mean something. The cost is the same.
@usableFromInline package final class Locked<Value> {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ value: sending Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. As with `Mutex`, `sending` keeps a non-Sendable
    /// value from escaping the lock into another isolation region.
    @usableFromInline package func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// The value is only ever touched with the mutex held, and `withLock`'s `sending` parameters keep
// non-Sendable contents from leaving it, as `Synchronization.Mutex` does.
extension Locked: @unchecked Sendable {}
