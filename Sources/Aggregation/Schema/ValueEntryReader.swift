import AggregateSchema
import Postbacks

/// Reads the pieces shared by fine entries, bit-field entries and coarse values: label templates,
/// events, revenue ranges and revenue buckets.
enum ValueEntryReader {
    /// A label, events and revenue (no bucket expansion). `template` maps placeholder names to their
    /// values for this value (e.g. `value` → "12").
    static func readValue(_ object: SchemaObject, policy: RevenueEstimatePolicy, template: [String: String]) -> DecodedValue? {
        let label = readLabel(object, allowed: Set(template.keys)).map { expand($0, template) }
        let events = readEvents(object)
        var revenue = RevenueRange.zero
        if let revenueObject = object.object("revenue") {
            guard let range = readRevenue(revenueObject, policy: policy) else { return nil }
            revenue = range
        }
        guard let label, let events else { return nil }
        return DecodedValue(label: label, events: events, revenue: revenue)
    }

    /// The `label` string, checking that it uses only the placeholders `allowed`.
    static func readLabel(_ object: SchemaObject, allowed: Set<String>) -> String? {
        guard let label = object.string("label", required: true, maximumLength: 200) else { return nil }
        for name in placeholders(in: label) where !allowed.contains(name) {
            let known = allowed.sorted().map { "${\($0)}" }.joined(separator: ", ")
            object.log.add(
                object.child("label"),
                "unknown placeholder ${\(name)}" + (known.isEmpty ? "; this label takes none" : "; known here: \(known)"))
        }
        return label
    }

    static func placeholders(in label: String) -> [String] {
        var names: [String] = []
        var rest = label[...]
        while let start = rest.firstRange(of: "${") {
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { break }
            names.append(String(rest[start.upperBound..<end]))
            rest = rest[rest.index(after: end)...]
        }
        return names
    }

    static func expand(_ label: String, _ values: [String: String]) -> String {
        var result = label
        for (name, value) in values { result = result.replacing("${\(name)}", with: value) }
        return result
    }

    static func readEvents(_ object: SchemaObject) -> [EventMapping]? {
        guard let list = object.array("events") else { return [] }
        var events: [EventMapping] = []
        var ok = true
        for (index, element) in list.enumerated() {
            let path = object.child("events") + "[\(index)]"
            guard let event = SchemaObject(element, path: path, log: object.log) else {
                ok = false
                continue
            }
            event.allowOnly(["name", "min_count", "max_count"])
            let name = event.string("name", required: true, maximumLength: 100)
            let minCount = event.has("min_count") ? event.integer("min_count", in: 0...1_000_000) : 1
            let maxCount = event.integer("max_count", in: 0...1_000_000)
            if let minCount, let maxCount, maxCount < minCount {
                object.log.add(event.child("max_count"), "\(maxCount) is less than min_count \(minCount)")
                ok = false
            }
            guard let name, let minCount, event.has("max_count") == (maxCount != nil) else {
                ok = false
                continue
            }
            if events.contains(where: { $0.name == name }) {
                object.log.add(event.child("name"), "event \"\(name)\" is listed twice for this value")
                ok = false
            }
            events.append(EventMapping(name: name, minCount: Int(minCount), maxCount: maxCount.map { Int($0) }))
        }
        return ok ? events : nil
    }

    /// `{"min": 0.99, "max": 4.99, "estimate": 2.99}`; `max` absent or null is open-ended.
    static func readRevenue(_ object: SchemaObject, policy: RevenueEstimatePolicy) -> RevenueRange? {
        object.allowOnly(["min", "max", "estimate"])
        let min = object.money("min", required: true)
        let max = object.money("max")
        let estimate = object.money("estimate")
        guard let min, object.has("max") == (max != nil), object.has("estimate") == (estimate != nil) else { return nil }
        if let max, max < min {
            object.log.add(object.child("max"), "\(max) is less than min \(min)")
            return nil
        }
        return finish(min: min, max: max, estimate: estimate, policy: policy, object: object)
    }

    static func finish(min: Money, max: Money?, estimate: Money?, policy: RevenueEstimatePolicy, object: SchemaObject)
        -> RevenueRange?
    {
        if let estimate {
            if estimate < min || (max.map { estimate > $0 } ?? false) {
                object.log.add(
                    object.child("estimate"), "\(estimate) lies outside \(min)…\(max.map(String.init(describing:)) ?? "open end")"
                )
                return nil
            }
            return RevenueRange(min: min, max: max, estimate: estimate)
        }
        switch policy {
        case .min:
            return RevenueRange(min: min, max: max, estimate: min)
        case .midpoint:
            guard let max else {
                object.log.add(
                    object.path, "an open-ended range (no max) needs an explicit estimate under revenue_estimate \"midpoint\"")
                return nil
            }
            // Rounded down to the micro-unit, the same in every engine.
            return RevenueRange(min: min, max: max, estimate: Money(micros: (min.micros + max.micros) / 2))
        }
    }
}
