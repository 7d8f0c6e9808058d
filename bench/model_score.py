#!/usr/bin/env python3
"""Scores modeled null values against the truth bench/model_truth.py wrote: DuckDB SQL over the
published campaign_daily files (or the reference's copy of them), with the model's aggregation rule.

    scripts/venv-python bench/model_score.py --tables DIR --truth FILE [--label NAME] [--json FILE]

The rule (docs/modeling.md): over a group of rows, est = Σ modeled_null_revenue_est and variance =
Σ modeled_null_values_var + Σ over (campaign, stratum) of (Σ modeled_null_mean_sd)²; the interval is
the 5%–95% of the gamma with that mean and variance. Rows whose stratum was not modeled that day
(a `modeled_note`) are left out of both sides, and counted.

Figures (targets): campaign level, whole month, per (app, ad network, source identifier, currency)
with at least 200 installs in modeled rows: |modeled_revenue_est - true revenue| / true revenue
(≤ 10% for every one); app level per (app, currency) (≤ 3% for every one); the share of those
campaigns with null postbacks whose 90% interval covers their true null revenue (≥ 85%; above 97%
is reported as intervals too wide). Every figure is printed; the exit status is 1 when a target is
missed (or when the published counts do not match the truth's: the join itself is checked).
"""

import argparse
import json
import math
import sys

from model_reference import gamma_interval

MIN_INSTALLS = 200
TARGETS = {"campaign_error": 0.10, "app_error": 0.03, "coverage": 0.85, "coverage_too_wide": 0.97}


KEYED = """
CREATE TABLE published AS
SELECT CAST(dt AS VARCHAR) AS dt, app_id, ad_network_id, coalesce(source_identifier, '') AS source_identifier,
       coalesce(postback_sequence_index, '0') AS w,
       CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS ct, currency,
       sum(CAST(postbacks AS BIGINT) - CAST(losses AS BIGINT)) AS winning,
       sum(CAST(null_cv_postbacks AS BIGINT)) AS nulls,
       sum(CAST(installs AS BIGINT)) AS installs,
       coalesce(sum(CAST(revenue_est_sum AS DECIMAL(38, 6))), 0) AS measured,
       sum(CAST(modeled_null_revenue_est AS DOUBLE)) AS est,
       sum(CAST(modeled_revenue_est AS DOUBLE)) AS modeled_revenue,
       sum(CAST(modeled_null_values_var AS DOUBLE)) AS values_var,
       sum(CAST(modeled_null_mean_sd AS DOUBLE)) AS mean_sd,
       bool_or(coalesce(modeled_note, '') <> '') AS unmodeled,
       bool_or(modeled_null_revenue_est IS NULL AND coalesce(modeled_note, '') = '') AS blank
FROM read_csv('{tables}/campaign_daily/dt=*/part-00000.csv', hive_partitioning = true, all_varchar = true, header = true)
WHERE currency IS NOT NULL AND CAST(postbacks AS BIGINT) > 0
GROUP BY ALL;
CREATE TABLE truth AS
SELECT CAST(dt AS VARCHAR) AS dt, CAST(app_id AS VARCHAR) AS app_id, ad_network_id,
       coalesce(CAST(source_identifier AS VARCHAR), '') AS source_identifier, CAST(postback_sequence_index AS VARCHAR) AS w,
       conversion_type AS ct, currency, postbacks, null_postbacks, true_null_revenue, true_revenue
FROM read_csv('{truth}', header = true, all_varchar = false, types = {{'source_identifier': 'VARCHAR'}});
CREATE TABLE joined AS
SELECT p.*, t.postbacks AS true_postbacks, t.null_postbacks AS true_nulls,
       CAST(t.true_null_revenue AS DOUBLE) AS true_null, CAST(t.true_revenue AS DOUBLE) AS true_total
FROM published p FULL JOIN truth t USING (dt, app_id, ad_network_id, source_identifier, w, ct, currency);
"""

CAMPAIGNS = """
WITH modeled AS (SELECT * FROM joined WHERE NOT unmodeled),
strata AS (SELECT app_id, ad_network_id, source_identifier, currency, w, ct, sum(installs) AS installs, sum(nulls) AS nulls,
                  sum(true_total) AS true_total, sum(true_null) AS true_null, sum(modeled_revenue) AS modeled_revenue,
                  sum(est) AS est, sum(values_var) AS values_var, sum(mean_sd) AS mean_sd
           FROM modeled GROUP BY ALL)
SELECT app_id, ad_network_id, source_identifier, currency, sum(installs), sum(nulls), sum(true_total), sum(true_null),
       sum(modeled_revenue), sum(est), sum(values_var) + sum(mean_sd * mean_sd) AS variance
FROM strata GROUP BY ALL ORDER BY ALL
"""

APPS = """
WITH modeled AS (SELECT * FROM joined WHERE NOT unmodeled)
SELECT app_id, currency, sum(true_total) AS true_total, sum(true_null) AS true_null, sum(modeled_revenue) AS modeled_revenue,
       sum(est) AS est, sum(nulls) AS nulls, sum(winning) AS winning
FROM modeled GROUP BY ALL ORDER BY ALL
"""


