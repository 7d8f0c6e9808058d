package import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// One thing the nightly check found on one app × ad network's day.
package struct FlowFinding: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case stopped
        case volumeDrop = "volume-drop"
        case nullShareJump = "null-share-jump"
        case valuesCollapsed = "values-collapsed"
    }

    /// A figure as the JSON file carries it.
    package enum Figure: Sendable, Equatable {
        case count(Int)
        case decimal(Double)
        case probability(Double)
    }

    /// Where a finding is.
    struct Context {
        let day: UTCDay
        let pair: FlowPair
        /// The pair's complete history days (from its first day with postbacks).
        let historyDays: Int
    }

    package let day: UTCDay
    package let pair: FlowPair
    package let kind: Kind
    /// In the order they are written.
    package let figures: [(name: String, value: Figure)]
    /// The figures in words, e.g. `0 postbacks, median 412 a day over 14 days`.
    package let text: String

    init(_ context: Context, _ kind: Kind, figures: [(String, Figure)], text: String) {
        day = context.day
        pair = context.pair
        self.kind = kind
        self.figures = figures.map { (name: $0.0, value: $0.1) }
        self.text = text
    }

    /// `2026-03-20 app 1229670720 demo-network-b.skadnetwork: stopped: 0 postbacks, …`
    package var line: String { "\(day) app \(pair.appID) \(pair.adNetworkID): \(kind.rawValue): \(text)" }

    package static func == (lhs: FlowFinding, rhs: FlowFinding) -> Bool { lhs.line == rhs.line }

    /// A figure in words: whole numbers as they are, others to two decimals.
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(format2: value)
    }

    /// `41.7%`.
    static func percent(_ share: Double) -> String {
        let tenths = (share * 1000).rounded()
        return "\(Int(tenths) / 10).\(Int(tenths) % 10)%"
    }

    /// `3.2e-07`: two significant digits.
    static func probability(_ value: Double) -> String {
        guard value > 0 else { return "0" }
        let exponent = Int(floor(log10(value)))
        let mantissa = (value / pow(10, Double(exponent)) * 10).rounded() / 10
        return mantissa >= 10 ? "1.0e\(exponent + 1)" : "\(mantissa)e\(exponent)"
    }
}

extension String {
    /// `value` to two decimals, without Foundation.
    fileprivate init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let sign = hundredths < 0 ? "-" : ""
        let magnitude = hundredths.magnitude
        let cents = magnitude % 100
        self = "\(sign)\(magnitude / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}
