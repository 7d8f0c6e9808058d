/// The output tables and their columns, in file order. Columns are only ever appended, never
/// renamed or reordered, so readers that select by name keep working. The partition column `dt`
/// is in the directory name (`dt=YYYY-MM-DD`), not in the files, as Hive, Spark and BigQuery expect.
/// A column that shows a stored postback's field is `.field(…)` (`RecordColumn`); the renderer, the
/// Spark job (spark/record-schema.json, spark/published_schema.py) and the report read these lists.
package enum AggregateTables {
    /// Every postback-level row at the full detail grain (what `campaign_daily` was before rollups),
    /// for analysts who need a dimension the rollups drop.
    package static let postbackDetailDaily = "postback_detail_daily"
    package static let campaignDaily = "campaign_daily"
    package static let publisherDaily = "publisher_daily"
    package static let countryDaily = "country_daily"
    package static let campaignEventsDaily = "campaign_events_daily"
    /// The development postbacks (Apple development keys, `--trust-key` test keys, SKAdNetwork test
    /// mode) at `campaign_daily`'s grain and columns: `postbacks` and the counts and revenue derived
    /// from it are the row's development postbacks; never part of the other tables' figures.
    package static let campaignDailyDevelopment = "campaign_daily_development"
    /// Every table a day publishes, in the order they are written (before the manifest).
    package static let all = [
        postbackDetailDaily, campaignDaily, publisherDaily, countryDaily, campaignEventsDaily, campaignDailyDevelopment,
    ]

    /// The grain shared by the detail and events tables (everything that identifies a postback-level row).
    package static let dimensionSteps: [DimensionColumn] = [
        .estInstallDate, .field(.appID), .field(.postbackProtocol), .field(.version), .field(.adNetworkID), .field(.campaignID),
        .field(.sourceIdentifier), .sourceIdentifierDigits, .campaign, .geo, .placement, .field(.sourceAppID),
        .field(.sourceDomain),
        .field(.marketplaceID), .field(.countryCode), .field(.interaction), .field(.conversionType), .field(.sequenceIndex),
        .field(.didWin),
    ]
    package static let dimensions = dimensionSteps.map(\.column)

    /// `postback_detail_daily`'s columns after the dimensions.
    package static let detailMeasureSteps: [DetailMeasure] = [
        .cvKind, .field(.fineValue), .field(.coarseValue), .decodedLabel, .schemaID,
        .postbacks, .installs, .redownloads, .reengagements, .losses, .nullValuePostbacks,
        .revenueMinSum, .revenueMaxSum, .revenueEstSum, .currency,
        .developmentPostbacks, .rejectedPostbacks, .duplicatesDropped,
        // Of `postbacks`, those stored with flags (a value normalized or dropped; docs/postback-spec.md §11).
        .flaggedPostbacks,
        // Copies of the row's stored postbacks that came with other unsigned values (raw/conflicts/).
        .conflictingCopies,
    ]
    package static let detailMeasures = detailMeasureSteps.map(\.column)

    /// `campaign_events_daily`'s columns after the dimensions.
    package static let campaignEventsDailyMeasures: [AggregateColumn] = [
        .schemaID, .eventName, .postbacks, .eventCountMinSum, .eventCountMaxSum,
        .revenueMinSum, .revenueMaxSum, .revenueEstSum, .currency,
    ]

    /// Every column of `postback_detail_daily`, in file order.
    package static let detailInOrder = dimensions + detailMeasures

    /// `campaign_daily`: the grain people report at (no version, publisher, country, interaction or
    /// win columns), one row per campaign, window and conversion value.
    package static let campaignDailyRollup = Rollup(
        table: campaignDaily,
        kept: [
            .estInstallDate, .field(.appID), .field(.postbackProtocol), .field(.adNetworkID), .field(.campaignID),
            .field(.sourceIdentifier), .sourceIdentifierDigits, .campaign, .geo, .placement, .field(.conversionType),
            .field(.sequenceIndex), .cvKind, .field(.fineValue), .field(.coarseValue), .decodedLabel, .schemaID, .currency,
        ])
    /// `publisher_daily`: where the ads ran (source app or web domain) per campaign and window.
    package static let publisherDailyRollup = Rollup(
        table: publisherDaily,
        kept: [
            .field(.appID), .field(.postbackProtocol), .field(.adNetworkID), .field(.campaignID), .field(.sourceIdentifier),
            .sourceIdentifierDigits, .campaign, .field(.sourceAppID), .field(.sourceDomain), .field(.sequenceIndex),
            .currency,
        ])
    /// `country_daily`: the storefront country per campaign and window.
    package static let countryDailyRollup = Rollup(
        table: countryDaily,
        kept: [
            .field(.appID), .field(.postbackProtocol), .field(.adNetworkID), .field(.campaignID), .field(.sourceIdentifier),
            .sourceIdentifierDigits, .campaign, .field(.countryCode), .field(.sequenceIndex), .currency,
        ])
    /// The rollups of the detail table, in write order (`campaign_daily_development` is
    /// `campaignDailyRollup` over the development rows).
    package static let rollups = [campaignDailyRollup, publisherDailyRollup, countryDailyRollup]

    /// The null-value model's columns (docs/modeling.md), appended to `campaign_daily` and
    /// `campaign_daily_development` (where they stay empty) after the measured columns.
    package static let modeledColumns: [AggregateColumn] = ModeledColumn.allCases.map { .modeled($0) }

    /// Every table's columns, in `all`'s order.
    package static let columnsByTable: [(table: String, columns: [AggregateColumn])] =
        [
            (postbackDetailDaily, detailInOrder)
        ] + rollups.map { ($0.table, $0.table == campaignDaily ? $0.columns + modeledColumns : $0.columns) } + [
            (campaignEventsDaily, dimensions + campaignEventsDailyMeasures),
            (campaignDailyDevelopment, campaignDailyRollup.columns + modeledColumns),
        ]

    /// `CREATE TABLE` statements for every table, with every column's `sqlType` and the partition
    /// column `dt` last (as Hive-partitioned readers add it). docs/aggregate.md shows this text; a test
    /// keeps the two equal.
    package static func createTableStatements() -> String {
        columnsByTable.map {
            table, columns in
            "CREATE TABLE \(table) (\n"
                + (columns.map { "    \($0.name) \($0.sqlType)" } + ["    dt DATE"]).joined(separator: ",\n") + "\n);\n"
        }.joined(separator: "\n")
    }

    /// The install-date cohort tables (docs/aggregate.md, "campaign_cohort_daily"), each with the
    /// day table it is made from; partitioned by estimated install date, with manifests of their own.
    package static let campaignCohortDaily = "campaign_cohort_daily"
    package static let campaignCohortDailyDevelopment = "campaign_cohort_daily_development"
    package static let cohortTables: [(table: String, source: String)] = [
        (campaignCohortDaily, campaignDaily), (campaignCohortDailyDevelopment, campaignDailyDevelopment),
    ]
    /// The cohort columns, then the null-value model's (docs/modeling.md).
    package static let cohortColumns: [AggregateColumn] = CohortColumn.allCases.map { .cohort($0) } + modeledColumns

    /// The cohort table's `CREATE TABLE` statement (docs/aggregate.md shows it; a test keeps them equal).
    package static func cohortCreateTableStatement() -> String {
        "CREATE TABLE \(campaignCohortDaily) (\n"
            + (cohortColumns.map { "    \($0.name) \($0.sqlType)" } + ["    dt DATE"]).joined(separator: ",\n") + "\n);\n"
    }

    package static let dimensionColumns = dimensions.map(\.name)
    package static let detailColumns = detailInOrder.map(\.name)
    package static let campaignEventsDailyColumns = (dimensions + campaignEventsDailyMeasures).map(\.name)
}

/// A table of the detail rows grouped by the detail columns it keeps, every measure summed: counts
/// as integers, amounts as the exact sum of the non-empty values (empty when all are, as SQL SUM).
package struct Rollup: Sendable {
    package let table: String
    /// The detail columns it groups by.
    package let kept: [AggregateColumn]

    /// The kept columns and every measure, in the detail table's order.
    package var columns: [AggregateColumn] {
        AggregateTables.detailInOrder.filter { kept.contains($0) || $0.isMeasure }
    }
}
