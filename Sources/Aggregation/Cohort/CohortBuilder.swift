package import AggregateSchema
package import Basics
import Foundation
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// What the cohort pass needs (docs/aggregate.md, "campaign_cohort_daily").
package struct CohortRequest: Sendable {
    package var dataDirectory: String
    /// The received days the nightly run published.
    package var from: UTCDay
    package var to: UTCDay
    package var toolVersion: String
    package var format = AggregateFormat.csv
    package var force = false
    package var fx = FXTable.empty

    package init(dataDirectory: String, from: UTCDay, to: UTCDay, toolVersion: String) {
        self.dataDirectory = dataDirectory
        self.from = from
        self.to = to
        self.toolVersion = toolVersion
    }
}

/// One cohort the pass published.
package struct CohortSummary: Sendable {
    package var installDay: UTCDay
    package var rows: Int
    package var status: CohortStatus
    package var changed: Bool
}

/// The cohort pass of the nightly job: rebuilds `campaign_cohort_daily` (and its development twin) for
/// the install dates the run's days can touch, from the published `campaign_daily` files and the
/// stored spend only, then each cohort's manifest. Runs after the day tables, under the same store lock.
package enum CohortBuilder {
    static let manifestFormat = 1

    package static func rebuild(_ request: CohortRequest) throws -> [CohortSummary] {
        let root = request.dataDirectory
        let spend = SpendStore(dataDirectory: root)
        try spend.recover()
        let published = PublishedDays(root: root)
        let offsets = CohortStatus.lastDayOffsets

        // Install dates the run's days reach, and any other whose spend changed since its cohort.
        var installDays = Set<UTCDay>()
        var day = request.from.adding(days: -offsets.window3)
        while day <= request.to {
            installDays.insert(day)
            day = day.adding(days: 1)
        }
        for spendDay in spend.days() where !installDays.contains(spendDay) {
            let recorded = CohortManifest.read(root: root, day: spendDay)?.spendInputs ?? [:]
            let current = Dictionary(
                uniqueKeysWithValues: spend.files(of: spendDay).map {
                    (
                        relative($0, root: root),
                        (try? FileBytes.read(path: $0, limit: 1 << 30)).map { SHA256.hash($0).description } ?? ""
                    )
                })
            if recorded != current { installDays.insert(spendDay) }
        }

        // Every received day that can hold postbacks of those cohorts, read once.
        var cohorts: [UTCDay: CohortInputs] = [:]
        for installDay in installDays { cohorts[installDay] = CohortInputs() }
        var receivedDays = Set<UTCDay>()
        for installDay in installDays {
            for offset in 0...offsets.window3 {
                let received = installDay.adding(days: offset)
                if published.manifest(received) != nil { receivedDays.insert(received) }
            }
        }
        for received in receivedDays.sorted() {
            guard let manifest = published.manifest(received) else { continue }
            for (tableIndex, (_, source)) in AggregateTables.cohortTables.enumerated() {
                guard let file = manifest.outputs[source] else { continue }
                let input = CohortManifest.Input(path: file.path, bytes: file.bytes, sha256: file.sha256)
                let rows = try CohortCache.rows(root: root, table: source, day: received, file: file)
                for offset in 0...offsets.window3 {
                    let installDay = received.adding(days: -offset)
                    if cohorts[installDay] != nil { cohorts[installDay]!.sources.append(input) }
                }
                try rows.forEach(wanted: { cohorts[$0] != nil }) { row in
                    // A row of development or rejected records only (postbacks 0) is in no cohort of its table.
                    guard row.postbacks > 0 else { return }
                    cohorts[row.installDay]!.tables[tableIndex][row.key, default: CohortCell()].add(row)
                }
            }
        }

        var summaries: [CohortSummary] = []
        for installDay in installDays.sorted() {
            var inputs = cohorts[installDay]!
            let spendFiles = spend.files(of: installDay)
            var spendRows: [SpendRow] = []
            for path in spendFiles {
                let bytes: [UInt8]
                do {
                    bytes = try FileBytes.read(path: path, limit: 1 << 30)
                } catch {
                    throw AggregationError.usage("\(path): cannot read it: \(error)")
                }
                spendRows += try SpendRow.readStored(bytes, path: path)
                inputs.spendInputs.append(
                    CohortManifest.Input(
                        path: relative(path, root: root), bytes: bytes.count, sha256: SHA256.hash(bytes).description))
            }
            let previous = CohortManifest.read(root: root, day: installDay)
            let hasPostbacks = inputs.tables.contains { !$0.isEmpty }
            guard hasPostbacks || !spendRows.isEmpty || previous != nil else { continue }
            let complete = published.completeThrough(installDay, cap: offsets.window3)
            let status = CohortStatus(installDay: installDay, completeThrough: complete)
            let cohort = CohortDay(
                installDay: installDay, completeThrough: complete, status: status, inputs: inputs, spend: spendRows,
                fx: request.fx)
            if let previous, !request.force {
                var losses: [String] = []
                if cohort.postbacks < previous.postbacks {
                    losses.append("\(cohort.postbacks) postbacks instead of \(previous.postbacks)")
                }
                if let before = previous.completeThrough, complete.map({ $0 < before }) ?? true {
                    losses.append("received days complete through \(complete?.description ?? "none") instead of \(before)")
                }
                if !losses.isEmpty {
                    throw AggregationError.worseThanPublished(
                        day: installDay, manifest: CohortManifest.path(root: root, day: installDay),
                        losses: losses.joined(separator: " and ") + " (cohort of install date \(installDay))")
                }
            }
            let changed = try cohort.publish(root: root, request: request)
            summaries.append(CohortSummary(installDay: installDay, rows: cohort.rows[0].count, status: status, changed: changed))
        }
        return summaries
    }

    static func relative(_ path: String, root: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }
}

