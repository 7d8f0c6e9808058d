import AggregateSchema
import Postbacks

#if canImport(Glibc)
    import Basics
    import PostbackStore
    import Glibc
#endif

/// The finished output of one day: every CSV file's bytes and what the manifest says about them.
struct RenderedDay: Sendable {
    var postbackDetailDaily: [UInt8] = []
    var postbackDetailDailyRows = 0
    /// The files of `AggregateTables.rollups`, in that order.
    var rollups: [(bytes: [UInt8], rows: Int)] = []
    var campaignEventsDaily: [UInt8] = []
    var campaignEventsDailyRows = 0
    /// `campaign_daily_development`: the development postbacks of the detail rows, decoded, rolled
    /// up like `campaign_daily`.
    var campaignDailyDevelopment: [UInt8] = []
    var campaignDailyDevelopmentRows = 0
    var schemaIDs: Set<String> = []
    var totals = DayTotals()

    /// Every table's name, bytes and rows, in `AggregateTables.all`'s (write) order.
    var tables: [(name: String, bytes: [UInt8], rows: Int)] {
        [(AggregateTables.postbackDetailDaily, postbackDetailDaily, postbackDetailDailyRows)]
            + zip(AggregateTables.rollups, rollups).map { ($0.table, $1.bytes, $1.rows) }
            + [
                (AggregateTables.campaignEventsDaily, campaignEventsDaily, campaignEventsDailyRows),
                (AggregateTables.campaignDailyDevelopment, campaignDailyDevelopment, campaignDailyDevelopmentRows),
            ]
    }
}

/// Turns a day's counted rows into CSV: decodes each row once with its schema (label, revenue,
/// events, campaign/geo/placement), writes the lines, sorts them, and folds decoded events into the
/// events table. Rows are split between the workers; their lines and events are merged and sorted.
///
/// Decoding rules (docs/aggregate.md, "Output"):
/// - `cv_kind` is `fine` or `coarse` when the postback carries that value, `null` for a winning
///   postback without one (Apple withheld it: an install, never zero revenue), `none` for a
///   non-winning postback (they never carry values);
/// - `decoded_label` is the schema's label, the window's unmapped label (default `undecoded`),
///   `no_schema`, or `null_cv`; revenue is empty unless the value decoded;
/// - installs, redownloads and re-engagements count winning postbacks of the first window by
///   conversion type; losses count `did_win` false; development postbacks are counted only in
///   `development_postbacks`, rejected records only in `rejected_postbacks`; `flagged_postbacks`
///   counts those of `postbacks` stored with flags;
/// - the rollups (`campaign_daily`, `publisher_daily`, `country_daily`) group the detail lines by
///   their kept columns' bytes and sum the measures (`RollupSet`); a detail line of development
///   postbacks only (no production postback, no rejected record) is left out of them;
/// - `campaign_daily_development` rolls up, like `campaign_daily`, the detail rows decoded with the
///   row's development count as `postbacks` (its development, rejected, duplicate and flagged counts
///   are 0); rows without development postbacks are left out. It never adds to the day's totals.
enum DayRenderer {
    static func render(_ table: DayTable, catalog: SchemaCatalog, workers: Int) throws -> RenderedDay {
        let rowCount = table.rows.count
        let parts = max(1, min(workers, rowCount / 1024))
        let slots = (0..<parts).map { _ in ResultSlot<RenderedPart>() }
        try Parallel.run(workers: parts, tasks: parts) { (_, part) throws(AggregationError) in
            let range = (rowCount * part / parts)..<(rowCount * (part + 1) / parts)
            slots[part].value = try renderRows(range, of: table, catalog: catalog)
        }

        var output = RenderedDay()
        var lines = LineSet()
        var rollups = RollupSet(AggregateTables.rollups)
        var development = RollupSet([AggregateTables.campaignDailyRollup])
        let eventKeys = RowInterner(capacity: 1024)
        var events: [EventAccumulator] = []
        for slot in slots {
            guard let part = slot.value else { continue }
            lines.append(contentsOf: part.lines)
            try rollups.merge(part.rollups)
            try development.merge(part.development)
            try output.totals.add(part.totals)
            output.schemaIDs.formUnion(part.schemaIDs)
            for (index, accumulator) in part.events.enumerated() {
                let id = Int(eventKeys.intern(part.eventKeys.key(index)))
                if id == events.count { events.append(accumulator) } else { try events[id].merge(accumulator) }
            }
        }
        output.postbackDetailDaily = CSVLine.header(AggregateTables.detailColumns)
        lines.appendSorted(to: &output.postbackDetailDaily)
        output.postbackDetailDailyRows = lines.count
        output.rollups = rollups.accumulators.map { $0.render() }
        (output.campaignDailyDevelopment, output.campaignDailyDevelopmentRows) = development.accumulators[0].render()

        var eventLines = LineSet()
        var line = CSVLine()
        for id in events.indices {
            let accumulator = events[id]
            line.reset()
            line.appendRaw(eventKeys.key(id))
            line.field(accumulator.postbacks)
            line.field(accumulator.countMin)
            line.field(accumulator.countMax)
            line.field(accumulator.revenueMin)
            line.field(accumulator.revenueMax)
            line.field(accumulator.revenueEstimate)
            line.field(accumulator.currency)
            line.endLine()
            eventLines.append(line.bytes)
        }
        output.campaignEventsDaily = CSVLine.header(AggregateTables.campaignEventsDailyColumns)
        eventLines.appendSorted(to: &output.campaignEventsDaily)
        output.campaignEventsDailyRows = events.count
        return output
    }

