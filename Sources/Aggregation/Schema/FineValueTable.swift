import AggregateSchema
import Basics
import Postbacks

/// The first window's fine values, 0–63, read from either encoding of a schema's `fine` block:
///
/// - `entries`: single values (`"value": 10`) or inclusive ranges (`"values": [2, 9]`), optionally
///   with equal-width `revenue_buckets` over the range;
/// - `bits`: named bit fields (`"bits": [0, 3]`), each with its own entries; a value decodes to the
///   combination of its fields (labels through a template, events concatenated, revenue summed).
///
/// Either way the result is a flat table of 64 slots, which is what aggregation and
/// `postback schema export` use.
struct FineValueTable {
    static let valueCount = 64

    var values: [DecodedValue?]
    var unmappedLabel: String

    static func read(_ fine: SchemaObject, policy: RevenueEstimatePolicy) -> FineValueTable? {
        fine.allowOnly(["description", "entries", "bits", "unmapped"])
        if fine.has("description") { _ = fine.string("description", maximumLength: 10_000) }
        let unmapped = fine.has("unmapped") ? fine.string("unmapped") : WindowDecoding.defaultUnmappedLabel
        let values: [DecodedValue?]?
        switch (fine.array("entries"), fine.object("bits")) {
        case (let entries?, nil):
            values = readEntries(entries, path: fine.child("entries"), valueRange: 0...63, policy: policy, log: fine.log)
        case (nil, let bits?):
            values = readBitFields(bits, policy: policy)
        case (nil, nil):
            if !fine.has("entries") && !fine.has("bits") { fine.log.add(fine.path, "needs either \"entries\" or \"bits\"") }
            values = nil
        case (_?, _?):
            fine.log.add(fine.path, "has both \"entries\" and \"bits\"; use one encoding")
            values = nil
        }
        guard let values, let unmapped else { return nil }
        return FineValueTable(values: values, unmappedLabel: unmapped)
    }

    /// Expands entries over `valueRange`; no two entries may cover the same value.
    static func readEntries(
        _ list: [JSONValue], path: String, valueRange: ClosedRange<Int>, policy: RevenueEstimatePolicy,
        log: ProblemLog
    ) -> [DecodedValue?]? {
        var table = [DecodedValue?](repeating: nil, count: valueRange.count)
        var owner = [Int?](repeating: nil, count: valueRange.count)
        let problemsBefore = log.problems.count
        let bounds = Int64(valueRange.lowerBound)...Int64(valueRange.upperBound)
        for (index, element) in list.enumerated() {
            let entryPath = path + "[\(index)]"
            guard let entry = SchemaObject(element, path: entryPath, log: log) else { continue }
            entry.allowOnly(["value", "values", "label", "description", "events", "revenue", "revenue_buckets"])
            if entry.has("description") { _ = entry.string("description", maximumLength: 10_000) }
            var range: ClosedRange<Int>? = nil
            switch (entry.has("value"), entry.has("values")) {
            case (true, false):
                range = entry.integer("value", in: bounds).map { Int($0)...Int($0) }
            case (false, true):
                if let pair = entry.array("values") {
                    if pair.count == 2,
                        let low = SchemaObject.integer(pair[0], path: entry.child("values") + "[0]", in: bounds, log: log),
                        let high = SchemaObject.integer(pair[1], path: entry.child("values") + "[1]", in: bounds, log: log)
                    {
                        if low <= high {
                            range = Int(low)...Int(high)
                        } else {
                            log.add(entry.child("values"), "[\(low), \(high)] is not a range: the first must not exceed the last")
                        }
                    } else if pair.count != 2 {
                        log.add(entry.child("values"), "must be [first, last], an inclusive range of two values")
                    }
                }
            case (true, true):
                log.add(entryPath, "has both \"value\" and \"values\"; use one")
            case (false, false):
                log.add(entryPath, "needs \"value\" (one value) or \"values\" ([first, last])")
            }
            let isRange = entry.has("values")
            var placeholders: Set<String> = ["value"]
            if isRange { placeholders.insert("bucket") }
            let label = ValueEntryReader.readLabel(entry, allowed: placeholders)
            let events = ValueEntryReader.readEvents(entry)
            var fixedRevenue: RevenueRange? = .zero
            var buckets: (start: Money, width: Money)? = nil
            if entry.has("revenue") && entry.has("revenue_buckets") {
                log.add(entryPath, "has both \"revenue\" and \"revenue_buckets\"; use one")
                fixedRevenue = nil
            } else if let revenue = entry.object("revenue") {
                fixedRevenue = ValueEntryReader.readRevenue(revenue, policy: policy)
            } else if let bucketObject = entry.object("revenue_buckets") {
                bucketObject.allowOnly(["start", "width"])
                if !isRange {
                    log.add(bucketObject.path, "needs a range of values (\"values\": [first, last]) to spread buckets over")
                }
                if let start = bucketObject.money("start", required: true),
                    let width = bucketObject.money("width", required: true)
                {
                    if width.micros == 0 {
                        log.add(bucketObject.child("width"), "must be greater than 0")
                    } else {
                        buckets = (start, width)
                    }
                }
                if buckets == nil { fixedRevenue = nil }
            }
            guard let range, let label, let events, let fixedRevenue else { continue }
            for value in range {
                let slot = value - valueRange.lowerBound
                if let previous = owner[slot] {
                    log.add(entryPath, "value \(value) is already mapped by \(path)[\(previous)]")
                    continue
                }
                owner[slot] = index
                var revenue = fixedRevenue
                if let buckets {
                    let bucket = Int64(value - range.lowerBound)
                    guard let offset = buckets.width.times(bucket), let min = buckets.start.plus(offset),
                        let max = min.plus(buckets.width)
                    else {
                        log.add(entryPath, "revenue bucket \(bucket) overflows")
                        continue
                    }
                    revenue = RevenueRange(
                        min: min, max: max, estimate: policy == .min ? min : Money(micros: (min.micros + max.micros) / 2))
                }
                let filled = ValueEntryReader.expand(label, ["value": String(value), "bucket": String(value - range.lowerBound)])
                table[slot] = DecodedValue(label: filled, events: events, revenue: revenue)
            }
        }
        return log.problems.count == problemsBefore ? table : nil
    }

