import Basics
import PostbackServer
import Reporting

/// `GET /v1/summary`: the report's first-screen figures (`ReportFigures`: totals, revenue to date,
/// networks, top campaigns and the row of the others, spend, CPI and ROAS where spend exists) over
/// the rows the scope admits, and with `compare=previous` the same figures of the period of the
/// same length just before.
enum SummaryEndpoint {
    static func answer(query: APIQuery, scope: DataScope, dataDirectory: String, toolVersion: String) throws(APIProblem)
        -> HTTPReply
    {
        let current = try figures(
            from: query.from, to: query.to, scope: scope, environment: query.environment, dataDirectory: dataDirectory,
            toolVersion: toolVersion)
        var previous: ReportFigures?
        if query.comparePrevious {
            let days = query.to.daysSinceEpoch - query.from.daysSinceEpoch + 1
            previous = try figures(
                from: query.from.adding(days: -days), to: query.from.adding(days: -1), scope: scope,
                environment: query.environment, dataDirectory: dataDirectory, toolVersion: toolVersion, allowEmpty: true)
        }
        var json = JSONWriter(reservingCapacity: 4096)
        json.beginObject()
        json.key("current")
        write(current, into: &json)
        if query.comparePrevious {
            json.key("previous")
            if let previous { write(previous, into: &json) } else { json.value(nil as String?) }
        }
        json.endObject()
        return HTTPReply(status: 200, contentType: "application/json", body: json.bytes + [0x0A])
    }

    /// The figures of a range; nil for a range without a published day when `allowEmpty` (the previous period).
    static func figures(
        from: UTCDay, to: UTCDay, scope: DataScope, environment: ReportEnvironment, dataDirectory: String,
        toolVersion: String, allowEmpty: Bool = false
    ) throws(APIProblem) -> ReportFigures? {
        var request = ReportRequest(dataDirectory: dataDirectory, from: from, to: to, outputPath: "", toolVersion: toolVersion)
        request.scope = scope
        request.environment = environment
        do {
            return try ReportGenerator.figures(request)
        } catch  where error.code == .noAggregates {
            if allowEmpty { return nil }
            throw .notFound("no day from \(from) to \(to) is published")
        } catch {
            throw .failed("\(error)")
        }
    }

    static func write(_ figures: ReportFigures?, into json: inout JSONWriter) {
        guard let figures else { return json.value(nil as String?) }
        json.beginObject()
        json.field("environment", figures.environment)
        json.field("from", figures.from.description)
        json.field("to", figures.to.description)
        RowsEndpoint.days("days_included", figures.daysIncluded, into: &json)
        RowsEndpoint.days("days_missing", figures.daysMissing, into: &json)
        RowsEndpoint.days("days_left_out", figures.daysLeftOut, into: &json)
        RowsEndpoint.days("days_partial", figures.daysPartial, into: &json)
        json.key("totals")
        write(figures.totals, into: &json)
        json.field("development_postbacks", figures.developmentPostbacks)
        json.field("rejected_postbacks", figures.rejectedPostbacks)
        json.key("revenue")
        json.beginArray()
        for revenue in figures.revenue {
            json.beginObject()
            json.field("currency", revenue.currency)
            json.key("estimate")
            json.value(numberText: revenue.estimate)
            json.key("minimum")
            json.value(numberText: revenue.minimum)
            json.key("maximum")
            if let maximum = revenue.maximum { json.value(numberText: maximum) } else { json.value(nil as String?) }
            json.field("valued_postbacks", revenue.valuedPostbacks)
            json.field("unknown_postbacks", revenue.unknownPostbacks)
            json.field("per_install", revenue.perInstall)
            json.endObject()
        }
        json.endArray()
        json.key("networks")
        json.beginArray()
        for network in figures.networks {
            json.beginObject()
            json.field("ad_network_id", network.id)
            json.key("counts")
            write(network.counts, into: &json)
            json.endObject()
        }
        json.endArray()
        json.key("top_campaigns")
        json.beginArray()
        for campaign in figures.topCampaigns {
            json.beginObject()
            json.field("campaign", campaign.name)
            json.field("app_id", campaign.app)
            json.field("ad_network_id", campaign.network)
            json.field("campaigns_summed", campaign.campaignsSummed)
            json.key("counts")
            write(campaign.counts, into: &json)
            json.endObject()
        }
        json.endArray()
        json.key("cost")
        json.beginArray()
        for cost in figures.cost {
            json.beginObject()
            json.field("currency", cost.currency)
            json.key("spend")
            json.value(numberText: cost.spend)
            json.field("installs_with_spend", cost.installsWithSpend)
            json.field("cost_per_install", cost.costPerInstall)
            json.endObject()
        }
        json.endArray()
        json.key("return")
        json.beginArray()
        for entry in figures.returns {
            json.beginObject()
            json.field("currency", entry.currency)
            json.field("window", entry.window)
            json.key("revenue")
            json.value(numberText: entry.revenue)
            json.key("spend")
            json.value(numberText: entry.spend)
            json.field("roas", entry.roas)
            json.field("final", entry.isFinal)
            json.field("cohorts", entry.cohorts)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    static func write(_ counts: ReportFigures.Counts, into json: inout JSONWriter) {
        json.beginObject()
        json.field("postbacks", counts.postbacks)
        json.field("installs", counts.installs)
        json.field("redownloads", counts.redownloads)
        json.field("reengagements", counts.reengagements)
        json.field("losses", counts.losses)
        json.field("null_values", counts.nullValues)
        json.endObject()
    }
}
