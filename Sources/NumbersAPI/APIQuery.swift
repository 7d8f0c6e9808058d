import AggregateSchema
import Aggregation
package import Basics
package import Reporting

/// A request's query arguments, read and bounded before anything is loaded. Every problem is a 400
/// naming the argument (`APIProblem.badQuery`).
package struct APIQuery: Sendable {
    /// The most days one request may cover (`from` … `to`, inclusive).
    package static let maximumDays = 92
    /// The most rows one page of rows holds; `limit` defaults to `defaultLimit`.
    package static let maximumLimit = 10_000
    package static let defaultLimit = 1_000
    /// The most query arguments, and the longest value, accepted.
    static let maximumArguments = 16
    static let maximumValueBytes = 512

    package enum Format: String, Sendable, CaseIterable {
        case json, csv, parquet
    }

    package var from: UTCDay
    package var to: UTCDay
    package var app: String?
    package var network: String?
    package var campaign: String?
    package var country: String?
    /// Nil: every column of the table.
    package var columns: [String]?
    package var format = Format.json
    package var limit = defaultLimit
    package var cursor: Cursor?
    /// `compare=previous`: the summary also gives the period of the same length just before.
    package var comparePrevious = false
    /// The summary's postbacks: production (the default) or development (`environment=development`:
    /// test keys, integrations), never added together, as the report's two pages.
    package var environment = ReportEnvironment.production

    /// Where a page of rows continues: the day and how many admitted rows of it were already given.
    package struct Cursor: Sendable, Equatable {
        package var day: UTCDay
        package var offset: Int

        /// Opaque to clients: URL-safe Base64 of `v1:DAY:OFFSET`.
        package var text: String { Base64.encode(Array("v1:\(day):\(offset)".utf8), alphabet: .url) }

        package init(day: UTCDay, offset: Int) {
            self.day = day
            self.offset = offset
        }

        init?(text: String) {
            guard let bytes = Base64.decode(text, alphabet: .url).value else { return nil }
            let parts = String(decoding: bytes, as: UTF8.self).split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] == "v1", let day = UTCDay(String(parts[1])), let offset = Int(parts[2]),
                offset >= 0
            else { return nil }
            self.init(day: day, offset: offset)
        }
    }

    /// The arguments each endpoint takes.
    package static let rowsArguments: Set<String> = [
        "from", "to", "app", "network", "campaign", "country", "columns", "format", "limit", "cursor",
    ]
    package static let summaryArguments: Set<String> = ["from", "to", "app", "network", "compare", "environment"]

    /// Reads `arguments` for an endpoint taking `allowed`.
    /// - Throws: `APIProblem` (400) naming the first argument that is unknown, repeated or invalid.
    package init(_ arguments: [(name: String, value: String?)], allowed: Set<String>) throws(APIProblem) {
        guard arguments.count <= Self.maximumArguments else {
            throw .badQuery("at most \(Self.maximumArguments) query arguments")
        }
        var values: [String: String] = [:]
        for (name, value) in arguments {
            guard allowed.contains(name) else {
                throw .badQuery(
                    "unknown argument '\(APIProblem.quoted(name))'; this endpoint takes \(allowed.sorted().joined(separator: ", "))"
                )
            }
            guard values[name] == nil else { throw .badQuery("'\(name)' is given twice") }
            guard let value, !value.isEmpty else { throw .badQuery("'\(name)' has no value") }
            guard value.utf8.count <= Self.maximumValueBytes else {
                throw .badQuery("'\(name)' is longer than \(Self.maximumValueBytes) bytes")
            }
            values[name] = value
        }
        func day(_ name: String) throws(APIProblem) -> UTCDay {
            guard let text = values[name] else { throw .badQuery("'\(name)' (a day YYYY-MM-DD) is required") }
            guard let day = UTCDay(text) else { throw .badQuery("'\(name)' must be a day YYYY-MM-DD") }
            return day
        }
        from = try day("from")
        to = try day("to")
        guard from <= to else { throw .badQuery("'from' is after 'to'") }
        guard to.daysSinceEpoch - from.daysSinceEpoch < Self.maximumDays else {
            throw .badQuery("at most \(Self.maximumDays) days per request (from … to, inclusive)")
        }
        app = values["app"]
        network = values["network"]
        campaign = values["campaign"]
        country = values["country"]
        if let text = values["columns"] {
            let names = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard names.allSatisfy({ !$0.isEmpty }), Set(names).count == names.count else {
                throw .badQuery("'columns' must be distinct column names separated by commas")
            }
            columns = names
        }
        if let text = values["format"] {
            guard let format = Format(rawValue: text) else { throw .badQuery("'format' must be json, csv or parquet") }
            self.format = format
        }
        if let text = values["limit"] {
            guard let limit = Int(text), (1...Self.maximumLimit).contains(limit) else {
                throw .badQuery("'limit' must be a whole number from 1 to \(Self.maximumLimit)")
            }
            self.limit = limit
        }
        if let text = values["cursor"] {
            guard let cursor = Cursor(text: text), cursor.day >= from, cursor.day <= to else {
                throw .badQuery("'cursor' is not one this query's pages gave")
            }
            self.cursor = cursor
        }
        if let text = values["environment"] {
            guard let environment = ReportEnvironment(rawValue: text) else {
                throw .badQuery("'environment' must be production or development")
            }
            self.environment = environment
        }
        if let text = values["compare"] {
            guard text == "previous" else { throw .badQuery("'compare' can only be 'previous'") }
            comparePrevious = true
        }
    }

    /// The token's scope narrowed by `app` and `network`: an app or network outside the token's
    /// scope narrows it to nothing, exactly as one that does not exist.
    package func scope(within token: DataScope) -> DataScope {
        var scope = token.narrowed(toApp: app)
        if let network {
            scope.networks = token.networks.admits(network) ? .only([network]) : .only([])
        }
        return scope
    }

    /// The row filters beyond the scope: campaign and country.
    var filters: [(column: String, value: String)] {
        var filters: [(column: String, value: String)] = []
        if let campaign { filters.append((AggregateColumn.field(.campaignID).name, campaign)) }
        if let country { filters.append((AggregateColumn.field(.countryCode).name, country)) }
        return filters
    }
}
