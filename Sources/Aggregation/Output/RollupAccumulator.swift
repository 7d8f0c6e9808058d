import AggregateSchema

/// The rollups of a day's detail lines (`AggregateTables.rollups`): each rendered detail line is split
/// once, its kept fields' bytes are the group key, and its measures are added to the group's sums.
/// Working on the rendered bytes keeps every rollup consistent with the detail table by construction
/// (the same text in the kept columns, the same numbers summed). Each worker fills its own set; the
/// sets are merged like the events table's accumulators.
struct RollupSet {
    private(set) var accumulators: [RollupAccumulator]
    /// The byte ranges of the line being added, one per detail column.
    private var fields: [Range<Int>]
    /// The measures of the line being added, by detail column (parsed once for every rollup).
    private var counts: [Int64]
    private var amounts: [Money?]
    private static let detail = AggregateTables.detailInOrder
    private static let countColumns = detail.indices.filter { detail[$0].isMeasure && !detail[$0].isMoney }
    private static let moneyColumns = detail.indices.filter { detail[$0].isMoney }

    init(_ rollups: [Rollup]) {
        accumulators = rollups.map(RollupAccumulator.init)
        fields = Array(repeating: 0..<0, count: Self.detail.count)
        counts = Array(repeating: 0, count: Self.detail.count)
        amounts = Array(repeating: nil, count: Self.detail.count)
    }

    /// Adds one detail line (with or without its line end).
    mutating func add(_ line: UnsafeRawBufferPointer) throws(AggregationError) {
        guard Self.splitFields(line, into: &fields) == Self.detail.count else {
            throw .overflow("a detail line does not have the detail table's \(Self.detail.count) columns")
        }
        for index in Self.countColumns {
            guard let value = Self.count(UnsafeRawBufferPointer(rebasing: line[fields[index]])) else {
                throw .overflow("\(Self.detail[index].name) of a detail line is not a count or overflows")
            }
            counts[index] = value
        }
        for index in Self.moneyColumns {
            let text = UnsafeRawBufferPointer(rebasing: line[fields[index]])
            if text.isEmpty {
                amounts[index] = nil
            } else {
                guard let value = Money(decimalUTF8: text) else {
                    throw .overflow("\(Self.detail[index].name) of a detail line is not a decimal of six places")
                }
                amounts[index] = value
            }
        }
        // Buffer pointers: the accumulators read these per kept run and measure, without retaining the arrays.
        try fields.withUnsafeBufferPointer { (fields) throws(AggregationError) in
            try counts.withUnsafeBufferPointer { (counts) throws(AggregationError) in
                try amounts.withUnsafeBufferPointer { (amounts) throws(AggregationError) in
                    for index in accumulators.indices {
                        try accumulators[index].add(line, fields: fields, counts: counts, amounts: amounts)
                    }
                }
            }
        }
    }

    /// Merges another worker's sets; the first one merged is taken as it is.
    mutating func merge(_ other: RollupSet) throws(AggregationError) {
        guard accumulators.contains(where: { $0.groups > 0 }) else {
            accumulators = other.accumulators
            return
        }
        for index in accumulators.indices { try accumulators[index].merge(other.accumulators[index]) }
    }

    /// A non-negative decimal integer (counts are never empty or negative).
    private static func count(_ text: UnsafeRawBufferPointer) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            guard !overflow, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// The byte ranges of the fields of a line as `CSVLine` writes it (quoted fields keep their quotes),
    /// written into `fields` from its start; returns how many fields the line has. `fields` keeps its
    /// size (callers size it for the columns they expect), so a line with more fields than that reports
    /// its count without writing past the end.
    static func splitFields(_ line: UnsafeRawBufferPointer, into fields: inout [Range<Int>]) -> Int {
        var end = line.count
        if end > 0, line[end - 1] == 0x0A { end -= 1 }
        return fields.withUnsafeMutableBufferPointer { fields in
            var count = 0
            var position = 0
            while true {
                let start = position
                if position < end, line[position] == 0x22 {
                    position += 1
                    while position < end {
                        if line[position] == 0x22 {
                            if position + 1 < end, line[position + 1] == 0x22 {
                                position += 2
                                continue
                            }
                            position += 1
                            break
                        }
                        position += 1
                    }
                }
                while position < end, line[position] != 0x2C { position += 1 }
                if count < fields.count { fields[count] = start..<position }
                count += 1
                guard position < end else { return count }
                position += 1
            }
        }
    }
}

