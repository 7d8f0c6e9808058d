public import Locking
public import Synchronization

/// A metric declared once, as a handle: its name, help and labels where it is declared, its value
/// in the handle, and its samples written by the handle (`MetricsPage.family(_:)`). A component
/// declares its handles as stored properties of a `MetricGroup`, which renders them in the order
/// they are declared; nothing else names the metric.
///
///     final class ServerMetrics: MetricGroup {
///         let clientLimited = Counter("postback_client_limited_total", help: "Requests answered 429.")
///     }
///     metrics.clientLimited.increment()
package protocol Metric: AnyObject, Sendable {
    var name: String { get }
    var kind: MetricsPage.Kind { get }
    var help: String { get }
    /// The samples under the family's `# HELP` and `# TYPE` lines.
    func writeSamples(into family: inout MetricsPage.Family)
}

/// A component's metrics: every stored property that is a `Metric` (or a nested group), rendered in
/// declaration order, so the page's order is the source's order.
package protocol MetricGroup: AnyObject, Sendable {}

extension MetricGroup {
    /// The group's handles in declaration order (its stored properties, read by reflection once per
    /// group: reflecting costs some 10 M instructions a scrape).
    package var metrics: [any Metric] {
        let id = ObjectIdentifier(self)
        if let known = reflectedGroups.withLock({ $0[id] }), known.group === self { return known.metrics }
        let metrics = reflectedMetrics
        reflectedGroups.withLock { groups in
            groups = groups.filter { $0.value.group != nil }
            groups[id] = ReflectedGroup(group: self, metrics: metrics)
        }
        return metrics
    }

    private var reflectedMetrics: [any Metric] {
        var metrics: [any Metric] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        var levels: [Mirror] = []
        while let current = mirror {
            levels.insert(current, at: 0)  // a superclass's properties come first
            mirror = current.superclassMirror
        }
        for level in levels {
            for child in level.children {
                if let metric = child.value as? any Metric {
                    metrics.append(metric)
                } else if let group = child.value as? any MetricGroup {
                    metrics += group.metrics
                }
            }
        }
        return metrics
    }
}

/// A group's handles as reflected, while the group lives (a new group may reuse a dead one's identifier).
private struct ReflectedGroup {
    weak var group: (any MetricGroup)?
    let metrics: [any Metric]
}

private let reflectedGroups = Locked<[ObjectIdentifier: ReflectedGroup]>([:])

extension MetricsPage {
    /// One metric's family: `# HELP`, `# TYPE`, then its samples.
    package mutating func family(_ metric: any Metric) {
        family(metric.name, metric.kind, help: metric.help) { metric.writeSamples(into: &$0) }
    }

    /// Every metric of `group`, in the order the group declares them.
    package mutating func families(of group: some MetricGroup) {
        for metric in group.metrics { family(metric) }
    }
}

// MARK: Labels

/// The label values of a series, in the order of its metric's label names.
///
/// Public, with the handles' bumping methods `@inlinable`, so that a count from another module is
/// specialized for its label type there (Swift 6.3 inlines only public bodies across modules): a
/// verifying thread's counts cost what they cost in the component's own code.
public protocol MetricLabelValues: Hashable, Sendable {
    var labelValues: [String] { get }
}

/// A closed set of label values (an enum's cases, or a product of closed sets): the number of series
/// is bounded by the program, never by its input.
public protocol ClosedMetricLabel: MetricLabelValues, CaseIterable {}

extension MetricLabelValues where Self: RawRepresentable, RawValue == String {
    public var labelValues: [String] { [rawValue] }
}

/// A value already mapped onto a bounded set by its caller (`ClosedLabelSet`, a limit of names).
extension String: MetricLabelValues {
    public var labelValues: [String] { [self] }
}

/// Two closed label sets as one: every pair, the first's values then the second's.
public struct LabelPair<First: ClosedMetricLabel, Second: ClosedMetricLabel>: ClosedMetricLabel {
    public let first: First
    public let second: Second

    @inlinable public init(_ first: First, _ second: Second) {
        self.first = first
        self.second = second
    }

