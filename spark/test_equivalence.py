#!/usr/bin/env python3
"""Equivalence test: the Spark job and `postback aggregate` on the same generated spool must publish
the same bytes.

    scripts/venv-python spark/test_equivalence.py --postback .build/debug/postback [--keep DIR]
    spark/test-equivalence                        # the same, finding the binary itself

Builds a small spool with `postback aggregate synthesize` (7 days, two receivers, late duplicates,
development and rejected records; SKAdNetwork 3.0 and 4.0, AdAttributionKit; three windows; fine,
coarse and withheld values), then adds what the synthesizer does not make: a third writer whose
name sorts between the others, copies received in the same microsecond (tie broken by writer) or
earlier from a later segment, SKAdNetwork 1.0 and 2.2, test mode, a mixed-case ad network id, CSV
characters that need quoting, split segments, corrupt lines, three kinds of torn tails, an empty and
a stray file, a duplicate older than the lookback, a day with no input, and conflict evidence
(`raw/conflicts/`: a key twice, a key with no copy that day, a key of the day before, a line that is
not JSON) for `conflicting_copies`. Schemas: the samples,
with a second effective period and source-identifier maps that change on a date. Spend, imported
with `postback spend import`, and an --fx file for the install-date cohorts (see import_spend).

Both engines run over it (`--lookback-days 2`, a range that starts after the spool does, so keys
come from days read for their keys only). The checks: every CSV file byte-identical, the cohort
tables' for every install date included; the manifests' totals, per-input counts, rejected statuses
and output sizes equal; the cohort manifests equal but for `tool`; the same exit status; the
Parquet output (cohorts too) holding the same rows. It also checks that the spool exercised what it should
(coverage, read off the Swift output), so that an empty or degenerate spool cannot pass, and that the
Swift cohorts follow docs/aggregate.md where both engines could agree on something else.

The last line is `equivalence: N passed, N failed`; exit status 0 only when nothing failed.
"""

import argparse
import copy
import datetime
import decimal
import difflib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPOOL_FIRST = datetime.date(2026, 3, 1)
SPOOL_DAYS = 7
RANGE = (datetime.date(2026, 3, 3), datetime.date(2026, 3, 8))   # 03-08 has no spool: header-only files
LOOKBACK_DAYS = 2
# Every table a day publishes, as `postback` declares them (AggregateTables.all): each one is compared.
with open(os.path.join(HERE, "record-schema.json"), encoding="utf-8") as _file:
    RECORD_SCHEMA = json.load(_file)
TABLES = tuple(RECORD_SCHEMA["tables"])
DETAIL_TABLE = TABLES[0]
# The install-date cohorts both engines rebuild after the day tables (docs/aggregate.md, docs/spend.md).
COHORT_TABLES = (published_schema.CAMPAIGN_COHORT_DAILY, published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT)


def documented_cohort_types():
    """The cohort columns' declared types, from the contract: docs/aggregate.md's CREATE TABLE block."""
    with open(os.path.join(ROOT, "docs", "aggregate.md"), encoding="utf-8") as file:
        text = file.read()
    block = text[text.index(f"CREATE TABLE {published_schema.CAMPAIGN_COHORT_DAILY} ("):]
    block = block[block.index("(") + 1:block.index("\n);")]
    return {name: declared for name, declared in (line.strip().rstrip(",").split(" ", 1) for line in block.splitlines() if line.strip())
            if name != "dt"}


COHORT_COLUMN_TYPES = documented_cohort_types()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, condition, what, detail=""):
        if condition:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}" + (f"\n{detail}" if detail else ""))
        return condition


# ---------------------------------------------------------------------------------------------
# The spool


def run(command, **options):
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, **options)
    return result, time.time() - started


def timestamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def timestamp_text(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(record):
    """A spool line as SpoolRecord.encoded writes it: compact JSON, newline."""
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def read_records(path):
    with open(path, "rb") as file:
        return [json.loads(line) for line in file.read().splitlines()]


def partition(data, spool, day):
    return f"{data}/raw/{spool}/dt={day.isoformat()}"


def synthesize_spool(postback, data):
    result, _ = run([postback, "aggregate", "synthesize", "--data", data, "--from", SPOOL_FIRST.isoformat(), "--days", str(SPOOL_DAYS),
                     "--per-day", "300", "--duplicate-percent", "12", "--seed", "6", "--jobs", "2"])
    if result.returncode != 0:
        sys.exit(f"postback aggregate synthesize failed: {result.stderr}")


def add_edge_cases(data):
    """Adds to the synthesized spool what it does not produce (see the module docstring)."""
    rng = random.Random(6)
    days = [SPOOL_FIRST + datetime.timedelta(days=offset) for offset in range(SPOOL_DAYS)]
    verified = {day: [] for day in days}
    for day in days:
        for name in sorted(os.listdir(partition(data, "postbacks", day))):
            verified[day] += [(name, record) for record in read_records(f"{partition(data, 'postbacks', day)}/{name}")]

    for day in days:
        extra = []          # lines of writer rx10 ("rx1" < "rx10" < "rx2")
        records = [record for _, record in verified[day]]
        originals = [(name, record) for name, record in verified[day] if record["attribution"]["postback_sequence_index"] == 0]
        # Same microsecond, other values: the copy wins over rx2's original and loses to rx1's.
        for name, record in rng.sample(originals, 6):
            tie = copy.deepcopy(record)
            tie["writer"] = "rx10"
            tie["attribution"]["country_code"] = "TIE-" + name[5:8]
            extra.append(tie)
        # Received a microsecond earlier, from a segment that sorts later: it wins.
        for _, record in rng.sample(originals, 3):
            early = copy.deepcopy(record)
            early["writer"] = "rx10"
            early["received_at"] = timestamp_text(timestamp(record["received_at"]) - datetime.timedelta(microseconds=1))
            early["attribution"]["country_code"] = "EARLY"
            extra.append(early)
        template = next(r for r in records if r["attribution"]["version"] == "3.0")
        for index, (version, did_win, interaction) in enumerate([("2.2", None, "view"), ("2.2", None, "click"), ("1.0", None, None)]):
            old = copy.deepcopy(template)
            old["dedup_key"] = f"old-{day}-{index}:0"
            old["version"] = old["attribution"]["version"] = version
            old["attribution"].update(did_win=did_win, interaction=interaction, campaign_id=10 + index, fine_value=index * 20)
            extra.append(old)
        # Two copies in one file in the same microsecond: the first line wins.
        twin = copy.deepcopy(template)
        twin["dedup_key"] = f"twin-{day}:0"
        twin["attribution"]["country_code"] = "FIRST"
        second = copy.deepcopy(twin)
        second["attribution"]["country_code"] = "SECOND"
        extra += [twin, second]
        # Development without a development key: SKAdNetwork test mode, and an environment left out.
        test_mode = copy.deepcopy(template)
        test_mode["dedup_key"] = f"test-mode-{day}:0"
        test_mode["attribution"].update(test_mode=True, source_app_id=0)
        no_environment = copy.deepcopy(template)
        no_environment["dedup_key"] = f"no-environment-{day}:0"
        no_environment["environment"] = None
        extra += [test_mode, no_environment]
        # Grouping lower-cases ASCII only; quoting in the output; an empty string is not a null.
        shouting = copy.deepcopy(rng.choice(records))
        shouting["dedup_key"] = f"shouting-{day}:0"
        shouting["attribution"]["ad_network_id"] = shouting["attribution"]["ad_network_id"].upper()
        quoted = copy.deepcopy(template)
        quoted["dedup_key"] = f"quoted-{day}:0"
        quoted["attribution"].update(source_domain='news "daily", the', country_code="")
        no_schema = copy.deepcopy(template)
        no_schema["dedup_key"] = f"no-schema-{day}:0"
        no_schema["attribution"]["app_id"] = 999
        extra += [shouting, quoted, no_schema]
        # Not verified, yet in raw/postbacks: counted as rejected.
        malformed = copy.deepcopy(template)
        malformed.update(status="malformed", reason="conversion-value 64 is out of range", dedup_key=None)
        extra.append(malformed)
        # Cells a spreadsheet would evaluate (a forged claim in a rejected row, text in a verified one) and a
        # plain number, which stays as it is; a value on a non-winning postback, never counted (flagged).
        forged = copy.deepcopy(template)
        forged.update(status="invalid-signature", reason="the signature does not verify", dedup_key=None)
        forged["attribution"]["ad_network_id"] = '=hyperlink("https://evil.example","x")'
        formulas = []
        for index, domain in enumerate(["@sum(1,2)", "-1.5", "'=quoted", "\tTAB", "+1", "-x"]):
            formula = copy.deepcopy(template)
            formula["dedup_key"] = f"formula-{day}-{index}:0"
            formula["attribution"]["source_domain"] = domain
            formulas.append(formula)
        winner = next(r for r in records if r["attribution"]["version"] == "4.0" and r["attribution"]["postback_sequence_index"] == 0)
        nonwinning = copy.deepcopy(winner)
        nonwinning["dedup_key"] = f"nonwinning-value-{day}:0"
        nonwinning["attribution"].update(did_win=False, fine_value=None, coarse_value="high")
        extra += [forged, *formulas, nonwinning]
        if day == days[-2]:
            # A copy of a key from five days before: older than the lookback, so it counts again.
            late = copy.deepcopy(verified[days[0]][0][1])
            late["writer"] = "rx10"
            late["received_at"] = timestamp_text(datetime.datetime.combine(day, datetime.time(12)))
            extra.append(late)
        lines = [encode(record) for record in extra]
        lines[1] = lines[1][:-1] + b"\r\n"        # a CRLF line end is read like LF
        with open(f"{partition(data, 'postbacks', day)}/part-rx10-000001.jsonl", "wb") as file:
            file.write(b"".join(lines))

    # Conflict evidence (raw/conflicts/, ConflictRecord; issue 24): copies of a day's keys that disagreed,
    # one key twice, a key with no copy that day, a key of the day before, and a line that is not JSON.
    for index, day in enumerate(days):
        keyed = [record for _, record in verified[day] if record.get("dedup_key") and record.get("attribution")]
        chosen = rng.sample(keyed, 3)
        conflicts = [chosen[0], chosen[0], chosen[1], chosen[2]]
        absent = copy.deepcopy(chosen[2])
        absent["dedup_key"] = f"absent-{day}:0"
        conflicts.append(absent)
        if index > 0:
            conflicts.append(verified[days[index - 1]][0][1])
        lines = []
        for record in conflicts:
            lines.append(encode({
                "received_at": record["received_at"], "writer": "rx1", "route": "skadnetwork-developer-copy",
                "client": "203.0.113.1", "dedup_key": record["dedup_key"],
                "fields": [{"field": "conversion-value", "stored": "1", "copy": "2"}], "body_sha256": "00",
                "stored_attribution": record["attribution"]}))
        lines.append(b"not json at all\n")
        conflict_dir = partition(data, "conflicts", day)
        os.makedirs(conflict_dir, exist_ok=True)
        with open(f"{conflict_dir}/part-rx1-000001.jsonl", "wb") as file:
            file.write(b"".join(lines))

    corrupt_lines = [
        b"not json at all\n",
        b"\n",
        b"{}\n",
        b'{"received_at":"2026-03-04T10:00:00Z","status":"verified","body":"{}"}\n',            # timestamp without microseconds
        b'{"received_at":"2026-02-30T10:00:00.000000Z","status":"verified","body":"{}"}\n',     # no such day
    ]
    sample = verified[days[3]][5][1]
    for change in [{"status": "bogus"}, {"received_at": None}, {"body": None}]:
        bad = copy.deepcopy(sample)
        bad.update(change)
        corrupt_lines.append(encode({k: v for k, v in bad.items() if v is not None}))
    for change in [{"fine_value": 70}, {"postback_sequence_index": 3}, {"coarse_value": "huge"}, {"conversion_type": None}, {"app_id": "525463029"}]:
        bad = copy.deepcopy(sample)
        bad["attribution"].update(change)
        corrupt_lines.append(encode(bad))
    corrupt_lines.append(encode(sample)[:200] + b"\n")   # cut short, then a newline

    # Corrupt lines between good ones; split a segment in two (rx1 then has sequences 1 and 2).
    for day in days[2:]:
        directory = partition(data, "postbacks", day)
        path = f"{directory}/part-rx1-000001.jsonl"
        with open(path, "rb") as file:
            lines = file.read().splitlines(keepends=True)
        middle = len(lines) // 2
        head, tail = lines[:middle], lines[middle:]
        head[3:3] = corrupt_lines if day == days[3] else corrupt_lines[:2]
        with open(path, "wb") as file:
            file.write(b"".join(head))
        with open(f"{directory}/part-rx1-000002.jsonl", "wb") as file:
            file.write(b"".join(tail))

    # Torn tails: a record cut short, a whole record without its newline, a bad last line with one.
    torn = [(days[3], "rx2", lambda line: line[:-40]), (days[4], "rx2", lambda line: line[:-1]),
            (days[5], "rx10", lambda line: line[: len(line) // 2] + b"\n")]
    for day, writer, tear in torn:
        path = f"{partition(data, 'postbacks', day)}/part-{writer}-000001.jsonl"
        with open(path, "rb") as file:
            lines = file.read().splitlines(keepends=True)
        lines[-1] = tear(lines[-1])
        with open(path, "wb") as file:
            file.write(b"".join(lines))
    # Torn in the rejected spool too, and an empty segment and files that are not segments.
    rejected_dir = partition(data, "rejected", days[4])
    os.makedirs(rejected_dir, exist_ok=True)
    with open(f"{rejected_dir}/part-rx10-000001.jsonl", "wb") as file:
        rejected = copy.deepcopy(sample)
        rejected.update(status="untrusted-key", reason="kid apple-development-identifier/0 is a development key")
        rejected["attribution"] = None
        shouting = copy.deepcopy(sample)
        shouting.update(status="invalid-signature", reason="the signature does not verify")
        shouting["attribution"]["ad_network_id"] = "Network0.SKAdNetwork"
        file.write(encode(rejected) + encode(shouting) + encode(rejected)[:-9])
    open(f"{partition(data, 'postbacks', days[4])}/part-rx3-000001.jsonl", "wb").close()
    with open(f"{partition(data, 'postbacks', days[4])}/part-rx1-000001.jsonl.tmp-1", "wb") as file:
        file.write(encode(sample))
    with open(f"{partition(data, 'postbacks', days[4])}/README", "w") as file:
        file.write("not a segment\n")


def write_schemas(directory):
    """The sample schemas, plus: a second effective period for the game (labels that need quoting),
    and source-identifier maps for the synthetic networks, one of which changes on a date."""
    samples = f"{ROOT}/Samples/schemas"

    def digits(values):
        return [{"positions": [1, 2], "dimension": "campaign", "values": {str(c): f"campaign_{c}" for c in range(10, 30, values)}},
                {"positions": [3], "dimension": "geo", "values": {"1": "US", "2": "EU, UK", "3": "ROW"}},
                {"positions": [4], "dimension": "placement"}]

    maps = [
        {"ad_network_id": "network0.skadnetwork", "valid_to": "2026-02-20", "digits": digits(1), "campaign_id_map": {"10": "old_ten", "12": "old_twelve"}},
        {"ad_network_id": "network0.skadnetwork", "valid_from": "2026-02-21", "digits": digits(2), "campaign_id_map": {str(c): f"c{c}" for c in range(10, 30)}},
        {"ad_network_id": "Network1.SKAdNetwork", "truncation": "keeps_leading", "digits": digits(3)},
        {"ad_network_id": "network2.skadnetwork", "digits": digits(1)},
        {"ad_network_id": "network0.adattributionkit", "digits": digits(1)},
        {"ad_network_id": "network1.adattributionkit", "truncation": "keeps_leading", "digits": digits(2)},
    ]
    for app in sorted(os.listdir(samples)):
        if not app.isdigit():
            continue
        os.makedirs(f"{directory}/{app}")
        for name in sorted(os.listdir(f"{samples}/{app}")):
            with open(f"{samples}/{app}/{name}") as file:
                schema = json.load(file)
            schema["source_identifier_map"] = maps
            if app == "525463029":
                later = copy.deepcopy(schema)
                schema["effective_to"] = "2026-02-25"
                later.update(schema_id="example-game/2026-02-26", effective_from="2026-02-26", effective_to=None)
                entries = later["windows"]["0"]["fine"]["entries"]
                entries[0]["label"] = 'install only, "v2"'
                entries[2]["revenue_buckets"] = {"start": 1.49, "width": 0.5}
                later["windows"]["0"]["coarse"]["medium"]["label"] = "payer, v2"
                later["source_identifier_map"] = maps[2:]
                with open(f"{directory}/{app}/2026-02-26.json", "w") as file:
                    json.dump(later, file, indent=1)
            with open(f"{directory}/{app}/{name}", "w") as file:
                json.dump(schema, file, indent=1)


def import_spend(postback, data, schemas, work):
    """Spend for the cohorts, stored with `postback spend import` into the store both engines read, and
    an --fx file: two currencies (USD spend on an EUR app, converted on one day and not on another; a
    campaign with spend in both), a source's day restated by a second import, claimed installs, campaigns
    named by campaign_id (one the schema names, one it does not), by source_identifier and by name (a
    mixed-case network id), zero spend, a day with spend and no postbacks, and a day past the range
    (an install date rebuilt because its spend is new). Returns the --fx file."""
    header = "date,app_id,ad_network_id,campaign_id,source_identifier,campaign,spend,currency,impressions,clicks,reported_installs\n"
    files = {
        "network-a.csv": [
            "2026-03-01,1229670720,network0.skadnetwork,,,campaign_12,100.5,EUR,1000,50,",
            "2026-03-02,525463029,network2.adattributionkit,,21,,2,USD,,,",
            "2026-03-03,525463029,Network2.SKAdNetwork,,12,,25.5,USD,1000,40,5",
            "2026-03-03,525463029,network2.skadnetwork,,12,,4.5,USD,200,,",
            "2026-03-03,1229670720,network1.skadnetwork,20,,,30,EUR,,,1",
            "2026-03-03,1229670720,network1.skadnetwork,,,campaign_22,12.345678,EUR,,,",
            "2026-03-03,1229670720,network0.skadnetwork,22,,,7,USD,,,",
            "2026-03-03,1229670720,network0.adattributionkit,,12,,0,EUR,,,",
            "2026-03-03,525463029,network1.skadnetwork,26,,,3,USD,,,",
            "2026-03-04,525463029,network0.skadnetwork,,12,,10,EUR,,,",
            "2026-03-04,1229670720,network1.skadnetwork,28,,,45,USD,,,",
            "2026-03-04,1229670720,network2.skadnetwork,23,,,100,EUR,300,20,2",
            "2026-03-07,525463029,network0.skadnetwork,,11,,9.99,USD,,,",
            "2026-03-20,525463029,network0.skadnetwork,,11,,1.25,USD,,,",
        ],
        # The same source again: its 2026-03-01 is replaced (restated), its other days stay.
        "network-a-restated.csv": ["2026-03-01,1229670720,network0.skadnetwork,,,campaign_12,80.25,EUR,900,10,"],
        "network-b.csv": ["2026-03-04,525463029,network0.skadnetwork,,12,,5,USD,,,7",
                          "2026-03-01,1229670720,network0.skadnetwork,,,campaign_12,3,EUR,,,"],
    }
    for name, rows in files.items():
        path = f"{work}/{name}"
        with open(path, "w") as file:
            file.write(header + "".join(row + "\n" for row in rows))
        source = "network-a" if name.startswith("network-a") else "network-b"
        result, _ = run([postback, "spend", "import", "--data", data, "--schemas", schemas, "--source", source, path])
        if result.returncode != 0:
            sys.exit(f"postback spend import {name} failed: {result.stderr}")
    fx = f"{work}/fx.csv"
    with open(fx, "w") as file:
        file.write("date,from,to,rate\n2026-03-03,USD,EUR,0.9234\n2026-03-01,USD,EUR,0.92\n")
    return fx


# ---------------------------------------------------------------------------------------------
# Comparisons


def range_days():
    return [RANGE[0] + datetime.timedelta(days=offset) for offset in range((RANGE[1] - RANGE[0]).days + 1)]


def read_or_none(path):
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        return None


def first_differences(expected, actual, limit=12):
    lines = list(difflib.unified_diff(expected.decode(errors="replace").splitlines(), actual.decode(errors="replace").splitlines(),
                                      "postback aggregate", "spark", lineterm="", n=0))
    return "\n".join("      " + line for line in lines[:limit]) + ("\n      ..." if len(lines) > limit else "")


# The null-value model's columns (docs/modeling.md): computed in floating point, whose order of terms
# differs between the engines, so compared within MODEL_RELATIVE (money: or one micro-unit, the last
# digit of a rounded amount; `modeled_note`: empty in the same rows); every other byte must be equal.
MODEL_COLUMNS = ("modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high", "modeled_revenue_est",
                 "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero", "modeled_note")
MODEL_RELATIVE = 1e-9


def model_cells_close(column, expected, actual):
    if column == "modeled_note" or expected == "" or actual == "":
        return (expected == "") == (actual == "") if column == "modeled_note" else expected == actual
    a, b = float(expected), float(actual)
    slack = 1e-6 if column in MODEL_COLUMNS[:4] else 0.0
    return abs(a - b) <= max(MODEL_RELATIVE * max(abs(a), abs(b)), slack)


def model_values_close(column, expected, actual):
    """Two Parquet values of a modeled column (Decimal, float, str or None), as model_cells_close."""
    if expected is None or actual is None or column == "modeled_note":
        return (expected is None) == (actual is None) if column == "modeled_note" else expected == actual
    return model_cells_close(column, str(expected), str(actual))


def same_but_model(expected, actual):
    """Equal bytes outside the modeled columns, and modeled columns within MODEL_RELATIVE (or no model columns at all)."""
    import csv
    import io

    if expected is None or actual is None:
        return False
    if expected == actual:
        return True
    want, got = list(csv.reader(io.StringIO(expected.decode()))), list(csv.reader(io.StringIO(actual.decode())))
    if not want or want[0] != (got[0] if got else None) or len(want) != len(got) or not set(MODEL_COLUMNS) <= set(want[0]):
        return False
    model = {want[0].index(c): c for c in MODEL_COLUMNS}
    outside = [i for i in range(len(want[0])) if i not in model]
    for a, b in zip(want[1:], got[1:]):
        if [a[i] for i in outside] != [b[i] for i in outside]:
            return False
        if not all(model_cells_close(column, a[i], b[i]) for i, column in model.items()):
            return False
    # Outside the model's cells the bytes must be the same, quoting included: compare the lines without them.
    return without_model_cells(expected) == without_model_cells(actual)


def without_model_cells(data):
    """Each line's bytes before the modeled columns (appended last; only the note may be quoted)."""
    import re

    lines = []
    for line in data.decode().split("\n"):
        line = re.sub(r',"(?:[^"]|"")*"$', "", line) if line.endswith('"') else line.rsplit(",", 1)[0]
        lines.append(line.rsplit(",", len(MODEL_COLUMNS) - 1)[0])
    return lines


def compare_csv(checks, swift_out, spark_out):
    for table in TABLES:
        for day in range_days():
            relative = f"{table}/dt={day.isoformat()}/part-00000.csv"
            expected, actual = read_or_none(f"{swift_out}/{relative}"), read_or_none(f"{spark_out}/{relative}")
            same = expected is not None and (expected == actual or same_but_model(expected, actual))
            detail = "" if same else ("      missing file" if actual is None or expected is None else first_differences(expected, actual))
            rows = 0 if expected is None else expected.count(b"\n") - 1
            checks.check(same, f"{relative}: byte-identical ({rows} rows)", detail)


def output_size(output):
    """(table, rows, bytes) of a manifest's output; campaign_daily's bytes left out: its modeled cells are
    floating point, equal only within MODEL_RELATIVE (compare_csv and compare_parquet check its content)."""
    return (output["table"], output["rows"], None if output["table"] == published_schema.CAMPAIGN_DAILY else output["bytes"])


def compare_manifests(checks, swift_out, spark_out):
    for day in range_days():
        swift = json.loads(read_or_none(f"{swift_out}/_manifests/dt={day.isoformat()}.json") or b"{}")
        spark = json.loads(read_or_none(f"{spark_out}/_manifests/dt={day.isoformat()}.json") or b"{}")
        spark_totals = dict(spark.get("totals", {}))
        unreadable = spark_totals.pop("unreadable_lines", None)
        checks.check(swift.get("totals") is not None and swift.get("totals") == spark_totals and unreadable == 0,
                     f"manifest dt={day}: totals equal", f"      postback: {swift.get('totals')}\n      spark:    {spark.get('totals')}")
        fields = ("path", "spool", "bytes", "lines", "postbacks", "rejected", "corrupt_lines", "torn_tail")
        swift_inputs = [{k: i[k] for k in fields} for i in swift.get("inputs", [])]
        spark_inputs = [{k: i[k] for k in fields} for i in spark.get("inputs", [])]
        checks.check(swift_inputs == spark_inputs, f"manifest dt={day}: {len(swift_inputs)} inputs with the same line counts",
                     "\n".join(f"      postback {a}\n      spark    {b}" for a, b in zip(swift_inputs, spark_inputs) if a != b)
                     or f"      postback {len(swift_inputs)} inputs, spark {len(spark_inputs)}")
        lookback_fields = ("path", "bytes")
        checks.check([{k: i[k] for k in lookback_fields} for i in swift.get("lookback_inputs", [])]
                     == [{k: i[k] for k in lookback_fields} for i in spark.get("lookback_inputs", [])]
                     and swift.get("rejected_by_status") == spark.get("rejected_by_status")
                     and [output_size(o) for o in swift.get("outputs", [])] == [output_size(o) for o in spark.get("outputs", [])],
                     f"manifest dt={day}: lookback inputs, rejected statuses and outputs equal")


def cohort_days(out):
    """The install dates with a cohort file or manifest under `out`."""
    days = set()
    for table in COHORT_TABLES:
        if os.path.isdir(f"{out}/{table}"):
            days |= {name[3:] for name in os.listdir(f"{out}/{table}") if name.startswith("dt=")}
    if os.path.isdir(f"{out}/_cohort_manifests"):
        days |= {name[3:13] for name in os.listdir(f"{out}/_cohort_manifests") if name.startswith("dt=") and name.endswith(".json")}
    return sorted(days)


def compare_cohorts(checks, swift_out, spark_out):
    """Every cohort file byte for byte, and every cohort manifest equal but for `tool` (Spark's paths
    under its own --out read as the store's agg/) and campaign_daily inputs' bytes and digests."""
    swift_days, spark_days = cohort_days(swift_out), cohort_days(spark_out)
    checks.check(swift_days == spark_days and len(swift_days) > 0, f"the same {len(swift_days)} install dates' cohorts rebuilt",
                 f"      postback only: {sorted(set(swift_days) - set(spark_days))}\n      spark only: {sorted(set(spark_days) - set(swift_days))}")
    for table in COHORT_TABLES:
        for day in sorted(set(swift_days) | set(spark_days)):
            relative = f"{table}/dt={day}/part-00000.csv"
            expected, actual = read_or_none(f"{swift_out}/{relative}"), read_or_none(f"{spark_out}/{relative}")
            same = expected is not None and (expected == actual or same_but_model(expected, actual))
            detail = "" if same else ("      missing file" if actual is None or expected is None else first_differences(expected, actual))
            rows = 0 if expected is None else expected.count(b"\n") - 1
            checks.check(same, f"{relative}: byte-identical ({rows} rows)", detail)

    def normalized(manifest):
        manifest = dict(manifest)
        manifest.pop("tool", None)
        manifest["inputs"] = [dict(entry) for entry in manifest.get("inputs", [])]
        for entry in manifest["inputs"] + manifest.get("outputs", []):
            if entry.get("path", "").startswith(spark_out + "/"):
                entry["path"] = "agg/" + entry["path"][len(spark_out) + 1:]
            # A file with modeled columns (a cohort file, or a campaign_daily file it read) is compared above,
            # the modeled cells within MODEL_RELATIVE: its size and SHA-256 may differ in their last bits.
            if entry.get("table") in COHORT_TABLES or f"/{published_schema.CAMPAIGN_DAILY}/" in entry.get("path", ""):
                entry.pop("bytes", None)
                entry.pop("sha256", None)
        return manifest

    for day in sorted(set(swift_days) | set(spark_days)):
        swift = normalized(json.loads(read_or_none(f"{swift_out}/_cohort_manifests/dt={day}.json") or b"{}"))
        spark = normalized(json.loads(read_or_none(f"{spark_out}/_cohort_manifests/dt={day}.json") or b"{}"))
        differences = [f"      {key}: postback {json.dumps(swift.get(key))}\n      {' ' * len(key)}  spark    {json.dumps(spark.get(key))}"
                       for key in sorted(set(swift) | set(spark)) if swift.get(key) != spark.get(key)]
        checks.check(swift != {} and not differences,
                     f"cohort manifest dt={day}: equal ({len(swift.get('inputs', []))} inputs, status {swift.get('cohort_status')})",
                     "\n".join(differences)[:3000])


def check_cohort_coverage(checks, swift_out):
    """What the spend and the spool must have exercised in the cohorts, read off the Swift output."""
    import csv

    rows = []
    for table in COHORT_TABLES:
        for day in cohort_days(swift_out):
            path = f"{swift_out}/{table}/dt={day}/part-00000.csv"
            if os.path.exists(path):
                with open(path, newline="") as file:
                    rows += [dict(row, table=table, dt=day) for row in csv.DictReader(file)]
    production = [row for row in rows if row["table"] == COHORT_TABLES[0]]
    spent = [row for row in production if row["spend"] != "" or row["roas_note"] == "mixed-spend-currencies"]
    coverage = {
        "every roas_note, and filled ROAS": all(any(row["roas_note"] == note for row in production) for note in (
            "no-spend", "zero-spend", "no-revenue", "currency-mismatch", "mixed-spend-currencies", ""))
        and any(row["roas_w1"] not in ("", "0") for row in production),
        "spend converted with --fx": any(row["spend_fx_rate"] != "" for row in production),
        "claimed installs above and below the signed ones": any(int(row["reported_installs_excess"] or 0) > 0 for row in production)
        and any(int(row["reported_installs_excess"] or 0) < 0 for row in production),
        "spend keyed by campaign_id, source_identifier and campaign name": all(any(row[column] != "" for row in spent)
                                                                               for column in ("campaign_id", "source_identifier", "campaign")),
        "a restated day (the second import replaced the first)": any(row["dt"] == "2026-03-01" and row["campaign"] == "campaign_12"
                                                                     and row["spend"] == "83.25" for row in production),
        "a day with spend and no postbacks, and one past the range": any(row["dt"] == "2026-03-07" and row["spend"] != "" for row in production)
        and not any(row["dt"] == "2026-03-07" and row["postbacks_w1"] != "0" for row in production)
        and any(row["dt"] == "2026-03-20" for row in production),
        "open and window-1-final cohorts, with and without complete_through": {row["cohort_status"] for row in production} >= {"open", "window-1-final"}
        and any(row["complete_through"] == "" for row in production),
        "windows 2 and 3 and null values in the cohorts": any(row["postbacks_w2"] != "0" for row in production)
        and any(row["postbacks_w3"] != "0" for row in production) and any(row["null_cv_share"] not in ("", "0") for row in production),
        "development cohorts with postbacks": any(row["table"] == COHORT_TABLES[1] and row["postbacks_w1"] != "0" for row in rows),
        # The null-value model's columns, summed by the sum rule: modeled rows with an interval around a positive estimate.
        "modeled cohort rows": any(row["modeled_null_revenue_est"] not in ("", "0") and row["modeled_null_revenue_high"] != ""
                                   for row in production),
        # Rollups hold no row of development postbacks only, so none can reach a cohort.
        "campaign_daily with no row of development postbacks only": zero_postback_rows(swift_out) == 0,
    }
    for what, covered in coverage.items():
        checks.check(covered, f"cohorts cover {what}")
    check_cohort_contract(checks, swift_out, rows)


def zero_postback_rows(out):
    """campaign_daily rows with postbacks 0 and an install date: in no cohort (docs/aggregate.md)."""
    import csv

    count = 0
    for directory in sorted(os.listdir(f"{out}/{published_schema.CAMPAIGN_DAILY}")):
        with open(f"{out}/{published_schema.CAMPAIGN_DAILY}/{directory}/part-00000.csv", newline="") as file:
            count += sum(1 for row in csv.DictReader(file) if row["postbacks"] == "0" and row["est_install_date"] != "")
    return count


def check_cohort_contract(checks, swift_out, rows):
    """docs/aggregate.md's cohort rules read off the Swift output, so that both engines agreeing on
    something else fails: no row without postbacks or spend; a manifest's totals are the production
    table's postbacks and installs with the development table's postbacks beside them, in the
    documented order; --fx named in fx_rates (the file's base name) before outputs, not in inputs."""
    postbacks = lambda row: sum(int(row[f"postbacks_w{w}"]) for w in (1, 2, 3))  # noqa: E731
    empty = [(row["table"], row["dt"], row["campaign"] or row["campaign_id"] or row["source_identifier"]) for row in rows
             if postbacks(row) == 0 and row["spend"] == "" and row["roas_note"] != "mixed-spend-currencies"]
    checks.check(not empty, "no cohort row without postbacks or spend", f"      {empty[:5]}")
    wrong = []
    for day in cohort_days(swift_out):
        with open(f"{swift_out}/_cohort_manifests/dt={day}.json") as file:
            manifest = json.load(file)
        of = lambda table: [row for row in rows if row["table"] == table and row["dt"] == day]  # noqa: E731
        production, development = of(COHORT_TABLES[0]), of(COHORT_TABLES[1])
        totals = manifest.get("totals", {})
        expected = {"postbacks": sum(map(postbacks, production)), "installs": sum(int(row["installs"]) for row in production),
                    "development_postbacks": sum(map(postbacks, development))}
        if list(totals)[:3] != list(expected) or any(totals[key] != value for key, value in expected.items()):
            wrong.append(f"dt={day}: totals {totals}, the files' {expected}")
        keys = list(manifest)
        if (keys[keys.index("inputs") + 1:keys.index("outputs")] != ["fx_rates"] or manifest["fx_rates"].get("file") != "fx.csv"
                or any(not entry["path"].startswith(("agg/", "spend/")) for entry in manifest["inputs"])):
            wrong.append(f"dt={day}: fields {keys}, fx_rates {manifest.get('fx_rates')}")
    checks.check(not wrong, "cohort manifests as documented (totals of the files, fx_rates before outputs)", "\n".join(f"      {w}" for w in wrong[:5]))


def csv_text(value):
    """A Parquet value as CSVLine writes it, to compare Parquet rows with the CSV files."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        text = format(value.normalize(), "f")
        return text
    if isinstance(value, (datetime.date, int)):
        return str(value)
    if value == "":
        return '""'
    if any(c in value for c in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def arrow_type(declared):
    """The Arrow type a reader sees for a declared column type (docs/aggregate.md's CREATE TABLE)."""
    import pyarrow as pa

    simple = {"DATE": pa.date32(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "BOOLEAN": pa.bool_(), "VARCHAR": pa.string(),
              "DOUBLE": pa.float64()}
    if declared in simple:
        return simple[declared]
    precision, scale = declared[len("DECIMAL("):-1].split(",")
    return pa.decimal128(int(precision), int(scale))


def compare_parquet(checks, swift_out, parquet_out, tables=TABLES, days=None):
    """Spark's Parquet: each column typed as declared (pyarrow's schema), and the same rows as what
    `postback aggregate` published: its Parquet file, value for value, where it wrote one, else its CSV."""
    try:
        import duckdb
        import pyarrow.parquet as pq
    except ImportError:
        checks.check(False, "Parquet output: needs DuckDB and pyarrow to read it (scripts/setup --test installs them into .build/venv)")
        return
    declared = dict(COHORT_COLUMN_TYPES, **RECORD_SCHEMA["column_types"])
    for table in tables:
        for day in days or range_days():
            path = f"{parquet_out}/{table}/dt={day.isoformat()}/part-00000.parquet"
            if not os.path.exists(path):
                checks.check(False, f"{table}/dt={day}/part-00000.parquet exists")
                continue
            spark_table = pq.read_table(path)
            wrong = [f"{field.name}: {field.type}, declared {declared[field.name]}" for field in spark_table.schema
                     if field.type != arrow_type(declared[field.name])]
            checks.check(not wrong, f"{table}/dt={day}/part-00000.parquet: every column typed as declared", "\n".join(wrong))
            swift_parquet = f"{swift_out}/{table}/dt={day.isoformat()}/part-00000.parquet"
            if os.path.exists(swift_parquet):
                expected_table = pq.read_table(swift_parquet)
                same_columns = expected_table.column_names == spark_table.column_names
                differences = [] if same_columns else [f"columns: {expected_table.column_names} != {spark_table.column_names}"]
                if same_columns:
                    expected_rows, actual_rows = expected_table.to_pylist(), spark_table.to_pylist()
                    if len(expected_rows) != len(actual_rows):
                        differences.append(f"{len(expected_rows)} rows from postback aggregate, {len(actual_rows)} from Spark")
                    for number, (want, got) in enumerate(zip(expected_rows, actual_rows)):
                        for column in expected_table.column_names:
                            if column in MODEL_COLUMNS and type(want[column]) is type(got[column]) and model_values_close(
                                    column, want[column], got[column]):
                                continue
                            if want[column] != got[column] or type(want[column]) is not type(got[column]):
                                differences.append(f"row {number + 1}, {column}: {want[column]!r} != {got[column]!r}")
                        if len(differences) > 10:
                            break
                checks.check(not differences, f"{table}/dt={day}/part-00000.parquet: value for value the Parquet file postback aggregate wrote",
                             "\n".join("      " + line for line in differences[:10]))
                continue
            expected = read_or_none(f"{swift_out}/{table}/dt={day.isoformat()}/part-00000.csv") or b""
            cursor = duckdb.connect().execute(f"SELECT * FROM read_parquet('{path}', hive_partitioning = false)")
            header = ",".join(column[0] for column in cursor.description)
            lines = [",".join(csv_text(value) for value in row) for row in cursor.fetchall()]
            actual = ("\n".join([header] + lines) + "\n").encode()
            checks.check(actual == expected, f"{table}/dt={day}/part-00000.parquet: the same rows, columns and order as the CSV",
                         first_differences(expected, actual))


def check_rollup_sums(checks, swift_out):
    """Per day and currency, every measure summed over each rollup equals its sum over the detail rows
    with production postbacks or rejected records (a grain seen only in development postbacks has no
    rollup row: docs/aggregate.md), the development rollup's postbacks the detail rows'
    development_postbacks,
    and a rollup never has more rows than the detail table. Exact decimals, never floats."""
    import csv

    def read(table, day):
        with open(f"{swift_out}/{table}/dt={day.isoformat()}/part-00000.csv", newline="") as file:
            return list(csv.DictReader(file))

    def sums(rows, measures):
        totals = {}
        for row in rows:
            per_currency = totals.setdefault(row["currency"], {})
            for measure in measures:
                if row[measure] != "":
                    per_currency[measure] = per_currency.get(measure, decimal.Decimal(0)) + decimal.Decimal(row[measure])
        return totals

    merged = False
    for day in range_days():
        every_detail_row = read(DETAIL_TABLE, day)
        detail = [r for r in every_detail_row if r["postbacks"] != "0" or r["rejected_postbacks"] not in ("", "0")]
        for rollup in RECORD_SCHEMA["rollups"]:
            rows = read(rollup["table"], day)
            measures = [c for c in rollup["columns"] if c not in rollup["kept"]]
            merged = merged or len(rows) < len(detail)
            checks.check(sums(rows, measures) == sums(detail, measures) and len(rows) <= len(detail),
                         f"{rollup['table']}/dt={day}: every measure's sum per currency is the detail table's ({len(rows)} of {len(detail)} rows)")
        development = read(published_schema.CAMPAIGN_DAILY_DEVELOPMENT, day)
        checks.check(sum(int(r["postbacks"]) for r in development) == sum(int(r["development_postbacks"]) for r in every_detail_row),
                     f"{published_schema.CAMPAIGN_DAILY_DEVELOPMENT}/dt={day}: its postbacks are the detail table's development postbacks")
    checks.check(merged, "a rollup merged detail rows (the grouping was exercised)")


def check_coverage(checks, swift_out):
    """What the spool must have exercised, read off the Swift output (not expected values)."""
    import csv

    rows = []
    for day in range_days():
        with open(f"{swift_out}/{DETAIL_TABLE}/dt={day.isoformat()}/part-00000.csv", newline="") as file:
            rows += list(csv.DictReader(file))
    manifests = [json.loads(read_or_none(f"{swift_out}/_manifests/dt={day.isoformat()}.json")) for day in range_days()]
    totals = {key: sum(m["totals"][key] for m in manifests) for key in ("duplicates_same_day", "duplicates_of_earlier_days", "corrupt_lines", "torn_tails")}

    def having(**conditions):
        return any(all(row[key] in (values if isinstance(values, tuple) else (values,)) for key, values in conditions.items())
                   and row["postbacks"] != "0" for row in rows)

    coverage = {
        "SKAdNetwork 1.0, 2.2, 3.0 and 4.0 and AdAttributionKit": all(having(version=v) for v in ("1.0", "2.2", "3.0", "4.0"))
        and having(protocol="adattributionkit"),
        "windows 0, 1 and 2": all(having(postback_sequence_index=w) for w in "012"),
        "fine, coarse, null and none values": all(having(cv_kind=k) for k in ("fine", "coarse", "null", "none")),
        "download, redownload and re-engagement": all(having(conversion_type=t) for t in ("download", "redownload", "re-engagement")),
        "both effective periods of a schema, and no_schema": having(schema_id="example-game/2025-06-01")
        and having(schema_id="example-game/2026-02-26") and having(decoded_label="no_schema"),
        "labels and dimensions that need quoting": having(decoded_label='install only, "v2"') and having(geo="EU, UK"),
        "decoded campaigns from source identifiers and campaign ids": having(campaign_id="", campaign=tuple(f"campaign_{c}" for c in range(10, 30)))
        and any(row["campaign"].startswith(("c1", "c2", "old_")) and row["campaign_id"] for row in rows),
        "development and rejected postbacks": any(row["development_postbacks"] != "0" for row in rows) and any(row["rejected_postbacks"] != "0" for row in rows),
        "development postbacks decoded in campaign_daily_development": any(
            row["revenue_est_sum"] != "" and row["postbacks"] != "0"
            for day in range_days()
            for row in csv.DictReader(open(f"{swift_out}/{published_schema.CAMPAIGN_DAILY_DEVELOPMENT}/dt={day.isoformat()}/part-00000.csv", newline=""))),
        "same-day and earlier-day duplicates": totals["duplicates_same_day"] > 0 and totals["duplicates_of_earlier_days"] > 0,
        "ties broken by writer and by line": having(country_code="FIRST") and having(country_code="EARLY")
        and any(r["country_code"].startswith("TIE-rx2") for r in rows),
        "corrupt lines and torn tails": totals["corrupt_lines"] > 0 and totals["torn_tails"] >= 3,
        "conflicting copies counted in their first copy's row (one key twice)": any(row["conflicting_copies"] not in ("", "0") for row in rows)
        and any(int(row["conflicting_copies"] or 0) >= 2 for row in rows),
        "a day without input (header only)": not any(True for _ in open(f"{swift_out}/{DETAIL_TABLE}/dt={RANGE[1].isoformat()}/part-00000.csv").readlines()[1:]),
    }
    for what, covered in coverage.items():
        checks.check(covered, f"spool covers {what}")


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postback", default=os.environ.get("POSTBACK"), help="the postback binary (default $POSTBACK)")
    parser.add_argument("--keep", help="work in this directory and keep it (default: a temporary one, removed)")
    args = parser.parse_args()
    if not args.postback or not os.access(args.postback, os.X_OK):
        sys.exit("give --postback PATH (or POSTBACK=...): the built postback binary")
    postback = os.path.abspath(args.postback)
    work = args.keep or tempfile.mkdtemp(prefix="postback-spark-equivalence-")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    data, schemas, decode = f"{work}/data", f"{work}/schemas", f"{work}/decode"
    checks = Checks()
    started = time.time()
    try:
        synthesize_spool(postback, data)
        add_edge_cases(data)
        write_schemas(schemas)
        fx = import_spend(postback, data, schemas, work)
        lines = sum(sum(1 for _ in open(os.path.join(d, f), "rb")) for d, _, fs in os.walk(f"{data}/raw") for f in fs)
        print(f"spool: {lines} lines under {data}/raw; range {RANGE[0]}..{RANGE[1]}, lookback {LOOKBACK_DAYS} days")

        window = ["--from", RANGE[0].isoformat(), "--to", RANGE[1].isoformat(), "--lookback-days", str(LOOKBACK_DAYS)]
        swift, swift_seconds = run([postback, "aggregate", "--data", data, "--schemas", schemas, *window, "--fx", fx])
        print(f"postback aggregate: exit {swift.returncode}, {swift_seconds:.1f} s")
        if not checks.check(swift.returncode in (0, 1), "postback aggregate ran", swift.stderr[-2000:]):
            return 1
        job = [sys.executable, f"{HERE}/postback_aggregate.py", "--data", data, *window, "--fx", fx]
        spark, spark_seconds = run([*job, "--schemas", schemas, "--postback", postback, "--out", f"{work}/spark-csv"])
        print(f"spark job (CSV): exit {spark.returncode}, {spark_seconds:.1f} s")
        checks.check(spark.returncode == swift.returncode, "same exit status (1: corrupt lines were reported)",
                     f"      postback {swift.returncode}, spark {spark.returncode}\n{spark.stderr[-3000:]}")
        checks.check(swift.stdout.splitlines()[0].split(" (")[0] in spark.stdout if swift.stdout else False,
                     "same summary line for the first day", f"      postback: {swift.stdout.splitlines()[:1]}\n      spark: {spark.stdout.splitlines()[:1]}")
        cohort_lines = [[line for line in result.stdout.splitlines() if line.startswith("cohorts")] for result in (swift, spark)]
        checks.check(cohort_lines[0] == cohort_lines[1] and len(cohort_lines[0]) == 1, "same summary line for the cohorts",
                     f"      postback: {cohort_lines[0]}\n      spark: {cohort_lines[1]}")
        compare_csv(checks, f"{data}/agg", f"{work}/spark-csv")
        compare_manifests(checks, f"{data}/agg", f"{work}/spark-csv")
        check_coverage(checks, f"{data}/agg")
        check_rollup_sums(checks, f"{data}/agg")
        compare_cohorts(checks, f"{data}/agg", f"{work}/spark-csv")
        check_cohort_coverage(checks, f"{data}/agg")

        os.makedirs(decode)
        for table in ("values", "events", "sources"):
            run([postback, "schema", "export", "--schemas", schemas, "--table", table, "--out", f"{decode}/{table}.csv"])
        parquet, parquet_seconds = run([*job, "--decode-table", decode, "--out", f"{work}/spark-parquet", "--format", "parquet"])
        print(f"spark job (Parquet): exit {parquet.returncode}, {parquet_seconds:.1f} s")
        checks.check(parquet.returncode == swift.returncode, "Parquet run: same exit status", parquet.stderr[-3000:])
        # postback aggregate's own Parquet, from a copy of the same spool: Spark's files must equal it value for value.
        data_parquet = f"{work}/data-parquet"
        shutil.copytree(f"{data}/raw", f"{data_parquet}/raw")
        shutil.copytree(f"{data}/spend", f"{data_parquet}/spend")
        swift_parquet, _ = run([postback, "aggregate", "--data", data_parquet, "--schemas", schemas, *window, "--format", "parquet", "--fx", fx])
        checks.check(swift_parquet.returncode == swift.returncode, "postback aggregate --format parquet: same exit status",
                     swift_parquet.stderr[-2000:])
        compare_parquet(checks, f"{data_parquet}/agg", f"{work}/spark-parquet")
        parquet_cohorts = cohort_days(f"{data_parquet}/agg")
        checks.check(parquet_cohorts == cohort_days(f"{work}/spark-parquet") and parquet_cohorts == cohort_days(f"{data}/agg"),
                     f"Parquet run: the same {len(parquet_cohorts)} install dates' cohorts rebuilt")
        compare_parquet(checks, f"{data_parquet}/agg", f"{work}/spark-parquet", COHORT_TABLES,
                        [datetime.date.fromisoformat(day) for day in parquet_cohorts])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"({time.time() - started:.0f} s in all)")
    print(f"equivalence: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
