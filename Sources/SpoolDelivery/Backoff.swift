/// Exponential backoff with jitter between failed delivery attempts: the n-th consecutive failure
/// waits a random time between half and all of `min(maximum, initial · 2ⁿ⁻¹)`, so receivers that lost
/// the store together do not come back in lockstep.
package struct Backoff: Sendable, Equatable {
    package var initialSeconds: Double
    package var maximumSeconds: Double

    package init(initialSeconds: Double = 1, maximumSeconds: Double = 60) {
        self.initialSeconds = initialSeconds
        self.maximumSeconds = maximumSeconds
    }

    /// The wait after `failures` consecutive failures (at least 1); `unit` is a random number in [0, 1).
    package func delay(afterFailures failures: Int, unit: Double = Double.random(in: 0..<1)) -> Double {
        let exponent = min(max(failures, 1) - 1, 30)
        let ceiling = min(maximumSeconds, initialSeconds * Double(1 << exponent))
        return ceiling * (0.5 + 0.5 * unit)
    }
}