    /// One worker's share of the rows.
    private struct RenderedPart {
        var lines = LineSet()
        var rollups = RollupSet(AggregateTables.rollups)
        /// The development rows, rolled up like `campaign_daily`.
        var development = RollupSet([AggregateTables.campaignDailyRollup])
        var eventKeys = RowInterner(capacity: 256)
        var events: [EventAccumulator] = []
        var totals = DayTotals()
        var schemaIDs: Set<String> = []
    }

    private static func renderRows(_ rows: Range<Int>, of table: DayTable, catalog: SchemaCatalog) throws(AggregationError)
        -> RenderedPart
    {
        var part = RenderedPart()
        var line = CSVLine()
        var prefix = CSVLine()
        var eventKey = CSVLine()
        var dates = DateCache()
        var dimensions = DimensionCache()
        let rowValues = RowView.Storage()
        // Local references: reading a class's array properties in the loop would check exclusivity each time.
        let counted = table.postbacks
        let developmentCounts = table.development
        let rejectedCounts = table.rejected
        let duplicateCounts = table.duplicates
        let flaggedCounts = table.flagged
        let conflictingCounts = table.conflicting
        let keys = table.rows
        for row in rows {
            let postbacks = Int64(counted[row])
            let development = Int64(developmentCounts[row])
            let rejected = Int64(rejectedCounts[row])
            let duplicates = Int64(duplicateCounts[row])
            guard postbacks + development + rejected + duplicates > 0 else { continue }
            let key = keys.key(row)
            let fields = RowView(key: key, storage: rowValues)
            line.reset()
            prefix.reset()
            if fields.kind == .rejected {
                writeRejected(fields, key: key, rejected: rejected, into: &line)
                part.totals.rejectedPostbacks += Int(rejected)
                part.lines.append(line.bytes)
                try part.rollups.add(line.bytes)
                continue
            }
            let facts = try RowFacts(fields, key: key, catalog: catalog, postbacks: postbacks, dimensions: &dimensions)
            writeDimensions(fields, key: key, facts: facts, dates: &dates, into: &prefix)
            line.appendRaw(prefix.bytes)
            writeMeasures(
                fields, key: key, facts: facts, postbacks: postbacks, development: development, rejected: rejected,
                duplicates: duplicates, flagged: Int64(flaggedCounts[row]), conflicting: Int64(conflictingCounts[row]),
                into: &line)
            line.endLine()
            part.lines.append(line.bytes)
            // A grain seen only in development postbacks keeps its detail row (`development_postbacks`)
            // and its decoded row in campaign_daily_development, but no all-zero row in the rollups.
            if postbacks > 0 { try part.rollups.add(line.bytes) }
            if let schema = facts.schema {
                part.schemaIDs.insert(schema.schemaID)
            } else if postbacks > 0, let app = fields.appID {
                part.totals.postbacksWithoutSchema[app, default: 0] += Int(postbacks)
            }
            if development > 0 {
                let developmentFacts = try RowFacts(
                    fields, key: key, catalog: catalog, postbacks: development, dimensions: &dimensions)
                line.reset()
                line.appendRaw(prefix.bytes)
                writeMeasures(
                    fields, key: key, facts: developmentFacts, postbacks: development, development: 0, rejected: 0,
                    duplicates: 0, flagged: 0, conflicting: 0, into: &line)
                line.endLine()
                try part.development.add(line.bytes)
                part.totals.developmentInstalls += Int(developmentFacts.installs)
                if developmentFacts.schema == nil, let app = fields.appID {
                    part.totals.developmentWithoutSchema[app, default: 0] += Int(development)
                }
            }

            part.totals.postbacks += Int(postbacks)
            part.totals.installs += Int(facts.installs)
            part.totals.redownloads += Int(facts.redownloads)
            part.totals.reengagements += Int(facts.reengagements)
            part.totals.losses += Int(facts.losses)
            part.totals.nullValuePostbacks += Int(facts.nullValues)
            part.totals.developmentPostbacks += Int(development)
            part.totals.duplicatesDropped += Int(duplicates)
            // A row of development postbacks only adds no "EUR 0" to the production totals.
            if postbacks > 0, let estimate = facts.revenueEstimate, let currency = facts.schema?.currency {
                try part.totals.addRevenue(estimate, currency: currency)
            }
            if facts.decoded != nil { part.totals.decodedPostbacks += Int(postbacks) }

            if postbacks > 0, let decoded = facts.decoded {
                for event in decoded.events {
                    eventKey.reset()
                    eventKey.appendRaw(prefix.bytes)
                    eventKey.field(facts.schema?.schemaID)
                    eventKey.field(event.name)
                    let id = Int(part.eventKeys.intern(eventKey.bytes))
                    if id == part.events.count { part.events.append(EventAccumulator(currency: facts.schema?.currency)) }
                    try part.events[id].add(event, revenue: decoded.revenue, postbacks: postbacks)
                }
            }
        }
        withExtendedLifetime(rowValues) {}  // the views above point into it
        return part
    }