    // MARK: Bit fields

    private struct BitField {
        let name: String
        let low: Int
        let width: Int
        let table: [DecodedValue?]
    }

    static func readBitFields(_ bits: SchemaObject, policy: RevenueEstimatePolicy) -> [DecodedValue?]? {
        let log = bits.log
        bits.allowOnly(["label", "fields", "description"])
        if bits.has("description") { _ = bits.string("description", maximumLength: 10_000) }
        var fields: [BitField] = []
        var usedBits: [Int: String] = [:]
        let problemsBefore = log.problems.count
        for (index, element) in (bits.array("fields", required: true) ?? []).enumerated() {
            let path = bits.child("fields") + "[\(index)]"
            guard let field = SchemaObject(element, path: path, log: log) else { continue }
            field.allowOnly(["name", "bits", "entries", "description"])
            if field.has("description") { _ = field.string("description", maximumLength: 10_000) }
            let name = field.string("name", required: true, maximumLength: 40)
            if let name,
                !name.utf8.allSatisfy({
                    ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                        || $0 == UInt8(ascii: "_")
                }) || name == "value"
            {
                log.add(
                    field.child("name"),
                    "must be lower-case letters, digits and _ (and not \"value\"), to be usable as ${\(name)} in the label")
            }
            if let name, fields.contains(where: { $0.name == name }) {
                log.add(field.child("name"), "field \"\(name)\" is defined twice")
            }
            var span: (low: Int, high: Int)? = nil
            if let pair = field.array("bits", required: true) {
                if pair.count == 2,
                    let low = SchemaObject.integer(pair[0], path: field.child("bits") + "[0]", in: 0...5, log: log),
                    let high = SchemaObject.integer(pair[1], path: field.child("bits") + "[1]", in: 0...5, log: log)
                {
                    if low <= high {
                        span = (Int(low), Int(high))
                    } else {
                        log.add(field.child("bits"), "[\(low), \(high)]: the low bit must not exceed the high bit")
                    }
                } else if pair.count != 2 {
                    log.add(field.child("bits"), "must be [low, high], bit positions 0 (least significant) to 5, inclusive")
                }
            }
            if let span, let name {
                for bit in span.low...span.high {
                    if let other = usedBits[bit] {
                        log.add(field.child("bits"), "bit \(bit) is already used by field \"\(other)\"")
                    }
                    usedBits[bit] = name
                }
            }
            guard let span, let name else { continue }
            let width = span.high - span.low + 1
            guard let entries = field.array("entries", required: true),
                let table = readEntries(
                    entries, path: field.child("entries"), valueRange: 0...((1 << width) - 1), policy: policy, log: log)
            else { continue }
            fields.append(BitField(name: name, low: span.low, width: width, table: table))
        }
        if fields.isEmpty && log.problems.count == problemsBefore {
            log.add(bits.child("fields"), "must define at least one field")
        }
        let template =
            bits.has("label")
            ? ValueEntryReader.readLabel(bits, allowed: Set(fields.map(\.name) + ["value"]))
            : fields.map { "${\($0.name)}" }.joined(separator: "+")
        guard log.problems.count == problemsBefore, let template else { return nil }

        var coveredMask = 0
        for field in fields { coveredMask |= ((1 << field.width) - 1) << field.low }
        var table = [DecodedValue?](repeating: nil, count: valueCount)
        values: for value in 0..<valueCount {
            // A set bit that no field describes means the schema does not know this value.
            guard value & ~coveredMask == 0 else { continue }
            var labels: [String: String] = ["value": String(value)]
            var events: [EventMapping] = []
            var revenue = RevenueRange.zero
            for field in fields {
                guard let part = field.table[(value >> field.low) & ((1 << field.width) - 1)] else { continue values }
                labels[field.name] = part.label
                for event in part.events {
                    if let existing = events.firstIndex(where: { $0.name == event.name }) {
                        // Two fields implying the same event: the counts add up.
                        events[existing].minCount += event.minCount
                        events[existing].maxCount = events[existing].maxCount.flatMap { max in event.maxCount.map { max + $0 } }
                    } else {
                        events.append(event)
                    }
                }
                guard let sum = revenue.adding(part.revenue) else {
                    log.add(bits.path, "revenue of value \(value) overflows")
                    return nil
                }
                revenue = sum
            }
            table[value] = DecodedValue(label: ValueEntryReader.expand(template, labels), events: events, revenue: revenue)
        }
        return table
    }
}
