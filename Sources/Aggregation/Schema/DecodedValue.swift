/// What a conversion value means under a schema: the label reports show, the events it implies and
/// the revenue it stands for. One of these exists for every (window, fine or coarse value) that a
/// schema maps; `ConversionSchema.decodeTable` lists them flat.
public struct DecodedValue: Sendable, Equatable {
    public var label: String
    public var events: [EventMapping]
    /// Zero when the schema gives no revenue for the value (the value says nothing was bought).
    public var revenue: RevenueRange

    public init(label: String, events: [EventMapping] = [], revenue: RevenueRange = .zero) {
        self.label = label
        self.events = events
        self.revenue = revenue
    }
}

/// A revenue range in the schema's currency. `max` nil means open-ended ("100 or more").
public struct RevenueRange: Sendable, Equatable {
    public var min: Money
    public var max: Money?
    /// The point estimate reports sum; always within `min...max`.
    public var estimate: Money

    public init(min: Money, max: Money?, estimate: Money) {
        self.min = min
        self.max = max
        self.estimate = estimate
    }

    public static let zero = RevenueRange(min: .zero, max: .zero, estimate: .zero)

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
public struct EventMapping: Sendable, Equatable {
    public var name: String
    public var minCount: Int
    public var maxCount: Int?

    public init(name: String, minCount: Int = 1, maxCount: Int? = nil) {
        self.name = name
        self.minCount = minCount
        self.maxCount = maxCount
    }
}

/// How a schema turns a range's bucket into a point estimate when an entry does not give one.
public enum RevenueEstimatePolicy: String, Sendable, CaseIterable {
    /// `(min + max) / 2`; an open-ended range must then give its estimate explicitly.
    case midpoint
    case min
}
