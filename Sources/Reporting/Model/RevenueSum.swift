import AggregateSchema

/// Revenue of a set of postbacks as the aggregate tables give it: exact sums of the decoded values'
/// ranges and estimates, and the count of postbacks whose value is unknown (withheld, undecoded or
/// without a schema). Unknown is never added as zero.
struct RevenueSum: Equatable {
    /// Postbacks whose value decoded (their revenue is known, possibly zero).
    var valuedPostbacks = 0
    /// Winning postbacks whose value is null or did not decode: revenue unknown.
    var unknownPostbacks = 0
    var minimum = Money.zero
    /// Nil once any value's range is open-ended ("100 or more").
    var maximum: Money? = Money.zero
    var estimate = Money.zero

    var isEmpty: Bool { valuedPostbacks == 0 && unknownPostbacks == 0 }

    /// Adds a row's revenue columns; a row without an estimate counts as unknown.
    mutating func add(_ record: CampaignDailyRecord) throws(ReportError) {
        guard let rowEstimate = record.revenueEstimate else {
            unknownPostbacks += record.postbacks
            return
        }
        valuedPostbacks += record.postbacks
        try add(minimum: record.revenueMin ?? .zero, maximum: record.revenueMax, estimate: rowEstimate)
    }

    mutating func add(_ other: RevenueSum) throws(ReportError) {
        valuedPostbacks += other.valuedPostbacks
        unknownPostbacks += other.unknownPostbacks
        try add(minimum: other.minimum, maximum: other.maximum, estimate: other.estimate)
    }

    private mutating func add(minimum addedMinimum: Money, maximum addedMaximum: Money?, estimate addedEstimate: Money)
        throws(ReportError)
    {
        guard let newMinimum = minimum.plus(addedMinimum), let newEstimate = estimate.plus(addedEstimate) else {
            throw .overflow("revenue sum overflows 64 bits")
        }
        minimum = newMinimum
        estimate = newEstimate
        if let current = maximum, let added = addedMaximum {
            guard let sum = current.plus(added) else { throw .overflow("revenue sum overflows 64 bits") }
            maximum = sum
        } else {
            maximum = nil
        }
    }
}
