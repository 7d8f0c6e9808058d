"""The numbers API checked against the published files: random queries with random scoped tokens
against the real server (`postback api`'s `NumbersAPI` on loopback), each answer compared with what
DuckDB computes from the same published CSV files, filtered as docs/api.md says a scope filters (a
row is in a scope when its app_id is among the token's apps AND its ad_network_id among its networks;
'all' admits any, a row without one of them only with 'all'), and the summary's figures as
docs/api.md and docs/report.md define them. Written from the docs, not from the Swift code.

usage: api_scope_check.py DATA BASE_URL TOKENS_JSON --seed N --queries N

TOKENS_JSON: [{"token": "pbk_…", "apps": "all" | "1,2", "networks": "all" | "a,b"}, …]
Prints one JSON line: {"queries": N, "rows": R, "mismatches": M, "examples": [...]}.
"""
import csv
import io
import json
import random
import sys
import urllib.error
import urllib.parse
import urllib.request
from decimal import Decimal

import duckdb
import pyarrow.parquet as pq

TABLES = ["postback_detail_daily", "campaign_daily", "publisher_daily", "country_daily", "campaign_events_daily",
          "campaign_daily_development"]
# The install-date cohort table, served as rows too: its dt is the install date, and its
# cohort_status is in every answer, asked for or not (docs/api.md).
COHORT_TABLE = "campaign_cohort_daily"
COHORT_STATUSES = {"open", "window-1-final", "window-2-final", "final"}
MAX_DAYS = 92


def main():
    data, base, tokens_path = sys.argv[1], sys.argv[2], sys.argv[3]
    seed = int(sys.argv[sys.argv.index("--seed") + 1])
    queries = int(sys.argv[sys.argv.index("--queries") + 1])
    tokens = json.load(open(tokens_path))
    rng = random.Random(seed)
    db = duckdb.connect()
    for table in TABLES:
        db.execute(
            f"CREATE TABLE {table} AS SELECT * FROM read_csv('{data}/agg/{table}/dt=*/part-00000.csv', "
            "hive_partitioning = true, all_varchar = true, header = true)")
    db.execute(
        f"CREATE TABLE campaign_cohort_daily AS SELECT * FROM read_csv('{data}/agg/campaign_cohort_daily/dt=*/part-00000.csv', "
        "hive_partitioning = true, all_varchar = true, header = true)")
    days = [str(row[0]) for row in db.execute("SELECT DISTINCT dt FROM postback_detail_daily ORDER BY dt").fetchall()]
    apps = sorted({row[0] for row in db.execute("SELECT DISTINCT app_id FROM postback_detail_daily WHERE app_id IS NOT NULL").fetchall()})
    networks = sorted({row[0] for row in db.execute(
        "SELECT DISTINCT ad_network_id FROM postback_detail_daily WHERE ad_network_id IS NOT NULL").fetchall()})
    checker = Checker(db, base, days, apps, networks, rng)
    for index in range(queries):
        checker.one(tokens[index % len(tokens)])
    print(json.dumps({"queries": checker.queries, "rows": checker.rows, "mismatches": len(checker.mismatches),
                      "oracle_pairs": checker.oracle_pairs, "summaries": checker.summaries, "costs": checker.costs,
                      "cohort_queries": checker.cohort_queries, "cohort_rows": checker.cohort_rows,
                      "examples": checker.mismatches[:5]}))


def members(text):
    return None if text == "all" else set(text.split(","))


