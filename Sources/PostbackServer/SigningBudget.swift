import Dispatch
import Locking

/// How many web-ad payloads (`get-signed-payload`) one client may have signed: a token bucket per
/// client address (`IPAddress.client`: an IPv6 client is its /64), `rate` a second up to `burst`
/// at once (`web_ad_rate_per_client`, `web_ad_burst_per_client`). Safari asks once per tap, so a
/// client well past the rate is a script spending the network's signatures (and CPU) on public
/// nonces; it is answered 429 with `Retry-After`.
///
/// The table is bounded: at most `maximumClients` buckets. When it is full, buckets that have
/// refilled (idle clients: the same as no entry) are dropped, at most once a second (a sweep reads
/// the whole table); until one makes room, newcomers share one bucket, so a flood of addresses can
/// neither grow the table nor make each request sweep it.
final class SigningBudget: Sendable {
    let rate: Double
    let burst: Double
    let maximumClients: Int

    private struct Bucket {
        var tokens: Double
        var updated: UInt64
    }
    private struct State {
        var buckets: [String: Bucket] = [:]
        var overflow: Bucket
        var sweptAt: UInt64 = 0
    }
    private let state: Locked<State>

    /// - Parameter rate: tokens a second; 0 turns the budget off.
    init(rate: Double, burst: Int, maximumClients: Int = 65_536) {
        self.rate = rate
        self.burst = Double(max(1, burst))
        self.maximumClients = maximumClients
        state = Locked(State(overflow: Bucket(tokens: Double(max(1, burst)), updated: DispatchTime.now().uptimeNanoseconds)))
    }

    var trackedClients: Int { state.withLock { $0.buckets.count } }

    /// Takes one signature from `client`'s budget: nil when granted, else the whole seconds to wait.
    func take(client: String, now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int? {
        guard rate > 0 else { return nil }
        return state.withLock { state -> Int? in
            if state.buckets[client] == nil, state.buckets.count >= maximumClients,
                state.sweptAt == 0 || now >= state.sweptAt + 1_000_000_000
            {
                state.sweptAt = now
                state.buckets = state.buckets.filter { refilled($0.value, now: now).tokens < burst }
            }
            if state.buckets[client] == nil, state.buckets.count >= maximumClients {
                return spend(&state.overflow, now: now)
            }
            var bucket = state.buckets[client] ?? Bucket(tokens: burst, updated: now)
            let wait = spend(&bucket, now: now)
            state.buckets[client] = bucket
            return wait
        }
    }

    private func refilled(_ bucket: Bucket, now: UInt64) -> Bucket {
        let elapsed = Double(now &- bucket.updated) / 1e9
        guard now > bucket.updated else { return bucket }
        return Bucket(tokens: min(burst, bucket.tokens + elapsed * rate), updated: now)
    }

    private func spend(_ bucket: inout Bucket, now: UInt64) -> Int? {
        bucket = refilled(bucket, now: now)
        guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
        bucket.tokens -= 1
        return nil
    }
}
