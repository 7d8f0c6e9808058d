import Basics

/// One app × ad network's figures on one day, from the published table: what the nightly check
/// compares.
struct FlowCounts: Equatable {
    var postbacks = 0
    var losses = 0
    /// Winners whose conversion value Apple withheld.
    var nullValues = 0
    /// Postbacks carrying each fine value.
    var fineValues: [Int: Int] = [:]

    var winners: Int { postbacks - losses }
    var fineValueCount: Int { fineValues.values.reduce(0, +) }

    mutating func add(_ other: FlowCounts) {
        postbacks += other.postbacks
        losses += other.losses
        nullValues += other.nullValues
        fineValues.merge(other.fineValues, uniquingKeysWith: +)
    }
}

/// An app and an ad network: the unit the nightly check judges.
package struct FlowPair: Hashable, Comparable, Sendable {
    package let appID: String
    package let adNetworkID: String

    package static func < (lhs: FlowPair, rhs: FlowPair) -> Bool {
        (lhs.appID, lhs.adNetworkID) < (rhs.appID, rhs.adNetworkID)
    }
}

/// The published days the check reads, per app × ad network and day.
struct FlowHistory: DayRecordSink {
    var days: [UTCDay: [FlowPair: FlowCounts]] = [:]
    var partialDays: Set<UTCDay> = []

    mutating func add(_ record: CampaignDailyRecord, day: UTCDay) throws(ReportError) {
        guard record.postbacks > 0 else { return }
        let pair = FlowPair(appID: record.appID ?? "", adNetworkID: record.adNetworkID ?? "")
        var counts = FlowCounts(postbacks: record.postbacks, losses: record.losses, nullValues: record.nullValues)
        if record.cvKind == .fine, let value = record.fineValue { counts.fineValues[value] = record.postbacks }
        days[day, default: [:]][pair, default: FlowCounts()].add(counts)
    }

    mutating func add(_ manifest: DayManifest) {}

    mutating func markPartial(_ day: UTCDay) { partialDays.insert(day) }
}
