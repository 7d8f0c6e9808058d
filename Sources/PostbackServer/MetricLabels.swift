import Basics
import Postbacks

/// Label values for `/metrics`: every value is escaped per the Prometheus text format, and values
/// that can come from a request are first mapped onto a closed set, so a client can neither write
/// into the page nor grow it without bound.
///
/// Add a new label by giving it a `ClosedLabelSet` (or an enum's raw values) and writing its samples
/// through `MetricsPage`, which escapes every value; never interpolate a label value into the page yourself.
enum MetricLabels {
    /// The value anything outside a closed set is counted under.
    static let other = "other"

    /// `\` → `\\`, `"` → `\"`, newline → `\n` (`MetricsPage.escape`, which every sample goes through).
    static func escape(_ value: String) -> String { MetricsPage.escape(value) }

    /// `name{key="value",…}` with every value escaped (`MetricsPage.series`).
    static func series(_ name: String, _ labels: KeyValuePairs<String, String>) -> String {
        MetricsPage.series(name, labels)
    }

    /// SKAdNetwork versions with a signature layout, `aak` for AdAttributionKit, `unknown` when none
    /// could be read; anything else a body claims is `other`.
    static let versions = ClosedLabelSet(SKAdNetworkVersion.allCases.map(\.rawValue) + ["aak", "unknown"])
    static let protocols = ClosedLabelSet(PostbackProtocol.allCases.map(\.rawValue) + ["unknown"])
    static let statuses = ClosedLabelSet(VerificationStatus.allCases.map(\.rawValue))
    static let environments = ClosedLabelSet(["production", "development", "none"])
    static let policyReasons = ClosedLabelSet(["development", "ad-network"])
}

/// The values a label may take; `label(_:)` maps anything else to `other`, so the number of series
/// is bounded by the program, never by its input.
struct ClosedLabelSet: Sendable {
    let values: Set<String>

    init(_ values: [String]) { self.values = Set(values) }

    func label(_ value: String?) -> String {
        guard let value, values.contains(value) else { return MetricLabels.other }
        return value
    }
}
