"""An independent check of `campaign_cohort_daily` and `campaign_cohort_daily_development`.

Written from docs/spend.md and docs/aggregate.md only (never from the Swift code that makes the
tables): every cell of every published cohort file is recomputed with DuckDB SQL from the published
`campaign_daily` (resp. `campaign_daily_development`) CSV files, the stored spend files
`DATA/spend/dt=*/*.csv`, the `--fx` file if the run used one, and which received days have a
published, non-partial manifest; then compared, as text, with the published CSV. Each cohort manifest's
`complete_through`, `cohort_status`, `inputs`, `fx_rates` and `totals` are checked too.

    scripts/venv-python scripts/cohort_check.py DATA [--fx FILE] [--runs FILE] [--schemas DIR] [--docs FILE]
    scripts/venv-python scripts/cohort_check.py --self-test

--runs FILE   a JSON list of what was done to the store, in order: {"aggregate": ["FROM", "TO"]} for
              each `postback aggregate --from FROM --to TO` (or --date D: ["D", "D"]) and
              {"spend": ["DAY", ...]} for each `postback spend import` (the days whose spend files it
              changed). With it, the check works out which cohorts each run rebuilt (the doc's rule:
              install dates FROM − 39 … TO with postbacks, spend or a published cohort, and any install
              date whose spend changed since) and compares each cohort with the state of the store
              when it was last rebuilt (its `complete_through`, the received days published then).
              Without it, every cohort is expected to reflect the store as it is now.
--schemas DIR the schemas the spend was imported with: each stored spend row named by campaign id or
              four-digit source identifier must carry the name the app's map gives it (docs/spend.md).
--self-test   a hand-made store whose cohort files were worked out by hand from the docs.

Reads every CSV with explicit types (the `CREATE TABLE` blocks of docs/aggregate.md; the spend file's
canonical columns of docs/spend.md); nothing is left to DuckDB's sniffer. Amounts are carried as
HUGEINT millionths; quotients are rounded half up as the doc says: (2·a·10⁶ + b) div (2·b).

Prints what it found, then a last line of JSON: {"cells": N, "mismatches": M, "first": [...], ...}.
Exit status 0 only when M is 0 and N > 0; 1 otherwise; 2 when the store cannot be read.
"""
import argparse
import datetime
import decimal
import glob
import hashlib
import json
import math
import os
import re
import shutil
import sys
import tempfile

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = [(published_schema.CAMPAIGN_COHORT_DAILY, published_schema.CAMPAIGN_DAILY), (published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, published_schema.CAMPAIGN_DAILY_DEVELOPMENT)]
# docs/spend.md, "Importing": the stored spend file's canonical columns, in order.
SPEND_COLUMNS = ["date", "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "spend", "currency",
                 "impressions", "clicks", "reported_installs"]
SPEND_TYPES = {"date": "DATE", "app_id": "BIGINT", "ad_network_id": "VARCHAR", "campaign_id": "BIGINT",
               "source_identifier": "VARCHAR", "campaign": "VARCHAR", "spend": "DECIMAL(38, 6)", "currency": "VARCHAR",
               "impressions": "BIGINT", "clicks": "BIGINT", "reported_installs": "BIGINT"}
FX_COLUMNS = ["date", "from", "to", "rate"]
KEY = ["app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign"]
# docs/aggregate.md, "When a cohort is final": the last received day that can add to window 1, 2, 3.
LOOKBACK = 39


class StoreError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The documented column lists

def create_tables(doc_path):
    """Every `CREATE TABLE name (...)` block of the doc: {name: [(column, type), ...]} in file order."""
    text = open(doc_path, encoding="utf-8").read()
    tables = {}
    for match in re.finditer(r"CREATE TABLE (\w+) \((.*?)\n\);", text, re.S):
        columns = []
        for line in match.group(2).strip().splitlines():
            line = line.strip().rstrip(",")
            name, _, kind = line.partition(" ")
            columns.append((name, kind))
        tables[match.group(1)] = columns
    return tables


# ---------------------------------------------------------------------------------------------
# CSV as published: RFC 4180, an unquoted empty field is null, a quoted "" the empty string

def parse_csv(data, where):
    """Rows of fields (None for an unquoted empty field), and problems with the file's conventions."""
    problems = []
    if data and not data.endswith("\n"):
        problems.append(f"{where}: does not end with a newline")
    rows, row, field, i, n = [], [], None, 0, len(data)
    quoted_field = False
    while i < n:
        c = data[i]
        if c == '"' and (field is None or field == "") and not quoted_field:
            # a quoted field
            j, out = i + 1, []
            while True:
                k = data.find('"', j)
                if k < 0:
                    raise StoreError(f"{where}: unterminated quote")
                out.append(data[j:k])
                if k + 1 < n and data[k + 1] == '"':
                    out.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            field = "".join(out)
            quoted_field = True
            continue
        if c == ",":
            row.append(field if quoted_field else (field or None))
            field, quoted_field = None, False
        elif c == "\n":
            row.append(field if quoted_field else (field or None))
            rows.append(row)
            row, field, quoted_field = [], None, False
        elif c == "\r":
            problems.append(f"{where}: a CR outside quotes")
            field = (field or "") + c
        else:
            if quoted_field:
                problems.append(f"{where}: text after a closing quote")
            field = (field or "") + c
        i += 1
    if field is not None or row:
        row.append(field if quoted_field else (field or None))
        rows.append(row)
    return rows, problems


