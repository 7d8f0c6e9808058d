import AggregateSchema
import Foundation
import Testing

@testable import Aggregation

/// `null-eb-2`'s changes (docs/modeling.md) on the hand-worked strata of bench/test_model_reference.py:
/// every expected figure is worked out by hand from the contract, never by the code.
@Suite struct NullValueModelV2Tests {
    /// Rows of (measured postbacks, value of each) summed into one campaign's sums.
    static func sums(_ rows: [(Int64, Double)]) -> MeasuredSums {
        var total = MeasuredSums()
        for (m, value) in rows { total.add(MeasuredSums(measured: m, revenue: Double(m) * value)) }
        return total
    }

    // Network n. Campaign A (source 1111): 10 postbacks worth 0, 10 worth 10, 20 worth 5 → n 40, mean 5,
    // s² 12.5, 10 zeros. Campaigns B and C (SKAdNetwork 3.0: no source identifier, campaign IDs 7 and 8):
    // 10 worth 2; 10 worth 0. The app: n 60, mean 11/3, s² = 1540/60 − (11/3)², p0 = 20/60.
    static let a = ModelCampaign(adNetworkID: "n", sourceIdentifier: "1111", campaignID: "")
    static let b = ModelCampaign(adNetworkID: "n", sourceIdentifier: "", campaignID: "7")
    static let c = ModelCampaign(adNetworkID: "n", sourceIdentifier: "", campaignID: "8")
    static let stratum: [ModelCampaign: MeasuredSums] = [
        a: sums([(10, 0), (10, 10), (20, 5)]), b: sums([(10, 2)]), c: sums([(10, 0)]),
    ]
    static let s2App = 1540.0 / 60 - (11.0 / 3) * (11.0 / 3)
    /// Campaigns A, B, C around the network's mean 11/3: (40(4/3)² + 10(5/3)² + 10(11/3)² − 2 s²) / 30.
    static let tau2 = (40 * (4.0 / 3) * (4.0 / 3) + 10 * (5.0 / 3) * (5.0 / 3) + 10 * (11.0 / 3) * (11.0 / 3) - 2 * s2App) / 30
    static let shrinkC = s2App / (s2App + 10 * tau2)

    static func near(_ got: Double, _ want: Double, relative: Double = 0, absolute: Double = 0) -> Bool {
        abs(got - want) <= max(relative * abs(want), absolute)
    }

    @Test func theCampaignIDSeparatesSKAdNetwork3Campaigns() throws {
        let fit = try #require(NullValueModel.fit(Self.stratum))
        #expect(fit.campaigns.count == 3)
        #expect(Self.near(fit.campaignTau2["n"]!, Self.tau2, relative: 1e-12))
        // Campaign C (mean 0), one network whose mean is the app's: μ = B · 11/3.
        let row = NullValueModel.estimate(nulls: 3, model: fit.model(Self.c))
        #expect(Self.near(row.estimate, 3 * Self.shrinkC * 11 / 3, relative: 1e-12))
        // Pooled as one campaign (null-eb-1: B and C, mean 1) the estimate would differ by more than 0.1.
        #expect(abs(row.estimate - 3 * 1) > 0.1)
    }

    @Test func theValuesVarianceIsTheCampaignsOwnShrunkTowardItsNetwork() throws {
        let fit = try #require(NullValueModel.fit(Self.stratum))
        // Campaign C: s² 0 over 10 postbacks; the network's is the app's (one network: (60 s² + 30 s²)/90).
        let row = NullValueModel.estimate(nulls: 3, model: fit.model(Self.c))
        #expect(Self.near(row.valuesVariance, 3 * (10 * 0 + 30 * Self.s2App) / 40, relative: 1e-12))
        // Campaign A: (40 · 12.5 + 30 s²) / 70.
        #expect(Self.near(fit.model(Self.a).sigma2, (40 * 12.5 + 30 * Self.s2App) / 70, relative: 1e-12))
    }

