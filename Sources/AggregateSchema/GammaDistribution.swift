#if canImport(Glibc)
    import Glibc
#endif

/// The gamma distribution with a given mean and variance (method of moments: shape = mean² / variance,
/// scale = variance / mean), and its quantiles: the modeled columns' 90% intervals (docs/modeling.md).
/// The regularized lower incomplete gamma function P(a, x) is computed by its series for x < a + 1 and by
/// its continued fraction (modified Lentz) above, as in Numerical Recipes §6.2; the quantile inverts it
/// by Newton steps kept inside a bracket that bisection narrows, to 1e-12 relative.
package struct GammaDistribution: Sendable, Equatable {
    package let shape: Double
    package let scale: Double

    package init(shape: Double, scale: Double) {
        precondition(shape > 0 && scale > 0, "a gamma distribution needs a positive shape and scale")
        self.shape = shape
        self.scale = scale
    }

    /// The gamma with this mean and variance; nil unless both are positive and finite.
    package init?(mean: Double, variance: Double) {
        guard mean > 0, variance > 0, mean.isFinite, variance.isFinite else { return nil }
        self.init(shape: mean * mean / variance, scale: variance / mean)
    }

    /// P(X ≤ x).
    package func cdf(_ x: Double) -> Double {
        x <= 0 ? 0 : Self.regularizedLowerGamma(shape, x / scale)
    }

    /// The x with P(X ≤ x) = p, for 0 < p < 1.
    package func quantile(_ p: Double) -> Double {
        precondition(p > 0 && p < 1, "a quantile of a probability strictly between 0 and 1")
        return Self.inverseRegularizedLowerGamma(shape, p) * scale
    }

    /// P(a, x) = γ(a, x) / Γ(a).
    package static func regularizedLowerGamma(_ a: Double, _ x: Double) -> Double {
        guard x > 0 else { return 0 }
        if x < a + 1 {
            // Series: P = e^(−x) x^a / Γ(a + 1) · Σ x^n / ((a + 1)…(a + n)).
            var term = 1 / a
            var sum = term
            var denominator = a
            for _ in 0..<100_000 {
                denominator += 1
                term *= x / denominator
                sum += term
                if abs(term) < abs(sum) * 1e-17 { break }
            }
            return min(1, sum * exp(-x + a * log(x) - lgamma(a)))
        }
        // Continued fraction for Q = 1 − P (modified Lentz).
        let tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var h = d
        for i in 1...100_000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            h *= delta
            if abs(delta - 1) < 1e-17 { break }
        }
        return max(0, 1 - exp(-x + a * log(x) - lgamma(a)) * h)
    }

    /// The x with P(a, x) = p.
    package static func inverseRegularizedLowerGamma(_ a: Double, _ p: Double) -> Double {
        // A bracket [low, high] with P(low) ≤ p ≤ P(high).
        var low = 0.0
        var high = max(1, a)
        while regularizedLowerGamma(a, high) < p { high *= 2 }
        // Start from the Wilson–Hilferty approximation, clamped into the bracket.
        let z = normalQuantile(p)
        let cube = 1 - 1 / (9 * a) + z / (3 * a.squareRoot())
        var x = cube > 0 ? a * cube * cube * cube : high / 2
        if !(x > low && x < high) { x = (low + high) / 2 }
        let logGammaA: Double = lgamma(a)
        for _ in 0..<400 {
            let value = regularizedLowerGamma(a, x) - p
            if value < 0 { low = x } else { high = x }
            if value == 0 || (high - low) <= 1e-13 * x { break }
            // Newton: the density is x^(a−1) e^(−x) / Γ(a).
            let density = exp((a - 1) * log(x) - x - logGammaA)
            var next = density > 0 ? x - value / density : .nan
            if !(next > low && next < high) { next = (low + high) / 2 }
            if abs(next - x) <= 1e-14 * x {
                x = next
                break
            }
            x = next
        }
        return x
    }

    /// The standard normal quantile (Acklam's rational approximation, about 1e-9 relative): only a
    /// starting point for the Newton steps above.
    static func normalQuantile(_ p: Double) -> Double {
        let a = [
            -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00,
        ]
        let b = [
            -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
            -1.328068155288572e+01,
        ]
        let c = [
            -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
            4.374664141464968e+00, 2.938163982698783e+00,
        ]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        if p < 0.02425 {
            let q = (-2 * log(p)).squareRoot()
            return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        if p > 1 - 0.02425 { return -normalQuantile(1 - p) }
        let q = p - 0.5
        let r = q * q
        return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    }
}
