#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a pthread mutex, used the way `Synchronization.Mutex` is (`withLock`).
///
/// Why not `Mutex`: on Linux it locks with raw futex system calls, which ThreadSanitizer cannot see,
/// so every access it guards is reported as a race and TSan runs become useless. TSan intercepts
/// pthread mutexes, so with this type its reports mean something. The cost is the same.
public final class Locked<Value> {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// The value is only ever touched with the mutex held.
extension Locked: @unchecked Sendable where Value: Sendable {}
