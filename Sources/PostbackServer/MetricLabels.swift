import Postbacks

/// Label values for `/metrics`: every value is escaped per the Prometheus text format, and values
/// that can come from a request are first mapped onto a closed set, so a client can neither write
/// into the page nor grow it without bound.
///
/// Add a new label by giving it a `ClosedLabelSet` (or an enum's raw values) and rendering it with
/// `MetricLabels.series`; never interpolate a label value into the page yourself.
enum MetricLabels {
    /// The value anything outside a closed set is counted under.
    static let other = "other"

    /// `\` → `\\`, `"` → `\"`, newline → `\n` (the text format's three escapes for label values).
    static func escape(_ value: String) -> String {
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

    /// `name{key="value",…}` with every value escaped (just `name` without labels).
    static func series(_ name: String, _ labels: KeyValuePairs<String, String>) -> String {
        guard !labels.isEmpty else { return name }
        var text = name + "{"
        for (position, label) in labels.enumerated() {
            if position > 0 { text += "," }
            text += label.key + "=\"" + escape(label.value) + "\""
        }
        return text + "}"
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
