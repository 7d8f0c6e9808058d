import AggregateSchema
import Basics
import Foundation
import PostbackCrypto

/// One install date's cohort: its rows in both tables, rendered, and published with its manifest.
struct CohortDay {
    let installDay: UTCDay
    let completeThrough: UTCDay?
    let status: CohortStatus
    let inputs: CohortInputs
    /// Per table (production, development): the rendered lines, sorted.
    private(set) var rows: [[[UInt8]]] = [[], []]
    /// The production table's postbacks, and the development table's.
    private(set) var postbacks: Int64 = 0
    private(set) var developmentPostbacks: Int64 = 0
    private var installs: Int64 = 0
    private var spendByCurrency: [String: Money] = [:]
    private var revenueByCurrency: [String: Money] = [:]

    init(installDay: UTCDay, completeThrough: UTCDay?, status: CohortStatus, inputs: CohortInputs, spend: [SpendRow], fx: FXTable)
    {
        self.installDay = installDay
        self.completeThrough = completeThrough
        self.status = status
        self.inputs = inputs
        var spendByKey: [CohortKey: [SpendRow]] = [:]
        for row in spend { spendByKey[CohortKey(row), default: []].append(row) }
        for row in spend { spendByCurrency[row.currency, default: .zero].micros += row.spend.micros }
        for (table, cells) in inputs.tables.enumerated() {
            let keys = Set(cells.keys).union(spendByKey.keys)
            var lines: [[UInt8]] = []
            for key in keys {
                let cell = cells[key] ?? CohortCell()
                lines.append(line(key: key, cell: cell, spend: spendByKey[key] ?? [], fx: fx))
                if table == 0 {
                    postbacks += cell.postbacks.reduce(0, +)
                    installs += cell.installs
                    if cell.currencies.count == 1, let currency = cell.currencies.first {
                        for window in 0..<3 {
                            revenueByCurrency[currency, default: .zero].micros += cell.revenue[window][0].value?.micros ?? 0
                        }
                    }
                } else {
                    developmentPostbacks += cell.postbacks.reduce(0, +)
                }
            }
            lines.sort { $0.lexicographicallyPrecedes($1) }
            rows[table] = lines
        }
    }

    /// `a ÷ b` in millionths, rounded half up (docs/aggregate.md): nil when `b` is 0.
    static func quotient(_ a: Int64, _ b: Int64, scale: Int128 = 1) -> Money? {
        guard b > 0 else { return nil }
        let numerator = Int128(a) * 1_000_000 / scale
        return Money(micros: Int64((2 * numerator + Int128(b)) / (2 * Int128(b))))
    }

