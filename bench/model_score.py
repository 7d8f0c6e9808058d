#!/usr/bin/env python3
"""Scores modeled null values against the truth bench/model_truth.py wrote: DuckDB SQL over the
published campaign_daily files (or the reference's copy of them), with the model's aggregation rule
(null-eb-1 or null-eb-2: the latter's tables carry modeled_null_log_p_zero).

    scripts/venv-python bench/model_score.py --tables DIR --truth FILE [--label NAME] [--json FILE]

The rule (docs/modeling.md): over a group of rows, est = Σ modeled_null_revenue_est and variance =
Σ modeled_null_values_var + Σ over (campaign, stratum) of (Σ modeled_null_mean_sd)²; the interval is
the 5%–95% of the gamma with that mean and variance, its low end 0 when Σ modeled_null_log_p_zero
>= ln(0.05) (null-eb-2). Rows whose stratum was not modeled that day (a `modeled_note`) are left
out of both sides, and counted.

Two truths: the realized one (what the null postbacks were worth) and the knowable one (the measured
revenue plus what the null postbacks were worth in expectation under the generator's parameters:
all that any model can know; their difference is luck, printed as the irreducible spread).

Figures (targets): campaign level, whole month, per (app, ad network, source identifier,
campaign_id, currency) with at least 200 installs in modeled rows: |modeled_revenue_est - knowable
revenue| / knowable revenue, and the share within ±10%: of those whose null share (null postbacks /
winning postbacks) is at most 30% (≥ 95%), of all of them, and by null-share bound; app level per
(app, currency) (≤ 3% for every one); the share of those campaigns with null postbacks whose 90%
interval covers their realized null revenue (≥ 85% and ≤ 97%: above it the intervals are too wide).
Also printed: the errors against the realized revenue, and the realized revenue's deviation from
the knowable one. Every figure is printed; the exit status is 1 when a target is missed (or when the
published counts do not match the truth's: the join itself is checked).
"""

import argparse
import json
import math
import os
import sys

from model_reference import LOG_LOW, gamma_interval

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

MIN_INSTALLS = 200
TARGETS = {"campaign_error": 0.10, "campaign_share": 0.95, "null_share": 0.30, "app_error": 0.03, "coverage": 0.85,
           "coverage_too_wide": 0.97}
NULL_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0)   # the bounds the within-±10% shares are printed for


KEYED = """
CREATE TABLE published AS
SELECT CAST(dt AS VARCHAR) AS dt, app_id, ad_network_id, coalesce(source_identifier, '') AS source_identifier,
       coalesce(campaign_id, '') AS campaign_id, coalesce(postback_sequence_index, '0') AS w,
       CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS ct, currency,
       sum(CAST(postbacks AS BIGINT) - CAST(losses AS BIGINT)) AS winning,
       sum(CAST(null_cv_postbacks AS BIGINT)) AS nulls,
       sum(CAST(installs AS BIGINT)) AS installs,
       coalesce(sum(CAST(revenue_est_sum AS DECIMAL(38, 6))), 0) AS measured,
       sum(CAST(modeled_null_revenue_est AS DOUBLE)) AS est,
       sum(CAST(modeled_revenue_est AS DOUBLE)) AS modeled_revenue,
       sum(CAST(modeled_null_values_var AS DOUBLE)) AS values_var,
       sum(CAST(modeled_null_mean_sd AS DOUBLE)) AS mean_sd,
       {log_p_zero} AS log_p_zero,
       bool_or(coalesce(modeled_note, '') <> '') AS unmodeled,
       bool_or(modeled_null_revenue_est IS NULL AND coalesce(modeled_note, '') = '') AS blank
FROM read_csv('{tables}/{campaign_daily}/dt=*/part-00000.csv', hive_partitioning = true, all_varchar = true, header = true)
WHERE currency IS NOT NULL AND CAST(postbacks AS BIGINT) > 0
GROUP BY ALL;
CREATE TABLE truth AS
SELECT CAST(dt AS VARCHAR) AS dt, CAST(app_id AS VARCHAR) AS app_id, ad_network_id,
       coalesce(CAST(source_identifier AS VARCHAR), '') AS source_identifier,
       coalesce(CAST(campaign_id AS VARCHAR), '') AS campaign_id, CAST(postback_sequence_index AS VARCHAR) AS w,
       conversion_type AS ct, currency, postbacks, null_postbacks, true_null_revenue, true_revenue, expected_null_revenue
FROM read_csv('{truth}', header = true, all_varchar = false,
              types = {{'source_identifier': 'VARCHAR', 'campaign_id': 'VARCHAR'}});
CREATE TABLE joined AS
SELECT p.*, t.postbacks AS true_postbacks, t.null_postbacks AS true_nulls,
       CAST(t.true_null_revenue AS DOUBLE) AS true_null, CAST(t.true_revenue AS DOUBLE) AS true_total,
       CAST(t.expected_null_revenue AS DOUBLE) AS expected_null,
       CAST(t.true_revenue AS DOUBLE) - CAST(t.true_null_revenue AS DOUBLE) + CAST(t.expected_null_revenue AS DOUBLE) AS knowable
FROM published p FULL JOIN truth t USING (dt, app_id, ad_network_id, source_identifier, campaign_id, w, ct, currency);
"""

