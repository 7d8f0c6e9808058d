/// The model of what null-value postbacks were worth (`null-eb-1`, docs/modeling.md): an empirical-Bayes
/// normal-normal model, fitted by the method of moments top-down, app → ad network → campaign, inside
/// one stratum (app, currency, window, conversion type), from the measured postbacks of the pooling
/// window. Pure and deterministic: every sum runs in the sorted order of its keys.
package enum NullValueModel {
    package static let name = "null-eb-1"
    /// Arrival days pooled: the day being published and the 27 before it.
    package static let poolingDays = 28
    /// Measured postbacks a stratum needs in the pooling window to be modeled.
    package static let minMeasured: Int64 = 30
    /// The interval's coverage (from its 5% to its 95% quantile).
    package static let interval = 0.9

    /// A unit's mean value per measured postback and the variance of that mean.
    package struct Posterior: Sendable, Equatable {
        package var mean: Double
        package var variance: Double

        package init(mean: Double, variance: Double) {
            self.mean = mean
            self.variance = variance
        }
    }

    /// The fitted model of one stratum.
    package struct StratumFit: Sendable {
        /// Measured postbacks of the stratum in the pooling window.
        package var measured: Int64
        /// The values' variance around their mean (the app level's, pooled over every unit).
        package var sigma2: Double
        package var app: Posterior
        package var networks: [String: Posterior]
        package var campaigns: [ModelCampaign: Posterior]
        /// Between-network variance, and per network the between-campaign variance used.
        package var networkTau2: Double
        package var campaignTau2: [String: Double]

        /// The campaign's posterior; its network's (or the app's) when it has no measured postbacks.
        package func posterior(_ campaign: ModelCampaign) -> Posterior {
            campaigns[campaign] ?? networks[campaign.adNetworkID] ?? app
        }
    }

    /// Fits one stratum from each campaign's sums in the pooling window; nil when nothing is measured.
    package static func fit(_ sums: [ModelCampaign: MeasuredSums]) -> StratumFit? {
        let campaigns = sums.filter { $0.value.count > 0 }.sorted { $0.key < $1.key }
        guard !campaigns.isEmpty else { return nil }
        var total = MeasuredSums()
        var byNetwork: [String: MeasuredSums] = [:]
        for (campaign, unit) in campaigns {
            total.add(unit)
            byNetwork[campaign.adNetworkID, default: MeasuredSums()].add(unit)
        }
        let sigma2 = total.variance
        let app = Posterior(mean: total.mean, variance: sigma2 / Double(total.count))

        let networkUnits = byNetwork.sorted { $0.key < $1.key }
        let networkTau2 = betweenVariance([networkUnits.map { ($0.value, app.mean) }], sigma2: sigma2)
        var networks: [String: Posterior] = [:]
        for (network, unit) in networkUnits {
            networks[network] = shrink(unit, toward: app, tau2: networkTau2, sigma2: sigma2)
        }

        // Campaigns around their network's own mean; a network with fewer than two measured campaigns
        // borrows the between-campaign variance pooled over every network of the stratum.
        var groups: [String: [(MeasuredSums, Double)]] = [:]
        for (campaign, unit) in campaigns {
            groups[campaign.adNetworkID, default: []].append((unit, byNetwork[campaign.adNetworkID]!.mean))
        }
        let sortedGroups = groups.sorted { $0.key < $1.key }
        let pooledTau2 = betweenVariance(sortedGroups.map(\.value), sigma2: sigma2)
        var campaignTau2: [String: Double] = [:]
        for (network, group) in sortedGroups {
            campaignTau2[network] = group.count >= 2 ? betweenVariance([group], sigma2: sigma2) : pooledTau2
        }
        var posteriors: [ModelCampaign: Posterior] = [:]
        for (campaign, unit) in campaigns {
            posteriors[campaign] = shrink(
                unit, toward: networks[campaign.adNetworkID]!, tau2: campaignTau2[campaign.adNetworkID]!, sigma2: sigma2)
        }
        return StratumFit(
            measured: total.count, sigma2: sigma2, app: app, networks: networks, campaigns: posteriors,
            networkTau2: networkTau2, campaignTau2: campaignTau2)
    }

    /// The method-of-moments between-unit variance over one or more groups of units, each unit with the
    /// mean of its own group (one-way analysis of variance, pooled over groups):
    /// τ² = max(0, (Q − df · σ²) / D), Q = Σ n_u (ȳ_u − ȳ_g)², df = Σ (K_g − 1),
    /// D = Σ (N_g − Σ n_u² / N_g), over groups with at least two units; 0 when there are none.
    package static func betweenVariance(_ groups: [[(unit: MeasuredSums, groupMean: Double)]], sigma2: Double) -> Double {
        var q = 0.0
        var df = 0.0
        var d = 0.0
        for group in groups where group.count >= 2 {
            let n = Double(group.reduce(0) { $0 + $1.unit.count })
            var squares = 0.0
            for (unit, groupMean) in group {
                let deviation = unit.mean - groupMean
                q += Double(unit.count) * deviation * deviation
                squares += Double(unit.count) * Double(unit.count)
            }
            df += Double(group.count - 1)
            d += n - squares / n
        }
        guard d > 0 else { return 0 }
        return max(0, (q - df * sigma2) / d)
    }

    /// The unit's posterior under a normal prior N(parent mean, τ²), with the parent mean's own
    /// uncertainty carried by the shrinkage share: mean = w ȳ + (1 − w) μ, variance = w σ² / n + (1 − w)² V,
    /// w = n τ² / (n τ² + σ²) (w = 1 when σ² = 0 < τ²; w = 0 when τ² = 0).
    package static func shrink(_ unit: MeasuredSums, toward parent: Posterior, tau2: Double, sigma2: Double) -> Posterior {
        let n = Double(unit.count)
        guard tau2 > 0, n > 0 else { return parent }
        let w = n * tau2 / (n * tau2 + sigma2)
        return Posterior(
            mean: w * unit.mean + (1 - w) * parent.mean,
            variance: w * sigma2 / n + (1 - w) * (1 - w) * parent.variance)
    }

    /// What a row's `k` null postbacks are modeled at.
    package struct RowEstimate: Sendable, Equatable {
        package var estimate: Double
        package var low: Double
        package var high: Double
        /// k · σ²: the individual values' part of the variance (independent between rows).
        package var valuesVariance: Double
        /// k · √V: the campaign mean's part (fully correlated between rows of a campaign and stratum).
        package var meanSD: Double
    }

    /// k · μ, with variance k σ² + k² V, and the 5%–95% quantiles of the gamma with that mean and
    /// variance (the mean itself when the variance is 0; all 0 when the mean is).
    package static func estimate(nulls k: Int64, posterior: Posterior, sigma2: Double) -> RowEstimate {
        let count = Double(k)
        let valuesVariance = count * sigma2
        let meanSD = count * posterior.variance.squareRoot()
        let (estimate, low, high) = interval(mean: count * posterior.mean, variance: valuesVariance + meanSD * meanSD)
        return RowEstimate(estimate: estimate, low: low, high: high, valuesVariance: valuesVariance, meanSD: meanSD)
    }

    /// The estimate and the 90% interval of a total with this mean and variance (a row's, or a sum's by
    /// the aggregation rule of docs/modeling.md).
    package static func interval(mean: Double, variance: Double) -> (estimate: Double, low: Double, high: Double) {
        guard mean > 0 else { return (0, 0, 0) }
        guard let gamma = GammaDistribution(mean: mean, variance: variance) else { return (mean, mean, mean) }
        let tail = (1 - interval) / 2
        return (mean, max(0, gamma.quantile(tail)), gamma.quantile(1 - tail))
    }
}

