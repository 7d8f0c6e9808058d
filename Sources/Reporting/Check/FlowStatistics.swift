#if canImport(Glibc)
    import Glibc
#endif

/// The two tests behind the nightly check's findings (docs/alerts.md, "The nightly check"), on
/// plain counts so that they can be checked by hand.
package enum FlowStatistics {
    /// P(X ≤ k) for X Poisson with mean `mean`: how likely a day with `k` or fewer postbacks is when
    /// the pair's days hold `mean` on average. Summed from the term at `k` downwards (each term is
    /// the one above times i/mean), in logarithms for the first, so large means neither overflow nor
    /// underflow to a wrong 0 before the sum is taken.
    package static func poissonLowerTail(_ k: Int, mean: Double) -> Double {
        guard k >= 0 else { return 0 }
        guard mean > 0 else { return 1 }
        var term = exp(-mean + Double(k) * log(mean) - lgamma(Double(k) + 1))
        var sum = term
        var i = k
        while i > 0 {
            term *= Double(i) / mean
            sum += term
            i -= 1
            if term < sum * 1e-17, Double(i) < mean { break }
        }
        return min(1, sum)
    }

    /// How many standard errors a day's share (`hits` of `trials`) lies above the history's share
    /// `expected`, by the normal approximation of the binomial. The expected share is taken as at
    /// least 1% and at most 99% for the spread, so that a history with no null value at all does not
    /// make every single one infinitely surprising.
    package static func binomialZ(hits: Int, trials: Int, expected: Double) -> Double {
        guard trials > 0 else { return 0 }
        let share = Double(hits) / Double(trials)
        let p = min(0.99, max(0.01, expected))
        return (share - expected) / (p * (1 - p) / Double(trials)).squareRoot()
    }

    /// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
    package static func median(_ values: [Int]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? Double(sorted[middle]) : Double(sorted[middle - 1] + sorted[middle]) / 2
    }
}