def csv_field(value):
    """The field as the doc's CSV convention writes it: quoted only with a comma, quote or line break."""
    if value is None:
        return ""
    if value == "":
        return '""'
    if any(c in value for c in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


# ---------------------------------------------------------------------------------------------
# The store

def day(text):
    return datetime.date.fromisoformat(text)


def dates(first, last):
    d = first
    while d <= last:
        yield d
        d += datetime.timedelta(days=1)


def json_text(value):
    """A totals value for a mismatch line (exact amounts as text)."""
    return json.loads(json.dumps(value, default=str))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def published_days(data, problems):
    """{received day: partial} of every agg/_manifests/dt=D.json; checks its campaign_daily files' SHA-256."""
    days = {}
    for path in sorted(glob.glob(os.path.join(data, "agg/_manifests/dt=*.json"))):
        name = os.path.basename(path)[3:-5]
        manifest = json.load(open(path, encoding="utf-8"))
        if manifest.get("dt") != name:
            problems.append(f"{path}: dt {manifest.get('dt')!r} is not the file's day")
        days[day(name)] = bool(manifest.get("partial", False))
        for output in manifest.get("outputs", []):
            if output.get("table") in (published_schema.CAMPAIGN_DAILY, published_schema.CAMPAIGN_DAILY_DEVELOPMENT) and output["path"].endswith(".csv"):
                file = os.path.join(data, output["path"])
                if not os.path.exists(file):
                    problems.append(f"{output['path']}: listed by {name}'s manifest but missing")
                elif sha256(file) != output.get("sha256"):
                    problems.append(f"{output['path']}: SHA-256 is not its manifest's")
    return days


def table_files(data, table, days, problems):
    files = []
    for d in sorted(days):
        path = os.path.join(data, f"agg/{table}/dt={d}/part-00000.csv")
        if os.path.exists(path):
            files.append((d, path))
        else:
            problems.append(f"agg/{table}/dt={d}: published day without a CSV file (Parquet-only days are not checked)")
    return files


def read_header(path):
    with open(path, encoding="utf-8") as f:
        return f.readline().rstrip("\n")


# ---------------------------------------------------------------------------------------------
# Which run rebuilt which cohort (docs/aggregate.md, "When cohorts are rebuilt")

def simulate(runs, published, rows_by_received_day, spend_days, cohort_files):
    """{install date: (run index, complete_through)} of each cohort's last rebuild, {received day: first run}.

    rows_by_received_day: {received day: set of install dates with postbacks (either environment)}.
    """
    if runs is None:
        runs = [{"spend": sorted(spend_days)}, {"aggregate": [min(published, default=None), max(published, default=None)]}]
    first_run = {}
    last_rebuild = {}
    published_then = set()
    spend_known, pending, cohort_published = set(), set(), set()
    index = 0
    for step in runs:
        if "spend" in step:
            changed = {day(d) if isinstance(d, str) else d for d in step["spend"]}
            spend_known |= changed
            pending |= changed
            continue
        first, last = [day(d) if isinstance(d, str) else d for d in step["aggregate"]]
        if first is None:
            continue
        index += 1
        for d in dates(first, last):
            if d in published:
                published_then.add(d)
                first_run.setdefault(d, index)
        with_postbacks = set()
        for r in published_then:
            with_postbacks |= rows_by_received_day.get(r, set())
        rebuilt = {i for i in dates(first - datetime.timedelta(days=LOOKBACK), last)
                   if i in with_postbacks or i in spend_known or i in cohort_published}
        rebuilt |= pending
        pending = set()
        for i in rebuilt:
            last_rebuild[i] = (index, complete_through(i, published_then, published))
            cohort_published.add(i)
    return last_rebuild, first_run


def status(install, through):
    """cohort_status from the install date and complete_through (docs/aggregate.md, "When a cohort is final")."""
    if through is None or through < install + datetime.timedelta(days=4):
        return "open"
    if through < install + datetime.timedelta(days=11):
        return "window-1-final"
    if through < install + datetime.timedelta(days=LOOKBACK):
        return "window-2-final"
    return "final"


def complete_through(install, published_then, partial):
    """The last received day C such that every day from the install date to C is published, not partial, at
    most the install date + 39; None when the install day itself is not published."""
    if install not in published_then or partial.get(install):
        return None
    c, cap = install, install + datetime.timedelta(days=LOOKBACK)
    while c < cap and (c + datetime.timedelta(days=1)) in published_then and not partial.get(c + datetime.timedelta(days=1)):
        c += datetime.timedelta(days=1)
    return c


# ---------------------------------------------------------------------------------------------
# The expected table, in SQL

MACROS = """
-- an exact DECIMAL(38, 6) as HUGEINT millionths, and back to the CSV's text (no exponent, no trailing zeros)
CREATE OR REPLACE MACRO m6(x) AS CAST(x * 1000000 AS HUGEINT);
CREATE OR REPLACE MACRO fmt6(m) AS CASE WHEN m IS NULL THEN NULL
    ELSE (CASE WHEN m < 0 THEN '-' ELSE '' END) || CAST(abs(m) // 1000000 AS VARCHAR)
         || CASE WHEN abs(m) % 1000000 = 0 THEN ''
                 ELSE '.' || rtrim(lpad(CAST(abs(m) % 1000000 AS VARCHAR), 6, '0'), '0') END END;
CREATE OR REPLACE MACRO fmt10(m) AS CASE WHEN m IS NULL THEN NULL
    ELSE CAST(m // 10000000000 AS VARCHAR)
         || CASE WHEN m % 10000000000 = 0 THEN ''
                 ELSE '.' || rtrim(lpad(CAST(m % 10000000000 AS VARCHAR), 10, '0'), '0') END END;
-- a ÷ b in millionths, rounded half up: (2·a·10⁶ + b) div (2·b), a and b given in the same unit, b > 0
CREATE OR REPLACE MACRO q6(a, b) AS CASE WHEN b IS NULL OR b = 0 OR a IS NULL THEN NULL
    ELSE (2 * CAST(a AS HUGEINT) * 1000000 + CAST(b AS HUGEINT)) // (2 * CAST(b AS HUGEINT)) END;
-- an amount (millionths) ÷ a count, in millionths, rounded half up: (2·a + b) div (2·b)
CREATE OR REPLACE MACRO q6_per(a, b) AS CASE WHEN b IS NULL OR b = 0 OR a IS NULL THEN NULL
    ELSE (2 * CAST(a AS HUGEINT) + CAST(b AS HUGEINT)) // (2 * CAST(b AS HUGEINT)) END;
CREATE OR REPLACE MACRO txt(x) AS CAST(x AS VARCHAR);
"""


def expected_sql(source):
    """The cohort rows of `source` (a view of campaign_daily or campaign_daily_development rows), as text."""
    return f"""
WITH
-- the campaign: its decoded name when there is one, else campaign_id (SKAdNetwork <= 3.0) or source_identifier
rows AS (
    SELECT c.est_install_date AS i, c.app_id, c.ad_network_id,
           CASE WHEN c.campaign IS NULL THEN c.campaign_id END AS k_cid,
           CASE WHEN c.campaign IS NULL AND c.campaign_id IS NULL THEN c.source_identifier END AS k_sid,
           c.campaign AS k_name,
           c.postback_sequence_index AS w, c.postbacks, c.installs, c.redownloads, c.reengagements, c.losses,
           c.null_cv_postbacks, m6(c.revenue_est_sum) AS est, m6(c.revenue_min_sum) AS mn,
           m6(c.revenue_max_sum) AS mx, c.currency,
           -- the null-value model's columns (docs/modeling.md) and the model's campaign and stratum
           m6(c.modeled_null_revenue_est) AS mest, c.modeled_null_values_var AS mvar, c.modeled_null_mean_sd AS msd,
           c.modeled_null_log_p_zero AS mlpz, c.modeled_note AS mnote,
           -- the stratum's window (an empty one is window 0) and conversion type as the model pools it
           coalesce(c.postback_sequence_index, 0) AS mw,
           CASE WHEN c.conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS mkind,
           c.campaign_id AS mcid, c.source_identifier AS sid
    FROM {source} c
    JOIN received_days r ON r.dt = c.dt
    JOIN cohort_runs k ON k.install = c.est_install_date AND r.first_run <= k.run
    -- a campaign_daily row that counts no postback (postbacks 0: only development or rejected records) is in no
    -- cohort: no row, no sums, no currency
    WHERE c.est_install_date IS NOT NULL AND c.postbacks > 0
),
pb AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name,
           sum(postbacks) AS postbacks, sum(installs) AS installs, sum(redownloads) AS redownloads,
           sum(reengagements) AS reengagements,
           coalesce(sum(postbacks) FILTER (WHERE w = 0), 0) AS p1,
           coalesce(sum(postbacks) FILTER (WHERE w = 1), 0) AS p2,
           coalesce(sum(postbacks) FILTER (WHERE w = 2), 0) AS p3,
           sum(postbacks - losses) AS winning, sum(null_cv_postbacks) AS null_cv,
           count(DISTINCT currency) AS currencies, min(currency) AS currency,
           sum(est) FILTER (WHERE w = 0) AS est1, sum(mn) FILTER (WHERE w = 0) AS min1, sum(mx) FILTER (WHERE w = 0) AS max1,
           sum(est) FILTER (WHERE w = 1) AS est2, sum(mn) FILTER (WHERE w = 1) AS min2, sum(mx) FILTER (WHERE w = 1) AS max2,
           sum(est) FILTER (WHERE w = 2) AS est3, sum(mn) FILTER (WHERE w = 2) AS min3, sum(mx) FILTER (WHERE w = 2) AS max3
    FROM rows GROUP BY ALL
),
-- docs/modeling.md, "Adding rows up": estimates, the values' variance and the log of the chance of all zeros
-- summed; each model campaign's (network, source identifier, campaign ID; stratum: currency, window, conversion
-- type as the model pools it) mean part summed, then squared
model_campaigns AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name, sum(mest) AS mest, sum(mvar) AS mvar, sum(msd) AS msd,
           sum(mlpz) AS mlpz
    FROM rows GROUP BY i, app_id, ad_network_id, k_cid, k_sid, k_name, mw, mkind, currency, sid, mcid
),
-- every distinct note of the row's campaign_daily rows, sorted, joined by '; '
model_notes AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name, string_agg(DISTINCT mnote, '; ' ORDER BY mnote) AS mnote
    FROM rows GROUP BY ALL
),
modeled AS (
    SELECT m.*, n.mnote FROM (
        SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name, sum(mest) AS mest, sum(mvar) AS mvar, sum(msd) AS msd,
               sum(msd * msd) AS msd2, sum(mlpz) AS mlpz
        FROM model_campaigns GROUP BY ALL) m
    JOIN model_notes n ON n.i = m.i AND n.app_id = m.app_id AND n.ad_network_id = m.ad_network_id
         AND n.k_cid IS NOT DISTINCT FROM m.k_cid AND n.k_sid IS NOT DISTINCT FROM m.k_sid
         AND n.k_name IS NOT DISTINCT FROM m.k_name
),
-- a cumulative sum is SUM over the windows' sums: empty only when every window's is
pbc AS (
    SELECT *,
           CASE WHEN currencies = 1 THEN currency END AS revenue_currency,
           CASE WHEN est1 IS NULL AND est2 IS NULL THEN NULL ELSE coalesce(est1, 0) + coalesce(est2, 0) END AS estc2,
           CASE WHEN min1 IS NULL AND min2 IS NULL THEN NULL ELSE coalesce(min1, 0) + coalesce(min2, 0) END AS minc2,
           CASE WHEN max1 IS NULL AND max2 IS NULL THEN NULL ELSE coalesce(max1, 0) + coalesce(max2, 0) END AS maxc2,
           CASE WHEN est1 IS NULL AND est2 IS NULL AND est3 IS NULL THEN NULL
                ELSE coalesce(est1, 0) + coalesce(est2, 0) + coalesce(est3, 0) END AS estc3,
           CASE WHEN min1 IS NULL AND min2 IS NULL AND min3 IS NULL THEN NULL
                ELSE coalesce(min1, 0) + coalesce(min2, 0) + coalesce(min3, 0) END AS minc3,
           CASE WHEN max1 IS NULL AND max2 IS NULL AND max3 IS NULL THEN NULL
                ELSE coalesce(max1, 0) + coalesce(max2, 0) + coalesce(max3, 0) END AS maxc3
    FROM pb
),
-- spend rows keyed the same way (their stored campaign name first), per currency
sp AS (
    SELECT "date" AS i, app_id, lower(ad_network_id) AS ad_network_id,
           CASE WHEN campaign IS NULL THEN campaign_id END AS k_cid,
           CASE WHEN campaign IS NULL AND campaign_id IS NULL THEN source_identifier END AS k_sid,
           campaign AS k_name, m6(spend) AS s, currency, impressions, clicks, reported_installs
    FROM spend
    WHERE "date" IN (SELECT install FROM cohort_runs)
),
-- a row per campaign with postbacks or spend that day
keys AS (
    SELECT DISTINCT i, app_id, ad_network_id, k_cid, k_sid, k_name FROM pb
    UNION SELECT DISTINCT i, app_id, ad_network_id, k_cid, k_sid, k_name FROM sp
),
counts AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name, sum(impressions) AS impressions, sum(clicks) AS clicks,
           sum(reported_installs) AS reported_installs
    FROM sp GROUP BY ALL
),
by_currency AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name, currency, sum(s) AS s FROM sp GROUP BY ALL
),
-- each currency's spend in the row's revenue currency: as it is, or with the --fx rate of the day (1 from is rate to;
-- the spend's millionths times the rate, rounded half up), or not at all
converted AS (
    SELECT b.*, p.revenue_currency,
           CASE WHEN b.currency = p.revenue_currency THEN b.s
                WHEN f.rate IS NOT NULL THEN (2 * b.s * CAST(f.rate * 10000000000 AS HUGEINT) + 10000000000)
                                              // 20000000000 END AS s_in_revenue,
           CASE WHEN b.currency <> p.revenue_currency THEN CAST(f.rate * 10000000000 AS HUGEINT) END AS rate10,
           CASE WHEN b.currency <> p.revenue_currency AND f.rate IS NOT NULL THEN b.currency END AS converted_from
    FROM by_currency b
    LEFT JOIN pbc p ON p.i = b.i AND p.app_id = b.app_id AND p.ad_network_id = b.ad_network_id
         AND p.k_cid IS NOT DISTINCT FROM b.k_cid AND p.k_sid IS NOT DISTINCT FROM b.k_sid
         AND p.k_name IS NOT DISTINCT FROM b.k_name
    LEFT JOIN fx f ON f."date" = b.i AND f."from" = b.currency AND f."to" = p.revenue_currency
),
spent AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name,
           count(*) AS currencies,
           min(currency) AS only_currency, sum(s) AS own,
           bool_and(s_in_revenue IS NOT NULL) AS convertible, sum(s_in_revenue) AS in_revenue,
           min(revenue_currency) AS revenue_currency,
           count(DISTINCT converted_from) AS converted_currencies, min(rate10) AS rate10
    FROM converted GROUP BY ALL
),
spend_final AS (
    SELECT i, app_id, ad_network_id, k_cid, k_sid, k_name,
           -- one currency: used as it is, converted when a rate is given; several: added when all convert
           CASE WHEN convertible THEN in_revenue WHEN currencies = 1 THEN own END AS spend,
           CASE WHEN convertible THEN revenue_currency WHEN currencies = 1 THEN only_currency END AS spend_currency,
           -- the rate when spend of one other currency was converted; empty when none or two were
           CASE WHEN convertible AND converted_currencies = 1 THEN rate10 END AS rate10,
           currencies > 1 AND NOT convertible AS mixed_spend
    FROM spent
),
joined AS (
    SELECT k.i, k.app_id, k.ad_network_id, k.k_cid, k.k_sid, k.k_name, r.run, r.complete_through,
           s.spend, s.spend_currency, s.rate10, s.mixed_spend, (s.i IS NOT NULL) AS has_spend,
           c.impressions, c.clicks, c.reported_installs,
           coalesce(p.installs, 0) AS installs, coalesce(p.redownloads, 0) AS redownloads,
           coalesce(p.reengagements, 0) AS reengagements,
           coalesce(p.p1, 0) AS p1, coalesce(p.p2, 0) AS p2, coalesce(p.p3, 0) AS p3,
           coalesce(p.winning, 0) AS winning, coalesce(p.null_cv, 0) AS null_cv,
           coalesce(p.currencies, 0) > 1 AS mixed_revenue, p.revenue_currency,
           p.est1, p.min1, p.max1, p.est2, p.min2, p.max2, p.est3, p.min3, p.max3,
           p.estc2, p.minc2, p.maxc2, p.estc3, p.minc3, p.maxc3
    FROM keys k
    JOIN cohort_runs r ON r.install = k.i
    LEFT JOIN pbc p ON p.i = k.i AND p.app_id = k.app_id AND p.ad_network_id = k.ad_network_id
         AND p.k_cid IS NOT DISTINCT FROM k.k_cid AND p.k_sid IS NOT DISTINCT FROM k.k_sid
         AND p.k_name IS NOT DISTINCT FROM k.k_name
    LEFT JOIN spend_final s ON s.i = k.i AND s.app_id = k.app_id AND s.ad_network_id = k.ad_network_id
         AND s.k_cid IS NOT DISTINCT FROM k.k_cid AND s.k_sid IS NOT DISTINCT FROM k.k_sid
         AND s.k_name IS NOT DISTINCT FROM k.k_name
    LEFT JOIN counts c ON c.i = k.i AND c.app_id = k.app_id AND c.ad_network_id = k.ad_network_id
         AND c.k_cid IS NOT DISTINCT FROM k.k_cid AND c.k_sid IS NOT DISTINCT FROM k.k_sid
         AND c.k_name IS NOT DISTINCT FROM k.k_name
),
noted AS (
    -- when several apply, the first in the documented order: no-spend, mixed-spend-currencies,
    -- mixed-revenue-currencies, no-revenue, currency-mismatch, zero-spend
    SELECT *,
           CASE WHEN NOT has_spend THEN 'no-spend'
                WHEN mixed_spend THEN 'mixed-spend-currencies'
                WHEN mixed_revenue THEN 'mixed-revenue-currencies'
                WHEN estc3 IS NULL THEN 'no-revenue'
                WHEN spend_currency <> revenue_currency THEN 'currency-mismatch'
                WHEN spend = 0 THEN 'zero-spend'
           END AS roas_note
    FROM joined
),
-- the modeled columns: empty without one revenue currency; empty but the notes when a row had too little data
modeled_rows AS (
    SELECT n.*, m.mest, m.mvar, m.msd, m.msd2, m.mlpz, m.mnote,
           (NOT n.mixed_revenue AND n.revenue_currency IS NOT NULL) AS has_currency,
           (NOT n.mixed_revenue AND n.revenue_currency IS NOT NULL AND m.mnote IS NULL AND m.mest IS NOT NULL) AS is_modeled
    FROM noted n
    LEFT JOIN modeled m ON m.i = n.i AND m.app_id = n.app_id AND m.ad_network_id = n.ad_network_id
         AND m.k_cid IS NOT DISTINCT FROM n.k_cid AND m.k_sid IS NOT DISTINCT FROM n.k_sid
         AND m.k_name IS NOT DISTINCT FROM n.k_name
)
SELECT i AS dt,
       txt(app_id) AS app_id, ad_network_id, txt(k_cid) AS campaign_id, k_sid AS source_identifier, k_name AS campaign,
       CASE WHEN complete_through IS NULL OR complete_through < i + 4 THEN 'open'
            WHEN complete_through < i + 11 THEN 'window-1-final'
            WHEN complete_through < i + 39 THEN 'window-2-final'
            ELSE 'final' END AS cohort_status,
       txt(complete_through) AS complete_through,
       fmt6(spend) AS spend, spend_currency, fmt10(rate10) AS spend_fx_rate,
       txt(impressions) AS impressions, txt(clicks) AS clicks, txt(reported_installs) AS reported_installs,
       txt(installs) AS installs, txt(redownloads) AS redownloads, txt(reengagements) AS reengagements,
       txt(p1) AS postbacks_w1, txt(p2) AS postbacks_w2, txt(p3) AS postbacks_w3,
       txt(winning) AS winning_postbacks, txt(null_cv) AS null_cv_postbacks,
       fmt6(q6(null_cv, winning)) AS null_cv_share,
       CASE WHEN NOT mixed_revenue THEN revenue_currency END AS revenue_currency,
       -- a campaign decoded with schemas of two currencies has empty revenue columns
       fmt6(CASE WHEN NOT mixed_revenue THEN est1 END) AS revenue_est_w1,
       fmt6(CASE WHEN NOT mixed_revenue THEN min1 END) AS revenue_min_w1,
       fmt6(CASE WHEN NOT mixed_revenue THEN max1 END) AS revenue_max_w1,
       fmt6(CASE WHEN NOT mixed_revenue THEN est2 END) AS revenue_est_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN min2 END) AS revenue_min_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN max2 END) AS revenue_max_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN est3 END) AS revenue_est_w3,
       fmt6(CASE WHEN NOT mixed_revenue THEN min3 END) AS revenue_min_w3,
       fmt6(CASE WHEN NOT mixed_revenue THEN max3 END) AS revenue_max_w3,
       fmt6(CASE WHEN NOT mixed_revenue THEN estc2 END) AS revenue_est_cum_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN minc2 END) AS revenue_min_cum_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN maxc2 END) AS revenue_max_cum_w2,
       fmt6(CASE WHEN NOT mixed_revenue THEN estc3 END) AS revenue_est_cum_w3,
       fmt6(CASE WHEN NOT mixed_revenue THEN minc3 END) AS revenue_min_cum_w3,
       fmt6(CASE WHEN NOT mixed_revenue THEN maxc3 END) AS revenue_max_cum_w3,
       -- spend ÷ installs, in spend_currency (given with a currency mismatch too)
       fmt6(q6_per(spend, installs)) AS cpi,
       fmt6(CASE WHEN roas_note IS NULL THEN q6(est1, spend) END) AS roas_w1,
       fmt6(CASE WHEN roas_note IS NULL THEN q6(estc2, spend) END) AS roas_w2,
       fmt6(CASE WHEN roas_note IS NULL THEN q6(estc3, spend) END) AS roas_w3,
       roas_note,
       txt(reported_installs - installs) AS reported_installs_excess,
       fmt6(CASE WHEN is_modeled THEN mest END) AS modeled_null_revenue_est,
       -- the interval is the gamma's 5% and 95% quantiles: worked out in Python from these two
       CASE WHEN is_modeled THEN mest END AS _modeled_mean, CASE WHEN is_modeled THEN mvar + msd2 END AS _modeled_variance,
       CASE WHEN is_modeled THEN mlpz END AS _modeled_log_p_zero,
       NULL AS modeled_null_revenue_low, NULL AS modeled_null_revenue_high,
       fmt6(CASE WHEN is_modeled THEN
                 CASE WHEN estc3 IS NOT NULL THEN estc3 + mest WHEN mest > 0 THEN mest END END) AS modeled_revenue_est,
       CASE WHEN is_modeled THEN mvar END AS modeled_null_values_var,
       CASE WHEN is_modeled THEN msd END AS modeled_null_mean_sd,
       CASE WHEN is_modeled THEN mlpz END AS modeled_null_log_p_zero,
       CASE WHEN has_currency THEN mnote END AS modeled_note,
       txt(postbacks) AS _postbacks
FROM (SELECT n.*, coalesce(p.postbacks, 0) AS postbacks FROM modeled_rows n
      LEFT JOIN pb p ON p.i = n.i AND p.app_id = n.app_id AND p.ad_network_id = n.ad_network_id
           AND p.k_cid IS NOT DISTINCT FROM n.k_cid AND p.k_sid IS NOT DISTINCT FROM n.k_sid
           AND p.k_name IS NOT DISTINCT FROM n.k_name)
"""


# ---------------------------------------------------------------------------------------------

# The modeled columns that are floating point (or a gamma quantile of them): compared within a tolerance.
MODELED_NUMBERS = ("modeled_null_revenue_low", "modeled_null_revenue_high", "modeled_null_values_var",
                   "modeled_null_mean_sd", "modeled_null_log_p_zero")


def modeled_expected(want, column):
    """A modeled column's expected value as a float (None when empty): the interval is the gamma with the
    summed estimate and variance (shape mean²/variance, scale variance/mean), 5% and 95%, never below 0; the
    estimate itself without variance; 0 when the estimate is; the low end 0 when the summed log of the chance
    that every null postback is worth 0 is at least ln 0.05."""
    if column in ("modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero"):
        return want[column]
    mean, variance = want["_modeled_mean"], want["_modeled_variance"]
    if mean is None:
        return None
    mean = float(mean) / 1e6  # m6: millionths
    if mean <= 0:
        return 0.0
    if variance <= 0:
        return mean
    from scipy.stats import gamma
    shape, scale = mean * mean / variance, variance / mean
    if column == "modeled_null_revenue_low":
        if want["_modeled_log_p_zero"] >= math.log(0.05):
            return 0.0
        return max(0.0, gamma.ppf(0.05, shape, scale=scale))
    return gamma.ppf(0.95, shape, scale=scale)


def modeled_close(want, column, got):
    expected = modeled_expected(want, column)
    if expected is None or got is None:
        return expected is None and got is None
    value = float(got)
    # amounts are rounded to the micro-unit; the quantiles are inverted to 1e-12 relative
    slack = 1.5e-6 if column in ("modeled_null_revenue_low", "modeled_null_revenue_high") else 0
    return abs(value - expected) <= slack + 1e-9 * max(abs(value), abs(expected))


def read_csv_sql(files, columns, extra=""):
    """read_csv over `files` with every column typed as given, no sniffing."""
    listed = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    typed = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in columns) + "}"
    return (f"read_csv({listed}, header = true, auto_detect = false, delim = ',', quote = '\"', escape = '\"', "
            f"new_line = '\\n', columns = {typed}, filename = true, null_padding = false{extra})")


