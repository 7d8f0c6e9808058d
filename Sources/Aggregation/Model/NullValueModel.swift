package import AggregateSchema
import Foundation

/// The estimator of the model of what null-value postbacks were worth (`null-eb-2`, docs/modeling.md): an empirical-Bayes
/// normal-normal model of the mean, fitted by the method of moments top-down, app → ad network → campaign,
/// inside one stratum (app, currency, window, conversion type), from the measured postbacks of the
/// pooling window; each campaign's values variance and zero share shrunk toward its network's (prior
/// weight `priorPostbacks`), and the posterior variance of a shrunk unit corrected for the estimated
/// τ² (Morris), with a floor for campaigns. Pure and deterministic: every sum runs in the sorted order
/// of its keys.
extension NullValueModel {
    /// ln(p0) written when the zero share p0 is 0: finite, far below ln(0.05).
    package static let logZero = Foundation.log(1e-300)

    /// A unit's mean value per measured postback and the variance of that mean.
    package struct Posterior: Sendable, Equatable {
        package var mean: Double
        package var variance: Double

        package init(mean: Double, variance: Double) {
            self.mean = mean
            self.variance = variance
        }
    }

    /// What the model says of one unit (app, network or campaign): its mean's posterior, the variance of
    /// its individual values and the share of them worth exactly 0.
    package struct UnitModel: Sendable, Equatable {
        package var posterior: Posterior
        package var sigma2: Double
        package var pZero: Double

        package init(posterior: Posterior, sigma2: Double, pZero: Double) {
            self.posterior = posterior
            self.sigma2 = sigma2
            self.pZero = pZero
        }
    }