    public static var allCases: [Self] { First.allCases.flatMap { first in Second.allCases.map { Self(first, $0) } } }
    public var labelValues: [String] { first.labelValues + second.labelValues }
}

/// The label set of a metric without labels: its one series.
public enum Unlabeled: ClosedMetricLabel {
    case one
    public var labelValues: [String] { [] }
}

/// Which series a labelled metric shows.
package enum MetricSeries: Sendable {
    /// Each label value of the closed set, in the set's order, 0 too.
    case every
    /// Only the label values counted so far, sorted by their label values.
    case counted
}

extension MetricsPage.Family {
    fileprivate mutating func sample(labels names: [String], _ values: [String], _ value: some BinaryInteger) {
        sample(Array(zip(names, values)), value)
    }
}

// MARK: Counters

/// A counter without labels; an atomic, so bumping it takes no lock.
public final class Counter: LabeledMetric<Unlabeled>, @unchecked Sendable {
    package init(_ name: String, help: String) {
        super.init(name, .counter, labels: [], help: help, series: .every)
    }

    @inlinable public func increment(by amount: Int = 1) { add(amount, at: .one) }

    package var count: Int { self[.one] }
}

/// A counter over a closed label set: one atomic per label value, so bumping it takes no lock.
public final class LabeledCounter<Label: ClosedMetricLabel>: LabeledMetric<Label>, @unchecked Sendable {
    package init(_ name: String, labels: [String], help: String, series: MetricSeries = .counted) {
        super.init(name, .counter, labels: labels, help: help, series: series)
    }

    @inlinable public func increment(_ label: Label, by amount: Int = 1) { add(amount, at: label) }
}

extension LabeledCounter {
    /// A pair-labelled counter bumped by its two values.
    @inlinable public func increment<First, Second>(_ first: First, _ second: Second, by amount: Int = 1)
    where Label == LabelPair<First, Second> {
        increment(LabelPair(first, second), by: amount)
    }
}

/// A counter whose label values its caller bounds (a `ClosedLabelSet`, a limit of names), behind one
/// lock; a series appears once counted (`increment(by: 0)` shows one at 0), sorted by its values.
public final class KeyedCounter<Key: MetricLabelValues>: KeyedMetric<Key, Int>, @unchecked Sendable {
    package init(_ name: String, labels: [String], help: String) {
        super.init(name, .counter, labels: labels, help: help)
    }

    @inlinable public func increment(_ key: Key, by amount: Int = 1) { values.withLock { $0[key, default: 0] += amount } }
}

// MARK: Gauges

/// A gauge whose label values its caller bounds (as `KeyedCounter`'s), behind one lock; a series
/// appears once set, sorted by its values, written as Swift prints a `Double`.
public final class KeyedGauge<Key: MetricLabelValues>: KeyedMetric<Key, Double>, @unchecked Sendable {
    package init(_ name: String, labels: [String], help: String) {
        super.init(name, .gauge, labels: labels, help: help)
    }
}

/// A gauge without labels, set by whoever knows its value (at scrape time or as it changes).
public final class Gauge: LabeledMetric<Unlabeled>, @unchecked Sendable {
    package init(_ name: String, help: String) {
        super.init(name, .gauge, labels: [], help: help, series: .every)
    }

    @inlinable public func set(_ newValue: Int) { store(newValue, at: .one) }
}

/// A gauge per value of a closed label set.
public final class LabeledGauge<Label: ClosedMetricLabel>: LabeledMetric<Label>, @unchecked Sendable {
    package init(_ name: String, labels: [String], help: String, series: MetricSeries = .every) {
        super.init(name, .gauge, labels: labels, help: help, series: series)
    }

    @inlinable public func set(_ label: Label, _ newValue: Int) { store(newValue, at: label) }
}

// MARK: Histograms