def check(data, fx_path=None, runs_path=None, doc_path=None, schemas_dir=None):
    doc_path = doc_path or os.path.join(ROOT, "docs/aggregate.md")
    documented = create_tables(doc_path)
    problems, mismatches, notes = [], [], []
    cells = 0

    def mismatch(table, dt, key, column, expected, got):
        mismatches.append({"table": table, "dt": str(dt), "key": key, "column": column, "expected": expected, "got": got})

    published = published_days(data, problems)
    con = duckdb.connect()
    con.execute(MACROS)

    # Spend: the stored canonical files, typed; every file's header is the canonical column list.
    spend_files = sorted(glob.glob(os.path.join(data, "spend/dt=*/*.csv")))
    for path in spend_files:
        if read_header(path) != ",".join(SPEND_COLUMNS):
            problems.append(f"{os.path.relpath(path, data)}: header is not the canonical spend columns")
    spend_columns = [(c, SPEND_TYPES[c]) for c in SPEND_COLUMNS]
    if spend_files:
        con.execute(f"CREATE TABLE spend AS SELECT * FROM {read_csv_sql(spend_files, spend_columns)}")
        for dt_text, file_name, spend_day in con.execute(
                "SELECT DISTINCT regexp_extract(filename, 'dt=([0-9-]+)/', 1), filename, \"date\" FROM spend").fetchall():
            if dt_text != str(spend_day):
                problems.append(f"{os.path.relpath(file_name, data)}: a row of {spend_day} in dt={dt_text}")
    else:
        con.execute("CREATE TABLE spend (" + ", ".join(f'"{c}" {t}' for c, t in spend_columns) + ", filename VARCHAR)")
    if fx_path:
        con.execute("CREATE TABLE fx AS SELECT \"date\", \"from\", \"to\", rate FROM " + read_csv_sql(
            [fx_path], [("date", "DATE"), ("from", "VARCHAR"), ("to", "VARCHAR"), ("rate", "DECIMAL(38, 10)")]))
    else:
        con.execute("CREATE TABLE fx (\"date\" DATE, \"from\" VARCHAR, \"to\" VARCHAR, rate DECIMAL(38, 10))")

    # The received days' rollups, typed as documented.
    rows_by_received_day = {}
    for _, source in TABLES:
        columns = [(c, t) for c, t in documented[source] if c != "dt"]
        files = table_files(data, source, published, problems)
        for _, path in files:
            if read_header(path) != ",".join(c for c, _ in columns):
                problems.append(f"{os.path.relpath(path, data)}: header is not the documented column list")
        if files:
            con.execute(f"CREATE TABLE {source} AS SELECT * EXCLUDE (filename), "
                        f"CAST(regexp_extract(filename, 'dt=([0-9-]+)/', 1) AS DATE) AS dt "
                        f"FROM {read_csv_sql([p for _, p in files], columns)}")
        else:
            con.execute(f"CREATE TABLE {source} (" + ", ".join(f"{c} {t}" for c, t in columns) + ", dt DATE)")
        for dt_value, install in con.execute(
                f"SELECT DISTINCT dt, est_install_date FROM {source} WHERE est_install_date IS NOT NULL "
                f"AND postbacks > 0").fetchall():
            rows_by_received_day.setdefault(dt_value, set()).add(install)
    spend_days = {d for (d,) in con.execute("SELECT DISTINCT \"date\" FROM spend").fetchall()}
    if schemas_dir:
        cells += check_spend_names(con, schemas_dir, mismatch)
    # The stored form: one row per day, app, network, campaign and currency, rows sorted.
    for path in spend_files:
        lines = open(path, encoding="utf-8").read().split("\n")[1:-1]
        if lines != sorted(lines, key=lambda s: s.encode("utf-8")):
            problems.append(f"{os.path.relpath(path, data)}: rows are not sorted")
    for (file_name, count) in con.execute(
            "SELECT filename, count(*) FROM spend GROUP BY filename, \"date\", app_id, lower(ad_network_id), campaign_id, "
            "source_identifier, campaign, currency HAVING count(*) > 1").fetchall():
        problems.append(f"{os.path.relpath(file_name, data)}: {count} rows of one day, app, network, campaign and currency")

    runs = json.load(open(runs_path, encoding="utf-8")) if runs_path else None
    last_rebuild, first_run = simulate(runs, published, rows_by_received_day, spend_days, None)
    con.execute("CREATE TABLE received_days (dt DATE, first_run INTEGER)")
    con.executemany("INSERT INTO received_days VALUES (?, ?)",
                    [(d, first_run.get(d, 10 ** 6)) for d in published] or [])
    con.execute("CREATE TABLE cohort_runs (install DATE, run INTEGER, complete_through DATE)")
    if last_rebuild:
        con.executemany("INSERT INTO cohort_runs VALUES (?, ?, ?)",
                        [(i, run, c) for i, (run, c) in sorted(last_rebuild.items())])

    summary = {}
    expected_by_table, cohort_files = {}, {}
    for table, source in TABLES:
        # "the same for campaign_cohort_daily_development"
        columns = [c for c, _ in documented[published_schema.CAMPAIGN_COHORT_DAILY] if c != "dt"]
        expected = {}
        result = con.execute(expected_sql(source))
        names = [d[0] for d in result.description]
        missing_columns = [c for c in columns if c not in names]
        if missing_columns:
            raise StoreError(f"the check does not compute {missing_columns} of the documented {table}")
        for values in result.fetchall():
            row = dict(zip(names, values))
            key = tuple(row[c] for c in KEY)
            expected.setdefault(row["dt"], {})[key] = row
        published_cohorts = {}
        for path in sorted(glob.glob(os.path.join(data, f"agg/{table}/dt=*/part-00000.csv"))):
            published_cohorts[day(path.split("dt=")[1][:10])] = path
        # Every install date with postbacks or spend has a file.
        for i in sorted(expected):
            if i not in published_cohorts:
                problems.append(f"agg/{table}/dt={i}: no cohort file, though {len(expected[i])} row(s) are expected")
        for i in sorted(last_rebuild):
            if i not in published_cohorts and i not in expected:
                problems.append(f"agg/{table}/dt={i}: no cohort file, though the runs rebuilt that cohort")
        for i in sorted(published_cohorts):
            if i not in last_rebuild:
                problems.append(f"agg/{table}/dt={i}: a cohort file no run should have written")
        rows_checked = 0
        for i, path in sorted(published_cohorts.items()):
            text = open(path, encoding="utf-8").read()
            where = os.path.relpath(path, data)
            parsed, csv_problems = parse_csv(text, where)
            problems.extend(csv_problems)
            if not parsed or ",".join(parsed[0]) != ",".join(columns):
                problems.append(f"{where}: header is not the documented column list: {parsed[0] if parsed else None}")
                continue
            lines = text.split("\n")[1:-1]
            if lines != sorted(lines, key=lambda s: s.encode("utf-8")):
                problems.append(f"{where}: rows are not sorted by their bytes")
            for raw, fields in zip(lines, parsed[1:]):
                if ",".join(csv_field(f) for f in fields) != raw:
                    problems.append(f"{where}: a row is not written as the CSV convention says: {raw[:120]}")
            want = expected.get(i, {})
            seen = set()
            for fields in parsed[1:]:
                if len(fields) != len(columns):
                    problems.append(f"{where}: a row with {len(fields)} fields: {fields[:6]}")
                    continue
                row = dict(zip(columns, fields))
                key = tuple(row[c] for c in KEY)
                if key in seen:
                    mismatch(table, i, list(key), "(row)", "one row per key", "a second row")
                    continue
                seen.add(key)
                if key not in want:
                    mismatch(table, i, list(key), "(row)", "no row", "a row")
                    continue
                rows_checked += 1
                for column in columns:
                    cells += 1
                    if column in MODELED_NUMBERS:
                        if not modeled_close(want[key], column, row[column]):
                            mismatch(table, i, list(key), column, modeled_expected(want[key], column), row[column])
                    elif want[key][column] != row[column]:
                        mismatch(table, i, list(key), column, want[key][column], row[column])
            for key in want:
                if key not in seen:
                    mismatch(table, i, list(key), "(row)", "a row", "no row")
        expected_by_table[table], cohort_files[table] = expected, published_cohorts
        summary[table] = {"files": len(published_cohorts), "rows": rows_checked,
                          "expected_rows": sum(len(v) for v in expected.values()),
                          "days_with_rows": len(expected)}

    # The cohort manifests (docs/aggregate.md, "When cohorts are rebuilt"), once both tables are worked out.
    fx_file = None
    if fx_path:
        fx_file = {"file": os.path.basename(fx_path), "bytes": os.path.getsize(fx_path), "sha256": sha256(fx_path)}
    spend_by_currency = {}
    for i, currency, amount in con.execute(
            "SELECT \"date\", currency, fmt6(sum(m6(spend))) FROM spend GROUP BY ALL ORDER BY ALL").fetchall():
        spend_by_currency.setdefault(i, {})[currency] = amount
    prod_cohorts = cohort_files[published_schema.CAMPAIGN_COHORT_DAILY]
    for i in sorted(prod_cohorts):
        path = os.path.join(data, f"agg/_cohort_manifests/dt={i}.json")
        if not os.path.exists(path):
            problems.append(f"agg/_cohort_manifests/dt={i}.json: missing for a published cohort")
            continue
        manifest = json.load(open(path, encoding="utf-8"), parse_float=decimal.Decimal)
        want_c = str(last_rebuild[i][1]) if i in last_rebuild and last_rebuild[i][1] else None
        cells += 3
        if manifest.get("dt") != str(i):
            mismatch("_cohort_manifests", i, [], "dt", str(i), manifest.get("dt"))
        if manifest.get("complete_through") != want_c:
            mismatch("_cohort_manifests", i, [], "complete_through", want_c, manifest.get("complete_through"))
        want_status = status(i, last_rebuild[i][1] if i in last_rebuild else None)
        if manifest.get("cohort_status") != want_status:
            mismatch("_cohort_manifests", i, [], "cohort_status", want_status, manifest.get("cohort_status"))
        # inputs: every campaign_daily(_development) file that can hold the install date (its day from I to
        # I + 39) published when the cohort was rebuilt, and the day's spend files; each as it is now. The --fx
        # file is not an input: it is `fx_rates` (its name, bytes, SHA-256), before `outputs`.
        run_index = last_rebuild[i][0] if i in last_rebuild else -1
        want_inputs = set()
        for r in published:
            if i <= r <= i + datetime.timedelta(days=LOOKBACK) and first_run.get(r, 10 ** 6) <= run_index:
                for _, source in TABLES:
                    want_inputs.add(f"agg/{source}/dt={r}/part-00000.csv")
        for spend_path in glob.glob(os.path.join(data, f"spend/dt={i}/*.csv")):
            want_inputs.add(os.path.relpath(spend_path, data))
        listed = {entry.get("path") for entry in manifest.get("inputs", [])}
        cells += 1
        if listed != want_inputs:
            mismatch("_cohort_manifests", i, [], "inputs",
                     f"missing {sorted(want_inputs - listed)[:3]}", f"extra {sorted(listed - want_inputs)[:3]}")
        for entry in manifest.get("inputs", []):
            file = os.path.join(data, entry.get("path", ""))
            cells += 1
            if not os.path.exists(file) or sha256(file) != entry.get("sha256") or \
                    os.path.getsize(file) != entry.get("bytes"):
                mismatch("_cohort_manifests", i, [], f"inputs {entry.get('path')}", "its bytes and SHA-256",
                         "another file")
        cells += 2
        if manifest.get("fx_rates") != fx_file:
            mismatch("_cohort_manifests", i, [], "fx_rates", fx_file, manifest.get("fx_rates"))
        names = list(manifest)
        if fx_file and "fx_rates" in names and "outputs" in names and names.index("fx_rates") > names.index("outputs"):
            mismatch("_cohort_manifests", i, [], "fx_rates (order)", "before outputs", "after outputs")
        # totals: postbacks, installs, revenue_est_by_currency of campaign_cohort_daily; development_postbacks, the
        # development table's postbacks; spend_by_currency as imported, before any conversion.
        totals = manifest.get("totals", {})
        prod = list(expected_by_table[published_schema.CAMPAIGN_COHORT_DAILY].get(i, {}).values())
        dev = list(expected_by_table[published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT].get(i, {}).values())
        revenue = {}
        for r in prod:
            if r["revenue_est_cum_w3"] is not None:
                revenue[r["revenue_currency"]] = revenue.get(r["revenue_currency"], 0) + \
                    decimal.Decimal(r["revenue_est_cum_w3"])
        want_totals = {"postbacks": sum(int(r["_postbacks"]) for r in prod),
                       "installs": sum(int(r["installs"]) for r in prod),
                       "revenue_est_by_currency": {c: revenue[c] for c in sorted(revenue)},
                       "development_postbacks": sum(int(r["_postbacks"]) for r in dev),
                       "spend_by_currency": {c: decimal.Decimal(a) for c, a in spend_by_currency.get(i, {}).items()}}
        for name, value in want_totals.items():
            got = totals.get(name)
            if isinstance(value, dict) and isinstance(got, dict):
                got = {c: decimal.Decimal(str(a)) for c, a in got.items()}
            cells += 1
            if got != value:
                mismatch("_cohort_manifests", i, [], f"totals.{name}", json_text(value), json_text(totals.get(name)))
        for output in manifest.get("outputs", []):
            file = os.path.join(data, output.get("path", ""))
            cells += 1
            if not os.path.exists(file) or sha256(file) != output.get("sha256"):
                mismatch("_cohort_manifests", i, [], f"outputs {output.get('path')}", "its SHA-256", "another file")
    notes.append(f"received days published: {len(published)}, spend files: {len(spend_files)}, "
                 f"cohorts rebuilt by the runs: {len(last_rebuild)}")
    by_column = {}
    for m in mismatches:
        name = f"{m['table']}.{m['column'].split(' ')[0]}"
        by_column[name] = by_column.get(name, 0) + 1
    return {"cells": cells, "mismatches": len(mismatches), "by_column": by_column, "first": mismatches[:20],
            "all": mismatches, "problems": problems[:50],
            "problem_count": len(problems), "tables": summary, "notes": notes}