/// One rollup's groups and sums.
struct RollupAccumulator {
    private enum Slot {
        /// The n-th run of kept columns (`keptRuns`) of the group key.
        case keptRun(Int)
        case count(Int)
        case money(Int)
    }

    let rollup: Rollup
    private let countDetailIndexes: [Int]
    private let moneyDetailIndexes: [Int]
    /// The rollup's columns, in file order.
    private let slots: [Slot]
    /// The kept detail columns as runs of adjacent columns: each run is one byte range of the line
    /// (its fields and the commas between them), so a key is a few copies rather than one per field.
    private let keptRuns: [ClosedRange<Int>]
    private let keys = RowInterner(capacity: 256)
    /// The sums of group `id` are at `id * countDetailIndexes.count` (and likewise for amounts).
    private var counts: [Int64] = []
    /// Nil while every value of the group was empty.
    private var amounts: [Money?] = []
    /// Where each run of kept columns ends in group `id`'s key: `keptRuns.count` offsets from
    /// `id * keptRuns.count` (a run starts after the previous run's end and its comma).
    private var runEnds: [Int] = []
    /// Reused for every line's key; never shorter than the longest line seen (a key is part of a line).
    private var key: [UInt8] = []

    init(_ rollup: Rollup) {
        self.rollup = rollup
        let detail = AggregateTables.detailInOrder
        var runs: [ClosedRange<Int>] = []
        var counted: [Int] = []
        var money: [Int] = []
        var slots: [Slot] = []
        for column in rollup.columns {
            let index = detail.firstIndex(of: column)!
            if rollup.kept.contains(column) {
                // Columns are in detail order, so a kept column right after the previous one extends its run.
                if let last = runs.last, last.upperBound + 1 == index {
                    runs[runs.count - 1] = last.lowerBound...index
                } else {
                    slots.append(.keptRun(runs.count))
                    runs.append(index...index)
                }
            } else if column.isMoney {
                slots.append(.money(money.count))
                money.append(index)
            } else {
                slots.append(.count(counted.count))
                counted.append(index)
            }
        }
        keptRuns = runs
        countDetailIndexes = counted
        moneyDetailIndexes = money
        self.slots = slots
    }

    var groups: Int { keys.count }