    /// The fitted model of one stratum.
    package struct StratumFit: Sendable {
        /// Measured postbacks of the stratum in the pooling window.
        package var measured: Int64
        /// The values' variance around their mean (the app level's, pooled over every unit): the one
        /// the mean's empirical Bayes uses.
        package var sigma2: Double
        package var app: UnitModel
        package var networks: [String: UnitModel]
        package var campaigns: [ModelCampaign: UnitModel]
        /// Between-network variance, and per network the between-campaign variance used.
        package var networkTau2: Double
        package var campaignTau2: [String: Double]

        /// The campaign's model; its network's (or the app's) when it has no measured postbacks.
        package func model(_ campaign: ModelCampaign) -> UnitModel {
            campaigns[campaign] ?? networks[campaign.adNetworkID] ?? app
        }

        /// The campaign's posterior mean and its variance.
        package func posterior(_ campaign: ModelCampaign) -> Posterior { model(campaign).posterior }
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
        let app = UnitModel(
            posterior: Posterior(mean: total.mean, variance: sigma2 / Double(total.count)), sigma2: sigma2,
            pZero: Double(total.zeros) / Double(total.count))

        let networkUnits = byNetwork.sorted { $0.key < $1.key }
        let networkTau2 = betweenVariance([networkUnits.map { ($0.value, app.posterior.mean) }], sigma2: sigma2)
        var networks: [String: UnitModel] = [:]
        for (network, unit) in networkUnits {
            networks[network] = UnitModel(
                posterior: shrink(
                    unit, toward: app.posterior, tau2: networkTau2, sigma2: sigma2, siblings: networkUnits.count),
                sigma2: shrunk(unit.squaredDeviations, count: unit.count, toward: app.sigma2),
                pZero: shrunk(Double(unit.zeros), count: unit.count, toward: app.pZero))
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
        var siblings: [String: Int] = [:]
        for (network, group) in sortedGroups {
            campaignTau2[network] = group.count >= 2 ? betweenVariance([group], sigma2: sigma2) : pooledTau2
            siblings[network] = group.count >= 2 ? group.count : campaigns.count
        }
        var models: [ModelCampaign: UnitModel] = [:]
        for (campaign, unit) in campaigns {
            let network = networks[campaign.adNetworkID]!
            var posterior = shrink(
                unit, toward: network.posterior, tau2: campaignTau2[campaign.adNetworkID]!, sigma2: sigma2,
                siblings: siblings[campaign.adNetworkID]!)
            let own = shrunk(unit.squaredDeviations, count: unit.count, toward: network.sigma2)
            // The floor: no less uncertain than the campaign's own mean.
            posterior.variance = max(posterior.variance, own / Double(unit.count))
            models[campaign] = UnitModel(
                posterior: posterior, sigma2: own, pZero: shrunk(Double(unit.zeros), count: unit.count, toward: network.pZero))
        }
        return StratumFit(
            measured: total.count, sigma2: sigma2, app: app, networks: networks, campaigns: models,
            networkTau2: networkTau2, campaignTau2: campaignTau2)
    }

    /// (own + P · parent) / (n + P): a unit's own total (n · s² or its zero count) shrunk toward its
    /// parent's value with the prior weight P = `priorPostbacks`.
    package static func shrunk(_ own: Double, count n: Int64, toward parent: Double) -> Double {
        let weight = Double(priorPostbacks)
        return (own + weight * parent) / (Double(n) + weight)
    }

    /// The method-of-moments between-unit variance over one or more groups of units, each unit with the
    /// mean of its own group (one-way analysis of variance, pooled over groups):
    /// τ² = max(0, (Q − df · σ²) / D), Q = Σ n_u (ȳ_u − ȳ_g)², df = Σ (K_g − 1),
    /// D = Σ (N_g − Σ n_u² / N_g), over groups with at least two units; 0 when there are none.
    package static func betweenVariance(_ groups: [[(unit: MeasuredSums, groupMean: Double)]], sigma2: Double) -> Double {
        // Each group's Q_g − (K_g − 1) σ² added up, n (ȳ − ȳ_g)² as n · (ȳ − ȳ_g)²: the order of
        // bench/model_reference.py, so that the Spark job (which runs it) mostly writes the same bits.
        var numerator = 0.0
        var d = 0.0
        for group in groups where group.count >= 2 {
            let n = Double(group.reduce(0) { $0 + $1.unit.count })
            var q = 0.0
            var squares = 0.0
            for (unit, groupMean) in group {
                let deviation = unit.mean - groupMean
                q += Double(unit.count) * (deviation * deviation)
                squares += Double(unit.count) * Double(unit.count)
            }
            numerator += q - Double(group.count - 1) * sigma2
            d += n - squares / n
        }
        guard d > 0 else { return 0 }
        return max(0, numerator / d)
    }

    /// The unit's posterior under a normal prior N(parent mean, τ²): shrinkage share B = σ² / (σ² + n τ²),
    /// mean = (1 − B) ȳ + B μ (the parent's mean when τ² = 0). With fewer than 4 `siblings` (K, the units
    /// with data behind τ²) the variance is B τ² + B² V (the parent's when τ² = 0); with K ≥ 4 it counts
    /// the uncertainty of τ² and of the parent's mean (Morris 1983):
    /// (σ² / n)(1 − (K − 1)/K · B) + 2/(K − 3) · B² (ȳ − μ)², B = 1 when τ² = 0.
    package static func shrink(
        _ unit: MeasuredSums, toward parent: Posterior, tau2: Double, sigma2: Double, siblings: Int = 0
    ) -> Posterior {
        let n = Double(unit.count)
        guard n > 0 else { return parent }
        guard siblings >= 4 else {
            guard tau2 > 0 else { return parent }
            let b = sigma2 / (sigma2 + n * tau2)
            return Posterior(mean: (1 - b) * unit.mean + b * parent.mean, variance: b * tau2 + b * b * parent.variance)
        }
        let b = tau2 > 0 ? sigma2 / (sigma2 + n * tau2) : 1
        let mean = tau2 > 0 ? (1 - b) * unit.mean + b * parent.mean : parent.mean
        let k = Double(siblings)
        let deviation = unit.mean - parent.mean
        return Posterior(
            mean: mean, variance: (sigma2 / n) * (1 - (k - 1) / k * b) + 2 / (k - 3) * b * b * (deviation * deviation))
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
        /// k · ln(p0): the log of the chance that all k are worth 0.
        package var logPZero: Double

        package static let zero = RowEstimate(estimate: 0, low: 0, high: 0, valuesVariance: 0, meanSD: 0, logPZero: 0)
    }

    /// k · μ, with variance k σ² + k² V, and the 5%–95% quantiles of the gamma with that mean and
    /// variance (the mean itself when the variance is 0; all 0 when the mean is); the low end 0 when
    /// k · ln(p0) ≥ ln(0.05).
    package static func estimate(nulls k: Int64, model: UnitModel) -> RowEstimate {
        let count = Double(k)
        let valuesVariance = count * model.sigma2
        let meanSD = count * model.posterior.variance.squareRoot()
        let logPZero = count * (model.pZero > 0 ? Foundation.log(model.pZero) : logZero)
        let (estimate, low, high) = interval(
            mean: count * model.posterior.mean, variance: valuesVariance + meanSD * meanSD, logPZero: logPZero)
        return RowEstimate(
            estimate: estimate, low: low, high: high, valuesVariance: valuesVariance, meanSD: meanSD, logPZero: logPZero)
    }
}

/// A campaign inside a stratum: its ad network, source identifier and campaign ID, as the row publishes
/// them (empty when the postbacks had none: SKAdNetwork ≤ 3.0 postbacks carry a campaign ID only).
package struct ModelCampaign: Hashable, Comparable, Sendable {
    package var adNetworkID: String
    package var sourceIdentifier: String
    package var campaignID: String

    package init(adNetworkID: String, sourceIdentifier: String, campaignID: String = "") {
        self.adNetworkID = adNetworkID
        self.sourceIdentifier = sourceIdentifier
        self.campaignID = campaignID
    }

    package static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.adNetworkID, lhs.sourceIdentifier, lhs.campaignID) < (rhs.adNetworkID, rhs.sourceIdentifier, rhs.campaignID)
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

/// A unit's measured postbacks: their count n, Σ value, Σ value² (each postback of a row with m
/// measured postbacks and revenue R is worth R / m) and how many are worth exactly 0 (the m of rows
/// with R = 0). Kept exactly, in integers: Σ value in micro-units and Σ value² as each row's R² / m in
/// micro-units², rounded once per row, so that sums added and taken away in any order (the pooling
/// window sliding over the days) are the same bits in every run.
package struct MeasuredSums: Sendable, Equatable {
    package var count: Int64 = 0
    package var sumMicros: Int64 = 0
    package var squaresMicros: Int128 = 0
    package var zeros: Int64 = 0

    package init() {}

    package init(count: Int64, sumMicros: Int64, squaresMicros: Int128, zeros: Int64 = 0) {
        self.count = count
        self.sumMicros = sumMicros
        self.squaresMicros = squaresMicros
        self.zeros = zeros
    }

    /// From amounts (rounded to the micro-unit, and Σ value² to the micro-unit²).
    package init(count: Int64, sum: Double, squares: Double, zeros: Int64 = 0) {
        self.init(
            count: count, sumMicros: Int64((sum * 1e6).rounded()), squaresMicros: Int128((squares * 1e12).rounded()),
            zeros: zeros)
    }

    /// A row's m measured postbacks with revenue R in all (micro-units).
    package init(measured m: Int64, revenueMicros r: Int64) {
        let square = Int128(r) * Int128(r)
        let m128 = Int128(m)
        // R² / m rounded half up (R² ≥ 0).
        self.init(count: m, sumMicros: r, squaresMicros: (square + m128 / 2) / m128, zeros: r == 0 ? m : 0)
    }

    /// A row's m measured postbacks with revenue `revenue` in all.
    package init(measured m: Int64, revenue: Double) {
        self.init(measured: m, revenueMicros: Int64((revenue * 1e6).rounded()))
    }

    package mutating func add(_ other: MeasuredSums) {
        count += other.count
        sumMicros += other.sumMicros
        squaresMicros += other.squaresMicros
        zeros += other.zeros
    }

    package mutating func subtract(_ other: MeasuredSums) {
        count -= other.count
        sumMicros -= other.sumMicros
        squaresMicros -= other.squaresMicros
        zeros -= other.zeros
    }

    /// Σ value.
    package var sum: Double { Double(sumMicros) / 1e6 }
    /// Σ value².
    package var squares: Double { Double(squaresMicros) / 1e12 }
    package var mean: Double { count > 0 ? sum / Double(count) : 0 }
    /// Population form: Σ v² / n − ȳ², never below 0.
    package var variance: Double { count > 0 ? max(0, squares / Double(count) - mean * mean) : 0 }
    /// n · variance: Σ (v − ȳ)².
    package var squaredDeviations: Double { Double(count) * variance }
}
