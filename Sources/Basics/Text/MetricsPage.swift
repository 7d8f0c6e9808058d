/// A page in the Prometheus text exposition format (version 0.0.4): the one writer of every
/// `/metrics` family, the receiver's, the process's and those of the components beside it
/// (shipping, partner forwarding).
///
/// A metric is one declaration: a handle (`Counter`, `LabeledCounter`, `Gauge`, `Histogram`, …, in
/// `Metrics.swift`) in a `MetricGroup`, written by `families(of:)`; or, for a value read at scrape
/// time from elsewhere, `family(name, kind, help:)`, which writes the `# HELP` and `# TYPE` lines and
/// then the samples its closure gives, right under them as the format wants. Every label value
/// is escaped here, whoever gave it (a request, the configuration, the program), so nothing can
/// write into the page; bounding a label's values is the caller's business (a closed set).
package struct MetricsPage: Sendable {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    package private(set) var text = ""

    package init() {}

    /// `# HELP` and `# TYPE`, then the samples `samples` writes (none is a valid, empty family).
    package mutating func family(_ name: String, _ kind: Kind, help: String, _ samples: (inout Family) -> Void = { _ in }) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
        var family = Family(name: name)
        samples(&family)
        text += family.text
    }

    /// Text rendered elsewhere (another component's page), appended as it is.
    package mutating func append(_ rendered: String) { text += rendered }

    /// The samples of one family.
    package struct Family {
        package let name: String
        fileprivate var text = ""

        fileprivate init(name: String) { self.name = name }

        package mutating func sample(_ labels: KeyValuePairs<String, String>, _ value: some BinaryInteger) {
            line(name, labels.map { ($0.key, $0.value) }, String(value))
        }

        /// Written as Swift prints a `Double` (`1.0`, `0.25`, `1e-05`), which Prometheus parses.
        package mutating func sample(_ labels: KeyValuePairs<String, String>, _ value: Double) {
            line(name, labels.map { ($0.key, $0.value) }, String(describing: value))
        }

        /// One sample with the labels in `labels`' order (a handle's label names zipped with its values).
        package mutating func sample(_ labels: [(String, String)], _ value: some BinaryInteger) {
            line(name, labels, String(value))
        }

        /// One sample with the labels in `labels`' order, as Swift prints a `Double`.
        package mutating func sample(_ labels: [(String, String)], _ value: Double) {
            line(name, labels, String(describing: value))
        }

        /// The family's one sample, without labels.
        package mutating func sample(_ value: some BinaryInteger) { line(name, [], String(value)) }

        /// The family's one sample, without labels, as Swift prints a `Double`.
        package mutating func sample(_ value: Double) { line(name, [], String(describing: value)) }

        /// One sample per entry of `counts`, sorted by label value: `name{label="value"} count`.
        package mutating func samples(label: String, _ counts: [String: Int]) {
            samples(counts) { [label: $0] }
        }

        /// One sample per entry of `counts`, with the labels `labels` gives its key, sorted by those
        /// label values in order (so the page is the same for the same counts).
        package mutating func samples<Key>(_ counts: [Key: Int], labels: (Key) -> KeyValuePairs<String, String>) {
            let rows = counts.map { key, count in (labels(key).map { ($0.key, $0.value) }, count) }
            for (labels, count) in rows.sorted(by: { $0.0.lazy.map(\.1).lexicographicallyPrecedes($1.0.lazy.map(\.1)) }) {
                line(name, labels, String(count))
            }
        }

        /// `name_bucket{…le="…"}` lines (cumulative), then `name_sum` and `name_count`.
        package mutating func histogram(_ histogram: HistogramCounts, _ labels: KeyValuePairs<String, String> = [:]) {
            let labels = labels.map { ($0.key, $0.value) }
            var cumulative = 0
            for (bound, bucketCount) in zip(histogram.upperBounds, histogram.counts) {
                cumulative += bucketCount
                line(name + "_bucket", labels + [("le", String(describing: bound))], String(cumulative))
            }
            line(name + "_bucket", labels + [("le", "+Inf")], String(histogram.count))
            line(name + "_sum", labels, String(describing: histogram.sum))
            line(name + "_count", labels, String(histogram.count))
        }

        private mutating func line(_ series: String, _ labels: [(String, String)], _ value: String) {
            MetricsPage.write(series, labels, into: &text)
            text += " " + value + "\n"
        }
    }

    /// `name{key="value",…}` with every value escaped (just `name` without labels).
    package static func series(_ name: String, _ labels: KeyValuePairs<String, String>) -> String {
        var text = ""
        write(name, labels.map { ($0.key, $0.value) }, into: &text)
        return text
    }

    private static func write(_ name: String, _ labels: [(String, String)], into text: inout String) {
        text += name
        guard !labels.isEmpty else { return }
        text += "{"
        for (position, label) in labels.enumerated() {
            if position > 0 { text += "," }
            text += label.0 + "=\"" + escape(label.1) + "\""
        }
        text += "}"
    }

    /// `\` → `\\`, `"` → `\"`, newline → `\n` (the text format's three escapes for label values).
    package static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count + 8)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}

/// A Prometheus histogram's state (the `Histogram` handle holds one); `MetricsPage.Family.histogram`
/// writes the cumulative buckets.
package struct HistogramCounts: Sendable {
    package let upperBounds: [Double]
    package private(set) var counts: [Int]
    package private(set) var sum = 0.0
    package private(set) var count = 0

    package init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        counts = [Int](repeating: 0, count: upperBounds.count)
    }

    package mutating func observe(_ value: Double) {
        sum += value
        count += 1
        if let bucket = upperBounds.firstIndex(where: { value <= $0 }) { counts[bucket] += 1 }
    }
}
