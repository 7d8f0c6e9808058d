import Foundation

/// Draws ranks 0..<count with probability proportional to 1 / (rank + 1)^exponent (Zipf's law: the
/// first publisher, campaign or value gets most of the traffic, and a long tail gets a little each).
package struct ZipfDistribution: Sendable {
    /// cumulative[k] = P(rank <= k); the last is 1.
    private let cumulative: [Double]

    package init(count: Int, exponent: Double = 1.1) {
        precondition(count > 0, "a Zipf distribution needs at least one rank")
        var running = 0.0
        var sums = (1...count).map { rank -> Double in
            running += 1 / pow(Double(rank), exponent)
            return running
        }
        for index in sums.indices { sums[index] /= running }
        sums[count - 1] = 1
        cumulative = sums
    }

    package var count: Int { cumulative.count }

    /// A rank from one draw: the first rank whose cumulative probability exceeds a uniform in [0, 1).
    package func rank(_ draw: UInt64) -> Int {
        let unit = Double(draw >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] > unit { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
