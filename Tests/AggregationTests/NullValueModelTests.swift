import AggregateSchema
import Testing

@testable import Aggregation

/// The null-value model's pieces against values worked out apart from the code: the gamma quantiles
/// against `scripts/gamma_quantiles.py` (the density integrated by Gauss–Legendre, no incomplete-gamma
/// series) and a χ² table, the estimator against a two-network stratum worked by hand from
/// docs/modeling.md, and its limits.
@Suite struct NullValueModelTests {
    /// (shape, p, quantile of the unit-scale gamma), printed by `scripts/venv-python scripts/gamma_quantiles.py`.
    static let gammaQuantiles: [(Double, Double, Double)] = [
        (0.05, 0.05, 5.573875481878773e-27),
        (0.05, 0.95, 0.2659323024258399),
        (0.5, 0.05, 0.0019660700000097625),
        (0.5, 0.95, 1.9207294103470618),
        (1.0, 0.05, 0.05129329438755052),
        (1.0, 0.95, 2.9957322735539877),
        (2.5, 0.05, 0.572738113030892),
        (2.5, 0.95, 5.535248846768209),
        (10.0, 0.05, 5.425405697091293),
        (10.0, 0.95, 15.705216422115363),
        (40.0, 0.05, 30.19573919434474),
        (40.0, 0.95, 50.93973698271802),
    ]

    @Test func gammaQuantilesMatchAnIndependentIntegration() {
        for (shape, p, expected) in Self.gammaQuantiles {
            let quantile = GammaDistribution(shape: shape, scale: 1).quantile(p)
            #expect(abs(quantile - expected) <= 1e-9 * expected, "shape \(shape), p \(p): \(quantile), expected \(expected)")
            // Scale multiplies the quantile.
            let scaled = GammaDistribution(shape: shape, scale: 7.5).quantile(p)
            #expect(abs(scaled - 7.5 * expected) <= 1e-9 * 7.5 * expected)
        }
    }

    /// χ²(ν) is the gamma of shape ν/2 and scale 2; the table's 5% and 95% points (Pearson & Hartley,
    /// to the table's three decimals).
    @Test func gammaQuantilesMatchTheChiSquareTable() {
        let table: [(nu: Double, low: Double, high: Double)] = [
            (1, 0.00393, 3.841), (2, 0.103, 5.991), (5, 1.145, 11.070), (10, 3.940, 18.307), (30, 18.493, 43.773),
        ]
        for (nu, low, high) in table {
            let chi2 = GammaDistribution(shape: nu / 2, scale: 2)
            #expect(abs(chi2.quantile(0.05) - low) <= 0.0006, "χ²(\(nu)) 5%: \(chi2.quantile(0.05))")
            #expect(abs(chi2.quantile(0.95) - high) <= 0.0006, "χ²(\(nu)) 95%: \(chi2.quantile(0.95))")
        }
    }

    @Test func theQuantileInvertsTheDistributionFunction() {
        for shape in [0.02, 0.3, 1, 3.7, 55, 2_000] {
            for p in [0.05, 0.5, 0.95] {
                let gamma = GammaDistribution(shape: shape, scale: 1)
                let x = gamma.quantile(p)
                #expect(abs(gamma.cdf(x) - p) <= 1e-10, "shape \(shape), p \(p): P(\(x)) = \(gamma.cdf(x))")
            }
        }
    }