    /// A column with its field resolved once (`RowView.FieldColumn`) when it shows one.
    private struct ColumnStep<Column> {
        let column: Column
        let field: RowView.FieldColumn?
    }

    /// `columns` as steps, in a table the per-row loops read without reference counting; written
    /// once and only read afterwards, so threads share it safely.
    private static func steps<Column>(_ columns: [Column], field: (Column) -> RecordColumn?) -> UnsafeBufferPointer<
        ColumnStep<Column>
    > {
        let steps = UnsafeMutableBufferPointer<ColumnStep<Column>>.allocate(capacity: columns.count)
        _ = steps.initialize(
            from: columns.map { column in ColumnStep(column: column, field: field(column).map { RowView.FieldColumn($0.field) }) }
        )
        return UnsafeBufferPointer(steps)
    }

    nonisolated(unsafe) private static let dimensionSteps = steps(AggregateTables.dimensionSteps) { column in
        if case .field(let field) = column { field } else { nil }
    }
    nonisolated(unsafe) private static let measureSteps = steps(AggregateTables.detailMeasureSteps) { column in
        if case .field(let field) = column { field } else { nil }
    }
    nonisolated(unsafe) private static let detailSteps = steps(AggregateTables.detailInOrder) { column in
        if case .field(let field) = column { field } else { nil }
    }

    /// The detail table's measures of one row (without the line end).
    private static func writeMeasures(
        _ fields: RowView, key: UnsafeRawBufferPointer, facts: RowFacts, postbacks: Int64, development: Int64,
        rejected: Int64, duplicates: Int64, flagged: Int64, conflicting: Int64, into line: inout CSVLine
    ) {
        for step in measureSteps {
            switch step.column {
            case .field: fields.write(step.field!, of: key, into: &line)
            case .cvKind: line.field(facts.kind)
            case .decodedLabel: line.field(facts.label)
            case .schemaID: line.field(facts.schema?.schemaID)
            case .postbacks: line.field(postbacks)
            case .installs: line.field(facts.installs)
            case .redownloads: line.field(facts.redownloads)
            case .reengagements: line.field(facts.reengagements)
            case .losses: line.field(facts.losses)
            case .nullValuePostbacks: line.field(facts.nullValues)
            case .revenueMinSum: line.field(facts.revenueMin)
            case .revenueMaxSum: line.field(facts.revenueMax)
            case .revenueEstSum: line.field(facts.revenueEstimate)
            case .currency: line.field(facts.schema?.currency)
            case .developmentPostbacks: line.field(development)
            case .rejectedPostbacks: line.field(rejected)
            case .duplicatesDropped: line.field(duplicates)
            case .flaggedPostbacks: line.field(flagged)
            case .conflictingCopies: line.field(conflicting)
            }
        }
    }

