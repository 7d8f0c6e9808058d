import AggregateSchema

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
    /// `download`, `redownload` or `re-engagement`; nil in a table without the column.
    var conversionType: String?
    var cvKind: ValueKind?
    var fineValue: Int?
    var coarseLevel: Int?
    var decodedLabel: String?
    /// Nil when no schema decodes the row's app (for its install date, protocol and conversion type).
    var schemaID: String?
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
    /// The null-value model's columns (docs/modeling.md); nil in files of earlier releases and on rows
    /// the model did not cover.
    var modeledNullEstimate: Money? = nil
    var modeledValuesVariance: Double? = nil
    var modeledMeanSD: Double? = nil
    /// k · ln(p0); nil in files published before the model had it.
    var modeledLogPZero: Double? = nil
    /// Why the row's modeled columns are empty (too little data).
    var modeledNote: String? = nil

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
        /// `conversion_type`'s column, found once: it is read on every row.
        private let conversionTypeIndex: Int?
        let columnCount: Int

        static let required: [AggregateColumn] = [
            .field(.appID), .field(.adNetworkID), .field(.campaignID), .field(.sourceIdentifier), .campaign,
            .field(.sequenceIndex), .cvKind,
            .field(.fineValue), .field(.coarseValue), .decodedLabel, .postbacks, .installs, .redownloads, .reengagements, .losses,
            .nullValuePostbacks, .revenueMinSum, .revenueMaxSum, .revenueEstSum, .currency,
            .developmentPostbacks, .rejectedPostbacks, .duplicatesDropped,
        ]

        init(header: [String?], path: String) throws(ReportError) {
            var indices: [String: Int] = [:]
            for (index, name) in header.enumerated() {
                guard let name else { throw .malformed(path: path, line: 1, reason: "empty column name in the header") }
                indices[name] = index
            }
            let missing = Self.required.map(\.name).filter { indices[$0] == nil }
            guard missing.isEmpty else {
                throw .malformed(
                    path: path, line: 1, reason: "not a campaign_daily table: no column \(missing.joined(separator: ", "))")
            }
            self.indices = indices
            conversionTypeIndex = indices[AggregateColumn.field(.conversionType).name]
            columnCount = header.count
        }

        func record(_ fields: [String?], path: String, line: Int) throws(ReportError) -> CampaignDailyRecord {
            guard fields.count == columnCount else {
                throw .malformed(path: path, line: line, reason: "\(fields.count) fields, the header has \(columnCount)")
            }
            func text(_ column: AggregateColumn) -> String? { fields[indices[column.name]!] }
            func bad(_ column: AggregateColumn, _ expected: String) -> ReportError {
                .malformed(path: path, line: line, reason: "\(column.name) is '\(text(column) ?? "")', expected \(expected)")
            }
            func count(_ column: AggregateColumn) throws(ReportError) -> Int {
                guard let value = text(column) else { return 0 }
                guard let number = Int(value), number >= 0 else { throw bad(column, "a count") }
                return number
            }
            func money(_ column: AggregateColumn) throws(ReportError) -> Money? {
                guard let value = text(column) else { return nil }
                guard let amount = Money(decimal: value) else { throw bad(column, "an amount") }
                return amount
            }
            var sequenceIndex = 0
            if let value = text(.field(.sequenceIndex)) {
                guard let number = Int(value), (0...2).contains(number) else { throw bad(.field(.sequenceIndex), "0, 1 or 2") }
                sequenceIndex = number
            }
            var kind: ValueKind? = nil
            if let value = text(.cvKind) {
                guard let parsed = ValueKind(rawValue: value) else { throw bad(.cvKind, "fine, coarse, null or none") }
                kind = parsed
            }
            var fine: Int? = nil
            if let value = text(.field(.fineValue)) {
                guard let number = Int(value), (0...63).contains(number) else {
                    throw bad(.field(.fineValue), "a value from 0 to 63")
                }
                fine = number
            }
            var coarse: Int? = nil
            if let value = text(.field(.coarseValue)) {
                guard let level = Self.levelIndex(value) else { throw bad(.field(.coarseValue), "low, medium or high") }
                coarse = level
            }
            func double(_ column: ModeledColumn) throws(ReportError) -> Double? {
                guard let index = indices[column.rawValue], let value = fields[index] else { return nil }
                guard let number = Double(value), number.isFinite, number >= 0 else {
                    throw .malformed(path: path, line: line, reason: "\(column.rawValue) is '\(value)', expected a number")
                }
                return number
            }
            var modeledEstimate: Money? = nil
            if let index = indices[ModeledColumn.nullRevenueEst.rawValue], let value = fields[index] {
                guard let amount = Money(decimal: value) else {
                    throw .malformed(path: path, line: line, reason: "modeled_null_revenue_est is '\(value)', expected an amount")
                }
                modeledEstimate = amount
            }
            var record = CampaignDailyRecord(
                appID: text(.field(.appID)), adNetworkID: text(.field(.adNetworkID)), campaignID: text(.field(.campaignID)),
                sourceIdentifier: text(.field(.sourceIdentifier)), campaign: text(.campaign), sequenceIndex: sequenceIndex,
                conversionType: conversionTypeIndex.flatMap { fields[$0] },
                cvKind: kind, fineValue: fine, coarseLevel: coarse, decodedLabel: text(.decodedLabel),
                schemaID: indices[AggregateColumn.schemaID.name].flatMap { fields[$0] }, postbacks: try count(.postbacks),
                installs: try count(.installs), redownloads: try count(.redownloads),
                reengagements: try count(.reengagements), losses: try count(.losses), nullValues: try count(.nullValuePostbacks),
                revenueMin: try money(.revenueMinSum), revenueMax: try money(.revenueMaxSum),
                revenueEstimate: try money(.revenueEstSum), currency: text(.currency),
                countryCode: indices[AggregateColumn.field(.countryCode).name].flatMap { fields[$0] },
                development: try count(.developmentPostbacks), rejected: try count(.rejectedPostbacks),
                duplicatesDropped: try count(.duplicatesDropped))
            record.modeledNullEstimate = modeledEstimate
            record.modeledValuesVariance = try double(.nullValuesVar)
            record.modeledMeanSD = try double(.nullMeanSD)
            if let index = indices[ModeledColumn.nullLogPZero.rawValue], let value = fields[index] {
                guard let number = Double(value), number.isFinite, number <= 0 else {
                    throw .malformed(
                        path: path, line: line, reason: "modeled_null_log_p_zero is '\(value)', expected a number ≤ 0")
                }
                record.modeledLogPZero = number
            }
            record.modeledNote = indices[ModeledColumn.note.rawValue].flatMap { fields[$0] }
            return record
        }

        private static func levelIndex(_ value: String) -> Int? { CampaignDailyRecord.coarseLevels.firstIndex(of: value) }
    }
}