def score(tables, truth, label):
    import duckdb

    con = duckdb.connect()
    con.execute(KEYED.format(tables=tables, truth=truth))
    failures = []
    mismatched = con.execute("""SELECT count(*) FROM joined WHERE coalesce(winning, 0) <> coalesce(true_postbacks, 0)
                                OR coalesce(nulls, 0) <> coalesce(true_nulls, 0)""").fetchone()[0]
    keys = con.execute("SELECT count(*) FROM joined").fetchone()[0]
    print(f"[{label}] published rows against the truth: {keys} (day, campaign, window, type) keys, {mismatched} whose "
          "postback or null counts differ")
    if mismatched:
        failures.append(f"{mismatched} keys whose counts differ from the truth")
    blank = con.execute("SELECT count(*) FROM joined WHERE blank").fetchone()[0]
    if blank:
        failures.append(f"{blank} keys with a currency and neither modeled figures nor a note")
    unmodeled = con.execute("SELECT coalesce(sum(nulls), 0), coalesce(sum(true_null), 0), count(*) FROM joined WHERE unmodeled").fetchone()
    total_nulls = con.execute("SELECT sum(nulls) FROM joined").fetchone()[0]
    print(f"[{label}] not modeled (too little data): {unmodeled[0]} of {total_nulls} null postbacks "
          f"(true worth {unmodeled[1]:.0f}) in {unmodeled[2]} keys")

    campaigns = con.execute(CAMPAIGNS).fetchall()
    scored, covered, with_nulls, worst = [], 0, 0, (0.0, None)
    coverage_all, coverage_all_n = 0, 0
    for app, network, source, currency, installs, nulls, true_total, true_null, modeled, est, variance in campaigns:
        low, high = gamma_interval(est or 0.0, variance or 0.0)
        inside = low - 1e-6 <= true_null <= high + 1e-6
        if nulls:
            coverage_all_n += 1
            coverage_all += inside
        if installs < MIN_INSTALLS or not true_total:
            continue
        error = (modeled - true_total) / true_total
        scored.append(error)
        if abs(error) > abs(worst[0]):
            worst = (error, f"{app} {network} {source!r} {currency}")
        if nulls:
            with_nulls += 1
            covered += inside
    within = sum(1 for e in scored if abs(e) <= TARGETS["campaign_error"])
    mean_abs = sum(abs(e) for e in scored) / len(scored) if scored else float("nan")
    print(f"[{label}] campaigns with >= {MIN_INSTALLS} installs: {len(scored)}; modeled revenue within ±10% of the truth: "
          f"{within} of {len(scored)}; mean |error| {mean_abs:.2%}; worst {worst[0]:+.2%} ({worst[1]})")
    if not scored:
        failures.append("no campaign with enough installs to score")
    elif within < len(scored):
        failures.append(f"{len(scored) - within} campaigns outside ±10%")
    coverage = covered / with_nulls if with_nulls else float("nan")
    print(f"[{label}] 90% intervals covering the true null revenue: {covered} of {with_nulls} campaigns with >= "
          f"{MIN_INSTALLS} installs and nulls ({coverage:.1%}); all campaigns with nulls: {coverage_all} of "
          f"{coverage_all_n} ({coverage_all / coverage_all_n if coverage_all_n else float('nan'):.1%})")
    if not with_nulls or coverage < TARGETS["coverage"]:
        failures.append(f"coverage {coverage:.1%} below {TARGETS['coverage']:.0%}")
    elif coverage > TARGETS["coverage_too_wide"]:
        print(f"[{label}] note: coverage {coverage:.1%} is well above 90%: the intervals are too wide")

    for app, currency, true_total, true_null, modeled, est, nulls, winning in con.execute(APPS).fetchall():
        error = (modeled - true_total) / true_total
        null_error = (est - true_null) / true_null if true_null else float("nan")
        measured_only = (true_total - true_null - true_total) / true_total
        print(f"[{label}] app {app} {currency}: modeled revenue {modeled:.0f} vs true {true_total:.0f} ({error:+.2%}; "
              f"measured only {measured_only:+.2%}); nulls {nulls} of {winning}: modeled {est:.0f} vs true {true_null:.0f} "
              f"({null_error:+.1%})")
        if abs(error) > TARGETS["app_error"]:
            failures.append(f"app {app} {currency} off by {error:+.2%}")
    return {"campaigns_scored": len(scored), "within_10pct": within, "coverage": coverage, "coverage_campaigns": with_nulls,
            "coverage_all": coverage_all / coverage_all_n if coverage_all_n else None, "failures": failures}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", required=True, help="a directory with campaign_daily/dt=*/part-00000.csv")
    parser.add_argument("--truth", required=True)
    parser.add_argument("--label", default="model")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    result = score(args.tables, args.truth, args.label)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=1)
    for failure in result["failures"]:
        print(f"[{args.label}] MISSED: {failure}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
