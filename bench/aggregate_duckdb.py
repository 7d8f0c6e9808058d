#!/usr/bin/env python3
"""The DuckDB side of bench/aggregate: the same work as `postback aggregate` over the same spool.

Reads every spool line with read_json (explicit columns), keeps the first received copy of each
dedup key (counting that day's later copies in duplicates_dropped, as the job does), counts rejected
records by the app, protocol, version and ad network they claim, estimates the install date, groups
by the detail grain, decodes conversion values and source identifiers by joining the tables
`postback schema export` writes, and writes each table the job publishes, one CSV partition per day:

    OUT_DIR/postback_detail_daily/dt=…/    the detail grain (main's campaign_daily before the rollups)
    OUT_DIR/campaign_daily/dt=…/           rollups of the detail rows (ROLLUPS below: the kept
    OUT_DIR/publisher_daily/dt=…/          columns, every measure summed)
    OUT_DIR/country_daily/dt=…/
    OUT_DIR/campaign_daily_development/dt=…/   development postbacks at campaign_daily's grain

The detail rows are computed once into a table and every output is written from it, as an analyst
would do it in DuckDB. (The dedup here is over the whole range, which equals the aggregator's 10-day
lookback on this spool: its late copies arrive at most three days after the first.)
Not done here: campaign_events_daily (the job writes it; its decoding of events is not reproduced).

usage: aggregate_duckdb.py DATA VALUES.csv SOURCES.csv OUT_DIR THREADS
"""
import os
import sys
import time

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

# The detail table's columns after dt, in file order (AggregateTables.campaignDailyInOrder).
DETAIL = ["est_install_date", "app_id", "protocol", "version", "ad_network_id", "campaign_id", "source_identifier",
          "source_identifier_digits", "campaign", "geo", "placement", "source_app_id", "source_domain", "marketplace_id",
          "country_code", "interaction", "conversion_type", "postback_sequence_index", "did_win", "cv_kind", "fine_cv",
          "coarse_cv", "decoded_label", "schema_id", "postbacks", "installs", "redownloads", "reengagements", "losses",
          "null_cv_postbacks", "revenue_min_sum", "revenue_max_sum", "revenue_est_sum", "currency",
          "development_postbacks", "rejected_postbacks", "duplicates_dropped", "flagged_postbacks"]
MEASURES = ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "revenue_min_sum",
            "revenue_max_sum", "revenue_est_sum", "development_postbacks", "rejected_postbacks", "duplicates_dropped",
            "flagged_postbacks"]
# Each rollup: the detail columns it keeps (issue 14's agreed spec).
CAMPAIGN_KEPT = ["est_install_date", "app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier",
                 "source_identifier_digits", "campaign", "geo", "placement", "conversion_type", "postback_sequence_index",
                 "cv_kind", "fine_cv", "coarse_cv", "decoded_label", "schema_id", "currency"]
ROLLUPS = {
    published_schema.CAMPAIGN_DAILY: CAMPAIGN_KEPT,
    published_schema.PUBLISHER_DAILY: ["app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier", "source_identifier_digits",
                        "campaign", "source_app_id", "source_domain", "postback_sequence_index", "currency"],
    published_schema.COUNTRY_DAILY: ["app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier", "source_identifier_digits",
                      "campaign", "country_code", "postback_sequence_index", "currency"],
}


def rollup_select(source, kept, where=""):
    """The rollup of `source` by `kept`: kept columns and summed measures, in the detail table's order."""
    columns = [c if c in kept else f"sum({c}) AS {c}" for c in DETAIL if c in kept or c in MEASURES]
    return f"SELECT dt, {', '.join(columns)} FROM {source} {where} GROUP BY dt, {', '.join(kept)}"


# docs/aggregate.md, Rollups: the detail rows with production postbacks or rejected records; a row of
# development postbacks only is left out (its postbacks are in campaign_daily_development).
PRODUCTION_ROWS = "WHERE postbacks > 0 OR rejected_postbacks > 0"


