/// The two output tables and their columns, in file order. Columns are only ever appended, never
/// renamed or reordered, so readers that select by name keep working. The partition column `dt`
/// is in the directory name (`dt=YYYY-MM-DD`), not in the files, as Hive, Spark and BigQuery expect.
public enum AggregateTables {
    public static let campaignDaily = "campaign_daily"
    public static let campaignEventsDaily = "campaign_events_daily"

    /// The grain shared by both tables (everything that identifies a campaign-level row).
    public static let dimensionColumns = [
        "est_install_date", "app_id", "protocol", "version", "ad_network_id", "campaign_id", "source_identifier",
        "source_identifier_digits", "campaign", "geo", "placement", "source_app_id", "source_domain", "marketplace_id",
        "country_code", "interaction", "conversion_type", "postback_sequence_index", "did_win",
    ]

    public static let campaignDailyColumns = dimensionColumns + [
        "cv_kind", "fine_cv", "coarse_cv", "decoded_label", "schema_id",
        "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
        "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
        "development_postbacks", "rejected_postbacks", "duplicates_dropped",
        // Of `postbacks`, those stored with flags (a value normalized or dropped; docs/postback-spec.md §11).
        "flagged_postbacks",
    ]

    public static let campaignEventsDailyColumns = dimensionColumns + [
        "schema_id", "event_name", "postbacks", "event_count_min_sum", "event_count_max_sum",
        "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
    ]
}