    @Test func theZeroShareSetsTheLowEnd() throws {
        let fit = try #require(NullValueModel.fit(Self.stratum))
        // p0: app 20/60, network (20 + 30/3)/90 = 1/3, campaign C (10 + 30/3)/40 = 1/2.
        let three = NullValueModel.estimate(nulls: 3, model: fit.model(Self.c))
        #expect(Self.near(three.logPZero, 3 * log(0.5), relative: 1e-12))
        #expect(three.low == 0)  // 1/8 ≥ 5%
        // Campaign B has no zeros: (0 + 30/3)/40 = 1/4.
        let two = NullValueModel.estimate(nulls: 2, model: fit.model(Self.b))
        #expect(Self.near(two.logPZero, 2 * log(0.25), relative: 1e-12))
        #expect(two.low == 0)  // 1/16 ≥ 5%
        let threeB = NullValueModel.estimate(nulls: 3, model: fit.model(Self.b))
        #expect(Self.near(threeB.logPZero, 3 * log(0.25), relative: 1e-12))
        #expect(threeB.low > 0.1)  // 1/64 < 5%: the gamma's 5% quantile
        // Summed rows (the aggregation rule): two rows of ln(1/4) → 1/16 ≥ 5%, low 0; three → 1/64, the gamma's.
        #expect(NullValueModel.interval(mean: 4, variance: 2, logPZero: 2 * log(0.25)).low == 0)
        let gamma = GammaDistribution(shape: 8, scale: 0.5)
        #expect(
            Self.near(
                NullValueModel.interval(mean: 4, variance: 2, logPZero: 3 * log(0.25)).low, gamma.quantile(0.05),
                relative: 1e-12))
    }

    /// Campaigns of 10 postbacks each, 5 worth mean − 1 and 5 worth mean + 1 (own s² = 1).
    static func spread(_ network: String, _ means: [Double]) -> [ModelCampaign: MeasuredSums] {
        var out: [ModelCampaign: MeasuredSums] = [:]
        for mean in means {
            let campaign = ModelCampaign(adNetworkID: network, sourceIdentifier: String(1000 + Int((mean * 10).rounded())))
            out[campaign] = sums([(5, mean - 1), (5, mean + 1)])
        }
        return out
    }

    static func campaign(_ network: String, _ mean: Double) -> ModelCampaign {
        ModelCampaign(adNetworkID: network, sourceIdentifier: String(1000 + Int((mean * 10).rounded())))
    }

    @Test func morrisVarianceWithFourCampaigns() throws {
        // One network, means 2, 4, 6, 8: app n 40, mean 5, σ² = 1 + 20/4 = 6; τ² = (200 − 18)/30, K = 4.
        // Campaign 8: B = 6 / (6 + 10 · 182/30) = 0.09, V = 0.6 (1 − 0.75 · 0.09) + 2 · 0.09² · 9 = 0.7053
        // (floor: σ²_c = (10 + 30 · 6)/40 = 4.75, 0.475 below it).
        let fit = try #require(NullValueModel.fit(Self.spread("n", [2, 4, 6, 8])))
        let row = NullValueModel.estimate(nulls: 2, model: fit.model(Self.campaign("n", 8)))
        #expect(Self.near(row.meanSD, 2 * 0.7053.squareRoot(), relative: 1e-9))
        #expect(Self.near(row.estimate, 2 * (0.91 * 8 + 0.09 * 5), absolute: 1e-9))
        #expect(Self.near(row.valuesVariance, 2 * 4.75, relative: 1e-12))
    }

    @Test func morrisVarianceWithoutBetweenVarianceAndTheFloor() throws {
        // Means 4.8, 4.9, 5.1, 5.2: σ² = 1.025, Σ n (ȳ − 5)² = 1 < 3 · 1.025, so τ² = 0 with K = 4:
        // μ = 5, V = σ²/(n K) + 2/(K − 3) · (ȳ − 5)².
        let fit = try #require(NullValueModel.fit(Self.spread("n", [4.8, 4.9, 5.1, 5.2])))
        let high = NullValueModel.estimate(nulls: 2, model: fit.model(Self.campaign("n", 5.2)))
        #expect(Self.near(high.estimate, 10, absolute: 1e-9))
        #expect(Self.near(high.meanSD, 2 * (1.025 / 40 + 2 * 0.2 * 0.2).squareRoot(), relative: 1e-9))
        // Campaign 4.9: 1.025/40 + 2 · 0.01 = 0.045625, below the floor ((10 + 30 · 1.025)/40)/10.
        let low = NullValueModel.estimate(nulls: 2, model: fit.model(Self.campaign("n", 4.9)))
        #expect(Self.near(low.meanSD, 2 * ((10 + 30 * 1.025) / 40 / 10).squareRoot(), relative: 1e-9))
    }

    @Test func morrisVarianceBorrowingThePooledBetweenVariance() throws {
        // Network n: campaigns 2, 4, 6, 8; network m: one campaign of mean 5. App n 50, mean 5, σ² = 5.
        // m's campaign borrows the pooled τ² = (200 − 3 · 5)/30 with K = 5 (the stratum's campaigns):
        // B = 5 / (5 + 10 · 185/30) = 0.075, V = 0.5 (1 − 0.8 · 0.075) = 0.47 (floor 3.25/10 below it).
        let stratum = Self.spread("n", [2, 4, 6, 8]).merging(Self.spread("m", [5])) { $1 }
        let fit = try #require(NullValueModel.fit(stratum))
        let row = NullValueModel.estimate(nulls: 2, model: fit.model(Self.campaign("m", 5)))
        #expect(Self.near(row.meanSD, 2 * 0.47.squareRoot(), relative: 1e-9))
        #expect(Self.near(row.valuesVariance, 2 * 3.25, relative: 1e-12))
    }

    @Test func morrisVarianceNeedsFourCampaigns() throws {
        // Campaign C of the first stratum (K = 3): null-eb-1's V = B τ² + B² V_network (the app's s²/60),
        // above its floor (30 s²/40)/10.
        let fit = try #require(NullValueModel.fit(Self.stratum))
        let row = NullValueModel.estimate(nulls: 3, model: fit.model(Self.c))
        let v = Self.shrinkC * Self.tau2 + Self.shrinkC * Self.shrinkC * Self.s2App / 60
        #expect(Self.near(row.meanSD, 3 * v.squareRoot(), relative: 1e-9))
    }

    @Test func theModelsCacheKeepsTheCampaignIDAndTheZeros() throws {
        var sums = ModelSums()
        let stratum = ModelStratum(appID: "1", currency: "USD", window: "0", conversionType: "install")
        for (campaign, unit) in Self.stratum { sums.add(stratum, campaign, unit) }
        let again = try ModelSums(cacheCSV: sums.cacheCSV, path: "cache")
        #expect(again.strata == sums.strata)
        #expect(again.strata[stratum]?[Self.c]?.zeros == 10)
        #expect(again.strata[stratum]?[Self.a]?.zeros == 10)
        #expect(again.strata[stratum]?[Self.b]?.zeros == 0)
    }
}