# ---------------------------------------------------------------------------------------------
# Self-test: a hand-made store whose cohort files were worked out from the docs by hand

CD_COLUMNS = ["est_install_date", "app_id", "protocol", "ad_network_id", "campaign_id", "source_identifier",
              "source_identifier_digits", "campaign", "geo", "placement", "conversion_type", "postback_sequence_index",
              "cv_kind", "fine_cv", "coarse_cv", "decoded_label", "schema_id", "postbacks", "installs", "redownloads",
              "reengagements", "losses", "null_cv_postbacks", "revenue_min_sum", "revenue_max_sum", "revenue_est_sum",
              "currency", "development_postbacks", "rejected_postbacks", "duplicates_dropped", "flagged_postbacks",
              "conflicting_copies"]
# The null-value model's columns, appended after the measured ones (docs/modeling.md): empty here.
MODELED_COLUMNS = ["modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high",
                   "modeled_revenue_est", "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero",
                   "modeled_note"]


def cd_row(est, app, net, w, postbacks, installs=0, losses=0, null_cv=0, rmin=None, rmax=None, rest=None, cur=None,
           cid=None, sid=None, name=None, redownloads=0, reengagements=0, development=0, conversion="download"):
    values = {"est_install_date": est, "app_id": app, "protocol": "skadnetwork", "ad_network_id": net,
              "campaign_id": cid, "source_identifier": sid, "source_identifier_digits": len(sid) if sid else None,
              "campaign": name, "conversion_type": conversion, "postback_sequence_index": w, "cv_kind": "coarse",
              "coarse_cv": "low", "decoded_label": "x", "schema_id": "s" if cur else None, "postbacks": postbacks,
              "installs": installs, "redownloads": redownloads, "reengagements": reengagements, "losses": losses,
              "null_cv_postbacks": null_cv, "revenue_min_sum": rmin, "revenue_max_sum": rmax, "revenue_est_sum": rest,
              "currency": cur, "development_postbacks": development, "rejected_postbacks": 0, "duplicates_dropped": 0,
              "flagged_postbacks": 0, "conflicting_copies": 0}
    return ",".join(csv_field(None if values.get(c) is None else str(values.get(c))) for c in CD_COLUMNS)


