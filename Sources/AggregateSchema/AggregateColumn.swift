/// One column of the published tables: its name, `ColumnType` and `ColumnRole` are declared here
/// and nowhere else (the renderer, the Parquet files, the `CREATE TABLE` text, the Spark job through
/// spark/published-schema.json and the report all read them).
package enum AggregateColumn: Hashable, Sendable {
    /// A stored postback's field, shown as stored (the ad network id lower-cased).
    case field(RecordColumn)
    case estInstallDate, sourceIdentifierDigits, campaign, geo, placement
    case cvKind, decodedLabel, schemaID, postbacks, installs, redownloads, reengagements, losses, nullValuePostbacks
    case revenueMinSum, revenueMaxSum, revenueEstSum, currency, developmentPostbacks, rejectedPostbacks, duplicatesDropped
    case flaggedPostbacks, conflictingCopies, eventName, eventCountMinSum, eventCountMaxSum
    /// A column of the install-date cohort tables (`campaign_cohort_daily`).
    case cohort(CohortColumn)
    /// A column of the null-value model (`campaign_daily`'s last columns).
    case modeled(ModeledColumn)

    package var name: String {
        switch self {
        case .field(let field): return field.rawValue
        case .estInstallDate: return "est_install_date"
        case .sourceIdentifierDigits: return "source_identifier_digits"
        case .campaign: return "campaign"
        case .geo: return "geo"
        case .placement: return "placement"
        case .cvKind: return "cv_kind"
        case .decodedLabel: return "decoded_label"
        case .schemaID: return "schema_id"
        case .postbacks: return "postbacks"
        case .installs: return "installs"
        case .redownloads: return "redownloads"
        case .reengagements: return "reengagements"
        case .losses: return "losses"
        case .nullValuePostbacks: return "null_cv_postbacks"
        case .revenueMinSum: return "revenue_min_sum"
        case .revenueMaxSum: return "revenue_max_sum"
        case .revenueEstSum: return "revenue_est_sum"
        case .currency: return "currency"
        case .developmentPostbacks: return "development_postbacks"
        case .rejectedPostbacks: return "rejected_postbacks"
        case .duplicatesDropped: return "duplicates_dropped"
        case .flaggedPostbacks: return "flagged_postbacks"
        case .conflictingCopies: return "conflicting_copies"
        case .eventName: return "event_name"
        case .eventCountMinSum: return "event_count_min_sum"
        case .eventCountMaxSum: return "event_count_max_sum"
        case .cohort(let column): return column.rawValue
        case .modeled(let column): return column.rawValue
        }
    }

    /// What the column holds (docs/aggregate.md, "Column types"). Identifiers Apple sends as strings
    /// stay text, whatever they look like: a source identifier "0042" read as a number would lose its
    /// zeros. Amounts are exact decimals with six places (the job sums micro-units), never floating point.
    package var type: ColumnType {
        switch self {
        case .field(let field): return field.type
        case .estInstallDate: return .date
        case .sourceIdentifierDigits: return .int32
        case .revenueMinSum, .revenueMaxSum, .revenueEstSum: return .amount
        case .eventCountMinSum, .eventCountMaxSum: return .int64
        case .campaign, .geo, .placement, .cvKind, .decodedLabel, .schemaID, .currency, .eventName: return .string
        case .postbacks, .installs, .redownloads, .reengagements, .losses, .nullValuePostbacks, .developmentPostbacks,
            .rejectedPostbacks, .duplicatesDropped, .flaggedPostbacks, .conflictingCopies:
            return .int64
        case .cohort(let column): return column.type
        case .modeled(let column): return column.type
        }
    }

    /// What the column is for: how the detail table's rollups treat it, and whether it may be empty.
    package var role: ColumnRole {
        switch self {
        case .field, .estInstallDate, .sourceIdentifierDigits, .campaign, .geo, .placement: return .dimension
        case .cvKind, .decodedLabel, .schemaID, .currency, .eventName: return .attribute
        case .postbacks, .installs, .redownloads, .reengagements, .losses, .nullValuePostbacks, .developmentPostbacks,
            .rejectedPostbacks, .duplicatesDropped, .flaggedPostbacks, .conflictingCopies:
            return .postbackCount
        case .revenueMinSum, .revenueMaxSum, .revenueEstSum: return .amount
        case .eventCountMinSum, .eventCountMaxSum: return .eventCount
        case .cohort(let column): return column.isCount ? .postbackCount : .cohortValue
        case .modeled: return .modeled
        }
    }

    /// The SQL type a reader should give the column (`type.sql`).
    package var sqlType: String { type.sql }

    /// A count of postbacks: 0, never empty, on a row that has none (a rejected record's row, a
    /// cohort row with spend only).
    package var isPostbackCount: Bool { role == .postbackCount }

    /// An amount (written as the shortest exact decimal).
    package var isMoney: Bool { role == .amount }

    /// A column of the detail table that a rollup sums (every count and amount).
    package var isMeasure: Bool { role.isSummed }

    /// Whether the column may be empty (null): every column but the postback counts.
    package var isNullable: Bool { role.isNullable }
}

