package import AggregateSchema
package import Basics
import Postbacks

/// Headline and side counts of a day, for the manifest and the command's summary.
package struct DayTotals: Sendable, Equatable {
    package var postbacks = 0
    package var installs = 0
    package var redownloads = 0
    package var reengagements = 0
    package var losses = 0
    package var nullValuePostbacks = 0
    package var developmentPostbacks = 0
    package var rejectedPostbacks = 0
    package var duplicatesDropped = 0
    /// Postbacks that a schema decoded to a label (not `no_schema`, `undecoded` or a null value):
    /// a rerun that would publish fewer of these than the day has now is refused (a lost schema).
    package var decodedPostbacks = 0
    /// The revenue estimate per ISO 4217 currency. Amounts in different currencies are never added.
    package var revenueEstimateByCurrency: [String: Money] = [:]
    /// Counted postbacks of apps that no schema decodes (for their install date, protocol and
    /// conversion type), by app: in every table with their counts and values, with no revenue.
    package var postbacksWithoutSchema: [Int64: Int] = [:]
    /// The development postbacks' installs (as `installs`: first-window winning downloads), for
    /// the summary of a day that holds only development postbacks; not in the manifest.
    package var developmentInstalls = 0
    /// Development postbacks of apps without a schema, by app (the summary of a development day).
    package var developmentWithoutSchema: [Int64: Int] = [:]

    /// Adds a row's estimate to its currency's total.
    mutating func addRevenue(_ amount: Money, currency: String) throws(AggregationError) {
        guard let sum = revenueEstimateByCurrency[currency, default: .zero].plus(amount) else {
            throw .overflow("revenue estimate total in \(currency) overflows")
        }
        revenueEstimateByCurrency[currency] = sum
    }

    /// `"revenue_est_by_currency": {"EUR": 13115, "USD": 11906.43}`, exact decimals, currencies in
    /// code order (the manifest and `--json` summaries).
    package func writeRevenueByCurrency(into json: inout JSONWriter) {
        Self.writeAmounts(ManifestTotalsKey.revenueEstByCurrency, revenueEstimateByCurrency, into: &json)
    }

    /// `"NAME": {"EUR": 13115, …}`: amounts per currency as exact decimals, currencies in code order.
    static func writeAmounts(_ name: ManifestTotalsKey, _ amounts: [String: Money], into json: inout JSONWriter) {
        json.key(name)
        json.beginObject()
        for (currency, amount) in amounts.sorted(by: { $0.key < $1.key }) {
            json.key(currency)
            json.value(numberText: amount.description)
        }
        json.endObject()
    }

    /// `"apps_without_schema": [{"app_id": 1, "postbacks": 335}, …]`, apps in id order.
    package func writeAppsWithoutSchema(into json: inout JSONWriter) {
        json.key(DayManifestKey.appsWithoutSchema)
        json.beginArray()
        for (app, postbacks) in postbacksWithoutSchema.sorted(by: { $0.key < $1.key }) {
            json.beginObject()
            json.field(ManifestAppKey.appID, Int(app))
            json.field(ManifestAppKey.postbacks, postbacks)
            json.endObject()
        }
        json.endArray()
    }

    /// "EUR 13115, USD 11906.43" (currencies in code order), or "none".
    package var revenueText: String {
        let parts = revenueEstimateByCurrency.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }

    mutating func add(_ other: DayTotals) throws(AggregationError) {
        postbacks += other.postbacks
        installs += other.installs
        redownloads += other.redownloads
        reengagements += other.reengagements
        losses += other.losses
        nullValuePostbacks += other.nullValuePostbacks
        developmentPostbacks += other.developmentPostbacks
        rejectedPostbacks += other.rejectedPostbacks
        duplicatesDropped += other.duplicatesDropped
        decodedPostbacks += other.decodedPostbacks
        developmentInstalls += other.developmentInstalls
        postbacksWithoutSchema.merge(other.postbacksWithoutSchema, uniquingKeysWith: +)
        developmentWithoutSchema.merge(other.developmentWithoutSchema, uniquingKeysWith: +)
        for (currency, amount) in other.revenueEstimateByCurrency { try addRevenue(amount, currency: currency) }
    }
}