    private static func writeDimensions(
        _ fields: RowView, key: UnsafeRawBufferPointer, facts: RowFacts, dates: inout DateCache,
        into line: inout CSVLine
    ) {
        for step in dimensionSteps {
            switch step.column {
            case .field: fields.write(step.field!, of: key, into: &line)
            case .estInstallDate: line.field(bytes: fields.installDay.map { dates.text($0) })
            case .sourceIdentifierDigits: line.field(fields.sourceIdentifier.map { $0.count })
            case .campaign: line.field(facts.dimensions.campaign)
            case .geo: line.field(facts.dimensions.geo)
            case .placement: line.field(facts.dimensions.placement)
            }
        }
    }

    private static func writeRejected(_ fields: RowView, key: UnsafeRawBufferPointer, rejected: Int64, into line: inout CSVLine) {
        // Only what the record claims to be (the fields of `RowKeyEncoder.rejectedFields`) and the count.
        for step in detailSteps {
            if case .field(let field) = step.column, RowKeyEncoder.rejectedFields.contains(field.field) {
                fields.write(step.field!, of: key, into: &line)
            } else if step.column == .rejectedPostbacks {
                line.field(rejected)
            } else if step.column.isPostbackCount {
                line.field(Int64(0))
            } else {
                line.field(String?.none)
            }
        }
        line.endLine()
    }
}

/// Everything derived from a row's fields and its schema.
private struct RowFacts {
    var schema: ConversionSchema?
    var kind: String
    var label: String?
    var decoded: DecodedValue?
    var dimensions = DecodedDimensions()
    var installs: Int64 = 0
    var redownloads: Int64 = 0
    var reengagements: Int64 = 0
    var losses: Int64 = 0
    var nullValues: Int64 = 0
    var revenueMin: Money?
    var revenueMax: Money?
    var revenueEstimate: Money?

    init(
        _ fields: RowView, key: UnsafeRawBufferPointer, catalog: SchemaCatalog, postbacks: Int64,
        dimensions cache: inout DimensionCache
    ) throws(AggregationError) {
        let window = fields.sequenceIndex ?? 0
        if let appID = fields.appID, let day = fields.installDay, let postbackProtocol = fields.postbackProtocol,
            let conversionType = fields.conversionType,
            let index = catalog.schemaIndex(
                appID: appID, day: day, postbackProtocol: postbackProtocol, conversionType: conversionType)
        {
            let schema = catalog.schemas[index]
            self.schema = schema
            if let network = fields.adNetworkID, fields.sourceIdentifier != nil || fields.campaignID != nil {
                dimensions = cache.dimensions(
                    schemaIndex: index, schema: schema, day: day, network: key.slice(network),
                    sourceIdentifier: fields.sourceIdentifier.map { key.slice($0) }, campaignID: fields.campaignID)
            }
        }
        let decoding: ValueDecoding?
        if let fine = fields.fineValue {
            kind = "fine"
            decoding = schema?.decode(fine: fine, window: window)
        } else if let coarse = fields.coarseValue {
            kind = "coarse"
            decoding = schema?.decode(coarse: coarse, window: window)
        } else {
            kind = fields.didWin == false ? "none" : "null"
            decoding = nil
        }
        switch decoding {
        case .decoded(let value)?:
            decoded = value
            label = value.label
            guard let min = value.revenue.min.times(postbacks), let estimate = value.revenue.estimate.times(postbacks) else {
                throw .overflow("revenue sum of a row overflows")
            }
            revenueMin = min
            revenueEstimate = estimate
            if let max = value.revenue.max {
                guard let sum = max.times(postbacks) else { throw .overflow("revenue sum of a row overflows") }
                revenueMax = sum
            }
        case .unmapped(let unmappedLabel)?:
            label = unmappedLabel
        case nil:
            label = kind == "null" ? "null_cv" : kind == "none" ? nil : "no_schema"
        }
        let winning = fields.didWin != false
        if winning && fields.sequenceIndex == 0 {
            switch fields.conversionType {
            case .download?: installs = postbacks
            case .redownload?: redownloads = postbacks
            case .reengagement?: reengagements = postbacks
            case nil: break
            }
        }
        if !winning { losses = postbacks }
        if kind == "null" { nullValues = postbacks }
    }
}

/// Sums for one row of the events table.
private struct EventAccumulator {
    var currency: String?
    var postbacks: Int64 = 0
    var countMin: Int64 = 0
    /// Nil once any contributing value has no upper count.
    var countMax: Int64? = 0
    var revenueMin: Money? = .zero
    var revenueMax: Money? = .zero
    var revenueEstimate: Money? = .zero

    init(currency: String?) { self.currency = currency }

