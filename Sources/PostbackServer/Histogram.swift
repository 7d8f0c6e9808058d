/// A Prometheus histogram's state: cumulative bucket counts are computed when rendered.
struct Histogram: Sendable {
    let upperBounds: [Double]
    private(set) var counts: [Int]
    private(set) var sum = 0.0
    private(set) var count = 0

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        counts = [Int](repeating: 0, count: upperBounds.count)
    }

    mutating func observe(_ value: Double) {
        sum += value
        count += 1
        if let bucket = upperBounds.firstIndex(where: { value <= $0 }) { counts[bucket] += 1 }
    }

    /// `name_bucket{…le="…"}` lines, then `_sum` and `_count`. `labels` is `key="value",` or empty.
    func render(name: String, labels: String = "", into text: inout String) {
        var cumulative = 0
        for (bound, bucketCount) in zip(upperBounds, counts) {
            cumulative += bucketCount
            text += "\(name)_bucket{\(labels)le=\"\(bound)\"} \(cumulative)\n"
        }
        text += "\(name)_bucket{\(labels)le=\"+Inf\"} \(count)\n"
        let bare = labels.isEmpty ? "" : "{\(labels.dropLast())}"
        text += "\(name)_sum\(bare) \(sum)\n"
        text += "\(name)_count\(bare) \(count)\n"
    }
}
