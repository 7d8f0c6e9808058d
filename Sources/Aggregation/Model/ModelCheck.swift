import AggregateSchema
package import Basics
import Foundation

/// `postback model check`: how well the null-value model does on a store's own published data. A
/// seeded share of the *measured* postbacks of the published `campaign_daily` days is hidden (made
/// null in memory, never written), the same model is fitted on what is left, and the hidden postbacks'
/// modeled values are compared with their published (hidden) values: how often the 90% intervals of
/// campaign × window totals, and of campaign totals over the range, cover the truth, and the error of
/// each app's total (docs/modeling.md, "Checking the model").
package enum ModelCheck {
    package struct Request: Sendable {
        package var dataDirectory: String
        package var from: UTCDay
        package var to: UTCDay
        /// The share of measured postbacks hidden, each independently.
        package var holdout = 0.2
        package var seed: UInt64 = 1

        package init(dataDirectory: String, from: UTCDay, to: UTCDay) {
            self.dataDirectory = dataDirectory
            self.from = from
            self.to = to
        }
    }

    /// Tested totals and how many of their intervals covered the truth, in all and by how many hidden
    /// postbacks a total holds (a total of one or a few values is where a gamma interval fits worst).
    package struct Coverage: Sendable, Equatable {
        package var tested = 0
        package var covered = 0
        /// Per class of `sizeClasses`: tested, covered.
        package var bySize: [(tested: Int, covered: Int)] = sizeClasses.map { _ in (0, 0) }
        package var share: Double? { tested > 0 ? Double(covered) / Double(tested) : nil }

        /// Totals of 1, 2–4, 5–19 and 20 or more hidden postbacks.
        package static let sizeClasses: [(label: String, smallest: Int64)] = [
            ("1", 1), ("2-4", 2), ("5-19", 5), ("20+", 20),
        ]

        mutating func add(covered hit: Bool, hiddenPostbacks: Int64) {
            tested += 1
            if hit { covered += 1 }
            let size = Self.sizeClasses.lastIndex { $0.smallest <= hiddenPostbacks } ?? 0
            bySize[size].tested += 1
            if hit { bySize[size].covered += 1 }
        }

        package static func == (a: Self, b: Self) -> Bool {
            a.tested == b.tested && a.covered == b.covered && a.bySize.map(\.tested) == b.bySize.map(\.tested)
                && a.bySize.map(\.covered) == b.bySize.map(\.covered)
        }
    }

    /// One app's (and currency's) hidden total against its modeled total.
    package struct AppTotal: Sendable, Equatable {
        package var appID: String
        package var currency: String
        package var modeled: Double
        package var hidden: Double
        package var relativeError: Double? { hidden != 0 ? (modeled - hidden) / hidden : nil }
    }

    package struct Result: Sendable {
        package var request: Request
        /// Published days read (the range and the pooling window before it).
        package var daysRead: Int
        package var hiddenPostbacks: Int64
        /// Hidden postbacks of strata with too little data left to model them (not tested).
        package var untestedPostbacks: Int64
        package var campaignWindows: Coverage
        package var campaigns: Coverage
        package var apps: [AppTotal]
    }

    package static func run(_ request: Request) throws -> Result {
        guard request.from <= request.to else {
            throw AggregationError.usage("--from \(request.from) is after --to \(request.to)")
        }
        guard request.holdout > 0, request.holdout < 1 else { throw AggregationError.usage("--holdout must be between 0 and 1") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: request.dataDirectory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw AggregationError.usage(
                "--data \(request.dataDirectory): no such directory (give the store 'postback aggregate' publishes to)")
        }
        let published = PublishedDays(root: request.dataDirectory)
        let first = request.from.adding(days: 1 - NullValueModel.poolingDays)
        var days: [UTCDay: Masked] = [:]
        var day = first
        while day <= request.to {
            if let file = published.manifest(day)?.outputs[AggregateTables.campaignDaily] {
                let bytes = try CohortCache.published(root: request.dataDirectory, day: day, file: file)
                days[day] = try mask(bytes, path: file.path, day: day, request: request)
            }
            day = day.adding(days: 1)
        }
        guard
            (0...request.to.daysSinceEpoch - request.from.daysSinceEpoch).contains(where: {
                days[request.from.adding(days: $0)] != nil
            })
        else {
            throw AggregationError.usage(
                "\(request.dataDirectory)/agg has no published campaign_daily day from \(request.from) to \(request.to): "
                    + "run 'postback aggregate' for those days first")
        }

        struct Sum {
            var modeled = 0.0
            var valuesVariance = 0.0
            var meanSD = 0.0
            var logPZero = 0.0
            var hidden = 0.0
            var count: Int64 = 0
        }
        struct CampaignKey: Hashable, Comparable {
            var appID: String
            var currency: String
            var campaign: ModelCampaign
            static func < (a: Self, b: Self) -> Bool { (a.appID, a.currency, a.campaign) < (b.appID, b.currency, b.campaign) }
        }
        struct Unit: Hashable, Comparable {
            var stratum: ModelStratum
            var campaign: ModelCampaign
            static func < (a: Self, b: Self) -> Bool { (a.stratum, a.campaign) < (b.stratum, b.campaign) }
        }
        var units: [Unit: Sum] = [:]
        var hiddenPostbacks: Int64 = 0
        var untested: Int64 = 0
        day = request.from
        while day <= request.to {
            defer { day = day.adding(days: 1) }
            guard let today = days[day] else { continue }
            var pooled = ModelSums()
            for offset in stride(from: NullValueModel.poolingDays - 1, through: 0, by: -1) {
                if let earlier = days[day.adding(days: -offset)] { pooled.add(earlier.sums) }
            }
            var fits: [ModelStratum: NullValueModel.StratumFit?] = [:]
            for row in today.hidden {
                hiddenPostbacks += row.count
                if fits[row.stratum] == nil { fits[row.stratum] = NullValueModel.fit(pooled.strata[row.stratum] ?? [:]) }
                guard let fit = fits[row.stratum]!, fit.measured >= NullValueModel.minMeasured else {
                    untested += row.count
                    continue
                }
                let estimate = NullValueModel.estimate(nulls: row.count, model: fit.model(row.campaign))
                var sum = units[Unit(stratum: row.stratum, campaign: row.campaign)] ?? Sum()
                sum.modeled += estimate.estimate
                sum.valuesVariance += estimate.valuesVariance
                sum.meanSD += estimate.meanSD
                sum.logPZero += estimate.logPZero
                sum.hidden += row.value
                sum.count += row.count
                units[Unit(stratum: row.stratum, campaign: row.campaign)] = sum
            }
        }

        // campaign × window (× conversion type) totals; then campaigns over their strata, and apps, by
        // the aggregation rule: Σ values' variance + Σ over (campaign, stratum) of (Σ mean SD)², Σ log_p_zero.
        var campaignWindows = Coverage()
        var campaigns: [CampaignKey: Sum] = [:]
        var apps: [String: AppTotal] = [:]
        for (unit, sum) in units.sorted(by: { $0.key < $1.key }) {
            campaignWindows.add(
                covered: covers(
                    sum.modeled, sum.valuesVariance + sum.meanSD * sum.meanSD, logPZero: sum.logPZero, truth: sum.hidden),
                hiddenPostbacks: sum.count)
            let key = CampaignKey(appID: unit.stratum.appID, currency: unit.stratum.currency, campaign: unit.campaign)
            var campaign = campaigns[key] ?? Sum()
            campaign.modeled += sum.modeled
            campaign.valuesVariance += sum.valuesVariance + sum.meanSD * sum.meanSD
            campaign.logPZero += sum.logPZero
            campaign.hidden += sum.hidden
            campaign.count += sum.count
            campaigns[key] = campaign
            let app = "\(unit.stratum.appID) \(unit.stratum.currency)"
            var total =
                apps[app] ?? AppTotal(appID: unit.stratum.appID, currency: unit.stratum.currency, modeled: 0, hidden: 0)
            total.modeled += sum.modeled
            total.hidden += sum.hidden
            apps[app] = total
        }
        var campaignCoverage = Coverage()
        for (_, sum) in campaigns.sorted(by: { $0.key < $1.key }) {
            campaignCoverage.add(
                covered: covers(sum.modeled, sum.valuesVariance, logPZero: sum.logPZero, truth: sum.hidden),
                hiddenPostbacks: sum.count)
        }
        return Result(
            request: request, daysRead: days.count, hiddenPostbacks: hiddenPostbacks, untestedPostbacks: untested,
            campaignWindows: campaignWindows, campaigns: campaignCoverage,
            apps: apps.values.sorted { ($0.appID, $0.currency) < ($1.appID, $1.currency) })
    }

    /// Whether the 90% interval of a total with this mean and variance holds the truth (amounts compared
    /// at the micro-unit the tables publish).
    static func covers(_ mean: Double, _ variance: Double, logPZero: Double, truth: Double) -> Bool {
        let (_, low, high) = NullValueModel.interval(mean: mean, variance: variance, logPZero: logPZero)
        return ModelPass.money(low) <= ModelPass.money(truth) && ModelPass.money(truth) <= ModelPass.money(high)
    }

    /// A day's rows after hiding: the measured sums left, and the hidden postbacks by row.
    struct Masked {
        var sums = ModelSums()
        var hidden: [(stratum: ModelStratum, campaign: ModelCampaign, count: Int64, value: Double)] = []
    }

    /// Hides each measured postback with probability `holdout`, drawn from a generator seeded by the
    /// seed, the day and the row's place in the file (a rerun hides the same postbacks).
    static func mask(_ bytes: [UInt8], path: String, day: UTCDay, request: Request) throws -> Masked {
        var masked = Masked()
        var index: UInt64 = 0
        try ModelInput.forEachRow(bytes, path: path, parquet: path.hasSuffix(".parquet")) { row, _ in
            index += 1
            guard let stratum = row.stratum, let measured = row.measured else { return }
            var random = SplitMix64(
                seed: request.seed ^ UInt64(day.daysSinceEpoch) &* 0x9E37_79B9_7F4A_7C15 ^ index &* 0xD1B5_4A32_D192_ED03)
            var hidden: Int64 = 0
            for _ in 0..<measured.count where Double(random.next() >> 11) / Double(1 << 53) < request.holdout {
                hidden += 1
            }
            let value = measured.sum / Double(measured.count)
            let kept = measured.count - hidden
            if kept > 0 {
                // Every postback of the row is worth the same: the kept ones' revenue is that share of it.
                let revenue = Int64((Double(measured.sumMicros) * Double(kept) / Double(measured.count)).rounded())
                masked.sums.add(stratum, row.campaign, MeasuredSums(measured: kept, revenueMicros: revenue))
            }
            if hidden > 0 {
                masked.hidden.append((stratum, row.campaign, hidden, value * Double(hidden)))
            }
        }
        return masked
    }
}