/// A histogram with fixed upper bounds, behind one lock (a sum and a bucket move together).
package final class Histogram: Metric {
    package let name: String
    package let help: String
    package var kind: MetricsPage.Kind { .histogram }
    private let counts: Locked<HistogramCounts>

    package init(_ name: String, help: String, upperBounds: [Double]) {
        self.name = name
        self.help = help
        counts = Locked(HistogramCounts(upperBounds: upperBounds))
    }

    package func observe(_ value: Double) { counts.withLock { $0.observe(value) } }

    package var snapshot: HistogramCounts { counts.withLock { $0 } }

    package func writeSamples(into family: inout MetricsPage.Family) { family.histogram(snapshot) }
}

// MARK: Storage

/// A metric over a closed label set (`LabeledCounter`, `LabeledGauge`): one atomic `Int` per label
/// value, found by the value's position in `allCases`.
public class LabeledMetric<Label: ClosedMetricLabel>: Metric, @unchecked Sendable {
    package let name: String
    package let kind: MetricsPage.Kind
    package let help: String
    let labels: [String]
    let series: MetricSeries
    private let cases: [Label]
    @usableFromInline let positions: [Label: Int]
    @usableFromInline let slots: UnsafeMutablePointer<Atomic<Int>>

    init(_ name: String, _ kind: MetricsPage.Kind, labels: [String], help: String, series: MetricSeries) {
        self.name = name
        self.kind = kind
        self.labels = labels
        self.help = help
        self.series = series
        cases = Array(Label.allCases)
        positions = Dictionary(uniqueKeysWithValues: cases.enumerated().map { ($0.element, $0.offset) })
        slots = .allocate(capacity: cases.count)
        for position in cases.indices { (slots + position).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: cases.count)
        slots.deallocate()
    }

    @inlinable public final func add(_ amount: Int, at label: Label) {
        guard let position = positions[label] else { return }
        slots[position].wrappingAdd(amount, ordering: .relaxed)
    }

    @inlinable public final func store(_ value: Int, at label: Label) {
        guard let position = positions[label] else { return }
        slots[position].store(value, ordering: .relaxed)
    }

    /// The value of one label's series.
    package final subscript(label: Label) -> Int {
        guard let position = positions[label] else { return 0 }
        return slots[position].load(ordering: .relaxed)
    }

    package final func writeSamples(into family: inout MetricsPage.Family) {
        let rows = cases.indices.map { (cases[$0].labelValues, slots[$0].load(ordering: .relaxed)) }
        switch series {
        case .every:
            for (values, count) in rows { family.sample(labels: labels, values, count) }
        case .counted:
            for (values, count) in rows.filter({ $0.1 != 0 }).sorted(by: { $0.0.lexicographicallyPrecedes($1.0) }) {
                family.sample(labels: labels, values, count)
            }
        }
    }
}

/// The value of a `KeyedMetric`'s series, and how a sample writes it.
public protocol MetricValue: Sendable {}

extension Int: MetricValue {}
extension Double: MetricValue {}

/// A metric whose label values its caller bounds (`KeyedCounter`, `KeyedGauge`): a dictionary behind
/// one lock; a series appears once it has a value, sorted by its label values.
public class KeyedMetric<Key: MetricLabelValues, Value: MetricValue>: Metric, @unchecked Sendable {
    package let name: String
    package let kind: MetricsPage.Kind
    package let help: String
    let labels: [String]
    @usableFromInline let values = Locked([Key: Value]())

    init(_ name: String, _ kind: MetricsPage.Kind, labels: [String], help: String) {
        self.name = name
        self.kind = kind
        self.labels = labels
        self.help = help
    }

    /// The series' new value from its current one (nil before the first).
    @inlinable public final func update(_ key: Key, _ newValue: (Value?) -> Value) {
        values.withLock { $0[key] = newValue($0[key]) }
    }

    package final subscript(key: Key) -> Value? { values.withLock { $0[key] } }

    package final func writeSamples(into family: inout MetricsPage.Family) {
        let rows = values.withLock { $0 }.map { ($0.key.labelValues, $0.value) }
        for (values, value) in rows.sorted(by: { $0.0.lexicographicallyPrecedes($1.0) }) {
            let labels = Array(zip(labels, values))
            if let value = value as? Int {
                family.sample(labels, value)
            } else if let value = value as? Double {
                family.sample(labels, value)
            }
        }
    }
}
