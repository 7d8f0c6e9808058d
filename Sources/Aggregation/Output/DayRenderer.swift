#if canImport(Glibc)
import Glibc
#endif
import Postbacks

/// The finished output of one day: both CSV files' bytes and what the manifest says about them.
struct RenderedDay {
    var campaignDaily: [UInt8] = []
    var campaignEventsDaily: [UInt8] = []
    var campaignDailyRows = 0
    var campaignEventsDailyRows = 0
    var schemaIDs: Set<String> = []
    var totals = DayTotals()
}

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
}

/// Turns a day's counted rows into CSV: decodes each row once with its schema (label, revenue,
/// events, campaign/geo/placement), writes the lines, sorts them, and folds decoded events into the
/// events table.
///
/// Decoding rules (docs/aggregate.md, "Decoding"):
/// - `cv_kind` is `fine` or `coarse` when the postback carries that value, `null` for a winning
///   postback without one (Apple withheld it: an install, never zero revenue), `none` for a
///   non-winning postback (they never carry values);
/// - `decoded_label` is the schema's label, the window's unmapped label (default `undecoded`),
///   `no_schema`, or `null_cv`; revenue is empty unless the value decoded;
/// - installs, redownloads and re-engagements count winning postbacks of the first window by
///   conversion type; losses count `did_win` false; development postbacks are counted only in
///   `development_postbacks`, rejected records only in `rejected_postbacks`.
enum DayRenderer {
    static func render(_ table: DayTable, catalog: SchemaCatalog) throws(AggregationError) -> RenderedDay {
        var output = RenderedDay()
        var lines = LineSet()
        let eventKeys = RowInterner(capacity: 1024)
        var events: [EventAccumulator] = []
        var line = CSVLine()
        var prefix = CSVLine()
        for row in 0..<table.rows.count {
            let postbacks = Int64(table.postbacks[row])
            let development = Int64(table.development[row]), rejected = Int64(table.rejected[row]), duplicates = Int64(table.duplicates[row])
            guard postbacks + development + rejected + duplicates > 0 else { continue }
            let fields = table.rows.withKey(row) { RowFields(key: $0) }
            line.reset()
            prefix.reset()
            if fields.kind == .rejected {
                writeRejected(fields, rejected: rejected, into: &line)
                output.totals.rejectedPostbacks += Int(rejected)
                lines.append(line.bytes)
                continue
            }
            let facts = try RowFacts(fields, catalog: catalog, postbacks: postbacks)
            writeDimensions(fields, facts: facts, into: &prefix)
            line.appendRaw(prefix.bytes)
            line.field(facts.kind)
            line.field(fields.fineValue)
            line.field(fields.coarseValue?.rawValue)
            line.field(facts.label)
            line.field(facts.schema?.schemaID)
            line.field(postbacks)
            line.field(facts.installs)
            line.field(facts.redownloads)
            line.field(facts.reengagements)
            line.field(facts.losses)
            line.field(facts.nullValues)
            line.field(facts.revenueMin)
            line.field(facts.revenueMax)
            line.field(facts.revenueEstimate)
            line.field(facts.schema?.currency)
            line.field(development)
            line.field(rejected)
            line.field(duplicates)
            line.endLine()
            lines.append(line.bytes)
            if let schema = facts.schema { output.schemaIDs.insert(schema.schemaID) }

            output.totals.postbacks += Int(postbacks)
            output.totals.installs += Int(facts.installs)
            output.totals.redownloads += Int(facts.redownloads)
            output.totals.reengagements += Int(facts.reengagements)
            output.totals.losses += Int(facts.losses)
            output.totals.nullValuePostbacks += Int(facts.nullValues)
            output.totals.developmentPostbacks += Int(development)
            output.totals.duplicatesDropped += Int(duplicates)
            if let estimate = facts.revenueEstimate {
                guard let sum = output.totals.revenueEstimate.plus(estimate) else { throw .overflow("revenue estimate total overflows") }
                output.totals.revenueEstimate = sum
            }

            if postbacks > 0, let decoded = facts.decoded {
                for event in decoded.events {
                    var key = prefix
                    key.field(facts.schema?.schemaID)
                    key.field(event.name)
                    let id = Int(eventKeys.intern(key.bytes))
                    if id == events.count { events.append(EventAccumulator(currency: facts.schema?.currency)) }
                    try events[id].add(event, revenue: decoded.revenue, postbacks: postbacks)
                }
            }
        }
        output.campaignDaily = CSVLine.header(AggregateTables.campaignDailyColumns)
        lines.appendSorted(to: &output.campaignDaily)
        output.campaignDailyRows = lines.count

        var eventLines = LineSet()
        for id in events.indices {
            let accumulator = events[id]
            line.reset()
            line.appendRaw(Array(eventKeys.key(id)))
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

    private static func writeDimensions(_ fields: RowFields, facts: RowFacts, into line: inout CSVLine) {
        line.field(fields.installDay?.description)
        line.field(fields.appID)
        line.field(fields.postbackProtocol?.rawValue)
        line.field(fields.version)
        line.field(fields.adNetworkID)
        line.field(fields.campaignID)
        line.field(fields.sourceIdentifier)
        line.field(fields.sourceIdentifier.map { $0.utf8.count })
        line.field(facts.dimensions.campaign)
        line.field(facts.dimensions.geo)
        line.field(facts.dimensions.placement)
        line.field(fields.sourceAppID)
        line.field(fields.sourceDomain)
        line.field(fields.marketplaceID)
        line.field(fields.countryCode)
        line.field(fields.interaction?.rawValue)
        line.field(fields.conversionType?.rawValue)
        line.field(fields.sequenceIndex)
        line.field(fields.didWin)
    }

    private static func writeRejected(_ fields: RowFields, rejected: Int64, into line: inout CSVLine) {
        let columns = AggregateTables.campaignDailyColumns
        for column in columns {
            switch column {
            case "app_id": line.field(fields.appID)
            case "protocol": line.field(fields.postbackProtocol?.rawValue)
            case "version": line.field(fields.version)
            case "ad_network_id": line.field(fields.adNetworkID)
            case "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
                 "development_postbacks", "duplicates_dropped": line.field(Int64(0))
            case "rejected_postbacks": line.field(rejected)
            default: line.field(String?.none)
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

    init(_ fields: RowFields, catalog: SchemaCatalog, postbacks: Int64) throws(AggregationError) {
        let window = fields.sequenceIndex ?? 0
        if let appID = fields.appID, let day = fields.installDay, let postbackProtocol = fields.postbackProtocol,
           let conversionType = fields.conversionType {
            schema = catalog.schema(appID: appID, day: day, postbackProtocol: postbackProtocol, conversionType: conversionType)
            if let schema, let network = fields.adNetworkID, let map = schema.sourceIdentifierMap(adNetworkID: network, day: day) {
                if let source = fields.sourceIdentifier {
                    dimensions = map.dimensions(sourceIdentifier: source)
                } else if let campaign = fields.campaignID {
                    dimensions = map.dimensions(campaignID: campaign)
                }
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
        let firstWindow = fields.sequenceIndex == 0
        if winning && firstWindow {
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
        postbacks += count
        countMin += Int64(event.minCount) * count
        countMax = countMax.flatMap { total in event.maxCount.map { total + Int64($0) * count } }
        guard let min = revenue.min.times(count).flatMap({ revenueMin?.plus($0) }),
              let estimate = revenue.estimate.times(count).flatMap({ revenueEstimate?.plus($0) })
        else { throw .overflow("event revenue sum overflows") }
        revenueMin = min
        revenueEstimate = estimate
        revenueMax = revenueMax.flatMap { total in revenue.max.flatMap { $0.times(count) }.flatMap { total.plus($0) } }
    }
}

/// Output lines kept in one buffer and sorted by their bytes (memcmp), so a partition's rows come
/// out in the same order on every run.
private struct LineSet {
    private var text: [UInt8] = []
    private var ranges: [(start: Int, count: Int)] = []

    var count: Int { ranges.count }

    mutating func append(_ line: [UInt8]) {
        ranges.append((text.count, line.count))
        text.append(contentsOf: line)
    }

    mutating func appendSorted(to output: inout [UInt8]) {
        text.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!
            ranges.sort { a, b in
                let common = min(a.count, b.count)
                let order = memcmp(base + a.start, base + b.start, common)
                return order != 0 ? order < 0 : a.count < b.count
            }
            output.reserveCapacity(output.count + text.count)
            for range in ranges { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range.start..<(range.start + range.count)])) }
        }
    }
}