    private func line(key: CohortKey, cell: CohortCell, spend: [SpendRow], fx: FXTable) -> [UInt8] {
        // Revenue, unless the campaign's postbacks were decoded in two currencies.
        let revenueCurrency = cell.currencies.count == 1 ? cell.currencies.first : nil
        var revenue = cell.revenue
        var cumulative: [[AmountSum]] = [revenue[0], revenue[0], revenue[0]]
        for window in 1..<3 {
            cumulative[window] = cumulative[window - 1]
            for part in 0..<3 { cumulative[window][part].add(revenue[window][part].value) }
        }
        if revenueCurrency == nil {
            revenue = Array(repeating: Array(repeating: AmountSum(), count: 3), count: 3)
            cumulative = revenue
        }

        // Spend, in one currency or not at all.
        var spendTotal: Money? = nil
        var spendCurrency: String? = nil
        var fxRate: FXRate? = nil
        var note: ROASNote? = nil
        var byCurrency: [String: Money] = [:]
        var impressions: Int64? = nil
        var clicks: Int64? = nil
        var reported: Int64? = nil
        for row in spend {
            byCurrency[row.currency, default: .zero].micros += row.spend.micros
            impressions = SpendRow.addOptional(impressions, row.impressions)
            clicks = SpendRow.addOptional(clicks, row.clicks)
            reported = SpendRow.addOptional(reported, row.reportedInstalls)
        }
        if byCurrency.isEmpty {
            note = .noSpend
        } else if let target = revenueCurrency,
            byCurrency.keys.allSatisfy({ $0 == target || fx.rate(on: installDay, from: $0, to: target) != nil })
        {
            var total = Money.zero
            var rates: [FXRate] = []
            for (currency, amount) in byCurrency.sorted(by: { $0.key < $1.key }) {
                if currency == target {
                    total.micros += amount.micros
                } else {
                    let rate = fx.rate(on: installDay, from: currency, to: target)!
                    rates.append(rate)
                    total.micros += rate.convert(amount).micros
                }
            }
            spendTotal = total
            spendCurrency = target
            fxRate = rates.count == 1 ? rates[0] : nil
        } else if byCurrency.count == 1, let (currency, amount) = byCurrency.first {
            spendTotal = amount
            spendCurrency = currency
        } else {
            note = .mixedSpendCurrencies
        }
        if note == nil {
            if cell.currencies.count > 1 {
                note = .mixedRevenueCurrencies
            } else if revenueCurrency == nil || cumulative[2][0].value == nil {
                note = .noRevenue
            } else if spendCurrency != revenueCurrency {
                note = .currencyMismatch
            } else if spendTotal?.micros == 0 {
                note = .zeroSpend
            }
        }
        var roas: [Money?] = [nil, nil, nil]
        if note == nil, let spendTotal {
            for window in 0..<3 {
                roas[window] = cumulative[window][0].value.flatMap { Self.quotient($0.micros, spendTotal.micros) }
            }
        }

        var csv = CSVLine()
        for column in CohortColumn.allCases {
            switch column {
            case .appID: csv.field(key.appID)
            case .adNetworkID: csv.field(key.adNetworkID)
            case .campaignID: csv.field(key.campaignID)
            case .sourceIdentifier: csv.field(key.sourceIdentifier)
            case .campaign: csv.field(key.campaign)
            case .cohortStatus: csv.field(status.rawValue)
            case .completeThrough: csv.field(completeThrough?.description)
            case .spend: csv.field(spendTotal)
            case .spendCurrency: csv.field(spendCurrency)
            case .spendFXRate: csv.field(fxRate?.description)
            case .impressions: csv.field(impressions)
            case .clicks: csv.field(clicks)
            case .reportedInstalls: csv.field(reported)
            case .installs: csv.field(cell.installs)
            case .redownloads: csv.field(cell.redownloads)
            case .reengagements: csv.field(cell.reengagements)
            case .postbacksW1: csv.field(cell.postbacks[0])
            case .postbacksW2: csv.field(cell.postbacks[1])
            case .postbacksW3: csv.field(cell.postbacks[2])
            case .winningPostbacks: csv.field(cell.winning)
            case .nullValuePostbacks: csv.field(cell.nullValues)
            case .nullValueShare: csv.field(Self.quotient(cell.nullValues, cell.winning))
            case .revenueCurrency: csv.field(revenueCurrency)
            case .revenueEstW1: csv.field(revenue[0][0].value)
            case .revenueMinW1: csv.field(revenue[0][1].value)
            case .revenueMaxW1: csv.field(revenue[0][2].value)
            case .revenueEstW2: csv.field(revenue[1][0].value)
            case .revenueMinW2: csv.field(revenue[1][1].value)
            case .revenueMaxW2: csv.field(revenue[1][2].value)
            case .revenueEstW3: csv.field(revenue[2][0].value)
            case .revenueMinW3: csv.field(revenue[2][1].value)
            case .revenueMaxW3: csv.field(revenue[2][2].value)
            case .revenueEstCumW2: csv.field(cumulative[1][0].value)
            case .revenueMinCumW2: csv.field(cumulative[1][1].value)
            case .revenueMaxCumW2: csv.field(cumulative[1][2].value)
            case .revenueEstCumW3: csv.field(cumulative[2][0].value)
            case .revenueMinCumW3: csv.field(cumulative[2][1].value)
            case .revenueMaxCumW3: csv.field(cumulative[2][2].value)
            case .cpi: csv.field(spendTotal.flatMap { Self.quotient($0.micros, cell.installs, scale: 1_000_000) })
            case .roasW1: csv.field(roas[0])
            case .roasW2: csv.field(roas[1])
            case .roasW3: csv.field(roas[2])
            case .roasNote: csv.field(note?.rawValue)
            case .reportedInstallsExcess: csv.field(reported.map { $0 - cell.installs })
            }
        }
        cell.modeled.fields(measured: cumulative[2][0].value, currency: revenueCurrency, into: &csv)
        csv.endLine()
        return csv.array
    }

