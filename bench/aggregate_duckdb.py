#!/usr/bin/env python3
"""The DuckDB side of bench/aggregate: the same work as `postback aggregate` over the same spool.

Reads every verified spool line with read_json (explicit columns), keeps the first received copy of
each dedup key, estimates the install date, groups by the same grain, decodes conversion values and
source identifiers by joining the tables `postback schema export` writes, and writes one CSV
partition per day. (The dedup here is over the whole range, which equals the aggregator's 10-day
lookback on this spool: its late copies arrive at most three days after the first.)

usage: aggregate_duckdb.py DATA VALUES.csv SOURCES.csv OUT_DIR THREADS
"""
import sys
import time

import duckdb

data, values, sources, out, threads = sys.argv[1:6]
con = duckdb.connect()
con.execute(f"SET threads = {int(threads)}")
con.execute("SET preserve_insertion_order = false")

attribution = ("STRUCT(protocol VARCHAR, version VARCHAR, app_id BIGINT, ad_network_id VARCHAR, campaign_id BIGINT, "
               "source_identifier VARCHAR, source_app_id BIGINT, source_domain VARCHAR, marketplace_id VARCHAR, country_code VARCHAR, "
               "interaction VARCHAR, conversion_type VARCHAR, postback_sequence_index INTEGER, did_win BOOLEAN, fine_value INTEGER, "
               "coarse_value VARCHAR, test_mode BOOLEAN)")
columns = ("{received_at: 'VARCHAR', writer: 'VARCHAR', route: 'VARCHAR', status: 'VARCHAR', environment: 'VARCHAR', "
           f"dedup_key: 'VARCHAR', attribution: '{attribution}'}}")

query = f"""
COPY (
  WITH raw AS (
    SELECT dt, received_at, filename, dedup_key, environment, attribution AS a
    FROM read_json('{data}/raw/postbacks/*/*.jsonl', format = 'newline_delimited', hive_partitioning = true,
                   filename = true, columns = {columns})
    WHERE status = 'verified' AND a IS NOT NULL AND dedup_key IS NOT NULL),
  firsts AS (
    SELECT * FROM raw QUALIFY row_number() OVER (PARTITION BY dedup_key ORDER BY received_at, filename) = 1),
  facts AS (
    SELECT dt, a.*, environment = 'production' AND NOT coalesce(a.test_mode, false) AS production,
      CAST(strptime(received_at, '%Y-%m-%dT%H:%M:%S.%fZ')
           - to_hours(CASE WHEN a.protocol = 'adattributionkit' OR a.version = '4.0'
                           THEN CASE a.postback_sequence_index WHEN 1 THEN 252 WHEN 2 THEN 924 ELSE 84 END
                           ELSE 48 END) AS DATE) AS est_install_date,
      CASE WHEN a.fine_value IS NOT NULL THEN 'fine' WHEN a.coarse_value IS NOT NULL THEN 'coarse'
           WHEN a.did_win = false THEN 'none' ELSE 'null' END AS cv_kind
    FROM firsts),
  grouped AS (
    SELECT dt, est_install_date, app_id, protocol, version, lower(ad_network_id) AS ad_network_id, campaign_id,
      source_identifier, source_app_id, source_domain, marketplace_id, country_code, interaction, conversion_type,
      postback_sequence_index, did_win, cv_kind, fine_value, coarse_value,
      count(*) FILTER (WHERE production) AS postbacks, count(*) FILTER (WHERE NOT production) AS development_postbacks
    FROM facts GROUP BY ALL),
  v AS (SELECT * FROM read_csv('{values}', header = true, all_varchar = true)),
  schemas AS (SELECT DISTINCT schema_id, CAST(app_id AS BIGINT) AS app_id, protocol, conversion_type, currency,
                CAST(effective_from AS DATE) AS effective_from, CAST(coalesce(effective_to, '9999-12-31') AS DATE) AS effective_to FROM v),
  s AS (SELECT * FROM read_csv('{sources}', header = true, all_varchar = true)),
  located AS (
    SELECT g.*, sc.schema_id, sc.currency FROM grouped g
    LEFT JOIN schemas sc ON sc.app_id = g.app_id AND sc.protocol = g.protocol AND sc.conversion_type = g.conversion_type
      AND g.est_install_date BETWEEN sc.effective_from AND sc.effective_to)
  SELECT g.dt, g.est_install_date, g.app_id, g.protocol, g.version, g.ad_network_id, g.campaign_id, g.source_identifier,
    length(g.source_identifier) AS source_identifier_digits, s.campaign, s.geo, s.placement, g.source_app_id, g.source_domain,
    g.marketplace_id, g.country_code, g.interaction, g.conversion_type, g.postback_sequence_index, g.did_win, g.cv_kind,
    g.fine_value AS fine_cv, g.coarse_value AS coarse_cv,
    CASE WHEN g.cv_kind = 'null' THEN 'null_cv' WHEN g.cv_kind = 'none' THEN NULL ELSE coalesce(v.decoded_label, 'no_schema') END AS decoded_label,
    g.schema_id, g.postbacks,
    CASE WHEN coalesce(g.did_win, true) AND g.postback_sequence_index = 0 AND g.conversion_type = 'download' THEN g.postbacks ELSE 0 END AS installs,
    CASE WHEN coalesce(g.did_win, true) AND g.postback_sequence_index = 0 AND g.conversion_type = 'redownload' THEN g.postbacks ELSE 0 END AS redownloads,
    CASE WHEN coalesce(g.did_win, true) AND g.postback_sequence_index = 0 AND g.conversion_type = 're-engagement' THEN g.postbacks ELSE 0 END AS reengagements,
    CASE WHEN g.did_win = false THEN g.postbacks ELSE 0 END AS losses,
    CASE WHEN g.cv_kind = 'null' THEN g.postbacks ELSE 0 END AS null_cv_postbacks,
    g.postbacks * CAST(v.revenue_min AS DECIMAL(18, 6)) AS revenue_min_sum,
    g.postbacks * CAST(v.revenue_max AS DECIMAL(18, 6)) AS revenue_max_sum,
    g.postbacks * CAST(v.revenue_est AS DECIMAL(18, 6)) AS revenue_est_sum,
    g.currency, g.development_postbacks
  FROM located g
  LEFT JOIN v ON v.schema_id = g.schema_id AND v.protocol = g.protocol AND v.conversion_type = g.conversion_type
    AND v.postback_sequence_index = CAST(g.postback_sequence_index AS VARCHAR) AND v.cv_kind = g.cv_kind
    AND v.cv_value = coalesce(CAST(g.fine_value AS VARCHAR), g.coarse_value)
  LEFT JOIN s ON s.schema_id = g.schema_id AND s.ad_network_id = g.ad_network_id
    AND s.id_kind = CASE WHEN g.source_identifier IS NULL THEN 'campaign_id' ELSE 'source_identifier' END
    AND s.id_value = coalesce(g.source_identifier, CAST(g.campaign_id AS VARCHAR))
) TO '{out}' (FORMAT CSV, HEADER, PARTITION_BY (dt), OVERWRITE_OR_IGNORE)
"""
started = time.time()
con.execute(query)
print(f"duckdb {duckdb.__version__}: {time.time() - started:.2f} s", file=sys.stderr)