/// What one install date's cohort is made of: per table (production, development) its cells by key,
/// and the files they were read from.
struct CohortInputs {
    var tables: [[CohortKey: CohortCell]] = [[:], [:]]
    var sources: [CohortManifest.Input] = []
    var spendInputs: [CohortManifest.Input] = []
}

/// A cohort row's key: the decoded campaign name when there is one, else the id the postback carried.
struct CohortKey: Hashable {
    var appID: Int64
    var adNetworkID: String
    var campaignID: Int64?
    var sourceIdentifier: String?
    var campaign: String?

    init(appID: Int64, adNetworkID: String, campaignID: Int64?, sourceIdentifier: String?, campaign: String?) {
        self.appID = appID
        self.adNetworkID = adNetworkID
        if let campaign {
            self.campaign = campaign
        } else {
            self.campaignID = campaignID
            self.sourceIdentifier = sourceIdentifier
        }
    }

    init(_ spend: SpendRow) {
        self.init(
            appID: spend.appID, adNetworkID: spend.adNetworkID, campaignID: spend.campaignID,
            sourceIdentifier: spend.sourceIdentifier, campaign: spend.campaign)
    }
}

/// An exact amount summed as SQL SUM does: nil until a non-empty value is added.
struct AmountSum {
    var value: Money?

    mutating func add(_ other: Money?) {
        guard let other else { return }
        value = Money(micros: (value?.micros ?? 0) + other.micros)
    }
}

/// The postback side of one cohort row.
struct CohortCell {
    var installs: Int64 = 0
    var redownloads: Int64 = 0
    var reengagements: Int64 = 0
    var postbacks: [Int64] = [0, 0, 0]
    var winning: Int64 = 0
    var nullValues: Int64 = 0
    /// Per window: estimate, min, max.
    var revenue: [[AmountSum]] = Array(repeating: Array(repeating: AmountSum(), count: 3), count: 3)
    var currencies: Set<String> = []
    /// The null-value model's columns of the rows (docs/modeling.md).
    var modeled = ModeledTotal()

    mutating func add(_ row: CampaignDailyRow) {
        installs += row.installs
        redownloads += row.redownloads
        reengagements += row.reengagements
        let window = min(max(row.sequenceIndex, 0), 2)
        postbacks[window] += row.postbacks
        winning += row.postbacks - row.losses
        nullValues += row.nullValues
        revenue[window][0].add(row.revenueEstimate)
        revenue[window][1].add(row.revenueMin)
        revenue[window][2].add(row.revenueMax)
        if let currency = row.currency { currencies.insert(currency) }
        modeled.add(
            row.modeled,
            campaign: ModeledTotal.Campaign(
                window: row.sequenceIndex,
                conversionType: row.conversionType == "re-engagement" ? "re-engagement" : "install",
                currency: row.currency, adNetworkID: row.key.adNetworkID, sourceIdentifier: row.sourceIdentifier,
                campaignID: row.campaignID))
    }
}

