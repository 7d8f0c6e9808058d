import Basics
import Postbacks

/// Plausible, varied test postbacks for benchmarks and load tests, reproducible from a seed.
///
/// Each postback gets its own transaction / postback identifier (a UUID drawn from the seed), and the
/// other fields vary the way real traffic does: several apps, ad networks and campaigns, all three
/// SKAdNetwork 4 windows, fine and coarse values, null values, non-winning postbacks, view and click.
package struct SyntheticPostbacks: Sendable {
    package enum Kind: String, Sendable, CaseIterable {
        case skan2_0 = "2.0"
        case skan2_1 = "2.1"
        case skan2_2 = "2.2"
        case skan3_0 = "3.0"
        case skan4_0 = "4.0"
        case aak
        case skan1_0 = "1.0"
    }

    package var kinds: [Kind]
    package var apps: [Int64] = [525_463_029, 1_229_670_720, 6_443_575_749]
    package var adNetworks = 4
    package var campaigns = 20
    /// Traffic shaped like one advertiser's (`postback generate --app/--schema/...`): each left nil
    /// keeps the default mix above, drawn from the same random numbers.
    package var adNetworkIDs: [String]?
    /// Four-digit source identifiers (SKAdNetwork 4.0 and AdAttributionKit), drawn Zipf-like.
    package var sourceIdentifiers: [String]?
    /// Fine values to draw from, the first most often (Zipf-like), e.g. the values a schema maps.
    package var fineValues: [Int]?
    /// Share of winning postbacks without a conversion value (default 1 in 5).
    package var nullShare: Double?
    /// Share of AdAttributionKit postbacks that are re-engagements (default 1 in 4).
    package var reengagementShare: Double?
    /// Postback windows (sequence indices) to draw from (default 0, 1, 2).
    package var windows: [Int]?
    /// Each of `sourceIdentifiers` gets values of its own (fine values and coarse levels drawn from
    /// its own part of the range), so campaigns differ in value as well as in volume: the demo's
    /// "which campaign is best" then has an answer. SKAdNetwork 2–3 campaign ids follow the source
    /// identifier's place in the list (1, 2, …), so a schema's campaign-id map can name them alike.
    package var valuesFollowCampaign = false

    package init(kinds: [Kind]) { self.kinds = kinds }

    /// An element of `values`, the first ones most often: index ⌊n·u²⌋ for a uniform u, so the first
    /// tenth of the list gets about a third of the draws, as campaigns and values do in real traffic.
    static func skewed<T>(_ values: [T], _ draw: UInt64) -> T { values[skewedIndex(values.count, draw)] }

    static func skewedIndex(_ count: Int, _ draw: UInt64) -> Int {
        let unit = Double(draw >> 11) / Double(1 << 53)
        return min(count - 1, Int(Double(count) * unit * unit))
    }

    /// True with probability `share` (or the default `1/denominator`), from one draw either way.
    static func chance(_ share: Double?, orOneIn denominator: UInt64, _ draw: UInt64) -> Bool {
        guard let share else { return draw % denominator == 0 }
        return Double(draw >> 11) / Double(1 << 53) < share
    }

    /// The description of postback number `index` (deterministic in `seed` and `index`).
    package func postback(_ index: Int, seed: UInt64) -> Description {
        var random = SplitMix64(seed: seed ^ (UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
        let kind = kinds[index % kinds.count]
        let id = random.uuid()
        let app = apps[Int(random.next() % UInt64(apps.count))]
        let networkDraw = random.next()
        let network = Int(networkDraw % UInt64(adNetworks))
        let campaignDraw = random.next()
        let campaign = 1 + Int(campaignDraw % UInt64(campaigns))
        let didWin = random.next() % 10 != 0
        let fidelity = Int(random.next() % 3 == 0 ? 0 : 1)
        let window = didWin ? windows.map { Self.skewed($0, random.next()) } ?? Int(random.next() % 3) : 0
        let nullValue = Self.chance(nullShare, orOneIn: 5, random.next())
        let fineDraw = random.next()
        // With valuesFollowCampaign, source k of n draws from its own part of the values: later
        // sources (fewer postbacks) convert to higher values.
        let sourceIndex = sourceIdentifiers.map { Self.skewedIndex($0.count, campaignDraw) }
        let tilt = valuesFollowCampaign ? sourceIndex.map { ($0, sourceIdentifiers!.count) } : nil
        let fine =
            fineValues.map { values in
                guard let (k, n) = tilt else { return Self.skewed(values, fineDraw) }
                return values[(k * values.count / n + Self.skewedIndex(max(1, values.count / n), fineDraw)) % values.count]
            } ?? Int(fineDraw % 64)
        let explicitNetwork = adNetworkIDs.map { Self.skewed($0, networkDraw) }
        let explicitSource = sourceIndex.map { sourceIdentifiers![$0] }
        let coarseDraw = Int(random.next() % 3)
        let coarse = ["low", "medium", "high"][tilt.map { min(2, $0.0 * 3 / $0.1 + (coarseDraw == 0 ? 1 : 0)) } ?? coarseDraw]
        let country = ["US", "GB", "DE", "JP", "BR"][Int(random.next() % 5)]

        switch kind {
        case .aak:
            var aak = AdAttributionKitTestPostback(postbackIdentifier: id.uppercased())
            aak.adNetworkID = explicitNetwork ?? "network\(network).adattributionkit"
            let sourceDraw = random.next()
            aak.sourceIdentifier = explicitSource ?? String(format4: 1000 + campaign * 10 + Int(sourceDraw % 10))
            aak.advertisedItemID = app
            let typeDraw = random.next()
            if reengagementShare != nil {
                aak.conversionType =
                    Self.chance(reengagementShare, orOneIn: 4, typeDraw)
                    ? "re-engagement" : typeDraw % 8 == 0 ? "redownload" : "download"
            } else {
                aak.conversionType = ["download", "download", "redownload", "re-engagement"][Int(typeDraw % 4)]
            }
            aak.didWin = aak.conversionType == "re-engagement" ? true : didWin
            aak.postbackSequenceIndex = aak.didWin ? window : 0
            aak.publisherItemID = aak.didWin ? 1_000_000 + Int64(random.next() % 50) : nil
            aak.adInteractionType = aak.conversionType == "re-engagement" || fidelity == 1 ? "click" : "view"
            if aak.didWin, !nullValue {
                if aak.postbackSequenceIndex == 0, random.next() % 2 == 0 {
                    aak.conversionValue = fine
                } else {
                    aak.coarseConversionValue = coarse
                }
            }
            aak.countryCode = random.next() % 3 == 0 ? country : nil
            return .adAttributionKit(aak)
        default:
            var skan = SKAdNetworkTestPostback(version: kind == .skan1_0 ? nil : kind.rawValue, transactionID: id)
            skan.adNetworkID = explicitNetwork ?? "network\(network).skadnetwork"
            skan.appID = app
            let version = kind.rawValue
            if version == "4.0" {
                // Two digits at low tiers, three or four at higher ones.
                let digits = [2, 3, 4][Int(random.next() % 3)]
                let full = 1000 + campaign * 10 + Int(random.next() % 10)
                skan.sourceIdentifier = String((explicitSource ?? String(format4: full)).suffix(digits))
                skan.postbackSequenceIndex = window
            } else {
                skan.campaignID = Int64(valuesFollowCampaign ? (sourceIndex ?? 0) + 1 : campaign)
            }
            if kind != .skan1_0 { skan.redownload = random.next() % 8 == 0 }
            if ["2.2", "3.0", "4.0"].contains(version) { skan.fidelityType = fidelity }
            let hasDidWin = ["3.0", "4.0"].contains(version)
            if hasDidWin { skan.didWin = didWin }
            let winning = !hasDidWin || didWin
            if kind != .skan1_0, winning, random.next() % 2 == 0 {
                if version == "4.0", random.next() % 4 == 0 {
                    skan.sourceDomain = "example\(network).com"
                } else {
                    skan.sourceAppID = 1_000_000 + Int64(random.next() % 50)
                }
            }
            if kind != .skan1_0, winning, !nullValue {
                if version == "4.0" {
                    if window == 0, random.next() % 2 == 0 {
                        skan.conversionValue = fine
                    } else {
                        skan.coarseConversionValue = coarse
                    }
                } else {
                    skan.conversionValue = fine
                }
            }
            return .skadnetwork(skan)
        }
    }

    package enum Description: Sendable {
        case skadnetwork(SKAdNetworkTestPostback)
        case adAttributionKit(AdAttributionKitTestPostback)
    }
}

extension TestPostbackSigner {
    /// Signs a synthetic postback description.
    package func sign(_ description: SyntheticPostbacks.Description) throws -> [UInt8] {
        switch description {
        case .skadnetwork(let skan): return try sign(skan)
        case .adAttributionKit(let aak): return try sign(aak)
        }
    }
}

extension String {
    fileprivate init(format4 value: Int) { self = String(value).leftPadded(to: 4) }
}
