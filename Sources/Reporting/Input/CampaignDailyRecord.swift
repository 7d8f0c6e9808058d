import Aggregation

/// One row of `campaign_daily` (docs/aggregate.md, "Output"), with the columns the report uses,
/// typed and range-checked. Columns are found by name in the header: the table only ever appends
/// columns, so a file from a newer `postback` still reads.
struct CampaignDailyRecord {
    var appID: String?
    var adNetworkID: String?
    var campaignID: String?
    var sourceIdentifier: String?
    /// Decoded from the schema's source-identifier map; nil when unknown.
    var campaign: String?
    var sequenceIndex: Int
    var cvKind: ValueKind?
    var fineValue: Int?
    var coarseLevel: Int?
    var decodedLabel: String?
    var postbacks: Int
    var installs: Int
    var redownloads: Int
    var reengagements: Int
    var losses: Int
    var nullValues: Int
    var revenueMin: Money?
    /// Nil for an open-ended range and for a value that did not decode.
    var revenueMax: Money?
    /// Nil when the value did not decode (null, unmapped, no schema): unknown, never zero.
    var revenueEstimate: Money?
    var currency: String?
    /// ISO 3166 code Apple added to 2025 postbacks; nil when absent (older postbacks, or withheld).
    var countryCode: String?
    var development: Int
    var rejected: Int
    var duplicatesDropped: Int

    /// `cv_kind`.
    enum ValueKind: String {
        case fine, coarse
        /// A winner whose value Apple withheld.
        case null
        /// A non-winning postback: they never carry a value.
        case nonWinning = "none"
    }

    static let coarseLevels = ["low", "medium", "high"]

    /// Where each column the report reads sits in one file.
    struct Layout {
        private let indices: [String: Int]
        let columnCount: Int

        static let required = [
            "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "postback_sequence_index", "cv_kind",
            "fine_cv", "coarse_cv", "decoded_label", "postbacks", "installs", "redownloads", "reengagements", "losses",
            "null_cv_postbacks", "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
            "development_postbacks", "rejected_postbacks", "duplicates_dropped",
        ]

        init(header: [String?], path: String) throws(ReportError) {
            var indices: [String: Int] = [:]
            for (index, name) in header.enumerated() {
                guard let name else { throw .malformed(path: path, line: 1, reason: "empty column name in the header") }
                indices[name] = index
            }
            let missing = Self.required.filter { indices[$0] == nil }
            guard missing.isEmpty else {
                throw .malformed(path: path, line: 1, reason: "not a campaign_daily table: no column \(missing.joined(separator: ", "))")
            }
            self.indices = indices
            columnCount = header.count
        }

        func record(_ fields: [String?], path: String, line: Int) throws(ReportError) -> CampaignDailyRecord {
            guard fields.count == columnCount else {
                throw .malformed(path: path, line: line, reason: "\(fields.count) fields, the header has \(columnCount)")
            }
            func text(_ column: String) -> String? { fields[indices[column]!] }
            func bad(_ column: String, _ expected: String) -> ReportError {
                .malformed(path: path, line: line, reason: "\(column) is '\(text(column) ?? "")', expected \(expected)")
            }
            func count(_ column: String) throws(ReportError) -> Int {
                guard let value = text(column) else { return 0 }
                guard let number = Int(value), number >= 0 else { throw bad(column, "a count") }
                return number
            }
            func money(_ column: String) throws(ReportError) -> Money? {
                guard let value = text(column) else { return nil }
                guard let amount = Money(decimal: value) else { throw bad(column, "an amount") }
                return amount
            }
            var sequenceIndex = 0
            if let value = text("postback_sequence_index") {
                guard let number = Int(value), (0...2).contains(number) else { throw bad("postback_sequence_index", "0, 1 or 2") }
                sequenceIndex = number
            }
            var kind: ValueKind? = nil
            if let value = text("cv_kind") {
                guard let parsed = ValueKind(rawValue: value) else { throw bad("cv_kind", "fine, coarse, null or none") }
                kind = parsed
            }
            var fine: Int? = nil
            if let value = text("fine_cv") {
                guard let number = Int(value), (0...63).contains(number) else { throw bad("fine_cv", "a value from 0 to 63") }
                fine = number
            }
            var coarse: Int? = nil
            if let value = text("coarse_cv") {
                guard let level = Self.levelIndex(value) else { throw bad("coarse_cv", "low, medium or high") }
                coarse = level
            }
            return CampaignDailyRecord(
                appID: text("app_id"), adNetworkID: text("ad_network_id"), campaignID: text("campaign_id"),
                sourceIdentifier: text("source_identifier"), campaign: text("campaign"), sequenceIndex: sequenceIndex,
                cvKind: kind, fineValue: fine, coarseLevel: coarse, decodedLabel: text("decoded_label"),
                postbacks: try count("postbacks"), installs: try count("installs"), redownloads: try count("redownloads"),
                reengagements: try count("reengagements"), losses: try count("losses"), nullValues: try count("null_cv_postbacks"),
                revenueMin: try money("revenue_min_sum"), revenueMax: try money("revenue_max_sum"),
                revenueEstimate: try money("revenue_est_sum"), currency: text("currency"),
                countryCode: indices["country_code"].flatMap { fields[$0] },
                development: try count("development_postbacks"), rejected: try count("rejected_postbacks"),
                duplicatesDropped: try count("duplicates_dropped"))
        }

        private static func levelIndex(_ value: String) -> Int? { CampaignDailyRecord.coarseLevels.firstIndex(of: value) }
    }
}