/// A campaign inside a stratum: its ad network and source identifier (empty when the postbacks had none).
package struct ModelCampaign: Hashable, Comparable, Sendable {
    package var adNetworkID: String
    package var sourceIdentifier: String

    package init(adNetworkID: String, sourceIdentifier: String) {
        self.adNetworkID = adNetworkID
        self.sourceIdentifier = sourceIdentifier
    }

    package static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.adNetworkID, lhs.sourceIdentifier) < (rhs.adNetworkID, rhs.sourceIdentifier)
    }
}

/// The model's stratum: app, revenue currency, window (`postback_sequence_index`) and conversion type.
package struct ModelStratum: Hashable, Comparable, Sendable {
    package var appID: String
    package var currency: String
    package var window: String
    package var conversionType: String

    package init(appID: String, currency: String, window: String, conversionType: String) {
        self.appID = appID
        self.currency = currency
        self.window = window
        self.conversionType = conversionType
    }

    package static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.appID, lhs.currency, lhs.window, lhs.conversionType) < (rhs.appID, rhs.currency, rhs.window, rhs.conversionType)
    }
}

/// A unit's measured postbacks: their count n, Σ value and Σ value² (each postback of a row with m
/// measured postbacks and revenue R is worth R / m). Kept exactly, in integers: Σ value in micro-units
/// and Σ value² as each row's R² / m in micro-units², rounded once per row, so that sums added and
/// taken away in any order (the pooling window sliding over the days) are the same bits in every run.
package struct MeasuredSums: Sendable, Equatable {
    package var count: Int64 = 0
    package var sumMicros: Int64 = 0
    package var squaresMicros: Int128 = 0

    package init() {}

    package init(count: Int64, sumMicros: Int64, squaresMicros: Int128) {
        self.count = count
        self.sumMicros = sumMicros
        self.squaresMicros = squaresMicros
    }

    /// From amounts (rounded to the micro-unit, and Σ value² to the micro-unit²).
    package init(count: Int64, sum: Double, squares: Double) {
        self.init(count: count, sumMicros: Int64((sum * 1e6).rounded()), squaresMicros: Int128((squares * 1e12).rounded()))
    }

    /// A row's m measured postbacks with revenue R in all (micro-units).
    package init(measured m: Int64, revenueMicros r: Int64) {
        let square = Int128(r) * Int128(r)
        let m128 = Int128(m)
        // R² / m rounded half up (R² ≥ 0).
        self.init(count: m, sumMicros: r, squaresMicros: (square + m128 / 2) / m128)
    }

    /// A row's m measured postbacks with revenue `revenue` in all.
    package init(measured m: Int64, revenue: Double) {
        self.init(measured: m, revenueMicros: Int64((revenue * 1e6).rounded()))
    }

    package mutating func add(_ other: MeasuredSums) {
        count += other.count
        sumMicros += other.sumMicros
        squaresMicros += other.squaresMicros
    }

    package mutating func subtract(_ other: MeasuredSums) {
        count -= other.count
        sumMicros -= other.sumMicros
        squaresMicros -= other.squaresMicros
    }

    /// Σ value.
    package var sum: Double { Double(sumMicros) / 1e6 }
    /// Σ value².
    package var squares: Double { Double(squaresMicros) / 1e12 }
    package var mean: Double { count > 0 ? sum / Double(count) : 0 }
    /// Population form: Σ v² / n − ȳ², never below 0.
    package var variance: Double { count > 0 ? max(0, squares / Double(count) - mean * mean) : 0 }
}