/// What a published column is for. Closed: a new role is a decision for every reader.
package enum ColumnRole: Hashable, Sendable {
    /// Part of the grain a row is grouped by.
    case dimension
    /// Derived from the grain and the schema (kind, label, schema, currency, event name): a rollup
    /// keeps it when it groups by it.
    case attribute
    /// A count of postbacks: summed by rollups, 0 when there is none.
    case postbackCount
    /// An exact amount, summed by rollups; empty when every value is.
    case amount
    /// An event's count range (`campaign_events_daily`).
    case eventCount
    /// A cohort row's figure other than its counts (key, spend, revenue, ROAS).
    case cohortValue
    /// The null-value model's estimate (docs/modeling.md).
    case modeled

    /// Summed by the detail table's rollups.
    package var isSummed: Bool {
        switch self {
        case .postbackCount, .amount: return true
        case .dimension, .attribute, .eventCount, .cohortValue, .modeled: return false
        }
    }

    package var isNullable: Bool {
        switch self {
        case .postbackCount: return false
        case .dimension, .attribute, .amount, .eventCount, .cohortValue, .modeled: return true
        }
    }
}

/// A stored postback's field as a published column, named as the column is (the record's
/// `AttributionField.column`; a test keeps the two equal).
package enum RecordColumn: String, CaseIterable, Hashable, Sendable {
    case postbackProtocol = "protocol"
    case version
    case appID = "app_id"
    case adNetworkID = "ad_network_id"
    case campaignID = "campaign_id"
    case sourceIdentifier = "source_identifier"
    case sourceAppID = "source_app_id"
    case sourceDomain = "source_domain"
    case marketplaceID = "marketplace_id"
    case countryCode = "country_code"
    case interaction
    case conversionType = "conversion_type"
    case sequenceIndex = "postback_sequence_index"
    case didWin = "did_win"
    case fineValue = "fine_cv"
    case coarseValue = "coarse_cv"

    package var type: ColumnType {
        switch self {
        case .sequenceIndex, .fineValue: return .int32
        case .appID, .campaignID, .sourceAppID: return .int64
        case .didWin: return .bool
        case .postbackProtocol, .version, .adNetworkID, .sourceIdentifier, .sourceDomain, .marketplaceID, .countryCode,
            .interaction, .conversionType, .coarseValue:
            return .string
        }
    }
}

/// A column of the grain shared by the detail and events tables (`AggregateTables.dimensions`): what the
/// renderer writes from a row's key and its decoded dimensions.
package enum DimensionColumn: Hashable, Sendable {
    case field(RecordColumn)
    case estInstallDate, sourceIdentifierDigits, campaign, geo, placement

    package var column: AggregateColumn {
        switch self {
        case .field(let field): return .field(field)
        case .estInstallDate: return .estInstallDate
        case .sourceIdentifierDigits: return .sourceIdentifierDigits
        case .campaign: return .campaign
        case .geo: return .geo
        case .placement: return .placement
        }
    }
}

/// A column of `postback_detail_daily` after the grain (`AggregateTables.detailMeasures`): what the
/// renderer writes from a row's counts and decoded value.
package enum DetailMeasure: Hashable, Sendable {
    case field(RecordColumn)
    case cvKind, decodedLabel, schemaID, postbacks, installs, redownloads, reengagements, losses, nullValuePostbacks
    case revenueMinSum, revenueMaxSum, revenueEstSum, currency, developmentPostbacks, rejectedPostbacks, duplicatesDropped
    case flaggedPostbacks, conflictingCopies

    package var column: AggregateColumn {
        switch self {
        case .field(let field): return .field(field)
        case .cvKind: return .cvKind
        case .decodedLabel: return .decodedLabel
        case .schemaID: return .schemaID
        case .postbacks: return .postbacks
        case .installs: return .installs
        case .redownloads: return .redownloads
        case .reengagements: return .reengagements
        case .losses: return .losses
        case .nullValuePostbacks: return .nullValuePostbacks
        case .revenueMinSum: return .revenueMinSum
        case .revenueMaxSum: return .revenueMaxSum
        case .revenueEstSum: return .revenueEstSum
        case .currency: return .currency
        case .developmentPostbacks: return .developmentPostbacks
        case .rejectedPostbacks: return .rejectedPostbacks
        case .duplicatesDropped: return .duplicatesDropped
        case .flaggedPostbacks: return .flaggedPostbacks
        case .conflictingCopies: return .conflictingCopies
        }
    }
}