    mutating func add(_ event: EventMapping, revenue: RevenueRange, postbacks count: Int64) throws(AggregationError) {
        var other = EventAccumulator(currency: currency)
        other.postbacks = count
        other.countMin = Int64(event.minCount) * count
        other.countMax = event.maxCount.map { Int64($0) * count }
        other.revenueMin = revenue.min.times(count)
        other.revenueEstimate = revenue.estimate.times(count)
        other.revenueMax = revenue.max.flatMap { $0.times(count) }
        guard other.revenueMin != nil, other.revenueEstimate != nil, revenue.max == nil || other.revenueMax != nil else {
            throw .overflow("event revenue sum overflows")
        }
        try merge(other)
    }

    mutating func merge(_ other: EventAccumulator) throws(AggregationError) {
        postbacks += other.postbacks
        countMin += other.countMin
        countMax = countMax.flatMap { total in other.countMax.map { total + $0 } }
        guard let min = other.revenueMin.flatMap({ revenueMin?.plus($0) }),
            let estimate = other.revenueEstimate.flatMap({ revenueEstimate?.plus($0) })
        else { throw .overflow("event revenue sum overflows") }
        revenueMin = min
        revenueEstimate = estimate
        revenueMax = revenueMax.flatMap { total in other.revenueMax.flatMap { total.plus($0) } }
    }
}

/// Output lines kept in one buffer and sorted by their bytes (memcmp), so a partition's rows come
/// out in the same order on every run.
struct LineSet {
    private var text: [UInt8] = []
    private var ranges: [(start: Int, count: Int)] = []

    var count: Int { ranges.count }

    mutating func append(_ line: UnsafeRawBufferPointer) {
        ranges.append((text.count, line.count))
        text.append(contentsOf: line)
    }

    mutating func append(contentsOf other: LineSet) {
        let offset = text.count
        text.append(contentsOf: other.text)
        ranges.append(contentsOf: other.ranges.map { ($0.start + offset, $0.count) })
    }

    mutating func appendSorted(to output: inout [UInt8]) {
        text.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!
            ranges.sort { a, b in
                let order = memcmp(base + a.start, base + b.start, min(a.count, b.count))
                return order != 0 ? order < 0 : a.count < b.count
            }
            output.reserveCapacity(output.count + text.count)
            for range in ranges {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range.start..<(range.start + range.count)]))
            }
        }
    }
}

/// Decoded campaign/geo/placement per (schema, day, network, source identifier or campaign id):
/// rows share these heavily, and decoding means a map lookup and dictionary lookups by string.
private struct DimensionCache {
    private let keys = RowInterner(capacity: 256)
    private var values: [DecodedDimensions] = []
    private var scratch: [UInt8] = []

    mutating func dimensions(
        schemaIndex: Int, schema: ConversionSchema, day: UTCDay, network: UnsafeRawBufferPointer,
        sourceIdentifier: UnsafeRawBufferPointer?, campaignID: Int64?
    ) -> DecodedDimensions {
        scratch.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: Int32(truncatingIfNeeded: schemaIndex)) { scratch.append(contentsOf: $0) }
        withUnsafeBytes(of: Int32(truncatingIfNeeded: day.daysSinceEpoch)) { scratch.append(contentsOf: $0) }
        withUnsafeBytes(of: campaignID ?? -1) { scratch.append(contentsOf: $0) }
        withUnsafeBytes(of: Int32(truncatingIfNeeded: network.count)) { scratch.append(contentsOf: $0) }
        scratch.append(contentsOf: network)
        if let sourceIdentifier { scratch.append(contentsOf: sourceIdentifier) }
        let id = Int(keys.intern(scratch))
        if id < values.count { return values[id] }
        var decoded = DecodedDimensions()
        if let map = schema.sourceIdentifierMap(lowercasedAdNetworkID: network, day: day) {
            if let sourceIdentifier {
                decoded = map.dimensions(sourceIdentifier: sourceIdentifier)
            } else if let campaignID {
                decoded = map.dimensions(campaignID: campaignID)
            }
        }
        values.append(decoded)
        return decoded
    }
}

/// `YYYY-MM-DD` of the few distinct days a partition's rows have, formatted once.
private struct DateCache {
    private var texts: [Int: [UInt8]] = [:]

    mutating func text(_ day: UTCDay) -> [UInt8] {
        if let text = texts[day.daysSinceEpoch] { return text }
        let text = Array(day.description.utf8)
        texts[day.daysSinceEpoch] = text
        return text
    }
}

extension UnsafeRawBufferPointer {
    func slice(_ slice: ByteSlice) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[slice.start..<(slice.start + slice.count)])
    }
}