def write_table(path, header, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        if header == CD_COLUMNS:
            header, lines = header + MODELED_COLUMNS, [line + "," * len(MODELED_COLUMNS) for line in lines]
        f.write(",".join(header) + "\n" + "".join(line + "\n" for line in sorted(lines, key=lambda s: s.encode())))


def self_test(doc_path):
    """Builds a store by hand, with cohort files whose every value was worked out from the docs, and checks
    that the check finds them right, and finds each of a few altered cells."""
    documented = create_tables(doc_path or os.path.join(ROOT, "docs/aggregate.md"))
    cohort_columns = [c for c, _ in documented[published_schema.CAMPAIGN_COHORT_DAILY] if c != "dt"]
    root = tempfile.mkdtemp(prefix="cohort-check-")
    try:
        # Received days 2026-01-01 .. 2026-03-05 published, 2026-03-04 partial.
        cd, dev = {}, {}
        cd["2026-02-18"] = [cd_row("2026-01-10", 1, "n1.skadnetwork", 2, 1, rmin="50", rest="80", cur="EUR", sid="1011",
                                   name="brand")]
        cd["2026-02-28"] = [
            cd_row("2026-02-25", 1, "n1.skadnetwork", 0, 3, installs=2, redownloads=1, null_cv=1, rmin="1.5", rmax="3",
                   rest="2.25", cur="EUR", sid="1011", name="brand"),
            cd_row("2026-02-25", 1, "n1.skadnetwork", 0, 2, installs=2, null_cv=2, cur="EUR", sid="11"),
            cd_row("2026-02-25", 1, "n1.skadnetwork", 0, 1, installs=1, rmin="0.99", rest="1.333333", cur="EUR",
                   cid=10, name="brand"),
            cd_row("2026-02-25", 1, "n2.skadnetwork", 0, 0, sid="55", cur="EUR", development=1),
            # only a development postback and no spend: no row ("with postbacks or spend that day")
            cd_row("2026-02-25", 1, "n2.skadnetwork", 0, 0, sid="56", cur="EUR", development=1, rmin="0", rest="0"),
            cd_row("2026-02-25", 2, "n3.adattributionkit", 0, 1, installs=1, sid="77"),
            cd_row("2026-02-25", 1, "n4.skadnetwork", 0, 1, installs=1, rmin="5", rmax="5", rest="5", cur="USD", sid="4242"),
            cd_row("2026-02-25", 1, "n4.skadnetwork", 0, 1, reengagements=1, rmin="1", rmax="1", rest="1", cur="EUR",
                   sid="4242", conversion="re-engagement"),
            cd_row("2026-02-15", 1, "n1.skadnetwork", 1, 1, rmin="20", rest="40", cur="EUR", sid="11"),
            ",,skadnetwork,,,,,,,,,,,,,,,0,0,0,0,0,0,,,,,0,1,0,0,0",
        ]
        cd["2026-03-03"] = [
            cd_row("2026-02-25", 1, "n1.skadnetwork", 1, 4, losses=1, rmin="2", rmax="4", rest="3", cur="EUR", sid="1012",
                   name="brand"),
            cd_row("2026-02-25", 1, "n1.skadnetwork", 2, 1, cur="EUR", sid="1012", name="brand"),
            cd_row("2026-03-01", 1, "n1.skadnetwork", 0, 2, installs=2, rmin="2", rmax="6", rest="4", cur="EUR", sid="1011",
                   name="brand"),
            cd_row("2026-03-01", 1, "n1.skadnetwork", 0, 1, installs=1, rmin="1", rmax="1", rest="1", cur="EUR", sid="22"),
            cd_row("2026-03-01", 2, "n5.skadnetwork", 0, 3, installs=3, rmin="9", rmax="9", rest="9", cur="USD", cid=42),
            cd_row("2026-03-01", 1, "n1.skadnetwork", 0, 1, installs=1, rmin="1", rmax="1", rest="1", cur="EUR", sid="88"),
        ]
        cd["2026-03-05"] = [
            cd_row("2026-03-03", 1, "n1.skadnetwork", 0, 2, installs=2, null_cv=1, rmin="0", rmax="0.000003",
                   rest="0.000003", cur="EUR", sid="33"),
            cd_row("2026-03-03", 1, "n1.skadnetwork", 0, 3, installs=3, null_cv=2, cur="EUR", sid="44"),
            cd_row("2026-03-03", 1, "n1.skadnetwork", 0, 1, installs=1, rmin="2", rmax="2", rest="2", cur="USD", sid="66"),
            cd_row("2026-03-03", 1, "n1.skadnetwork", 0, 1, installs=1, rest="1", cur="USD", sid="67"),
            cd_row("2026-03-03", 1, "n1.skadnetwork", 0, 1, reengagements=1, rest="1", cur="EUR", sid="67",
                   conversion="re-engagement"),
        ]
        dev["2026-03-03"] = [cd_row("2026-02-25", 1, "n2.skadnetwork", 0, 1, installs=1, rmin="0", rmax="0", rest="0",
                                    cur="EUR", sid="55")]
        for d in dates(datetime.date(2026, 1, 1), datetime.date(2026, 3, 5)):
            write_table(f"{root}/agg/{published_schema.CAMPAIGN_DAILY}/dt={d}/part-00000.csv", CD_COLUMNS, cd.get(str(d), []))
            write_table(f"{root}/agg/{published_schema.CAMPAIGN_DAILY_DEVELOPMENT}/dt={d}/part-00000.csv", CD_COLUMNS, dev.get(str(d), []))
            with open(f"{root}/agg/_manifests/dt={d}.json" if os.path.isdir(f"{root}/agg/_manifests")
                      else (os.makedirs(f"{root}/agg/_manifests") or f"{root}/agg/_manifests/dt={d}.json"), "w") as f:
                json.dump({"format": 3, "dt": str(d), "partial": str(d) == "2026-03-04"}, f)
        spend = {
            ("2026-02-25", "a"): ["2026-02-25,1,n1.skadnetwork,10,,brand,100.5,EUR,1000,50,5",
                                  "2026-02-25,1,n1.skadnetwork,7,,,30,EUR,,,",
                                  "2026-02-25,1,n2.skadnetwork,,55,,0,EUR,,,",
                                  "2026-02-25,2,n3.adattributionkit,,77,,10,USD,,,",
                                  "2026-02-25,1,n4.skadnetwork,,4242,,50,USD,,,"],
            ("2026-02-25", "b"): ["2026-02-25,1,n1.skadnetwork,,1012,brand,20,EUR,,,2"],
            ("2026-03-01", "a"): ["2026-03-01,1,n1.skadnetwork,,,brand,10,EUR,,,",
                                  "2026-03-01,1,n1.skadnetwork,,22,,5,EUR,,,",
                                  "2026-03-01,2,n5.skadnetwork,42,,,6,EUR,,,"],
            ("2026-03-01", "b"): ["2026-03-01,1,n1.skadnetwork,,1011,brand,12,USD,,,",
                                  "2026-03-01,1,n1.skadnetwork,,22,,5,GBP,,,",
                                  "2026-03-01,1,n1.skadnetwork,,88,,10,USD,,,",
                                  "2026-03-01,1,n1.skadnetwork,,88,,10,CHF,,,"],
            ("2026-03-03", "a"): ["2026-03-03,1,n1.skadnetwork,,33,,0.000001,EUR,,,",
                                  "2026-03-03,1,n1.skadnetwork,,66,,0,EUR,,,",
                                  "2026-03-03,1,n1.skadnetwork,,67,,0,EUR,,,"],
            ("2026-03-09", "a"): ["2026-03-09,1,n1.skadnetwork,,,video,40,EUR,,,12"],
        }
        for (d, source), lines in spend.items():
            write_table(f"{root}/spend/dt={d}/{source}.csv", SPEND_COLUMNS, lines)
        with open(f"{root}/fx.csv", "w") as f:
            f.write("date,from,to,rate\n2026-03-01,USD,EUR,0.9200\n2026-03-02,EUR,USD,1.08\n2026-02-25,GBP,EUR,1.17\n"
                    "2026-03-01,CHF,EUR,1.05\n")

        brand, n1 = ("1", "n1.skadnetwork", None, None, "brand"), "n1.skadnetwork"
        common = {"postbacks_w1": "0", "postbacks_w2": "0", "postbacks_w3": "0", "installs": "0", "redownloads": "0",
                  "reengagements": "0", "winning_postbacks": "0", "null_cv_postbacks": "0"}
        # Worked out by hand from docs/aggregate.md ("campaign_cohort_daily") and docs/spend.md.
        expected = {
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-01-10"): {
                # published through 2026-03-03, but complete_through is at most the install date + 39
                brand: dict(cohort_status="final", complete_through="2026-02-18", postbacks_w3="1", winning_postbacks="1",
                            null_cv_share="0", revenue_currency="EUR", revenue_est_w3="80", revenue_min_w3="50",
                            revenue_est_cum_w3="80", revenue_min_cum_w3="50", roas_note="no-spend")},
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-02-15"): {
                ("1", n1, None, "11", None): dict(
                    cohort_status="window-2-final", complete_through="2026-03-03", postbacks_w2="1",
                    winning_postbacks="1", null_cv_share="0", revenue_currency="EUR", revenue_est_w2="40",
                    revenue_min_w2="20", revenue_est_cum_w2="40", revenue_min_cum_w2="20", revenue_est_cum_w3="40",
                    revenue_min_cum_w3="20", roas_note="no-spend")},
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-02-25"): {
                # r1 + r3 + r4 + r5; spend 100.5 (campaign_id 10, stored with its name) + 20 (1012, named)
                brand: dict(cohort_status="window-1-final", complete_through="2026-03-03", spend="120.5",
                            spend_currency="EUR", impressions="1000", clicks="50", reported_installs="7", installs="3",
                            redownloads="1", postbacks_w1="4", postbacks_w2="4", postbacks_w3="1", winning_postbacks="8",
                            null_cv_postbacks="1", null_cv_share="0.125", revenue_currency="EUR",
                            revenue_est_w1="3.583333", revenue_min_w1="2.49", revenue_max_w1="3",
                            revenue_est_w2="3", revenue_min_w2="2", revenue_max_w2="4",
                            revenue_est_cum_w2="6.583333", revenue_min_cum_w2="4.49", revenue_max_cum_w2="7",
                            revenue_est_cum_w3="6.583333", revenue_min_cum_w3="4.49", revenue_max_cum_w3="7",
                            cpi="40.166667",  # 120.5 / 3 = 40.1666666…
                            roas_w1="0.029737",  # 3.583333 / 120.5 = 0.0297372…
                            roas_w2="0.054633",  # 6.583333 / 120.5 = 0.0546334…
                            roas_w3="0.054633", reported_installs_excess="4"),
                ("1", n1, None, "11", None): dict(
                    cohort_status="window-1-final", complete_through="2026-03-03", installs="2", postbacks_w1="2",
                    winning_postbacks="2", null_cv_postbacks="2", null_cv_share="1", revenue_currency="EUR",
                    roas_note="no-spend"),
                ("1", n1, "7", None, None): dict(
                    cohort_status="window-1-final", complete_through="2026-03-03", spend="30", spend_currency="EUR",
                    roas_note="no-revenue"),
                # a row for its spend; its only campaign_daily row (a development postback's: postbacks 0) is in
                # no cohort: no currency; no-revenue comes before zero-spend
                ("1", "n2.skadnetwork", None, "55", None): dict(
                    cohort_status="window-1-final", complete_through="2026-03-03", spend="0", spend_currency="EUR",
                    roas_note="no-revenue"),
                ("2", "n3.adattributionkit", None, "77", None): dict(
                    cohort_status="window-1-final", complete_through="2026-03-03", spend="10", spend_currency="USD",
                    installs="1", postbacks_w1="1", winning_postbacks="1", null_cv_share="0", cpi="10",
                    roas_note="no-revenue"),
                ("1", "n4.skadnetwork", None, "4242", None): dict(
                    cohort_status="window-1-final", complete_through="2026-03-03", spend="50", spend_currency="USD",
                    installs="1", reengagements="1", postbacks_w1="2", winning_postbacks="2", null_cv_share="0",
                    cpi="50", roas_note="mixed-revenue-currencies"),
            },
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-03-01"): {
                # 10 EUR + 12 USD at 0.92 = 11.04 EUR
                brand: dict(cohort_status="open", complete_through="2026-03-03", spend="21.04", spend_currency="EUR",
                            spend_fx_rate="0.92", installs="2", postbacks_w1="2", winning_postbacks="2", null_cv_share="0",
                            revenue_currency="EUR", revenue_est_w1="4", revenue_min_w1="2", revenue_max_w1="6",
                            revenue_est_cum_w2="4", revenue_min_cum_w2="2", revenue_max_cum_w2="6",
                            revenue_est_cum_w3="4", revenue_min_cum_w3="2", revenue_max_cum_w3="6",
                            cpi="10.52", roas_w1="0.190114", roas_w2="0.190114", roas_w3="0.190114"),
                ("1", n1, None, "22", None): dict(
                    cohort_status="open", complete_through="2026-03-03", installs="1", postbacks_w1="1",
                    winning_postbacks="1", null_cv_share="0", revenue_currency="EUR", revenue_est_w1="1",
                    revenue_min_w1="1", revenue_max_w1="1", revenue_est_cum_w2="1", revenue_min_cum_w2="1",
                    revenue_max_cum_w2="1", revenue_est_cum_w3="1", revenue_min_cum_w3="1", revenue_max_cum_w3="1",
                    roas_note="mixed-spend-currencies"),
                ("2", "n5.skadnetwork", "42", None, None): dict(
                    cohort_status="open", complete_through="2026-03-03", spend="6", spend_currency="EUR", installs="3",
                    postbacks_w1="3", winning_postbacks="3", null_cv_share="0", revenue_currency="USD",
                    revenue_est_w1="9", revenue_min_w1="9", revenue_max_w1="9", revenue_est_cum_w2="9",
                    revenue_min_cum_w2="9", revenue_max_cum_w2="9", revenue_est_cum_w3="9", revenue_min_cum_w3="9",
                    revenue_max_cum_w3="9", cpi="2", roas_note="currency-mismatch"),
                # 10 USD at 0.92 + 10 CHF at 1.05 = 19.7 EUR: two other currencies converted, so no rate shown
                ("1", n1, None, "88", None): dict(
                    cohort_status="open", complete_through="2026-03-03", spend="19.7", spend_currency="EUR",
                    installs="1", postbacks_w1="1", winning_postbacks="1", null_cv_share="0", revenue_currency="EUR",
                    revenue_est_w1="1", revenue_min_w1="1", revenue_max_w1="1", revenue_est_cum_w2="1",
                    revenue_min_cum_w2="1", revenue_max_cum_w2="1", revenue_est_cum_w3="1", revenue_min_cum_w3="1",
                    revenue_max_cum_w3="1", cpi="19.7",
                    roas_w1="0.050761", roas_w2="0.050761", roas_w3="0.050761"),  # 1 / 19.7 = 0.0507614…
            },
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-03-03"): {
                ("1", n1, None, "33", None): dict(
                    cohort_status="open", complete_through="2026-03-03", spend="0.000001", spend_currency="EUR",
                    installs="2", postbacks_w1="2", winning_postbacks="2", null_cv_postbacks="1", null_cv_share="0.5",
                    revenue_currency="EUR", revenue_est_w1="0.000003", revenue_min_w1="0", revenue_max_w1="0.000003",
                    revenue_est_cum_w2="0.000003", revenue_min_cum_w2="0", revenue_max_cum_w2="0.000003",
                    revenue_est_cum_w3="0.000003", revenue_min_cum_w3="0", revenue_max_cum_w3="0.000003",
                    cpi="0.000001",  # 0.0000005 rounds half up
                    roas_w1="3", roas_w2="3", roas_w3="3"),
                ("1", n1, None, "44", None): dict(
                    cohort_status="open", complete_through="2026-03-03", installs="3", postbacks_w1="3",
                    winning_postbacks="3", null_cv_postbacks="2", null_cv_share="0.666667", revenue_currency="EUR",
                    roas_note="no-spend"),
                # zero spend in EUR, revenue in USD, no rate that day: currency-mismatch comes before zero-spend
                ("1", n1, None, "66", None): dict(
                    cohort_status="open", complete_through="2026-03-03", spend="0", spend_currency="EUR",
                    installs="1", postbacks_w1="1", winning_postbacks="1", null_cv_share="0", revenue_currency="USD",
                    revenue_est_w1="2", revenue_min_w1="2", revenue_max_w1="2", revenue_est_cum_w2="2",
                    revenue_min_cum_w2="2", revenue_max_cum_w2="2", revenue_est_cum_w3="2", revenue_min_cum_w3="2",
                    revenue_max_cum_w3="2", cpi="0", roas_note="currency-mismatch"),
                # zero spend, revenue in two currencies: mixed-revenue-currencies comes before zero-spend
                ("1", n1, None, "67", None): dict(
                    cohort_status="open", complete_through="2026-03-03", spend="0", spend_currency="EUR",
                    installs="1", reengagements="1", postbacks_w1="2", winning_postbacks="2", null_cv_share="0",
                    cpi="0", roas_note="mixed-revenue-currencies"),
            },
            (published_schema.CAMPAIGN_COHORT_DAILY, "2026-03-09"): {
                ("1", n1, None, None, "video"): dict(
                    cohort_status="open", spend="40", spend_currency="EUR", reported_installs="12",
                    roas_note="no-revenue", reported_installs_excess="12")},
        }
        # The development table: the same spend; the one development postback.
        for (table, d), rows in list(expected.items()):
            dev_rows = {}
            for key, row in rows.items():
                if "spend" in row or "roas_note" in row and row["roas_note"] in ("mixed-spend-currencies",):
                    keep = {c: row[c] for c in ("cohort_status", "complete_through", "spend", "spend_currency",
                                                "impressions", "clicks", "reported_installs") if c in row}
                    if row.get("spend") is not None:
                        keep["roas_note"] = "no-revenue"  # before zero-spend
                    else:
                        keep["roas_note"] = "mixed-spend-currencies"
                    if "reported_installs" in row:
                        keep["reported_installs_excess"] = row["reported_installs"]
                    dev_rows[key] = keep
            expected[(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, d)] = dev_rows
        expected[(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, "2026-02-25")][("1", "n2.skadnetwork", None, "55", None)].update(
            installs="1", postbacks_w1="1", winning_postbacks="1", null_cv_share="0", revenue_currency="EUR",
            revenue_est_w1="0", revenue_min_w1="0", revenue_max_w1="0", revenue_est_cum_w2="0", revenue_min_cum_w2="0",
            revenue_max_cum_w2="0", revenue_est_cum_w3="0", revenue_min_cum_w3="0", revenue_max_cum_w3="0", cpi="0",
            roas_note="zero-spend")
        # USD and CHF with no revenue currency to bring them to: not added
        expected[(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, "2026-03-01")][("1", n1, None, "88", None)].update(
            spend=None, spend_currency=None, roas_note="mixed-spend-currencies")
        # 10 EUR + 12 USD with no revenue currency to bring them to: not added
        expected[(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, "2026-03-01")][brand].update(
            spend=None, spend_currency=None, roas_note="mixed-spend-currencies")
        for (table, d), rows in expected.items():
            lines = []
            for key, row in rows.items():
                values = dict(common, **dict(zip(KEY, key)), **row)
                lines.append(",".join(csv_field(values.get(c)) for c in cohort_columns))
            write_table(f"{root}/agg/{table}/dt={d}/part-00000.csv", cohort_columns, lines)
        os.makedirs(f"{root}/agg/_cohort_manifests")
        for (table, d), rows in expected.items():
            if table == published_schema.CAMPAIGN_COHORT_DAILY:
                through = {r.get("complete_through") for r in rows.values()}.pop()
                revenue, spent = {}, {}
                for r in rows.values():
                    if r.get("revenue_est_cum_w3") is not None:
                        revenue[r["revenue_currency"]] = revenue.get(r["revenue_currency"], 0) + \
                            decimal.Decimal(r["revenue_est_cum_w3"])
                for spend_path in glob.glob(f"{root}/spend/dt={d}/*.csv"):
                    for line in open(spend_path).read().split("\n")[1:-1]:
                        fields = line.split(",")
                        spent[fields[7]] = spent.get(fields[7], 0) + decimal.Decimal(fields[6])
                dev_rows = expected[(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, d)].values()
                totals = {"postbacks": sum(int(r.get(f"postbacks_w{w}", 0)) for r in rows.values() for w in (1, 2, 3)),
                          "installs": sum(int(r.get("installs", 0)) for r in rows.values()),
                          "revenue_est_by_currency": {c: str(a) for c, a in sorted(revenue.items())},
                          "development_postbacks": sum(int(r.get(f"postbacks_w{w}", 0)) for r in dev_rows
                                                       for w in (1, 2, 3)),
                          "spend_by_currency": {c: str(a) for c, a in sorted(spent.items())}}
                install = day(d)
                inputs = [f"agg/{source}/dt={r}/part-00000.csv" for r in dates(install, min(
                    install + datetime.timedelta(days=LOOKBACK), datetime.date(2026, 3, 5))) for _, source in TABLES]
                inputs += sorted(os.path.relpath(p, root) for p in glob.glob(f"{root}/spend/dt={d}/*.csv"))
                inputs = [{"path": p, "bytes": os.path.getsize(f"{root}/{p}"), "sha256": sha256(f"{root}/{p}")}
                          for p in inputs]
                with open(f"{root}/agg/_cohort_manifests/dt={d}.json", "w") as f:
                    json.dump({"format": 1, "dt": d, "cohort_status": {r.get("cohort_status") for r in rows.values()}.pop(),
                               "complete_through": through, "inputs": inputs,
                               "fx_rates": {"file": "fx.csv", "bytes": os.path.getsize(f"{root}/fx.csv"),
                                            "sha256": sha256(f"{root}/fx.csv")},
                               "outputs": [], "totals": totals}, f)
        answer = check(root, f"{root}/fx.csv", None, doc_path)
        failures = []
        if answer["mismatches"] or answer["problem_count"] or answer["cells"] == 0:
            report(answer)
            failures.append("the hand-made store does not check")
        # Each altered cell is found, and only it.
        path = f"{root}/agg/{published_schema.CAMPAIGN_COHORT_DAILY}/dt=2026-02-25/part-00000.csv"
        original = open(path).read()
        for old, new, column in (("40.166667", "40.166666", "cpi"), ("0.029737", "0.029738", "roas_w1"),
                                 ("window-1-final", "open", "cohort_status"), (",no-revenue,", ",,", "roas_note")):
            with open(path, "w") as f:
                f.write(original.replace(old, new, 1))
            altered = check(root, f"{root}/fx.csv", None, doc_path)
            if altered["mismatches"] != 1 or altered["first"][0]["column"] != column:
                failures.append(f"altering {column} ({old} -> {new}) found {altered['mismatches']} mismatches, "
                                f"first {altered['first'][:2]}")
        with open(path, "w") as f:
            f.write(original)
        # Each altered manifest field is found: the development postbacks, the --fx file listed as an input.
        path = f"{root}/agg/_cohort_manifests/dt=2026-02-25.json"
        original = open(path).read()
        for field, alter in (("totals.development_postbacks", lambda m: m["totals"].update(development_postbacks=2)),
                             ("totals.revenue_est_by_currency",
                              lambda m: m["totals"].update(revenue_est_by_currency={"EUR": "6.583333", "USD": "0"})),
                             ("inputs", lambda m: m["inputs"].append(dict(m["fx_rates"], path="fx.csv"))),
                             ("fx_rates", lambda m: m.pop("fx_rates"))):
            altered_manifest = json.loads(original)
            alter(altered_manifest)
            with open(path, "w") as f:
                json.dump(altered_manifest, f)
            altered = check(root, f"{root}/fx.csv", None, doc_path)
            if altered["mismatches"] < 1 or altered["first"][0]["column"] != field:
                failures.append(f"altering {field} found {altered['mismatches']} mismatches, first {altered['first'][:2]}")
        with open(path, "w") as f:
            f.write(original)
        print(json.dumps({"self_test": "failed" if failures else "passed", "cells": answer["cells"],
                          "failures": failures}))
        return 1 if failures else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The stored spend's campaign names (docs/spend.md, "Campaign names")