    /// Network A's campaign: 10 postbacks worth 1; network B's: 10 worth 3. Worked by hand:
    /// app ȳ = 2, σ² = (10 + 90) / 20 − 4 = 1, V_app = 1/20; between networks Q = 10·1 + 10·1 = 20,
    /// df = 1, D = 20 − (100 + 100)/20 = 10, τ² = (20 − 1)/10 = 1.9; w = 10·1.9/(19 + 1) = 0.95,
    /// μ_A = 0.95 + 0.05·2 = 1.05, V_A = 0.95/10 + 0.05²/20 = 0.095125 (K = 2 networks: no Morris
    /// correction). One campaign per network and none with two: the campaigns' τ² is 0, so each
    /// campaign's mean is its network's; its own variance (every value the same: 0) shrunk toward its
    /// network's (10·0 + 30·1)/40 = 0.75 is 30·0.75/40 = 0.5625; its floor 0.05625 is below V_A.
    @Test func aTwoNetworkStratumWorkedByHand() throws {
        let a = ModelCampaign(adNetworkID: "a", sourceIdentifier: "1")
        let b = ModelCampaign(adNetworkID: "b", sourceIdentifier: "2")
        let fit = try #require(
            NullValueModel.fit([a: MeasuredSums(measured: 10, revenue: 10), b: MeasuredSums(measured: 10, revenue: 30)]))
        #expect(fit.measured == 20)
        #expect(abs(fit.sigma2 - 1) < 1e-12)
        #expect(abs(fit.networkTau2 - 1.9) < 1e-12)
        #expect(abs(fit.posterior(a).mean - 1.05) < 1e-12)
        #expect(abs(fit.posterior(a).variance - 0.095125) < 1e-12)
        #expect(abs(fit.posterior(b).mean - 2.95) < 1e-12)
        #expect(abs(fit.model(a).sigma2 - 0.5625) < 1e-12)
        #expect(fit.model(a).pZero == 0)
        #expect(fit.campaignTau2["a"] == 0)
        // A campaign without measured postbacks takes its network's model; one of an unseen network, the app's.
        #expect(fit.model(ModelCampaign(adNetworkID: "a", sourceIdentifier: "9")) == fit.networks["a"])
        #expect(abs(fit.model(ModelCampaign(adNetworkID: "a", sourceIdentifier: "9")).sigma2 - 0.75) < 1e-12)
        #expect(fit.model(ModelCampaign(adNetworkID: "z", sourceIdentifier: "9")) == fit.app)
        // Three nulls of campaign a: 3 · 1.05, variance 3 · 0.5625 + 9 · 0.095125; no measured postback
        // is worth 0, so k · ln(1e-300) and the gamma's low end.
        let row = NullValueModel.estimate(nulls: 3, model: fit.model(a))
        #expect(abs(row.estimate - 3.15) < 1e-12)
        #expect(abs(row.valuesVariance - 1.6875) < 1e-12)
        #expect(abs(row.meanSD - 3 * 0.095125.squareRoot()) < 1e-12)
        #expect(abs(row.logPZero - 3 * -690.7755278982137) < 1e-9)
        let variance = 1.6875 + 9 * 0.095125
        let gamma = GammaDistribution(shape: 3.15 * 3.15 / variance, scale: variance / 3.15)
        #expect(abs(row.low - gamma.quantile(0.05)) < 1e-9 && abs(row.high - gamma.quantile(0.95)) < 1e-9)
        #expect(row.low < row.estimate && row.estimate < row.high)
    }

    /// With ever more postbacks a campaign's posterior mean is its own mean; with τ² = 0 its parent's.
    @Test func shrinkageGoesFromTheParentToTheCampaignsOwnMean() throws {
        let parent = NullValueModel.Posterior(mean: 2, variance: 0.01)
        var previous = Double.infinity
        for n: Int64 in [1, 10, 1_000, 1_000_000, 1_000_000_000] {
            let own = MeasuredSums(measured: n, revenue: 5 * Double(n))
            let posterior = NullValueModel.shrink(own, toward: parent, tau2: 0.5, sigma2: 4)
            let distance = abs(posterior.mean - 5)
            #expect(distance < previous, "n = \(n): \(posterior.mean)")
            previous = distance
        }
        #expect(previous < 1e-6)
        let none = NullValueModel.shrink(MeasuredSums(measured: 1_000, revenue: 5_000), toward: parent, tau2: 0, sigma2: 4)
        #expect(none == parent)

        // Campaigns with the same mean 2 and values variance 1 (σ² of the app 1, V 1/70): no
        // between-campaign variance, so every campaign gets its network's mean; its variance is the
        // floor, its own shrunk values variance (1) over its postbacks: 1/50 and 1/20, above 1/70.
        let first = ModelCampaign(adNetworkID: "a", sourceIdentifier: "1")
        let second = ModelCampaign(adNetworkID: "a", sourceIdentifier: "2")
        let same = [
            first: MeasuredSums(count: 50, sum: 100, squares: 250),
            second: MeasuredSums(count: 20, sum: 40, squares: 100),
        ]
        let fit = try #require(NullValueModel.fit(same))
        #expect(fit.campaignTau2["a"] == 0)
        for campaign in same.keys { #expect(fit.posterior(campaign).mean == fit.networks["a"]!.posterior.mean) }
        #expect(abs(fit.posterior(first).variance - 1.0 / 50) < 1e-12)
        #expect(abs(fit.posterior(second).variance - 1.0 / 20) < 1e-12)
        // One network: its mean is the app's.
        #expect(fit.networks["a"]!.posterior == fit.app.posterior)
    }

    @Test func rowsWithoutNullsOrWithoutValueAreZero() {
        func model(mean: Double, variance: Double, sigma2: Double, pZero: Double) -> NullValueModel.UnitModel {
            .init(posterior: .init(mean: mean, variance: variance), sigma2: sigma2, pZero: pZero)
        }
        let zero = NullValueModel.estimate(nulls: 4, model: model(mean: 0, variance: 0, sigma2: 0, pZero: 1))
        #expect(zero == NullValueModel.RowEstimate.zero)
        let none = NullValueModel.estimate(nulls: 0, model: model(mean: 3, variance: 1, sigma2: 2, pZero: 0.5))
        #expect(none.estimate == 0 && none.low == 0 && none.high == 0)
        // Every value the same (σ² = 0, no uncertainty of the mean): the interval is the estimate.
        let exact = NullValueModel.estimate(nulls: 2, model: model(mean: 3, variance: 0, sigma2: 0, pZero: 0))
        #expect(exact.estimate == 6 && exact.low == 6 && exact.high == 6)
        // ... unless the chance that both are worth 0 is at least 5%: 0.3² = 9%.
        let maybeZero = NullValueModel.estimate(nulls: 2, model: model(mean: 3, variance: 0, sigma2: 0, pZero: 0.3))
        #expect(maybeZero.estimate == 6 && maybeZero.low == 0 && maybeZero.high == 6)
    }
}