CAMPAIGNS = """
WITH modeled AS (SELECT * FROM joined WHERE NOT unmodeled),
strata AS (SELECT app_id, ad_network_id, source_identifier, campaign_id, currency, w, ct, sum(installs) AS installs,
                  sum(winning) AS winning,
                  sum(nulls) AS nulls, sum(true_total) AS true_total, sum(true_null) AS true_null,
                  sum(knowable) AS knowable, sum(modeled_revenue) AS modeled_revenue, sum(est) AS est,
                  sum(values_var) AS values_var, sum(mean_sd) AS mean_sd, sum(log_p_zero) AS log_p_zero
           FROM modeled GROUP BY ALL)
SELECT app_id, ad_network_id, source_identifier, campaign_id, currency, sum(installs), sum(winning), sum(nulls),
       sum(true_total),
       sum(true_null), sum(knowable), sum(modeled_revenue), sum(est), sum(values_var) + sum(mean_sd * mean_sd) AS variance,
       sum(log_p_zero)
FROM strata GROUP BY ALL ORDER BY ALL
"""

APPS = """
WITH modeled AS (SELECT * FROM joined WHERE NOT unmodeled)
SELECT app_id, currency, sum(true_total) AS true_total, sum(true_null) AS true_null, sum(knowable) AS knowable,
       sum(expected_null) AS expected_null, sum(modeled_revenue) AS modeled_revenue, sum(est) AS est, sum(nulls) AS nulls,
       sum(winning) AS winning
FROM modeled GROUP BY ALL ORDER BY ALL
"""