def schema_names(schemas_dir):
    """{app_id: [schema]} of every schema file (docs/aggregate.md §1: DIR/<app-id>/<effective-from>.json)."""
    schemas = {}
    for path in sorted(glob.glob(os.path.join(schemas_dir, "*", "*.json"))):
        if os.path.basename(path).startswith("."):
            continue
        schema = json.load(open(path, encoding="utf-8"))
        schemas.setdefault(int(schema["app_id"]), []).append(schema)
    return schemas


def expected_name(schemas, app_id, network, on, campaign_id, source_identifier):
    """The campaign name the app's schemas give a campaign id or a four-digit source identifier on that
    date and network; None when none does (or when two schemas disagree)."""
    names = set()
    for schema in schemas.get(app_id, []):
        if day(schema["effective_from"]) > on or (schema.get("effective_to") and day(schema["effective_to"]) < on):
            continue
        for entry in schema.get("source_identifier_map", []):
            if entry["ad_network_id"].lower() != network.lower():
                continue
            if (entry.get("valid_from") and day(entry["valid_from"]) > on) or \
                    (entry.get("valid_to") and day(entry["valid_to"]) < on):
                continue
            if campaign_id is not None:
                name = entry.get("campaign_id_map", {}).get(str(campaign_id))
                if name:
                    names.add(name)
            elif source_identifier is not None:
                # the positions (1-4 of the four-digit identifier) a truncated one keeps
                n = len(source_identifier)
                first = 1 if entry.get("truncation", "keeps_trailing") == "keeps_leading" else 5 - n
                at = {first + k: source_identifier[k] for k in range(n)}
                for group in entry.get("digits", []):
                    if group["dimension"] != "campaign" or any(p not in at for p in group["positions"]):
                        continue
                    digits = "".join(at[p] for p in group["positions"])
                    name = group["values"].get(digits) if "values" in group else digits
                    if name:
                        names.add(name)
    return names.pop() if len(names) == 1 else None