def main():
    data, values, sources, out, threads = sys.argv[1:6]
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = false")

    attribution = ("STRUCT(protocol VARCHAR, version VARCHAR, app_id BIGINT, ad_network_id VARCHAR, campaign_id BIGINT, "
                   "source_identifier VARCHAR, source_app_id BIGINT, source_domain VARCHAR, marketplace_id VARCHAR, "
                   "country_code VARCHAR, interaction VARCHAR, conversion_type VARCHAR, postback_sequence_index INTEGER, "
                   "did_win BOOLEAN, fine_value INTEGER, coarse_value VARCHAR, test_mode BOOLEAN)")
    columns = ("{received_at: 'VARCHAR', writer: 'VARCHAR', route: 'VARCHAR', status: 'VARCHAR', environment: 'VARCHAR', "
               "protocol: 'VARCHAR', version: 'VARCHAR', quarantine: 'VARCHAR', flags: 'VARCHAR', "
               f"dedup_key: 'VARCHAR', attribution: '{attribution}'}}")

    # Measures of a decoded row for `count` postbacks (the production count for the detail table,
    # the development count for the development table).
    def measures(count, development):
        counted = "coalesce(g.did_win, true) AND g.postback_sequence_index = 0 AND g.conversion_type"
        return f"""{count} AS postbacks,
        CASE WHEN {counted} = 'download' THEN {count} ELSE 0 END AS installs,
        CASE WHEN {counted} = 'redownload' THEN {count} ELSE 0 END AS redownloads,
        CASE WHEN {counted} = 're-engagement' THEN {count} ELSE 0 END AS reengagements,
        CASE WHEN g.did_win = false THEN {count} ELSE 0 END AS losses,
        CASE WHEN g.cv_kind = 'null' THEN {count} ELSE 0 END AS null_cv_postbacks,
        {count} * CAST(v.revenue_min AS DECIMAL(18, 6)) AS revenue_min_sum,
        {count} * CAST(v.revenue_max AS DECIMAL(18, 6)) AS revenue_max_sum,
        {count} * CAST(v.revenue_est AS DECIMAL(18, 6)) AS revenue_est_sum,
        g.currency,
        {'0' if development else 'g.development_postbacks'} AS development_postbacks,
        {'0' if development else 'g.rejected_postbacks'} AS rejected_postbacks,
        {'0' if development else 'g.duplicates_dropped'} AS duplicates_dropped,
        {'0' if development else 'g.flagged_postbacks'} AS flagged_postbacks"""

    def decoded(count, development):
        return f"""
      SELECT g.dt, g.est_install_date, g.app_id, g.protocol, g.version, g.ad_network_id, g.campaign_id, g.source_identifier,
        length(g.source_identifier) AS source_identifier_digits, s.campaign, s.geo, s.placement, g.source_app_id,
        g.source_domain, g.marketplace_id, g.country_code, g.interaction, g.conversion_type, g.postback_sequence_index,
        g.did_win, g.cv_kind, g.fine_value AS fine_cv, g.coarse_value AS coarse_cv,
        CASE WHEN g.cv_kind IS NULL THEN NULL WHEN g.cv_kind = 'null' THEN 'null_cv' WHEN g.cv_kind = 'none' THEN NULL
             ELSE coalesce(v.decoded_label, 'no_schema') END AS decoded_label,
        g.schema_id, {measures(count, development)}
      FROM located g
      LEFT JOIN v ON v.schema_id = g.schema_id AND v.protocol = g.protocol AND v.conversion_type = g.conversion_type
        AND v.postback_sequence_index = CAST(g.postback_sequence_index AS VARCHAR) AND v.cv_kind = g.cv_kind
        AND v.cv_value = coalesce(CAST(g.fine_value AS VARCHAR), g.coarse_value)
      LEFT JOIN s ON s.schema_id = g.schema_id AND s.ad_network_id = g.ad_network_id
        AND s.id_kind = CASE WHEN g.source_identifier IS NULL THEN 'campaign_id' ELSE 'source_identifier' END
        AND s.id_value = coalesce(g.source_identifier, CAST(g.campaign_id AS VARCHAR))
      {'WHERE g.development_postbacks > 0' if development else ''}"""

    grouped = f"""
  WITH raw AS (
    SELECT dt, received_at, filename, dedup_key, environment, flags, attribution AS a,
      status = 'verified' AND quarantine IS NULL AND attribution IS NOT NULL AND dedup_key IS NOT NULL
        AND filename NOT LIKE '%/raw/rejected/%' AS counted,
      coalesce(attribution.protocol, protocol) AS claimed_protocol, coalesce(attribution.version, version) AS claimed_version
    FROM read_json(['{data}/raw/postbacks/*/*.jsonl', '{data}/raw/rejected/*/*.jsonl'], format = 'newline_delimited', hive_partitioning = true,
                   filename = true, columns = {columns})),
  copies AS (
    SELECT *, row_number() OVER (PARTITION BY dedup_key ORDER BY received_at, filename) AS copy,
      count(*) OVER (PARTITION BY dedup_key, dt) AS same_day_copies
    FROM raw WHERE counted),
  facts AS (
    SELECT dt, a.*, environment = 'production' AND NOT coalesce(a.test_mode, false) AS production,
      -- A value on a non-winning postback is never counted; the postback is flagged.
      flags IS NOT NULL OR (a.did_win = false AND (a.fine_value IS NOT NULL OR a.coarse_value IS NOT NULL)) AS flagged,
      same_day_copies - 1 AS dropped,
      -- Development postbacks on Developer Mode's timing (630, 810, 990 s), production on Apple's (48, 84, 252, 924 h).
      CAST(strptime(received_at, '%Y-%m-%dT%H:%M:%S.%fZ')
           - CASE WHEN environment = 'production' AND NOT coalesce(a.test_mode, false)
                  THEN to_hours(CASE WHEN a.protocol = 'adattributionkit' OR a.version = '4.0'
                                     THEN CASE a.postback_sequence_index WHEN 1 THEN 252 WHEN 2 THEN 924 ELSE 84 END
                                     ELSE 48 END)
                  ELSE to_seconds(CASE WHEN a.protocol = 'adattributionkit' OR a.version = '4.0'
                                       THEN CASE a.postback_sequence_index WHEN 1 THEN 810 WHEN 2 THEN 990 ELSE 630 END
                                       ELSE 630 END) END AS DATE) AS est_install_date,
      CASE WHEN a.did_win = false THEN 'none' WHEN a.fine_value IS NOT NULL THEN 'fine' WHEN a.coarse_value IS NOT NULL THEN 'coarse'
           ELSE 'null' END AS cv_kind
    FROM copies WHERE copy = 1),
  counted AS (
    SELECT dt, est_install_date, app_id, protocol, version, lower(ad_network_id) AS ad_network_id, campaign_id,
      source_identifier, source_app_id, source_domain, marketplace_id, country_code, interaction, conversion_type,
      postback_sequence_index, did_win, cv_kind,
      CASE WHEN did_win = false THEN NULL ELSE fine_value END AS fine_value,
      CASE WHEN did_win = false THEN NULL ELSE coarse_value END AS coarse_value,
      count(*) FILTER (WHERE production) AS postbacks, count(*) FILTER (WHERE NOT production) AS development_postbacks,
      0 AS rejected_postbacks, sum(dropped) AS duplicates_dropped, count(*) FILTER (WHERE production AND flagged) AS flagged_postbacks
    FROM facts GROUP BY ALL),
  rejected AS (
    SELECT dt, NULL::DATE AS est_install_date, a.app_id, claimed_protocol AS protocol, claimed_version AS version,
      lower(a.ad_network_id) AS ad_network_id, NULL::BIGINT AS campaign_id, NULL AS source_identifier,
      NULL::BIGINT AS source_app_id, NULL AS source_domain, NULL AS marketplace_id, NULL AS country_code, NULL AS interaction,
      NULL AS conversion_type, NULL::INTEGER AS postback_sequence_index, NULL::BOOLEAN AS did_win, NULL AS cv_kind,
      NULL::INTEGER AS fine_value, NULL AS coarse_value, 0 AS postbacks, 0 AS development_postbacks,
      count(*) AS rejected_postbacks, 0 AS duplicates_dropped, 0 AS flagged_postbacks
    FROM raw WHERE NOT counted GROUP BY ALL),
  grouped AS (SELECT * FROM counted UNION ALL SELECT * FROM rejected),
  v AS (SELECT * FROM read_csv('{values}', header = true, all_varchar = true)),
  schemas AS (SELECT DISTINCT schema_id, CAST(app_id AS BIGINT) AS app_id, protocol, conversion_type, currency,
                CAST(effective_from AS DATE) AS effective_from,
                CAST(coalesce(effective_to, '9999-12-31') AS DATE) AS effective_to FROM v),
  s AS (SELECT * FROM read_csv('{sources}', header = true, all_varchar = true)),
  located AS (
    SELECT g.*, sc.schema_id, sc.currency FROM grouped g
    LEFT JOIN schemas sc ON sc.app_id = g.app_id AND sc.protocol = g.protocol AND sc.conversion_type = g.conversion_type
      AND g.est_install_date BETWEEN sc.effective_from AND sc.effective_to)"""

    os.makedirs(out, exist_ok=True)
    started = time.time()
    con.execute(f"CREATE TEMP TABLE located AS {grouped} SELECT * FROM located")
    rest = ("WITH v AS (SELECT * FROM read_csv('{values}', header = true, all_varchar = true)), "
            "s AS (SELECT * FROM read_csv('{sources}', header = true, all_varchar = true))").format(values=values, sources=sources)
    con.execute(f"CREATE TEMP TABLE detail AS {rest} {decoded('g.postbacks', False)}")
    con.execute(f"CREATE TEMP TABLE development AS {rest} {decoded('g.development_postbacks', True)}")
    con.execute("DROP TABLE located")
    outputs = {published_schema.POSTBACK_DETAIL_DAILY: f"SELECT dt, {', '.join(DETAIL)} FROM detail"}
    outputs.update({name: rollup_select("detail", kept, PRODUCTION_ROWS) for name, kept in ROLLUPS.items()})
    outputs[published_schema.CAMPAIGN_DAILY_DEVELOPMENT] = rollup_select("development", CAMPAIGN_KEPT)
    for name, query in outputs.items():
        con.execute(f"COPY ({query}) TO '{out}/{name}' (FORMAT CSV, HEADER, PARTITION_BY (dt), OVERWRITE_OR_IGNORE)")
    print(f"duckdb {duckdb.__version__}: {time.time() - started:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
