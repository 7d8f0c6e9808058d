import Locking

/// Requests per token: a token bucket per token name, `perMinute` refilled evenly and at most `burst`
/// at once. A request over the limit is answered 429 with `Retry-After`, before anything is read.
package final class RateLimiter: Sendable {
    package let perMinute: Int
    package let burst: Int
    private let buckets = Locked<[String: (tokens: Double, at: Double)]>([:])

    package init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }

    /// Nil when `name` may make a request at `now` (seconds, any monotonic origin); else the seconds to wait.
    package func admit(_ name: String, now: Double) -> Int? {
        let rate = Double(perMinute) / 60
        return buckets.withLock { buckets in
            var bucket = buckets[name] ?? (Double(burst), now)
            bucket.tokens = min(Double(burst), bucket.tokens + max(0, now - bucket.at) * rate)
            bucket.at = now
            defer { buckets[name] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }
}
