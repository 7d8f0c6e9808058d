package import Basics

/// The report's first-screen figures as values, for readers other than the HTML page (the numbers
/// API, a dashboard): the totals, revenue to date per currency, the ad networks, the top campaigns
/// (named, then one row summing the rest, as the page's tables do), and the cost and return of the
/// range's install cohorts. Each figure is the one the page computes (`ReportModel`,
/// `ReportPage.rows(of:)`, `NumberFormat`), from the rows the request's `DataScope` admits only.
package struct ReportFigures: Sendable {
    /// Production postback counts of a set of rows.
    package struct Counts: Sendable, Equatable {
        package var postbacks = 0
        package var installs = 0
        package var redownloads = 0
        package var reengagements = 0
        package var losses = 0
        package var nullValues = 0
    }

    /// Revenue to date in one currency (`HeadlineRevenue`); the empty currency: postbacks of apps
    /// without a schema, whose revenue is unknown.
    package struct Revenue: Sendable, Equatable {
        package var currency: String
        /// Exact sums, as the tables write amounts.
        package var estimate: String
        package var minimum: String
        /// Nil when some value's range has no upper bound.
        package var maximum: String?
        package var valuedPostbacks: Int
        package var unknownPostbacks: Int
        /// The page's "per install" (revenue of downloads ÷ their installs), `–` without either.
        package var perInstall: String
    }

    /// One ad network's totals.
    package struct Network: Sendable, Equatable {
        package var id: String
        package var counts: Counts
    }

    /// A campaign row of the page's top-campaigns table, or the row summing the campaigns not named.
    package struct Campaign: Sendable, Equatable {
        /// The campaign's name (decoded), or `campaign id N`; "Other campaigns" for the sum.
        package var name: String
        /// Nil on the row of other campaigns.
        package var app: String?
        package var network: String?
        /// How many campaigns the row of other campaigns sums; nil on a named row.
        package var campaignsSummed: Int?
        package var counts: Counts
    }

    /// Spend of the range's install cohorts in one currency, and the cost per install.
    package struct Cost: Sendable, Equatable {
        package var currency: String
        package var spend: String
        package var installsWithSpend: Int
        /// As the page shows it: two decimals, rounded half up once.
        package var costPerInstall: String
    }

    /// Return on spend to date in one revenue currency: the last postback window with a ROAS.
    package struct Return: Sendable, Equatable {
        package var currency: String
        /// 1, 2 or 3: revenue through that window.
        package var window: Int
        package var revenue: String
        package var spend: String
        /// As the page shows it: two decimals.
        package var roas: String
        /// False while any cohort behind it is still open (the figure can grow).
        package var isFinal: Bool
        package var cohorts: Int
    }

    /// `production` or `development`: whose postbacks the figures count.
    package var environment: String
    package var from: UTCDay
    package var to: UTCDay
    package var daysIncluded: [UTCDay]
    package var daysMissing: [UTCDay]
    package var daysLeftOut: [UTCDay]
    package var daysPartial: [UTCDay]
    package var totals: Counts
    package var developmentPostbacks: Int
    /// Rejected records keyed (by what they claim) to the admitted apps and networks.
    package var rejectedPostbacks: Int
    package var revenue: [Revenue]
    /// Most postbacks first.
    package var networks: [Network]
    package var topCampaigns: [Campaign]
    package var cost: [Cost]
    package var returns: [Return]
}

extension ReportFigures.Counts {
    init(_ counts: NetworkDayCounts) {
        self.init(
            postbacks: counts.postbacks, installs: counts.installs, redownloads: counts.redownloads,
            reengagements: counts.reengagements, losses: counts.losses, nullValues: counts.nullValues)
    }
}

extension ReportGenerator {
    /// The first-screen figures of `request` (its range, environment and scope), from the same model
    /// the page is drawn from; nothing is written.
    /// - Throws: `ReportError` as `build` does (no day of the range can be read, a malformed aggregate).
    package static func figures(_ request: ReportRequest) throws(ReportError) -> ReportFigures {
        try figures(of: try model(request), request: request)
    }

    /// The first-screen figures of a model already read for `request`.
    static func figures(of model: ReportModel, request: ReportRequest) throws(ReportError) -> ReportFigures {
        let page = ReportPage(model: model, request: request)
        let campaigns = try page.rows(of: model.campaignsByInstalls).map { row in
            ReportFigures.Campaign(
                name: row.label, app: row.isOthers ? nil : row.app, network: row.isOthers ? nil : row.network,
                campaignsSummed: row.isOthers ? model.campaigns.count - request.topCampaigns : nil,
                counts: .init(row.stats.counts))
        }
        let revenue = model.revenueByCurrency.keys.sorted().map { currency in
            let headline = model.revenueByCurrency[currency]!
            return ReportFigures.Revenue(
                currency: currency, estimate: headline.toDate.estimate.description,
                minimum: headline.toDate.minimum.description, maximum: headline.toDate.maximum?.description,
                valuedPostbacks: headline.valuedPostbacks, unknownPostbacks: headline.unknownPostbacks,
                perInstall: headline.perInstall)
        }
        let total = model.cohorts.total
        let cost = total.spend.keys.sorted().map { currency in
            ReportFigures.Cost(
                currency: currency, spend: total.spend[currency]!.description,
                installsWithSpend: total.installsWithSpend[currency] ?? 0,
                costPerInstall: NumberFormat.money(total.spend[currency]!, per: total.installsWithSpend[currency] ?? 0))
        }
        let returns = total.latestROAS.map { entry in
            ReportFigures.Return(
                currency: entry.currency, window: entry.window + 1, revenue: entry.sum.revenue.description,
                spend: entry.sum.spend.description, roas: NumberFormat.ratio(entry.sum.revenue, entry.sum.spend),
                isFinal: entry.sum.isFinal, cohorts: entry.sum.cohorts)
        }
        return ReportFigures(
            environment: request.environment.rawValue, from: request.from, to: request.to, daysIncluded: model.days,
            daysMissing: model.missingDays,
            daysLeftOut: model.leftOutDays.map(\.day), daysPartial: model.partialDays, totals: .init(model.totals),
            developmentPostbacks: model.developmentPostbacks, rejectedPostbacks: model.rejectedPostbacks, revenue: revenue,
            networks: model.networksByVolume.map { .init(id: $0, counts: .init(model.networkTotals[$0]!)) },
            topCampaigns: campaigns, cost: cost, returns: returns)
    }
}