/// The columns of a `campaign_daily` (or development) row the cohorts use.
struct CampaignDailyRow {
    var installDay: UTCDay
    var key: CohortKey
    var sequenceIndex: Int
    var postbacks: Int64
    var installs: Int64
    var redownloads: Int64
    var reengagements: Int64
    var losses: Int64
    var nullValues: Int64
    var revenueMin: Money?
    var revenueMax: Money?
    var revenueEstimate: Money?
    var currency: String?
    /// The postback's conversion type and source identifier (kept when the key has a campaign name):
    /// the model's stratum and campaign.
    var conversionType: String? = nil
    var sourceIdentifier: String? = nil
    /// The row's own campaign ID (the key drops it when the campaign has a name): the model's campaign.
    var campaignID: Int64? = nil
    var modeled = ModeledParts.none
}

/// A published `campaign_daily` file (CSV or Parquet) read row by row into `CampaignDailyRow`s.
/// The CSV is read in place (field ranges, only the columns the cohorts use turned into values):
/// the nightly run reads some 40 days of it, so this is most of the cohort pass's time.
struct CampaignDailyRows {
    static let columns = [
        "est_install_date", "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign",
        "postback_sequence_index", "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
        "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
    ]
    /// Read when the file has them (files published before the model have none of the modeled columns).
    static let optionalColumns = ["conversion_type"] + ModeledColumn.allCases.map(\.rawValue)
    static var allColumns: [String] { columns + optionalColumns }

    private let path: String
    private let csv: [UInt8]?
    private let parquet: (header: [String], rows: [[String?]])?

    init(bytes: [UInt8], path: String, parquet: Bool) throws {
        self.path = path
        if parquet {
            do {
                self.parquet = try PublishedParquet.textRows(parquet: bytes)
            } catch {
                throw AggregationError.usage(
                    "\(path): not a readable Parquet file (\(error)): rerun 'postback aggregate' for its day")
            }
            csv = nil
        } else {
            self.parquet = nil
            csv = bytes
        }
    }

    private func indices(_ header: [String]) throws -> [Int] {
        var index: [Int] = []
        for name in Self.columns {
            guard let position = header.firstIndex(of: name) else {
                throw AggregationError.usage(
                    "\(path): has no \(name) column: rerun 'postback aggregate' for its day with this release")
            }
            index.append(position)
        }
        // An absent optional column reads as empty.
        for name in Self.optionalColumns { index.append(header.firstIndex(of: name) ?? Int.max) }
        return index
    }

    /// Calls `body` with each row whose install date `wanted` accepts (a rejected record's row, which
    /// has none, is in no cohort).
    func forEach(wanted: (UTCDay) -> Bool, _ body: (CampaignDailyRow) throws -> Void) throws {
        if let parquet {
            let index = try indices(parquet.header)
            for (number, record) in parquet.rows.enumerated() {
                let fields = index.map { record.indices.contains($0) ? record[$0].map { Array($0.utf8) } : nil }
                guard let row = try Self.row(fields, wanted: wanted, path: path, line: number + 2) else { continue }
                try body(row)
            }
            return
        }
        guard let csv else { return }
        var reader = RenderedCSV(csv)
        guard let header = reader.nextRecord() else { return }
        let index = try indices(header.map { String(decoding: $0 ?? [], as: UTF8.self) })
        var ranges: [RenderedCSV.Field] = []
        var scratch: [UInt8] = []
        var line = 1
        var dates: [[UInt8]: UTCDay] = [:]
        while let count = reader.nextFields(into: &ranges) {
            line += 1
            // The install date first: most rows of a day's file belong to cohorts this pass does not build.
            guard index[0] < count, !ranges[index[0]].range.isEmpty else { continue }
            let dateField = ranges[index[0]]
            let dateBytes = Array(csv[dateField.range])
            let day: UTCDay
            if let known = dates[dateBytes] {
                day = known
            } else {
                guard let parsed = UTCDay(String(decoding: dateBytes, as: UTF8.self)) else { continue }
                dates[dateBytes] = parsed
                day = parsed
            }
            guard wanted(day) else { continue }
            let fields = index.map { position -> [UInt8]? in
                guard position < count else { return nil }
                let field = ranges[position]
                if field.quoted {
                    reader.unescape(field, into: &scratch)
                    return scratch
                }
                return field.range.isEmpty ? nil : Array(csv[field.range])
            }
            guard let row = try Self.row(fields, wanted: { _ in true }, path: path, line: line) else { continue }
            try body(row)
        }
    }