    /// Adds a detail line whose measures are already parsed (`counts`, `amounts`: by detail column).
    mutating func add(
        _ line: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<Range<Int>>,
        counts lineCounts: UnsafeBufferPointer<Int64>, amounts lineAmounts: UnsafeBufferPointer<Money?>
    )
        throws(AggregationError)
    {
        if key.count < line.count { key = Array(repeating: 0, count: max(line.count, 2 * key.count)) }
        let keys = self.keys
        let runs = keptRuns
        let interned = key.withUnsafeMutableBytes { buffer in
            var length = 0
            for run in runs {
                if length > 0 {
                    buffer[length] = 0x2C
                    length += 1
                }
                let bytes = UnsafeRawBufferPointer(
                    rebasing: line[fields[run.lowerBound].lowerBound..<fields[run.upperBound].upperBound])
                UnsafeMutableRawBufferPointer(rebasing: buffer[length..<length + bytes.count]).copyMemory(from: bytes)
                length += bytes.count
            }
            return keys.intern(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
        }
        let group = makeSums(for: interned)
        if runEnds.count == group * runs.count {
            var end = -1
            for run in runs {
                end += 1 + fields[run.upperBound].upperBound - fields[run.lowerBound].lowerBound
                runEnds.append(end)
            }
        }
        let countBase = group * countDetailIndexes.count
        let countIndexes = countDetailIndexes
        let overflowed = counts.withUnsafeMutableBufferPointer { sums in
            for (position, index) in countIndexes.enumerated() {
                let (sum, overflow) = sums[countBase + position].addingReportingOverflow(lineCounts[index])
                guard !overflow else { return true }
                sums[countBase + position] = sum
            }
            return false
        }
        guard !overflowed else { throw .overflow("\(rollup.table): a count overflows") }
        let moneyBase = group * moneyDetailIndexes.count
        let moneyIndexes = moneyDetailIndexes
        let amountOverflowed = amounts.withUnsafeMutableBufferPointer { sums in
            for (position, index) in moneyIndexes.enumerated() {
                guard let amount = lineAmounts[index] else { continue }
                guard let sum = (sums[moneyBase + position] ?? .zero).plus(amount) else { return true }
                sums[moneyBase + position] = sum
            }
            return false
        }
        guard !amountOverflowed else { throw .overflow("\(rollup.table): an amount overflows") }
    }

    mutating func merge(_ other: RollupAccumulator) throws(AggregationError) {
        for id in 0..<other.keys.count {
            let group = makeSums(for: keys.intern(other.keys.key(id)))
            if runEnds.count == group * keptRuns.count {
                runEnds.append(contentsOf: other.runEnds[id * keptRuns.count..<(id + 1) * keptRuns.count])
            }
            for position in countDetailIndexes.indices {
                try addCount(
                    other.counts[id * countDetailIndexes.count + position],
                    at: group * countDetailIndexes.count + position)
            }
            for position in moneyDetailIndexes.indices {
                if let amount = other.amounts[id * moneyDetailIndexes.count + position] {
                    try addAmount(amount, at: group * moneyDetailIndexes.count + position)
                }
            }
        }
    }

    /// The table's bytes (header and lines sorted by their bytes) and its row count.
    func render() -> (bytes: [UInt8], rows: Int) {
        var lines = LineSet()
        var line = CSVLine()
        for id in 0..<keys.count {
            let key = keys.key(id)
            line.reset()
            for slot in slots {
                switch slot {
                case .keptRun(let run):
                    let start = run == 0 ? 0 : runEnds[id * keptRuns.count + run - 1] + 1
                    line.appendRaw(UnsafeRawBufferPointer(rebasing: key[start..<runEnds[id * keptRuns.count + run]]))
                case .count(let position): line.field(counts[id * countDetailIndexes.count + position])
                case .money(let position): line.field(amounts[id * moneyDetailIndexes.count + position])
                }
            }
            line.endLine()
            lines.append(line.bytes)
        }
        var bytes = CSVLine.header(rollup.columns.map(\.name))
        lines.appendSorted(to: &bytes)
        return (bytes, keys.count)
    }

    /// The group of an interned key, with zero sums if it is new.
    private mutating func makeSums(for interned: UInt32) -> Int {
        let id = Int(interned)
        if id * countDetailIndexes.count == counts.count {
            counts.append(contentsOf: repeatElement(0, count: countDetailIndexes.count))
            amounts.append(contentsOf: repeatElement(nil, count: moneyDetailIndexes.count))
        }
        return id
    }

    private mutating func addCount(_ value: Int64, at index: Int) throws(AggregationError) {
        let (sum, overflow) = counts[index].addingReportingOverflow(value)
        guard !overflow else { throw .overflow("\(rollup.table): a count overflows") }
        counts[index] = sum
    }

    private mutating func addAmount(_ value: Money, at index: Int) throws(AggregationError) {
        guard let sum = (amounts[index] ?? .zero).plus(value) else { throw .overflow("\(rollup.table): an amount overflows") }
        amounts[index] = sum
    }
}
