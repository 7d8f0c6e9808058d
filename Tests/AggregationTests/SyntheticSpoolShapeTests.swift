import Basics
import Foundation
import PostbackStore
import PostbackTesting
import Postbacks
import Testing

/// `SyntheticSpool.Shape.realistic` (bench/aggregate's spool): Zipf-like draws and per-app ad
/// networks. The default shape's bytes are pinned by `GoldenOutputTests` (its synthesized segments'
/// SHA-256 in the golden manifests).
@Suite struct SyntheticSpoolShapeTests {
    @Test func zipfDrawsFollowTheLaw() {
        let zipf = ZipfDistribution(count: 64, exponent: 1.1)
        var random = SplitMix64(seed: 7)
        var counts = [Int](repeating: 0, count: 64)
        let draws = 200_000
        for _ in 0..<draws { counts[zipf.rank(random.next())] += 1 }
        let harmonic = (1...64).reduce(0.0) { $0 + 1 / pow(Double($1), 1.1) }
        for rank in [0, 1, 4, 63] {
            let expected = Double(draws) / pow(Double(rank + 1), 1.1) / harmonic
            #expect(
                abs(Double(counts[rank]) - expected) < 5 * expected.squareRoot() + 1,
                "rank \(rank): \(counts[rank]) vs \(expected)")
        }
        #expect(ZipfDistribution(count: 1).rank(UInt64.max) == 0)
        #expect(zipf.rank(UInt64.max) == 63 && zipf.rank(0) == 0)
    }

    static func attributions(_ shape: SyntheticSpool.Shape) -> [Attribution] {
        var spool = SyntheticSpool()
        spool.shape = shape
        spool.postbacksPerDay = 4000
        return spool.lines(day: day("2026-03-01"), first: day("2026-03-01")).compactMap {
            try? SpoolRecord(line: Array($0.line.dropLast())).attribution
        }
    }

    /// The share of the most frequent value among the non-nil ones.
    static func topShare<T: Hashable>(_ values: [T?]) -> Double {
        let present = values.compactMap { $0 }
        let top = Dictionary(grouping: present, by: { $0 }).values.map(\.count).max() ?? 0
        return Double(top) / Double(max(1, present.count))
    }

    @Test func realisticShapeIsLopsidedWhereUniformIsFlat() {
        let uniform = Self.attributions(.uniform)
        let realistic = Self.attributions(.realistic)
        #expect(uniform.count > 3000 && realistic.count > 3000)
        // The campaign digits of full four-digit source identifiers.
        let campaigns: ([Attribution]) -> [String?] = {
            $0.map { $0.sourceIdentifier.flatMap { $0.count == 4 ? String($0.prefix(2)) : nil } }
        }
        #expect(Self.topShare(campaigns(uniform)) < 0.08)
        #expect(Self.topShare(campaigns(realistic)) > 0.15, "the first campaign gets the most postbacks")
        #expect(Self.topShare(realistic.map(\.fineValue)) > 0.15)
        #expect(Self.topShare(realistic.map(\.countryCode)) > 0.15)
        let publishers = Set(realistic.compactMap(\.sourceAppID))
        #expect(publishers.count > 50, "a long tail of publishers: \(publishers.count)")
        // Two ad networks per app (as bought), not every network for every app.
        for app in Set(realistic.map(\.appID)) {
            let networks = Set(realistic.filter { $0.appID == app }.map { $0.adNetworkID.prefix(8) })
            #expect(networks.count == 2, "app \(app): \(networks.sorted())")
        }
    }
}