/// What the model reads of a `campaign_daily` file: the stratum as the contract defines it.
@Suite struct ModelInputStratumTests {
    /// Downloads and redownloads are one conversion type (install), re-engagements another; an empty
    /// window (SKAdNetwork ≤ 3.0) is window 0; the campaign ID is part of the campaign.
    @Test func downloadsAndRedownloadsPoolAndAnEmptyWindowIsZero() throws {
        let csv = """
            app_id,currency,postback_sequence_index,conversion_type,ad_network_id,source_identifier,postbacks,null_cv_postbacks,revenue_est_sum,campaign_id
            1,USD,0,download,n,11,10,0,20,
            1,USD,0,redownload,n,11,5,0,5,
            1,USD,,download,n,,4,0,0,7
            1,USD,0,re-engagement,n,11,3,0,9,

            """
        let sums = try ModelSums.of(Array(csv.utf8), path: "campaign_daily.csv", parquet: false)
        let install = ModelStratum(appID: "1", currency: "USD", window: "0", conversionType: "install")
        let reengagement = ModelStratum(appID: "1", currency: "USD", window: "0", conversionType: "re-engagement")
        #expect(Set(sums.strata.keys) == [install, reengagement])
        let source = ModelCampaign(adNetworkID: "n", sourceIdentifier: "11")
        let campaign7 = ModelCampaign(adNetworkID: "n", sourceIdentifier: "", campaignID: "7")
        #expect(
            sums.strata[install]?[source] == MeasuredSums(count: 15, sumMicros: 25_000_000, squaresMicros: 45_000_000_000_000))
        #expect(sums.strata[install]?[campaign7] == MeasuredSums(count: 4, sumMicros: 0, squaresMicros: 0, zeros: 4))
        #expect(sums.strata[reengagement]?[source]?.count == 3)
    }
}