extension ModelCheck.Result {
    /// For people: what was hidden, each coverage with how many totals were tested, each app's error.
    package var text: String {
        func percent(_ share: Double?) -> String {
            share.map { String(format: "%.1f%%", $0 * 100) } ?? "–"
        }
        var lines = [
            "model check (\(NullValueModel.name)) of \(request.from)..\(request.to): \(String(format: "%g", request.holdout * 100))% "
                + "of the measured postbacks hidden (seed \(request.seed)), \(hiddenPostbacks) in all; "
                + "\(daysRead) published day\(daysRead == 1 ? "" : "s") read"
        ]
        for (name, coverage) in [("campaign × window totals", campaignWindows), ("campaigns over the range", campaigns)] {
            let classes = zip(ModelCheck.Coverage.sizeClasses, coverage.bySize).filter { $0.1.tested > 0 }.map {
                "\($0.0.label): \($0.1.covered) of \($0.1.tested)"
            }
            lines.append(
                "\(name): the 90% interval holds the hidden value for \(coverage.covered) of \(coverage.tested) "
                    + "(\(percent(coverage.share))); by hidden postbacks in the total, "
                    + (classes.isEmpty ? "none" : classes.joined(separator: ", ")))
        }
        for app in apps {
            lines.append(
                "app \(app.appID) (\(app.currency)): modeled \(String(format: "%.2f", app.modeled)), hidden "
                    + "\(String(format: "%.2f", app.hidden)), error "
                    + (app.relativeError.map { String(format: "%+.1f%%", $0 * 100) } ?? "–"))
        }
        if untestedPostbacks > 0 {
            lines.append(
                "not tested: \(untestedPostbacks) hidden postback\(untestedPostbacks == 1 ? "" : "s") of strata with fewer than "
                    + "\(NullValueModel.minMeasured) measured postbacks left in \(NullValueModel.poolingDays) days")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// For scripts: one JSON object.
    package var json: [UInt8] {
        var json = JSONWriter(reservingCapacity: 1024)
        json.beginObject()
        json.field("model", NullValueModel.name)
        json.field("from", request.from.description)
        json.field("to", request.to.description)
        json.key("holdout")
        json.value(numberText: "\(request.holdout)")
        json.key("seed")
        json.value(numberText: "\(request.seed)")
        json.field("days_read", daysRead)
        json.field("hidden_postbacks", hiddenPostbacks)
        json.field("untested_postbacks", untestedPostbacks)
        for (name, coverage) in [("campaign_windows", campaignWindows), ("campaigns", campaigns)] {
            json.key(name)
            json.beginObject()
            json.field("tested", coverage.tested)
            json.field("covered", coverage.covered)
            json.key("by_hidden_postbacks")
            json.beginArray()
            for (size, counts) in zip(ModelCheck.Coverage.sizeClasses, coverage.bySize) {
                json.beginObject()
                json.field("hidden_postbacks", size.label)
                json.field("tested", counts.tested)
                json.field("covered", counts.covered)
                json.endObject()
            }
            json.endArray()
            json.key("share")
            if let share = coverage.share { json.value(numberText: "\(share)") } else { json.value(String?.none) }
            json.endObject()
        }
        json.key("apps")
        json.beginArray()
        for app in apps {
            json.beginObject()
            json.field("app_id", app.appID)
            json.field("currency", app.currency)
            json.key("modeled")
            json.value(numberText: "\(app.modeled)")
            json.key("hidden")
            json.value(numberText: "\(app.hidden)")
            json.key("relative_error")
            if let error = app.relativeError { json.value(numberText: "\(error)") } else { json.value(String?.none) }
            json.endObject()
        }
        json.endArray()
        json.endObject()
        var bytes = json.bytes
        bytes.append(0x0A)
        return bytes
    }
}
