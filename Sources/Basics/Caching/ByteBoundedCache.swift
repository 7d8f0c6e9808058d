import Locking

/// A map that keeps at most `maximumBytes` (as each value's `bytes` says), evicting the least
/// recently used entry first; a value larger than the whole bound is not kept. Thread-safe.
package final class ByteBoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: (value: Value, bytes: Int, used: UInt64)] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var hits = 0
        var misses = 0
    }

    package let maximumBytes: Int
    private let state: Locked<State>

    package init(maximumBytes: Int) {
        self.maximumBytes = max(0, maximumBytes)
        state = Locked(State())
    }

    /// The bytes held, the entries, and the lookups that found a current entry or not.
    package var statistics: (bytes: Int, entries: Int, hits: Int, misses: Int) {
        state.withLock { ($0.bytes, $0.entries.count, $0.hits, $0.misses) }
    }

    /// The value of `key`, if there is one and `isCurrent` accepts it (one it refuses is dropped).
    package func value(_ key: Key, isCurrent: (Value) -> Bool = { _ in true }) -> Value? {
        state.withLock { state -> Value? in
            guard let entry = state.entries[key] else {
                state.misses += 1
                return nil
            }
            guard isCurrent(entry.value) else {
                state.entries[key] = nil
                state.bytes -= entry.bytes
                state.misses += 1
                return nil
            }
            state.clock += 1
            state.entries[key] = (entry.value, entry.bytes, state.clock)
            state.hits += 1
            return entry.value
        }
    }

    /// Keeps `value` as `key`'s, replacing any, then evicts the least recently used down to the bound.
    package func keep(_ value: Value, as key: Key, bytes: Int) {
        guard bytes <= maximumBytes else { return }
        state.withLock { state in
            if let old = state.entries[key] { state.bytes -= old.bytes }
            state.clock += 1
            state.entries[key] = (value, bytes, state.clock)
            state.bytes += bytes
            while state.bytes > maximumBytes, let oldest = state.entries.min(by: { $0.value.used < $1.value.used }) {
                state.entries[oldest.key] = nil
                state.bytes -= oldest.value.bytes
            }
        }
    }
}