    /// Writes both tables' files, then the manifest; returns whether any byte changed.
    func publish(root: String, request: CohortRequest) throws -> Bool {
        var outputs: [ManifestOutput] = []
        var changed = false
        for (index, (table, _)) in AggregateTables.cohortTables.enumerated() {
            let csv = CSVLine.header(AggregateTables.cohortColumns.map(\.name)) + rows[index].flatMap { $0 }
            let directory = "agg/\(table)/dt=\(installDay)"
            var files: [(String, [UInt8])] = []
            if request.format.writesCSV { files.append(("\(directory)/part-00000.csv", csv)) }
            if request.format.writesParquet {
                files.append(
                    (
                        "\(directory)/part-00000.parquet",
                        try ParquetTable.encode(csv: csv, table: table, columns: AggregateTables.cohortColumns)
                    ))
            }
            for (path, bytes) in files {
                if (try? FileBytes.read(path: root + "/" + path, limit: 1 << 34)) != bytes {
                    changed = true
                    try AggregationJob.publish(bytes, to: root + "/" + path)
                }
                outputs.append(
                    ManifestOutput(
                        table: table, path: path, rows: rows[index].count, bytes: bytes.count,
                        sha256: SHA256.hash(bytes).description))
            }
        }
        let manifest = manifestBytes(request: request, outputs: outputs)
        let path = CohortManifest.path(root: root, day: installDay)
        if (try? FileBytes.read(path: path)) != manifest {
            changed = true
            try AggregationJob.publish(manifest, to: path)
        }
        // A file of the format this run no longer writes goes, after the manifest that no longer lists it.
        for (table, _) in AggregateTables.cohortTables {
            let directory = "\(root)/agg/\(table)/dt=\(installDay)"
            if !request.format.writesCSV { try AggregationJob.remove(directory + "/part-00000.csv") }
            if !request.format.writesParquet { try AggregationJob.remove(directory + "/part-00000.parquet") }
        }
        return changed
    }

    private func manifestBytes(request: CohortRequest, outputs: [ManifestOutput]) -> [UInt8] {
        typealias Key = CohortManifestKey
        var json = JSONWriter(reservingCapacity: 4096)
        json.beginObject()
        json.field(Key.format, CohortBuilder.manifestFormat)
        json.field(Key.dt, installDay.description)
        json.field(Key.tool, request.toolVersion)
        json.field(Key.cohortStatus, status.rawValue)
        json.field(Key.completeThrough, completeThrough?.description)
        json.key(Key.inputs)
        json.beginArray()
        for input in inputs.sources + inputs.spendInputs {
            json.beginObject()
            json.field(ManifestInputKey.path, input.path)
            json.field(ManifestInputKey.bytes, input.bytes)
            json.field(ManifestInputKey.sha256, input.sha256)
            json.endObject()
        }
        json.endArray()
        // The rates used, named by the file's name only: the same rates from another path are the same run.
        if let fx = request.fx.source {
            json.key(Key.fxRates)
            json.beginObject()
            json.field(ManifestFXKey.file, fx.path.split(separator: "/").last.map(String.init) ?? fx.path)
            json.field(ManifestFXKey.bytes, fx.bytes)
            json.field(ManifestFXKey.sha256, fx.sha256)
            json.endObject()
        }
        ManifestOutput.write(outputs, into: &json)
        json.key(Key.totals)
        json.beginObject()
        json.field(ManifestTotalsKey.postbacks, postbacks)
        json.field(ManifestTotalsKey.installs, installs)
        json.field(ManifestTotalsKey.developmentPostbacks, developmentPostbacks)
        DayTotals.writeAmounts(.spendByCurrency, spendByCurrency, into: &json)
        DayTotals.writeAmounts(.revenueEstByCurrency, revenueByCurrency, into: &json)
        json.endObject()
        json.endObject()
        json.endLine()
        return json.bytes
    }
}

/// A published cohort's manifest, read back for the rerun rules and the spend check.
struct CohortManifest {
    struct Input {
        var path: String
        var bytes: Int
        var sha256: String
    }

    var postbacks: Int64
    var developmentPostbacks: Int64
    var completeThrough: UTCDay?
    /// Spend files (relative path → SHA-256) the cohort was made with.
    var spendInputs: [String: String]

    static func path(root: String, day: UTCDay) -> String { "\(root)/" + PublishedLayout.cohortManifest(day) }

    static func read(root: String, day: UTCDay) -> CohortManifest? {
        guard let bytes = try? FileBytes.read(path: path(root: root, day: day)),
            let manifest = ManifestObject<CohortManifestKey>(json: bytes)
        else { return nil }
        var spend: [String: String] = [:]
        for input in manifest.objects(.inputs, ManifestInputKey.self) ?? [] {
            if let file = input.string(.path), file.hasPrefix("spend/"), let sha = input.string(.sha256) { spend[file] = sha }
        }
        let totals = manifest.object(.totals, ManifestTotalsKey.self)
        let postbacks = totals.map { $0.int64(.postbacks) ?? 0 } ?? 0
        let development = totals.map { $0.int64(.developmentPostbacks) ?? 0 } ?? 0
        let complete = manifest.string(.completeThrough).flatMap { UTCDay($0) }
        return CohortManifest(
            postbacks: postbacks, developmentPostbacks: development, completeThrough: complete, spendInputs: spend)
    }
}
