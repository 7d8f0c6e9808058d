"""The published data's contract, generated from Sources/AggregateSchema (and the record vocabulary of Sources/Postbacks); do not edit: POSTBACK_UPDATE_PUBLISHED_SCHEMA=1 swift test --filter PublishedSchemaTests rewrites it.

Table names, each table's columns with their SQL and Spark types, and the record vocabulary; the
same declarations as published-schema.json beside it."""

# Every table's name.
POSTBACK_DETAIL_DAILY = "postback_detail_daily"
CAMPAIGN_DAILY = "campaign_daily"
PUBLISHER_DAILY = "publisher_daily"
COUNTRY_DAILY = "country_daily"
CAMPAIGN_EVENTS_DAILY = "campaign_events_daily"
CAMPAIGN_DAILY_DEVELOPMENT = "campaign_daily_development"
CAMPAIGN_COHORT_DAILY = "campaign_cohort_daily"
CAMPAIGN_COHORT_DAILY_DEVELOPMENT = "campaign_cohort_daily_development"

DAY_TABLES = ["postback_detail_daily", "campaign_daily", "publisher_daily", "country_daily", "campaign_events_daily", "campaign_daily_development"]
COHORT_TABLES = ["campaign_cohort_daily", "campaign_cohort_daily_development"]
MODELED_TABLES = ["campaign_daily", "campaign_daily_development"]
MODELED_COLUMNS = ["modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high", "modeled_revenue_est", "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero", "modeled_note"]
COHORT_COLUMNS = ["app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "cohort_status", "complete_through", "spend", "spend_currency", "spend_fx_rate", "impressions", "clicks", "reported_installs", "installs", "redownloads", "reengagements", "postbacks_w1", "postbacks_w2", "postbacks_w3", "winning_postbacks", "null_cv_postbacks", "null_cv_share", "revenue_currency", "revenue_est_w1", "revenue_min_w1", "revenue_max_w1", "revenue_est_w2", "revenue_min_w2", "revenue_max_w2", "revenue_est_w3", "revenue_min_w3", "revenue_max_w3", "revenue_est_cum_w2", "revenue_min_cum_w2", "revenue_max_cum_w2", "revenue_est_cum_w3", "revenue_min_cum_w3", "revenue_max_cum_w3", "cpi", "roas_w1", "roas_w2", "roas_w3", "roas_note", "reported_installs_excess"]
COHORT_STATUSES = ["open", "window-1-final", "window-2-final", "final"]
ROAS_NOTES = ["no-spend", "mixed-spend-currencies", "mixed-revenue-currencies", "no-revenue", "currency-mismatch", "zero-spend"]
FLAG_FIELDS = ["version", "app-id", "campaign-id", "source-identifier", "source-app-id", "redownload", "fidelity-type", "did-win", "postback-sequence-index", "conversion-value", "coarse-conversion-value", "country-code", "ad-interaction-type", "impression-type", "conversion-type", "advertised-item-identifier", "publisher-item-identifier", "jws-claim", "jws-header", "body"]
FLAG_ACTIONS = ["normalized", "dropped", "unrecognized"]
QUARANTINE_REASONS = ["unknown-version", "unknown-kid", "unrecognized-signed-value"]
VERIFICATION_STATUSES = ["verified", "invalid-signature", "malformed", "unsupported-version", "untrusted-key"]

# Every column of the day tables: (SQL type, Spark type, nullable, role), by name.
DAY_COLUMN_TYPES = {
    "est_install_date": ("DATE", "date", True, "dimension"),
    "app_id": ("BIGINT", "bigint", True, "dimension"),
    "protocol": ("VARCHAR", "string", True, "dimension"),
    "version": ("VARCHAR", "string", True, "dimension"),
    "ad_network_id": ("VARCHAR", "string", True, "dimension"),
    "campaign_id": ("BIGINT", "bigint", True, "dimension"),
    "source_identifier": ("VARCHAR", "string", True, "dimension"),
    "source_identifier_digits": ("INTEGER", "int", True, "dimension"),
    "campaign": ("VARCHAR", "string", True, "dimension"),
    "geo": ("VARCHAR", "string", True, "dimension"),
    "placement": ("VARCHAR", "string", True, "dimension"),
    "source_app_id": ("BIGINT", "bigint", True, "dimension"),
    "source_domain": ("VARCHAR", "string", True, "dimension"),
    "marketplace_id": ("VARCHAR", "string", True, "dimension"),
    "country_code": ("VARCHAR", "string", True, "dimension"),
    "interaction": ("VARCHAR", "string", True, "dimension"),
    "conversion_type": ("VARCHAR", "string", True, "dimension"),
    "postback_sequence_index": ("INTEGER", "int", True, "dimension"),
    "did_win": ("BOOLEAN", "boolean", True, "dimension"),
    "cv_kind": ("VARCHAR", "string", True, "attribute"),
    "fine_cv": ("INTEGER", "int", True, "dimension"),
    "coarse_cv": ("VARCHAR", "string", True, "dimension"),
    "decoded_label": ("VARCHAR", "string", True, "attribute"),
    "schema_id": ("VARCHAR", "string", True, "attribute"),
    "postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "installs": ("BIGINT", "bigint", False, "postback_count"),
    "redownloads": ("BIGINT", "bigint", False, "postback_count"),
    "reengagements": ("BIGINT", "bigint", False, "postback_count"),
    "losses": ("BIGINT", "bigint", False, "postback_count"),
    "null_cv_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "revenue_min_sum": ("DECIMAL(38, 6)", "decimal(38,6)", True, "amount"),
    "revenue_max_sum": ("DECIMAL(38, 6)", "decimal(38,6)", True, "amount"),
    "revenue_est_sum": ("DECIMAL(38, 6)", "decimal(38,6)", True, "amount"),
    "currency": ("VARCHAR", "string", True, "attribute"),
    "development_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "rejected_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "duplicates_dropped": ("BIGINT", "bigint", False, "postback_count"),
    "flagged_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "conflicting_copies": ("BIGINT", "bigint", False, "postback_count"),
    "modeled_null_revenue_est": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_revenue_low": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_revenue_high": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_revenue_est": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_values_var": ("DOUBLE", "double", True, "modeled"),
    "modeled_null_mean_sd": ("DOUBLE", "double", True, "modeled"),
    "modeled_null_log_p_zero": ("DOUBLE", "double", True, "modeled"),
    "modeled_note": ("VARCHAR", "string", True, "modeled"),
    "event_name": ("VARCHAR", "string", True, "attribute"),
    "event_count_min_sum": ("BIGINT", "bigint", True, "event_count"),
    "event_count_max_sum": ("BIGINT", "bigint", True, "event_count"),
}

# Every column of the cohort tables: (SQL type, Spark type, nullable, role), by name.
COHORT_COLUMN_TYPES = {
    "app_id": ("BIGINT", "bigint", True, "cohort_value"),
    "ad_network_id": ("VARCHAR", "string", True, "cohort_value"),
    "campaign_id": ("BIGINT", "bigint", True, "cohort_value"),
    "source_identifier": ("VARCHAR", "string", True, "cohort_value"),
    "campaign": ("VARCHAR", "string", True, "cohort_value"),
    "cohort_status": ("VARCHAR", "string", True, "cohort_value"),
    "complete_through": ("DATE", "date", True, "cohort_value"),
    "spend": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "spend_currency": ("VARCHAR", "string", True, "cohort_value"),
    "spend_fx_rate": ("DECIMAL(38, 10)", "decimal(38,10)", True, "cohort_value"),
    "impressions": ("BIGINT", "bigint", True, "cohort_value"),
    "clicks": ("BIGINT", "bigint", True, "cohort_value"),
    "reported_installs": ("BIGINT", "bigint", True, "cohort_value"),
    "installs": ("BIGINT", "bigint", False, "postback_count"),
    "redownloads": ("BIGINT", "bigint", False, "postback_count"),
    "reengagements": ("BIGINT", "bigint", False, "postback_count"),
    "postbacks_w1": ("BIGINT", "bigint", False, "postback_count"),
    "postbacks_w2": ("BIGINT", "bigint", False, "postback_count"),
    "postbacks_w3": ("BIGINT", "bigint", False, "postback_count"),
    "winning_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "null_cv_postbacks": ("BIGINT", "bigint", False, "postback_count"),
    "null_cv_share": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_currency": ("VARCHAR", "string", True, "cohort_value"),
    "revenue_est_w1": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_min_w1": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_max_w1": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_est_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_min_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_max_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_est_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_min_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_max_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_est_cum_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_min_cum_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_max_cum_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_est_cum_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_min_cum_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "revenue_max_cum_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "cpi": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "roas_w1": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "roas_w2": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "roas_w3": ("DECIMAL(38, 6)", "decimal(38,6)", True, "cohort_value"),
    "roas_note": ("VARCHAR", "string", True, "cohort_value"),
    "reported_installs_excess": ("BIGINT", "bigint", True, "cohort_value"),
    "modeled_null_revenue_est": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_revenue_low": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_revenue_high": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_revenue_est": ("DECIMAL(38, 6)", "decimal(38,6)", True, "modeled"),
    "modeled_null_values_var": ("DOUBLE", "double", True, "modeled"),
    "modeled_null_mean_sd": ("DOUBLE", "double", True, "modeled"),
    "modeled_null_log_p_zero": ("DOUBLE", "double", True, "modeled"),
    "modeled_note": ("VARCHAR", "string", True, "modeled"),
}

# Each table's column names, in file order.
TABLE_COLUMNS = {
    POSTBACK_DETAIL_DAILY: [
        "est_install_date", "app_id", "protocol", "version", "ad_network_id", "campaign_id",
        "source_identifier", "source_identifier_digits", "campaign", "geo", "placement", "source_app_id",
        "source_domain", "marketplace_id", "country_code", "interaction", "conversion_type",
        "postback_sequence_index", "did_win", "cv_kind", "fine_cv", "coarse_cv", "decoded_label", "schema_id",
        "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
        "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency", "development_postbacks",
        "rejected_postbacks", "duplicates_dropped", "flagged_postbacks", "conflicting_copies",
    ],
    CAMPAIGN_DAILY: [
        "est_install_date", "app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier",
        "source_identifier_digits", "campaign", "geo", "placement", "conversion_type",
        "postback_sequence_index", "cv_kind", "fine_cv", "coarse_cv", "decoded_label", "schema_id",
        "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
        "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency", "development_postbacks",
        "rejected_postbacks", "duplicates_dropped", "flagged_postbacks", "conflicting_copies",
        "modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high",
        "modeled_revenue_est", "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero",
        "modeled_note",
    ],
    PUBLISHER_DAILY: [
        "app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier", "source_identifier_digits",
        "campaign", "source_app_id", "source_domain", "postback_sequence_index", "postbacks", "installs",
        "redownloads", "reengagements", "losses", "null_cv_postbacks", "revenue_min_sum", "revenue_max_sum",
        "revenue_est_sum", "currency", "development_postbacks", "rejected_postbacks", "duplicates_dropped",
        "flagged_postbacks", "conflicting_copies",
    ],
    COUNTRY_DAILY: [
        "app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier", "source_identifier_digits",
        "campaign", "country_code", "postback_sequence_index", "postbacks", "installs", "redownloads",
        "reengagements", "losses", "null_cv_postbacks", "revenue_min_sum", "revenue_max_sum",
        "revenue_est_sum", "currency", "development_postbacks", "rejected_postbacks", "duplicates_dropped",
        "flagged_postbacks", "conflicting_copies",
    ],
    CAMPAIGN_EVENTS_DAILY: [
        "est_install_date", "app_id", "protocol", "version", "ad_network_id", "campaign_id",
        "source_identifier", "source_identifier_digits", "campaign", "geo", "placement", "source_app_id",
        "source_domain", "marketplace_id", "country_code", "interaction", "conversion_type",
        "postback_sequence_index", "did_win", "schema_id", "event_name", "postbacks", "event_count_min_sum",
        "event_count_max_sum", "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
    ],
    CAMPAIGN_COHORT_DAILY: [
        "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "cohort_status",
        "complete_through", "spend", "spend_currency", "spend_fx_rate", "impressions", "clicks",
        "reported_installs", "installs", "redownloads", "reengagements", "postbacks_w1", "postbacks_w2",
        "postbacks_w3", "winning_postbacks", "null_cv_postbacks", "null_cv_share", "revenue_currency",
        "revenue_est_w1", "revenue_min_w1", "revenue_max_w1", "revenue_est_w2", "revenue_min_w2",
        "revenue_max_w2", "revenue_est_w3", "revenue_min_w3", "revenue_max_w3", "revenue_est_cum_w2",
        "revenue_min_cum_w2", "revenue_max_cum_w2", "revenue_est_cum_w3", "revenue_min_cum_w3",
        "revenue_max_cum_w3", "cpi", "roas_w1", "roas_w2", "roas_w3", "roas_note", "reported_installs_excess",
        "modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high",
        "modeled_revenue_est", "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero",
        "modeled_note",
    ],
}
TABLE_COLUMNS[CAMPAIGN_DAILY_DEVELOPMENT] = TABLE_COLUMNS[CAMPAIGN_DAILY]  # the same columns
TABLE_COLUMNS[CAMPAIGN_COHORT_DAILY_DEVELOPMENT] = TABLE_COLUMNS[CAMPAIGN_COHORT_DAILY]  # the same columns
# Each table's columns in file order: (name, SQL type, Spark type, nullable, role).
COLUMNS = {
    table: [(name, *(DAY_COLUMN_TYPES if table in DAY_TABLES else COHORT_COLUMN_TYPES)[name]) for name in names]
    for table, names in TABLE_COLUMNS.items()
}

# Each cohort table and the day table it is made from.
COHORT_SOURCES = {
    CAMPAIGN_COHORT_DAILY: CAMPAIGN_DAILY,
    CAMPAIGN_COHORT_DAILY_DEVELOPMENT: CAMPAIGN_DAILY_DEVELOPMENT,
}


def column_names(table):
    """The table's column names, in file order."""
    return [column[0] for column in COLUMNS[table]]


def sql_types(table):
    """The table's declared SQL type by column name."""
    return {column[0]: column[1] for column in COLUMNS[table]}
