package import AggregateSchema

/// What a conversion value means under a schema: the label reports show, the events it implies and
/// the revenue it stands for. One of these exists for every (window, fine or coarse value) that a
/// schema maps; `ConversionSchema.decodeTable` lists them flat.
package struct DecodedValue: Sendable, Equatable {
    package var label: String
    package var events: [EventMapping]
    /// Zero when the schema gives no revenue for the value (the value says nothing was bought).
    package var revenue: RevenueRange

    package init(label: String, events: [EventMapping] = [], revenue: RevenueRange = .zero) {
        self.label = label
        self.events = events
        self.revenue = revenue
    }
}

/// A revenue range in the schema's currency. `max` nil means open-ended ("100 or more").
package struct RevenueRange: Sendable, Equatable {
    package var min: Money
    package var max: Money?
    /// The point estimate reports sum; always within `min...max`.
    package var estimate: Money

    package init(min: Money, max: Money?, estimate: Money) {
        self.min = min
        self.max = max
        self.estimate = estimate
    }

    package static let zero = RevenueRange(min: .zero, max: .zero, estimate: .zero)

    /// Field-wise sum (bit-field values add the revenue of each field); an open end stays open.
    func adding(_ other: RevenueRange) -> RevenueRange? {
        guard let min = min.plus(other.min), let estimate = estimate.plus(other.estimate) else { return nil }
        var max: Money? = nil
        if let mine = self.max, let theirs = other.max {
            guard let sum = mine.plus(theirs) else { return nil }
            max = sum
        }
        return RevenueRange(min: min, max: max, estimate: estimate)
    }
}

/// An in-app event a conversion value implies, with how many times it happened at least (and at
/// most, when the schema knows).
package struct EventMapping: Sendable, Equatable {
    package var name: String
    package var minCount: Int
    package var maxCount: Int?

    package init(name: String, minCount: Int = 1, maxCount: Int? = nil) {
        self.name = name
        self.minCount = minCount
        self.maxCount = maxCount
    }
}

/// How a schema turns a range's bucket into a point estimate when an entry does not give one.
package enum RevenueEstimatePolicy: String, Sendable, CaseIterable {
    /// `(min + max) / 2`; an open-ended range must then give its estimate explicitly.
    case midpoint
    case min
}