def check_spend_names(con, schemas_dir, mismatch):
    """Every stored spend row named by id carries the name the schema gives it (and only then)."""
    schemas = schema_names(schemas_dir)
    cells = 0
    for file_name, on, app_id, network, campaign_id, source_identifier, campaign in con.execute(
            "SELECT filename, \"date\", app_id, ad_network_id, campaign_id, source_identifier, campaign FROM spend "
            "WHERE campaign_id IS NOT NULL OR source_identifier IS NOT NULL ORDER BY ALL").fetchall():
        cells += 1
        want = expected_name(schemas, app_id, network, on, campaign_id, source_identifier)
        if want != campaign:
            mismatch("spend", on, [app_id, network, campaign_id, source_identifier, os.path.basename(file_name)],
                     "campaign", want, campaign)
    return cells


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?")
    parser.add_argument("--fx")
    parser.add_argument("--runs")
    parser.add_argument("--docs")
    parser.add_argument("--schemas", help="the schema directory the import used: checks the stored campaign names")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--all-mismatches", metavar="FILE", help="write every mismatch there, one JSON object a line")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test(args.docs)
    if not args.data:
        parser.error("DATA is required")
    try:
        answer = check(args.data, args.fx, args.runs, args.docs, args.schemas)
    except (StoreError, duckdb.Error, OSError, ValueError) as error:
        print(json.dumps({"error": str(error), "cells": 0, "mismatches": 0}))
        return 2
    if args.all_mismatches:
        with open(args.all_mismatches, "w", encoding="utf-8") as f:
            for m in answer["all"]:
                f.write(json.dumps(m) + "\n")
    del answer["all"]
    report(answer)
    return 0 if answer["mismatches"] == 0 and answer["problem_count"] == 0 and answer["cells"] > 0 else 1


def report(answer):
    for table, figures in answer["tables"].items():
        print(f"{table}: {figures['files']} files, {figures['rows']} rows checked "
              f"({figures['expected_rows']} expected over {figures['days_with_rows']} days)")
    for note in answer["notes"]:
        print(note)
    for problem in answer["problems"]:
        print("problem:", problem)
    for m in answer["first"]:
        print(f"mismatch: {m['table']} dt={m['dt']} key={m['key']} {m['column']}: expected {m['expected']!r}, "
              f"got {m['got']!r}")
    for name, count in sorted(answer.get("by_column", {}).items()):
        print(f"mismatches in {name}: {count}")
    print(f"{answer['cells']} cells checked, {answer['mismatches']} mismatches, {answer['problem_count']} problems")
    print(json.dumps(answer))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