def score(tables, truth, label):
    import duckdb

    con = duckdb.connect()
    source = f"read_csv('{tables}/{published_schema.CAMPAIGN_DAILY}/dt=*/part-00000.csv', hive_partitioning = true, all_varchar = true, header = true)"
    header = [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    log_p_zero = "sum(CAST(modeled_null_log_p_zero AS DOUBLE))" if "modeled_null_log_p_zero" in header else "CAST(NULL AS DOUBLE)"
    con.execute(KEYED.format(tables=tables, campaign_daily=published_schema.CAMPAIGN_DAILY, truth=truth, log_p_zero=log_p_zero))
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
    scored, realized, spread, covered, with_nulls, worst = [], [], [], 0, 0, (0.0, None)
    coverage_all, coverage_all_n = 0, 0
    null_shares = []
    for (app, network, source, campaign_id, currency, installs, winning, nulls, true_total, true_null, knowable, modeled,
         est, variance, log_p_zero) in campaigns:
        low, high = gamma_interval(est or 0.0, variance or 0.0)
        if log_p_zero is not None and log_p_zero >= LOG_LOW:
            low = 0.0
        inside = low - 1e-6 <= true_null <= high + 1e-6
        if nulls:
            coverage_all_n += 1
            coverage_all += inside
        if installs < MIN_INSTALLS or not true_total or not knowable:
            continue
        error = (modeled - knowable) / knowable
        scored.append(error)
        null_shares.append(nulls / winning if winning else 0.0)
        realized.append((modeled - true_total) / true_total)
        spread.append((true_total - knowable) / knowable)
        if abs(error) > abs(worst[0]):
            worst = (error, f"{app} {network} {source!r} campaign_id {campaign_id!r} {currency}")
        if nulls:
            with_nulls += 1
            covered += inside

    def summary(errors):
        inside = sum(1 for e in errors if abs(e) <= TARGETS["campaign_error"])
        mean = sum(abs(e) for e in errors) / len(errors) if errors else float("nan")
        return inside, mean, max(errors, key=abs) if errors else float("nan")

    within, mean_abs, _ = summary(scored)
    print(f"[{label}] campaigns with >= {MIN_INSTALLS} installs: {len(scored)}; modeled revenue within ±10% of the knowable "
          f"revenue (measured + expected null worth): {within} of {len(scored)}; mean |error| {mean_abs:.2%}; worst "
          f"{worst[0]:+.2%} ({worst[1]})")
    within_realized, mean_realized, worst_realized = summary(realized)
    within_spread, mean_spread, worst_spread = summary(spread)
    print(f"[{label}]   against the realized revenue: {within_realized} of {len(realized)} within ±10%; mean |error| "
          f"{mean_realized:.2%}; worst {worst_realized:+.2%}. Irreducible spread (realized vs knowable): "
          f"{within_spread} of {len(spread)} within ±10%; mean |deviation| {mean_spread:.2%}; worst {worst_spread:+.2%}")
    by_bound = {}
    for bound in sorted(set(NULL_SHARES) | {TARGETS["null_share"]}):
        errors = [e for e, share in zip(scored, null_shares) if share <= bound + 1e-12]
        by_bound[bound] = (summary(errors)[0], len(errors))
    print(f"[{label}]   within ±10% by the campaign's null share (null postbacks / winning postbacks), at most: "
          + "; ".join(f"{bound:.0%} {inside} of {n} ({inside / n if n else float('nan'):.1%})"
                      for bound, (inside, n) in by_bound.items()))
    defended, defended_n = by_bound[TARGETS["null_share"]]
    defended_share = defended / defended_n if defended_n else float("nan")
    print(f"[{label}] campaigns with >= {MIN_INSTALLS} installs and a null share <= {TARGETS['null_share']:.0%}: "
          f"{defended} of {defended_n} ({defended_share:.1%}) within ±10% (target >= {TARGETS['campaign_share']:.0%}); "
          f"all of them: {within} of {len(scored)} ({within / len(scored) if scored else float('nan'):.1%})")
    if not defended_n:
        failures.append(f"no campaign with enough installs and a null share <= {TARGETS['null_share']:.0%} to score")
    elif defended_share < TARGETS["campaign_share"]:
        failures.append(f"{defended_n - defended} of {defended_n} campaigns with a null share <= "
                        f"{TARGETS['null_share']:.0%} outside ±10% ({defended_share:.1%} within)")
    coverage = covered / with_nulls if with_nulls else float("nan")
    print(f"[{label}] 90% intervals covering the true null revenue: {covered} of {with_nulls} campaigns with >= "
          f"{MIN_INSTALLS} installs and nulls ({coverage:.1%}); all campaigns with nulls: {coverage_all} of "
          f"{coverage_all_n} ({coverage_all / coverage_all_n if coverage_all_n else float('nan'):.1%})")
    if not with_nulls or coverage < TARGETS["coverage"]:
        failures.append(f"coverage {coverage:.1%} below {TARGETS['coverage']:.0%}")
    elif coverage > TARGETS["coverage_too_wide"]:
        failures.append(f"coverage {coverage:.1%} above {TARGETS['coverage_too_wide']:.0%}: the intervals are too wide")

    apps = []
    for app, currency, true_total, true_null, knowable, expected_null, modeled, est, nulls, winning in con.execute(APPS).fetchall():
        error = (modeled - knowable) / knowable
        realized_error = (modeled - true_total) / true_total
        null_error = (est - true_null) / true_null if true_null else float("nan")
        measured_only = (true_total - true_null - true_total) / true_total
        print(f"[{label}] app {app} {currency}: modeled revenue {modeled:.0f} vs knowable {knowable:.0f} ({error:+.2%}), vs "
              f"realized {true_total:.0f} ({realized_error:+.2%}; irreducible {(true_total - knowable) / knowable:+.2%}; "
              f"measured only {measured_only:+.2%}); nulls {nulls} of {winning}: modeled {est:.0f} vs expected "
              f"{expected_null:.0f} vs realized {true_null:.0f} ({null_error:+.1%})")
        apps.append({"app": f"{app} {currency}", "error": error, "realized_error": realized_error})
        if abs(error) > TARGETS["app_error"]:
            failures.append(f"app {app} {currency} off by {error:+.2%}")
    return {"campaigns_scored": len(scored), "within_10pct": within, "mean_abs_error": mean_abs,
            "null_share_bound": TARGETS["null_share"], "campaigns_defended": defended_n, "within_10pct_defended": defended,
            "within_10pct_realized": within_realized, "mean_abs_error_realized": mean_realized,
            "within_10pct_spread": within_spread, "mean_abs_spread": mean_spread, "covered": covered, "apps": apps,
            "coverage": coverage, "coverage_campaigns": with_nulls,
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
