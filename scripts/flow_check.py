"""An independent computation of the nightly check's figures (`postback check`).

Written from docs/alerts.md ("The nightly check") and docs/aggregate.md only, never from the Swift
code: for one app x ad network on one day, DuckDB SQL over the published day tables recomputes the
history the check compares with (the complete days among the N before, from the pair's first day
with postbacks), its median daily postbacks, the pooled null share and its z, and the share of the
day's most frequent fine value against its history share.

    scripts/venv-python scripts/flow_check.py DATA DAY APP_ID AD_NETWORK_ID [--history-days N]
                                              [--environment production|development]

Prints one line of JSON with the figures (the names of the findings file's fields).
"""

import argparse
import glob
import json
import math
import os
import sys

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)


def complete_days(data):
    """Received days with a manifest that is not partial (docs/aggregate.md, "The manifest")."""
    days = set()
    for path in glob.glob(os.path.join(data, "agg", "_manifests", "dt=*.json")):
        with open(path) as handle:
            manifest = json.load(handle)
        if not manifest.get("partial", False):
            days.add(manifest["dt"])
    return days


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("day")
    parser.add_argument("app")
    parser.add_argument("network")
    parser.add_argument("--history-days", type=int, default=28)
    parser.add_argument("--environment", default="production")
    args = parser.parse_args()
    table = published_schema.POSTBACK_DETAIL_DAILY if args.environment == "production" else published_schema.CAMPAIGN_DAILY_DEVELOPMENT
    files = glob.glob(os.path.join(args.data, "agg", table, "dt=*", "part-00000.csv"))
    if not files:
        print(json.dumps({"error": f"no {table} files under {args.data}"}))
        return 2
    complete = sorted(complete_days(args.data))
    db = duckdb.connect()
    db.execute(
        """
        CREATE TABLE rows AS
        SELECT regexp_extract(filename, 'dt=([0-9-]+)', 1) AS dt, app_id, ad_network_id, cv_kind, fine_cv,
               postbacks, losses, null_cv_postbacks
        FROM read_csv(?, header = true, filename = true, all_varchar = true)
        """,
        [files],
    )
    db.execute(
        """
        CREATE TABLE pair AS
        SELECT dt,
               sum(CAST(postbacks AS BIGINT)) AS postbacks,
               sum(CAST(postbacks AS BIGINT) - CAST(losses AS BIGINT)) AS winners,
               sum(CAST(null_cv_postbacks AS BIGINT)) AS nulls
        FROM rows WHERE app_id = ? AND ad_network_id = ? GROUP BY dt
        """,
        [args.app, args.network],
    )
    # The window: the complete days among the N before DAY, from the pair's first day with postbacks.
    db.execute("CREATE TABLE window_days AS SELECT unnest(?::VARCHAR[]) AS dt", [complete])
    db.execute(
        """
        CREATE TABLE history AS
        SELECT w.dt, coalesce(p.postbacks, 0) AS postbacks, coalesce(p.winners, 0) AS winners, coalesce(p.nulls, 0) AS nulls
        FROM window_days w LEFT JOIN pair p USING (dt)
        WHERE CAST(w.dt AS DATE) BETWEEN CAST(? AS DATE) - ? * INTERVAL 1 DAY AND CAST(? AS DATE) - INTERVAL 1 DAY
        """,
        [args.day, args.history_days, args.day],
    )
    db.execute(
        "DELETE FROM history WHERE dt < (SELECT coalesce(min(dt), '9999') FROM history WHERE postbacks > 0)"
    )
    days, median, history_winners, history_nulls = db.execute(
        "SELECT count(*), median(postbacks), sum(winners), sum(nulls) FROM history"
    ).fetchone()
    today = db.execute("SELECT coalesce(sum(postbacks), 0), coalesce(sum(winners), 0), coalesce(sum(nulls), 0) FROM pair WHERE dt = ?", [args.day]).fetchone()
    postbacks, winners, nulls = today
    history_share = history_nulls / history_winners if history_winners else None
    share = nulls / winners if winners else None
    z = None
    if share is not None and history_share is not None:
        p = min(0.99, max(0.01, history_share))
        z = (share - history_share) / math.sqrt(p * (1 - p) / winners)
    fine = db.execute(
        """
        SELECT CAST(fine_cv AS INTEGER) AS value, sum(CAST(postbacks AS BIGINT)) AS n FROM rows
        WHERE dt = ? AND app_id = ? AND ad_network_id = ? AND cv_kind = 'fine' GROUP BY value ORDER BY n DESC, value LIMIT 1
        """,
        [args.day, args.app, args.network],
    ).fetchone()
    total_fine = db.execute(
        "SELECT coalesce(sum(CAST(postbacks AS BIGINT)), 0) FROM rows WHERE dt = ? AND app_id = ? AND ad_network_id = ? AND cv_kind = 'fine'",
        [args.day, args.app, args.network],
    ).fetchone()[0]
    answer = {
        "history_days": days,
        "median": median,
        "postbacks": postbacks,
        "winners": winners,
        "null_postbacks": nulls,
        "share": share,
        "history_share": history_share,
        "z": z,
        "fine_values": total_fine,
    }
    if fine is not None:
        value = fine[0]
        history_fine = db.execute(
            """
            SELECT coalesce(sum(CAST(postbacks AS BIGINT)) FILTER (WHERE CAST(fine_cv AS INTEGER) = ?), 0),
                   coalesce(sum(CAST(postbacks AS BIGINT)), 0)
            FROM rows WHERE dt IN (SELECT dt FROM history) AND app_id = ? AND ad_network_id = ? AND cv_kind = 'fine'
            """,
            [value, args.app, args.network],
        ).fetchone()
        answer.update(
            {
                "value": value,
                "value_count": fine[1],
                "value_share": fine[1] / total_fine,
                "value_history_share": history_fine[0] / history_fine[1] if history_fine[1] else None,
            }
        )
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