    private static func row(_ fields: [[UInt8]?], wanted: (UTCDay) -> Bool, path: String, line: Int) throws
        -> CampaignDailyRow?
    {
        func text(_ i: Int) -> String? { fields[i].map { String(decoding: $0, as: UTF8.self) } }
        func count(_ i: Int) -> Int64 {
            guard let bytes = fields[i], !bytes.isEmpty, bytes.count <= 18 else { return 0 }
            var value: Int64 = 0
            for byte in bytes {
                guard byte >= 0x30, byte <= 0x39 else { return 0 }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func money(_ i: Int) throws -> Money? {
            guard let bytes = fields[i] else { return nil }
            guard let amount = Money(decimalUTF8: bytes) else {
                throw AggregationError.usage(
                    "\(path): line \(line): \(columns[i]) '\(String(decoding: bytes, as: UTF8.self))' is not an amount")
            }
            return amount
        }
        guard let dayText = text(0), let installDay = UTCDay(dayText), wanted(installDay), fields[1] != nil else { return nil }
        let key = CohortKey(
            appID: count(1), adNetworkID: text(2) ?? "", campaignID: fields[3] == nil ? nil : count(3), sourceIdentifier: text(4),
            campaign: text(5))
        let first = columns.count + 1
        func optional(_ column: ModeledColumn) -> Int { first + ModeledColumn.allCases.firstIndex(of: column)! }
        var modeled = ModeledParts.none
        if let bytes = fields[optional(.nullRevenueEst)] {
            guard let amount = Money(decimalUTF8: bytes) else {
                throw AggregationError.usage(
                    "\(path): line \(line): modeled_null_revenue_est '\(String(decoding: bytes, as: UTF8.self))' is not an amount"
                )
            }
            modeled.estimate = amount
        }
        for (index, column) in ModeledColumn.summed.enumerated() {
            guard let text = text(optional(column)) else { continue }
            guard let value = Double(text) else {
                throw AggregationError.usage("\(path): line \(line): \(column.rawValue) '\(text)' is not a number")
            }
            modeled.sums[index] = value
        }
        modeled.note = text(optional(.note))
        return CampaignDailyRow(
            installDay: installDay, key: key, sequenceIndex: Int(count(6)), postbacks: count(7), installs: count(8),
            redownloads: count(9), reengagements: count(10), losses: count(11), nullValues: count(12),
            revenueMin: try money(13), revenueMax: try money(14), revenueEstimate: try money(15), currency: text(16),
            conversionType: text(columns.count), sourceIdentifier: text(4), campaignID: fields[3] == nil ? nil : count(3),
            modeled: modeled)
    }
}

/// Which days are published (a day's manifest) and which of its files the cohorts read.
struct PublishedDays {
    struct Manifest {
        var partial: Bool
        var outputs: [String: (path: String, bytes: Int, sha256: String)]
    }

    let root: String
    private let cache = ManifestCache()

    init(root: String) { self.root = root }

    func manifest(_ day: UTCDay) -> Manifest? {
        if let cached = cache.entries[day] { return cached }
        let value = Self.read(root + "/" + PublishedLayout.dayManifest(day))
        cache.entries[day] = value
        return value
    }

    /// The last day from `day` on up to which every day is published and not partial, at most
    /// `cap` days after it; nil when `day` itself is not.
    func completeThrough(_ day: UTCDay, cap: Int) -> UTCDay? {
        var last: UTCDay? = nil
        for offset in 0...cap {
            guard let manifest = manifest(day.adding(days: offset)), !manifest.partial else { break }
            last = day.adding(days: offset)
        }
        return last
    }

    private static func read(_ path: String) -> Manifest? {
        guard let bytes = try? FileBytes.read(path: path), let manifest = ManifestObject<DayManifestKey>(json: bytes) else {
            return nil
        }
        var outputs: [String: (path: String, bytes: Int, sha256: String)] = [:]
        for output in manifest.objects(.outputs, ManifestOutputKey.self) ?? [] {
            guard let table = output.string(.table), let file = output.string(.path), let sha = output.string(.sha256) else {
                continue
            }
            // The CSV when the day has both: the same rows, cheaper to read.
            if let existing = outputs[table], existing.path.hasSuffix(".csv") { continue }
            outputs[table] = (file, Int(output.int64(.bytes) ?? 0), sha)
        }
        let partial = manifest.bool(.partial) ?? false
        return Manifest(partial: partial, outputs: outputs)
    }

    private final class ManifestCache: @unchecked Sendable {
        var entries: [UTCDay: Manifest?] = [:]
    }
}
