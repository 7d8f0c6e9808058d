/// Headline and side counts of a day, for the manifest and the command's summary.
public struct DayTotals: Sendable, Equatable {
    public var postbacks = 0
    public var installs = 0
    public var redownloads = 0
    public var reengagements = 0
    public var losses = 0
    public var nullValuePostbacks = 0
    public var developmentPostbacks = 0
    public var rejectedPostbacks = 0
    public var duplicatesDropped = 0
    public var revenueEstimate = Money.zero

    mutating func add(_ other: DayTotals) throws(AggregationError) {
        postbacks += other.postbacks
        installs += other.installs
        redownloads += other.redownloads
        reengagements += other.reengagements
        losses += other.losses
        nullValuePostbacks += other.nullValuePostbacks
        developmentPostbacks += other.developmentPostbacks
        rejectedPostbacks += other.rejectedPostbacks
        duplicatesDropped += other.duplicatesDropped
        guard let sum = revenueEstimate.plus(other.revenueEstimate) else { throw .overflow("revenue estimate total overflows") }
        revenueEstimate = sum
    }
}