class Checker:
    def __init__(self, db, base, days, apps, networks, rng):
        self.db, self.base, self.days, self.apps, self.networks, self.rng = db, base, days, apps, networks, rng
        self.queries = self.rows = self.oracle_pairs = self.summaries = self.costs = 0
        self.cohort_queries = self.cohort_rows = 0
        self.mismatches = []

    def fail(self, what, query, detail):
        self.mismatches.append({"what": what, "query": query, "detail": str(detail)[:600]})

    def get(self, token, path, params):
        url = self.base + path + "?" + urllib.parse.urlencode(params)
        request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
        self.queries += 1
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, answer.headers.get("Content-Type"), answer.read(), dict(answer.headers)
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type"), error.read(), dict(error.headers)

    # A query: the token's scope narrowed by app and network (an app or network outside the token's
    # scope admits nothing, like one that does not exist).
    def effective(self, token, app, network):
        scope_apps, scope_networks = members(token["apps"]), members(token["networks"])
        if app is not None:
            scope_apps = {app} if scope_apps is None or app in scope_apps else set()
        if network is not None:
            scope_networks = {network} if scope_networks is None or network in scope_networks else set()
        return scope_apps, scope_networks

    @staticmethod
    def where(scope_apps, scope_networks, first, last, extra=()):
        clauses = [f"dt BETWEEN '{first}' AND '{last}'"]
        for column, allowed in (("app_id", scope_apps), ("ad_network_id", scope_networks)):
            if allowed is not None:
                listed = ", ".join("'" + value.replace("'", "''") + "'" for value in sorted(allowed)) or "NULL"
                clauses.append(f"{column} IN ({listed})")
        for column, value in extra:
            clauses.append(f"{column} = '" + value.replace("'", "''") + "'")
        return " AND ".join(clauses)

    def leaks(self, text, scope_apps, scope_networks):
        found = []
        if scope_networks is not None:
            found += [n for n in self.networks if n not in scope_networks and n in text]
        if scope_apps is not None:
            found += [a for a in self.apps if a not in scope_apps and a in text]
        return found

    def range(self):
        first = self.rng.randrange(len(self.days))
        last = min(len(self.days) - 1, first + self.rng.randrange(8))
        return self.days[first], self.days[last]

    def one(self, token):
        choice = self.rng.random()
        if choice < 0.3:
            self.summary(token)
        else:
            self.rows_query(token)
        if members(token["apps"]) is not None or members(token["networks"]) is not None:
            self.oracle(token)

    def pick(self, values, allowed):
        # Half the time a value in the scope, else any (out of scope, or with 'all' any).
        inside = [v for v in values if allowed is None or v in allowed]
        if inside and self.rng.random() < 0.5:
            return self.rng.choice(inside)
        return self.rng.choice(values)

    def rows_query(self, token):
        # The cohort table one time in five, the day tables the rest.
        table = COHORT_TABLE if self.rng.random() < 0.2 else self.rng.choice(TABLES)
        first, last = self.range()
        params = {"from": first, "to": last}
        cohort = table == COHORT_TABLE
        app = network = None
        if self.rng.random() < 0.4:
            app = params["app"] = self.pick(self.apps, members(token["apps"]))
        if self.rng.random() < 0.4:
            network = params["network"] = self.pick(self.networks, members(token["networks"]))
        extra = []
        if self.rng.random() < 0.2:
            campaign = self.db.execute(f"SELECT campaign_id FROM {table} WHERE campaign_id IS NOT NULL LIMIT 1 OFFSET "
                                       f"{self.rng.randrange(50)}").fetchone()
            if campaign:
                params["campaign"] = campaign[0]
                extra.append(("campaign_id", campaign[0]))
        fmt = self.rng.choice(["json", "json", "csv", "parquet"])
        params["format"] = fmt
        if cohort and self.rng.random() < 0.5:
            # Columns without the status: the answer must carry it all the same.
            params["columns"] = "dt,app_id,ad_network_id,campaign_id,installs,spend,roas_w1"
        paged = fmt == "json" and self.rng.random() < 0.3
        params["limit"] = str(self.rng.choice([7, 50]) if paged else 10000)
        scope_apps, scope_networks = self.effective(token, app, network)
        expected_rows = self.db.execute(
            f"SELECT * FROM {table} WHERE {self.where(scope_apps, scope_networks, first, last, extra)}").fetchall()
        names = [d[0] for d in self.db.description]
        got = []
        cursor = None
        pages = 0
        while True:
            if cursor:
                params["cursor"] = cursor
            status, ctype, body, headers = self.get(token["token"], f"/v1/tables/{table}/rows", params)
            pages += 1
            if status != 200:
                return self.fail("status", params, f"{status} {body[:300]}")
            if fmt == "json":
                text = body.decode()
                leaked = self.leaks(text, scope_apps, scope_networks)
                if leaked:
                    return self.fail("leak", params, leaked)
                answer = json.loads(text, parse_int=str, parse_float=str)
                header = [c["name"] for c in answer["columns"]]
                for row in answer["rows"]:
                    got.append(tuple(normal(row[c]) for c in header))
                cursor = answer["next_cursor"]
                if cursor is None or pages > 10000:
                    break
            elif fmt == "csv":
                reader = csv.reader(io.StringIO(body.decode()))
                header = next(reader)
                for fields in reader:
                    got.append(tuple(None if f == "" else unneutralise(f) for f in fields))
                break
            else:
                table_pq = pq.read_table(io.BytesIO(body))
                header = table_pq.column_names
                for row in table_pq.to_pylist():
                    got.append(tuple(parquet_text(row[c]) for c in header))
                break
        self.rows += len(got)
        if cohort:
            self.cohort_queries += 1
            self.cohort_rows += len(got)
            if "cohort_status" not in header:
                return self.fail("cohort status", params, f"no cohort_status among {header}")
            statuses = {row[header.index("cohort_status")] for row in got}
            if not statuses <= COHORT_STATUSES:
                return self.fail("cohort status", params, f"statuses {statuses}")
        # The API's rows: dt first, then the table's columns (those of the file, in its order).
        positions = [names.index(c) for c in header]
        expected = sorted((tuple(normal(row[p]) for p in positions) for row in expected_rows), key=repr)
        got = sorted(got, key=repr)
        if fmt == "parquet":
            # Parquet writes values typed: compare counts and the postbacks column.
            count_ok = len(got) == len(expected)
            p = header.index("installs" if cohort else "postbacks")
            sums_ok = sum(int(r[p]) for r in got) == sum(int(r[p]) for r in expected)
            if not (count_ok and sums_ok):
                self.fail("parquet rows", params, f"{len(got)} rows vs {len(expected)}")
            return
        if got != expected:
            missing = [r for r in expected if r not in got][:2]
            extra_rows = [r for r in got if r not in expected][:2]
            self.fail("rows", params, f"{len(got)} rows vs DuckDB {len(expected)}; missing {missing} extra {extra_rows}")

    def figures(self, scope_apps, scope_networks, first, last):
        where = self.where(scope_apps, scope_networks, first, last)
        totals = self.db.execute(
            "SELECT COALESCE(SUM(postbacks::BIGINT), 0), COALESCE(SUM(installs::BIGINT), 0), "
            "COALESCE(SUM(redownloads::BIGINT), 0), COALESCE(SUM(reengagements::BIGINT), 0), "
            "COALESCE(SUM(losses::BIGINT), 0), COALESCE(SUM(null_cv_postbacks::BIGINT), 0), "
            "COALESCE(SUM(development_postbacks::BIGINT), 0), COALESCE(SUM(rejected_postbacks::BIGINT), 0) "
            f"FROM postback_detail_daily WHERE {where}").fetchone()
        networks = dict(self.db.execute(
            "SELECT COALESCE(ad_network_id, ''), SUM(postbacks::BIGINT) FROM postback_detail_daily "
            f"WHERE {where} AND postbacks::BIGINT > 0 GROUP BY 1").fetchall())
        # Revenue to date per currency: winning rows with postbacks; unknown when no estimate.
        revenue = {row[0]: (Decimal(row[1]), row[2], row[3]) for row in self.db.execute(
            "SELECT COALESCE(currency, ''), COALESCE(SUM(revenue_est_sum::DECIMAL(38, 6)), 0)::VARCHAR, "
            "COALESCE(SUM(CASE WHEN revenue_est_sum IS NOT NULL THEN postbacks::BIGINT END), 0), "
            "COALESCE(SUM(CASE WHEN revenue_est_sum IS NULL THEN postbacks::BIGINT END), 0) "
            f"FROM postback_detail_daily WHERE {where} AND postbacks::BIGINT > 0 AND cv_kind IS NOT NULL "
            "AND cv_kind <> 'none' GROUP BY 1").fetchall()}
        # Spend of the install cohorts (partitioned by estimated install date) in the range, per spend
        # currency, and the installs of the cohorts with spend (docs/spend.md, docs/aggregate.md).
        cost = {row[0]: (Decimal(row[1]), int(row[2])) for row in self.db.execute(
            "SELECT COALESCE(spend_currency, ''), SUM(spend::DECIMAL(38, 6))::VARCHAR, SUM(installs::BIGINT) "
            f"FROM campaign_cohort_daily WHERE {where} AND spend IS NOT NULL GROUP BY 1").fetchall()}
        return totals, networks, revenue, cost

    def summary(self, token):
        first, last = self.range()
        params = {"from": first, "to": last}
        app = network = None
        if self.rng.random() < 0.3:
            app = params["app"] = self.pick(self.apps, members(token["apps"]))
        if self.rng.random() < 0.3:
            network = params["network"] = self.pick(self.networks, members(token["networks"]))
        compare = self.rng.random() < 0.3
        if compare:
            params["compare"] = "previous"
        status, ctype, body, headers = self.get(token["token"], "/v1/summary", params)
        self.summaries += 1
        if status != 200:
            return self.fail("status", params, f"{status} {body[:300]}")
        scope_apps, scope_networks = self.effective(token, app, network)
        text = body.decode()
        leaked = self.leaks(text, scope_apps, scope_networks)
        if leaked:
            return self.fail("leak", params, leaked)
        answer = json.loads(text, parse_float=Decimal)
        periods = [("current", first, last)]
        if compare:
            from datetime import date, timedelta
            a, b = date.fromisoformat(first), date.fromisoformat(last)
            n = (b - a).days + 1
            periods.append(("previous", str(a - timedelta(days=n)), str(a - timedelta(days=1))))
        for key, start, end in periods:
            figures = answer.get(key)
            if figures is None:
                # No published day in the previous period.
                if self.db.execute(f"SELECT COUNT(*) FROM postback_detail_daily WHERE dt BETWEEN '{start}' AND '{end}'").fetchone()[0]:
                    self.fail("summary", params, f"{key} is null but the period has rows")
                continue
            totals, networks, revenue, cost = self.figures(scope_apps, scope_networks, start, end)
            got_cost = {c["currency"]: (Decimal(str(c["spend"])), c["installs_with_spend"]) for c in figures["cost"]}
            if got_cost != cost:
                self.fail("summary cost", params, f"{key}: {got_cost} vs DuckDB {cost}")
            self.costs += 1 if cost else 0
            got_totals = figures["totals"]
            got = (got_totals["postbacks"], got_totals["installs"], got_totals["redownloads"], got_totals["reengagements"],
                   got_totals["losses"], got_totals["null_values"], figures["development_postbacks"],
                   figures["rejected_postbacks"])
            if tuple(int(v) for v in got) != tuple(int(v) for v in totals):
                self.fail("summary totals", params, f"{key}: {got} vs DuckDB {totals}")
            got_networks = {n["ad_network_id"]: n["counts"]["postbacks"] for n in figures["networks"]}
            if got_networks != {k: int(v) for k, v in networks.items()}:
                self.fail("summary networks", params, f"{key}: {got_networks} vs DuckDB {networks}")
            got_revenue = {r["currency"]: (Decimal(str(r["estimate"])), r["valued_postbacks"], r["unknown_postbacks"])
                           for r in figures["revenue"]}
            if got_revenue != {k: (v[0], int(v[1]), int(v[2])) for k, v in revenue.items()}:
                self.fail("summary revenue", params, f"{key}: {got_revenue} vs DuckDB {revenue}")
            campaign_postbacks = sum(c["counts"]["postbacks"] for c in figures["top_campaigns"])
            if campaign_postbacks != int(totals[0]):
                self.fail("summary campaigns", params, f"{key}: campaigns add to {campaign_postbacks}, total {totals[0]}")
            for campaign in figures["top_campaigns"]:
                if campaign["app_id"] is not None and scope_apps is not None and campaign["app_id"] not in scope_apps:
                    self.fail("leak", params, campaign)

    # An app (or network) outside the token's scope answers byte for byte as one that does not exist.
    def oracle(self, token):
        scope_apps, scope_networks = members(token["apps"]), members(token["networks"])
        first, last = self.range()
        for kind, scope, values, missing in (("app", scope_apps, self.apps, "999999999"),
                                             ("network", scope_networks, self.networks, "nosuch.skadnetwork")):
            if scope is None:
                continue
            outside = [v for v in values if v not in scope]
            if not outside:
                continue
            value = self.rng.choice(outside)
            path = self.rng.choice(["/v1/summary", "/v1/tables/campaign_daily/rows", "/v1/tables/country_daily/rows",
                                    f"/v1/tables/{COHORT_TABLE}/rows"])
            answers = [self.get(token["token"], path, {"from": first, "to": last, kind: v}) for v in (value, missing)]
            self.oracle_pairs += 1
            if answers[0][:3] != answers[1][:3]:
                self.fail("oracle", {"path": path, kind: value},
                          f"{answers[0][0]} {answers[0][2][:200]} vs {answers[1][0]} {answers[1][2][:200]}")


def normal(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def unneutralise(field):
    # docs/aggregate.md: a neutralised cell is written with one ' before it.
    if field.startswith("'") and len(field) > 1 and field.lstrip("'")[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return field[1:]
    return field


def parquet_text(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


if __name__ == "__main__":
    main()
