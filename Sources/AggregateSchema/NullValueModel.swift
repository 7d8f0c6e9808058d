import Foundation

/// The model of what null-value postbacks were worth (`null-eb-2`, docs/modeling.md), as far as the
/// published data declares it: the parameters the manifests and the report name, and the rule by
/// which a total of modeled rows gets its interval. Aggregation's extension holds the estimator.
package enum NullValueModel {
    package static let name = "null-eb-2"
    /// Arrival days pooled: the day being published and the 27 before it.
    package static let poolingDays = 28
    /// Measured postbacks a stratum needs in the pooling window to be modeled.
    package static let minMeasured: Int64 = 30
    /// The interval's coverage (from its 5% to its 95% quantile).
    package static let interval = 0.9
    /// The weight, in postbacks, of a parent's values variance and zero share in a unit's own.
    package static let priorPostbacks = 30
    /// log P(all null postbacks worth 0) at or above this: the interval's low end is 0.
    package static let logLow = Foundation.log(0.05)

    /// The estimate and the 90% interval of a total with this mean, variance and log chance of being 0 (a
    /// row's, or a sum's by the aggregation rule of docs/modeling.md: Σ log_p_zero).
    package static func interval(mean: Double, variance: Double, logPZero: Double) -> (
        estimate: Double, low: Double, high: Double
    ) {
        guard mean > 0 else { return (0, 0, 0) }
        let (low, high): (Double, Double)
        if let gamma = GammaDistribution(mean: mean, variance: variance) {
            let tail = (1 - interval) / 2
            (low, high) = (max(0, gamma.quantile(tail)), gamma.quantile(1 - tail))
        } else {
            (low, high) = (mean, mean)
        }
        return (mean, logPZero >= logLow ? 0 : low, high)
    }
}
