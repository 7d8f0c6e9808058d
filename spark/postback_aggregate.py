#!/usr/bin/env python3
"""postback_aggregate.py: the nightly `postback aggregate` as an Apache Spark (PySpark) job.

Reads the Hive-partitioned spool the receivers write (`DATA/raw/postbacks/dt=D/part-<writer>-<seq>.jsonl`
and `DATA/raw/rejected/...`), keeps the first received copy of every dedup key (across writers, and
not again if the key came in during the lookback days), decodes conversion values and source
identifiers by joining the flat decode table that `postback schema export` writes, and publishes
the same tables as `postback aggregate`, byte for byte:

    OUT/postback_detail_daily/dt=D/part-00000.csv   (the detail grain)
    OUT/campaign_daily/dt=D/part-00000.csv          (rollups of the detail table: record-schema.json "rollups")
    OUT/publisher_daily/dt=D/part-00000.csv
    OUT/country_daily/dt=D/part-00000.csv
    OUT/campaign_events_daily/dt=D/part-00000.csv
    OUT/campaign_daily_development/dt=D/part-00000.csv  (the development rows, rolled up like campaign_daily)
    OUT/_manifests/dt=D.json            (written last: totals, inputs, outputs)

then the install-date cohorts, from the published campaign_daily files and the stored spend
(DATA/spend/dt=I/SOURCE.csv, from `postback spend import`), for the install dates the days can touch:

    OUT/campaign_cohort_daily/dt=I/part-00000.csv               (spend, CPI, ROAS per campaign)
    OUT/campaign_cohort_daily_development/dt=I/part-00000.csv
    OUT/_cohort_manifests/dt=I.json     (written last)

Usage:

    scripts/venv-python spark/postback_aggregate.py --data DATA --decode-table DIR --date 2026-03-10
    scripts/venv-python spark/postback_aggregate.py --data DATA --schemas schemas/ --from 2026-03-01 --to 2026-03-31
    spark-submit spark/postback_aggregate.py --data s3a://bucket/store --decode-table s3a://bucket/decode \\
        --from 2026-03-01 --to 2026-03-31 --out s3a://bucket/store/agg [--format parquet]

`--decode-table DIR` holds `values.csv`, `events.csv` and `sources.csv`
(`postback schema export --schemas S --table values --out DIR/values.csv`, and so on);
`--schemas S` runs those exports here (needs the `postback` binary: `--postback PATH` or PATH).
Run directly with python3, it starts Spark in local mode (`--master`, default local[2]); under
spark-submit the master and resources come from spark-submit. docs/spark.md has the details.

The rules (docs/aggregate.md §3, §4) are the Swift aggregator's; where they live there is noted
next to each step. Nothing here knows the schema format: labels, revenue, events, schema selection
and source-identifier dimensions all come from the decode table.

Exit status: 0 every day published; 1 published, but some spool lines were corrupt (not counted) or
could not be read without re-parsing the stored body (see `unreadable_lines`); 2 usage or I/O error,
or a published cohort this run would make worse (not replaced without --force).
"""

import argparse
import datetime
import decimal
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

TOOL = "postback-spark 1"



def load_record_schema():
    """spark/record-schema.json, next to this script (with spark-submit in cluster mode, ship it with
    --files): the spool record's fields and the tables' columns as `postback` declares them
    (Sources/PostbackStore/RecordFields.swift, Sources/AggregateSchema/AggregateTables.swift),
    exported by a Swift test that fails when the file is stale. Nothing here keeps its own copy."""
    for directory in (os.path.dirname(os.path.abspath(__file__)), os.getcwd()):
        path = os.path.join(directory, "record-schema.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                return json.load(file)
    sys.exit("postback_aggregate: record-schema.json not found next to this script or in the working directory; "
             "keep spark/record-schema.json with the script (spark-submit --files spark/record-schema.json)")


RECORD_SCHEMA = load_record_schema()
# Table names, columns and types, and the record vocabulary: spark/published_schema.py, generated from the
# same declarations (Sources/AggregateSchema) by a Swift test that fails when it is stale; next to this
# script (with spark-submit in cluster mode, ship it with --py-files spark/published_schema.py).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)
# Output columns, in file order (the output contract; the equivalence test compares the headers too).
DIMENSION_COLUMNS = RECORD_SCHEMA["dimension_columns"]
DETAIL_COLUMNS = RECORD_SCHEMA["detail_columns"]
CAMPAIGN_EVENTS_DAILY_COLUMNS = RECORD_SCHEMA["campaign_events_daily_columns"]
# The published tables, in the order they are written.
TABLES = RECORD_SCHEMA["tables"]
DETAIL_TABLE = TABLES[0]
# Each rollup of the detail table: its table, the detail columns it groups by (`kept`) and its file
# columns (kept + every measure, in detail order); campaign_daily_development rolls up the development
# rows like DEVELOPMENT_ROLLUP.
ROLLUPS = RECORD_SCHEMA["rollups"]
DEVELOPMENT_ROLLUP = next(rollup for rollup in ROLLUPS if rollup["table"] == RECORD_SCHEMA["development_rollup"])
MONEY_COLUMNS = set(RECORD_SCHEMA["money_columns"])
# Exact decimals kept as integers of 10^-scale units: money in millionths (DECIMAL(38, 6)); the
# cohort tables add theirs below.
DECIMAL_SCALES = {column: 6 for column in MONEY_COLUMNS}
# The model's amounts (MODEL_MONEY_COLUMNS, below), kept in millionths like the measured ones.
DECIMAL_SCALES.update({column: 6 for column in ("modeled_null_revenue_est", "modeled_null_revenue_low",
                                                "modeled_null_revenue_high", "modeled_revenue_est")})
# Counts of the detail table: 0 (never empty) on a rejected record's row.
POSTBACK_COUNT_COLUMNS = set(RECORD_SCHEMA["postback_count_columns"])
# What a rejected record's row keeps: what it claims to be (RowKeyEncoder.rejectedFields).
REJECTED_ROW_FIELDS = RECORD_SCHEMA["rejected_row_fields"]
# The attribution fields that place a postback in a row (RowKeyEncoder.grain).
GRAIN_FIELDS = RECORD_SCHEMA["row_grain"]
ATTRIBUTION_FIELDS = RECORD_SCHEMA["attribution_fields"]
# SpoolRecord: the newest record format this job reads (format 1 records have no `format` key).
CURRENT_RECORD_FORMAT = RECORD_SCHEMA["record_format"]
# Record keys that SpoolRecord(line:) never rejects a record for (a rejected record's client address and
# body reduction): not read here, so a value of another type does not make the line corrupt.
UNREAD_RECORD_KEYS = {"client", "body_kept", "body_sha256", "body_bytes"}
# SKAdNetwork versions with three conversion windows (SKAdNetworkVersion.hasConversionWindows).
VERSIONS_WITH_CONVERSION_WINDOWS = RECORD_SCHEMA["versions_with_conversion_windows"]
DECODE_TABLES = ("values", "events", "sources")
VERIFICATION_STATUSES = published_schema.VERIFICATION_STATUSES
# PostbackFlag.Field and .Action, and QuarantineReason: a record naming anything else is not valid.
FLAG_FIELDS = published_schema.FLAG_FIELDS
FLAG_ACTIONS = published_schema.FLAG_ACTIONS
QUARANTINE_REASONS = published_schema.QUARANTINE_REASONS
# SegmentReader.maximumLineBytes: longer lines are never records.
MAXIMUM_LINE_BYTES = 4 << 20
MICROS_PER_DAY = 86_400_000_000
MICROS_PER_HOUR = 3_600_000_000


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Arguments


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="postback_aggregate.py",
        description="The nightly postback aggregation on Apache Spark: same input, rules and output as `postback aggregate`.")
    parser.add_argument("--data", required=True, help="the store: spool read from DATA/raw (local path, s3a://, gs://, hdfs://)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--decode-table", metavar="DIR", help="directory with values.csv, events.csv, sources.csv from `postback schema export`")
    source.add_argument("--schemas", metavar="DIR", help="schema directory: export the decode table here with `postback schema export` "
                        "(neither option: no schemas, every app counted with no revenue, as postback aggregate without --schemas)")
    parser.add_argument("--postback", default=None, help="the postback binary for --schemas (default: $POSTBACK, then PATH)")
    parser.add_argument("--date", help="one day, YYYY-MM-DD")
    parser.add_argument("--from", dest="first", help="first day of a range (with --to), inclusive")
    parser.add_argument("--to", dest="last", help="last day of a range, inclusive")
    parser.add_argument("--lookback-days", type=int, default=10,
                        help="do not count again a key received in the N days before (default 10, 0 to turn off)")
    parser.add_argument("--out", help="where the tables go (default DATA/agg, the layout `postback aggregate` writes)")
    parser.add_argument("--format", choices=["csv", "parquet"], default="csv", help="csv (default, byte-identical to postback aggregate) or parquet")
    parser.add_argument("--json", action="store_true", help="one JSON summary object per day on stdout")
    parser.add_argument("--fx", metavar="FILE", help="daily exchange rates (date,from,to,rate) to bring spend into the revenue's currency")
    parser.add_argument("--skip-cohorts", action="store_true", help="publish the day tables only, not campaign_cohort_daily")
    parser.add_argument("--force", action="store_true",
                        help="replace a published cohort even when this run has fewer postbacks or development postbacks, "
                             "or an earlier complete_through, for it")
    parser.add_argument("--master", default=None, help="Spark master when run with python3 directly (default local[2]); ignored under spark-submit")
    parser.add_argument("--driver-memory", default="1g", help="driver memory in local mode (default 1g)")
    args = parser.parse_args(argv)

    def day(text, option):
        try:
            if len(text) != 10:
                raise ValueError(text)
            return datetime.date.fromisoformat(text)
        except ValueError:
            raise UsageError(f"{option} must be a date YYYY-MM-DD, got '{text}'") from None

    if args.date and (args.first or args.last):
        raise UsageError("give either --date or --from/--to, not both")
    if args.date:
        args.first = args.last = day(args.date, "--date")
    elif args.first and args.last:
        args.first, args.last = day(args.first, "--from"), day(args.last, "--to")
        if args.first > args.last:
            raise UsageError(f"--from {args.first} is after --to {args.last}")
        if (args.last - args.first).days >= 3660:
            raise UsageError("--from/--to spans more than ten years")
    elif args.first or args.last:
        raise UsageError("--from and --to go together")
    else:
        raise UsageError("give --date DAY, or --from DAY and --to DAY")
    if not 0 <= args.lookback_days <= 400:
        raise UsageError("--lookback-days must be 0 to 400")
    args.data = args.data.rstrip("/") if len(args.data) > 1 else args.data
    args.out = (args.out or args.data + "/agg").rstrip("/")
    return args


def days_between(first, last):
    return [first + datetime.timedelta(days=offset) for offset in range((last - first).days + 1)]


# ---------------------------------------------------------------------------------------------
# Spark and the file system (any Hadoop file system: local, s3a://, gs://, hdfs://)


def start_spark(args):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("postback-aggregate")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Started with python3, not spark-submit: a small local Spark (2 cores by default), on loopback only.
        builder = (builder.master(args.master or "local[2]")
                   .config("spark.driver.memory", args.driver_memory)
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "4"))
    spark = (builder
             # The rules below rely on non-ANSI semantics: make_date() of an impossible date is null.
             .config("spark.sql.ansi.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


class FileSystem:
    """Driver-side file operations through Hadoop's FileSystem API, so that the same code lists,
    moves and writes files on local disk and on object storage."""

    def __init__(self, spark):
        self.jvm = spark._jvm
        self.conf = spark._jsc.hadoopConfiguration()

    def _resolve(self, path):
        hadoop_path = self.jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(self.conf)
        # The local file system keeps a hidden .crc file next to every file it writes; the raw one does not.
        if fs.getScheme() == "file":
            fs = self.jvm.org.apache.hadoop.fs.FileSystem.getLocal(self.conf).getRawFileSystem()
        return fs, hadoop_path

    def qualified(self, path):
        fs, hadoop_path = self._resolve(path)
        return str(fs.makeQualified(hadoop_path).toString())

    def exists(self, path):
        fs, hadoop_path = self._resolve(path)
        return fs.exists(hadoop_path)

    def list_files(self, directory):
        """(name, size) of the plain files directly in `directory`; empty if it does not exist."""
        fs, hadoop_path = self._resolve(directory)
        if not fs.exists(hadoop_path):
            return []
        return [(str(status.getPath().getName()), int(status.getLen())) for status in fs.listStatus(hadoop_path) if status.isFile()]

    def read_bytes(self, path):
        if "://" not in path:
            try:
                with open(path, "rb") as file:
                    return file.read()
            except OSError as error:
                raise UsageError(f"{path}: {error.strerror}") from None
        fs, hadoop_path = self._resolve(path)
        if not fs.exists(hadoop_path):
            raise UsageError(f"{path}: no such file")
        stream = fs.open(hadoop_path)
        try:
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def first_line(self, path):
        """The first line of a text file (a CSV header), without reading the rest."""
        if "://" not in path:
            with open(path, "rb") as file:
                return file.readline().rstrip(b"\n").decode("utf-8")
        fs, hadoop_path = self._resolve(path)
        stream = fs.open(hadoop_path)
        try:
            reader = self.jvm.java.io.BufferedReader(self.jvm.java.io.InputStreamReader(stream, "UTF-8"))
            return str(reader.readLine() or "")
        finally:
            stream.close()

    def write_bytes(self, path, data):
        """Writes to a temporary name next to `path`, then renames it over `path`."""
        temporary = f"{path}.tmp-{uuid.uuid4().hex}"
        fs, hadoop_path = self._resolve(temporary)
        stream = fs.create(hadoop_path, True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()
        self.replace(temporary, path)

    def replace(self, source, target):
        """Moves `source` to `target`, replacing it (rename on a file system, copy on object stores)."""
        fs, target_path = self._resolve(target)
        _, source_path = self._resolve(source)
        fs.mkdirs(target_path.getParent())
        if fs.exists(target_path):
            fs.delete(target_path, False)
        if not fs.rename(source_path, target_path):
            raise IOError(f"cannot move {source} to {target}")

    def delete_tree(self, path):
        fs, hadoop_path = self._resolve(path)
        if fs.exists(hadoop_path):
            fs.delete(hadoop_path, True)


# ---------------------------------------------------------------------------------------------
# The decode table (`postback schema export`): small tables, broadcast to every join


def export_decode_table(schemas, postback):
    """Runs `postback schema export` for each table into a temporary directory."""
    binary = postback or os.environ.get("POSTBACK") or shutil.which("postback")
    if not binary:
        raise UsageError("--schemas needs the postback binary: give --postback PATH, set POSTBACK, or put it on PATH")
    directory = tempfile.mkdtemp(prefix="postback-decode-")
    if schemas is None:  # no schemas: the empty decode table (headers only) of an empty schema directory
        schemas = tempfile.mkdtemp(prefix="postback-no-schemas-", dir=directory)
    for table in DECODE_TABLES:
        result = subprocess.run([binary, "schema", "export", "--schemas", schemas, "--table", table, "--out", f"{directory}/{table}.csv"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise UsageError(f"postback schema export failed ({result.returncode}):\n{result.stderr.strip()}")
    return directory


def load_decode_tables(spark, fs, directory, staging):
    """The three exported tables as DataFrames, plus the schema-selection table derived from `values`.
    Amounts become integer micro-units, as the aggregator sums them (exact).

    The driver reads each file (a local path, a file shipped with spark-submit --files, or object
    storage); unless Spark runs in this process (local mode), it copies it into the job's staging
    directory under --out, which the executors can read. Spark's CSV reader then parses it (RFC 4180,
    quoted line breaks). `postback` writes an empty field for null and `""` for an empty string;
    Spark reads both as null unless the quoted one is given a marker.
    """
    from pyspark.sql import functions as F

    empty_marker = "\u0001empty\u0001"
    frames, digests = {}, {}
    for table in DECODE_TABLES:
        source = f"{directory.rstrip('/')}/{table}.csv"
        data = fs.read_bytes(source)
        if not data.startswith(b"schema_id,"):
            raise UsageError(f"{source}: not a table written by postback schema export")
        digests[table] = hashlib.sha256(data).hexdigest()
        if spark.sparkContext.master.startswith("local") and "://" not in source:
            copy = "file://" + os.path.abspath(source)   # the executors are this process: no copy needed
        else:
            copy = f"{staging}/decode/{table}.csv"
            fs.write_bytes(copy, data)
        # The header gives the columns (all text), so Spark need not read the file to learn them.
        header = data[:data.index(b"\n")].decode().split(",")
        columns = ", ".join(f"`{name}` string" for name in header)
        raw = (spark.read.schema(columns).option("header", True).option("multiLine", True).option("quote", '"').option("escape", '"')
               .option("emptyValue", empty_marker).option("mode", "FAILFAST").option("encoding", "UTF-8").csv(copy))
        frames[table] = raw.select(*[F.when(F.col(c) == empty_marker, F.lit("")).otherwise(text_cell(F.col(c))).alias(c)
                                     for c in raw.columns])

    def micros(column):
        return (F.col(column).cast("decimal(18,6)") * F.lit(1_000_000)).cast("long")

    values = frames["values"].select(
        "schema_id", F.col("app_id").cast("long").alias("app_id"),
        F.col("effective_from").cast("date").alias("effective_from"), F.col("effective_to").cast("date").alias("effective_to"),
        "protocol", "conversion_type", F.col("postback_sequence_index").cast("int").alias("postback_sequence_index"),
        "cv_kind", "cv_value", (F.col("mapped") == "true").alias("mapped"), "decoded_label",
        micros("revenue_min").alias("revenue_min"), micros("revenue_max").alias("revenue_max"),
        micros("revenue_est").alias("revenue_est"), "currency")
    # One row per schema, protocol and conversion type it applies to: what SchemaCatalog.schemaIndex selects from.
    selection = values.select("schema_id", "app_id", "protocol", "conversion_type", "effective_from", "effective_to", "currency").distinct()
    events = frames["events"].select(
        "schema_id", F.col("postback_sequence_index").cast("int").alias("postback_sequence_index"), "cv_kind", "cv_value",
        "event_name", F.col("min_count").cast("long").alias("min_count"), F.col("max_count").cast("long").alias("max_count"))
    sources = frames["sources"].select(
        "schema_id", "ad_network_id", F.col("valid_from").cast("date").alias("valid_from"), F.col("valid_to").cast("date").alias("valid_to"),
        "id_kind", "id_value", "campaign", "geo", "placement")
    return {"values": values, "selection": selection, "events": events, "sources": sources, "digests": digests}


# ---------------------------------------------------------------------------------------------
# The spool: which segments, and each line classified (SegmentScanner, SpoolLineDecoder, SpoolRecord)


def parse_segment_name(name):
    """(writer, sequence) of `part-<writer>-<seq>.jsonl`, or None (StoreLayout.parseSegmentName:
    other files, such as temporary ones, are not segments)."""
    if not (name.startswith("part-") and name.endswith(".jsonl")):
        return None
    stem = name[5:-6]
    dash = stem.rfind("-")
    if dash < 0:
        return None
    writer, digits = stem[:dash], stem[dash + 1:]
    sign_free = digits[1:] if digits[:1] in ("+", "-") else digits
    if not sign_free.isascii() or not sign_free.isdigit():
        return None
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    if not 1 <= len(writer) <= 64 or writer.startswith(".") or not set(writer) <= allowed:
        return None
    return writer, int(digits)


def list_segments(fs, data, days_with_rejected, days_postbacks_only):
    """Every segment to read, as dicts with the fields SegmentTask has: the day, the spool, the
    manifest name, writer and sequence (the dedup tie-breaker after received_at), and the size."""
    segments = []
    for day, spools in [(d, ("postbacks", "rejected")) for d in days_with_rejected] + [(d, ("postbacks",)) for d in days_postbacks_only]:
        for spool in spools:
            directory = f"{data}/raw/{spool}/dt={day.isoformat()}"
            for name, size in fs.list_files(directory):
                parsed = parse_segment_name(name)
                if parsed is None:
                    continue
                segments.append({"dt": day.isoformat(), "spool": spool, "name": f"raw/{spool}/dt={day.isoformat()}/{name}",
                                 "path": fs.qualified(f"{directory}/{name}"), "writer": parsed[0], "sequence": parsed[1], "bytes": size})
    segments.sort(key=lambda s: s["name"])
    return segments


def record_schema():
    """The spool record (SpoolRecord.encoded) as Spark reads it; `_corrupt` is set when a field has
    the wrong JSON type or the line is not JSON."""
    from pyspark.sql import types as T

    scalar = {"string": T.StringType(), "integer": T.LongType(), "boolean": T.BooleanType()}
    attribution = T.StructType([T.StructField(field["key"], scalar[field["type"]]) for field in ATTRIBUTION_FIELDS])
    flag = T.StructType([T.StructField(name, T.StringType()) for name in ("field", "action", "raw", "note")])
    nested = {"object": attribution, "array": T.ArrayType(flag)}
    fields = [T.StructField(key["key"], nested.get(key["type"]) or scalar[key["type"]])
              for key in RECORD_SCHEMA["record_keys"] if key["key"] not in UNREAD_RECORD_KEYS]
    return T.StructType(fields + [T.StructField("_corrupt", T.StringType())])


def read_spool_lines(spark, segments):
    """Every line of every segment listed, with its file (as Spark names it), the file's size, and
    the line's place: (block start, id) orders the lines of a file even when Spark splits the file
    between tasks. Only the segments listed are read: partition pruning by dt is the listing."""
    from pyspark.sql import functions as F

    if not segments:
        return spark.range(0).select(F.lit("").alias("path"), F.lit(0).cast("long").alias("file_bytes"), F.lit(0).cast("long").alias("block"),
                                     F.lit(0).cast("long").alias("position"), F.lit("").alias("value"))
    # lineSep "\n" exactly as the spool reader splits (Hadoop's default also splits at a lone \r).
    return (spark.read.option("lineSep", "\n").text([s["path"] for s in segments])
            .select(F.col("_metadata.file_path").alias("path"), F.col("_metadata.file_size").alias("file_bytes"),
                    F.col("_metadata.file_block_start").alias("block"), F.monotonically_increasing_id().alias("position"), "value"))


def file_facts(lines):
    """One row per file: what its path says (the store-relative name, day, spool, writer, sequence)
    and what its lines add up to (bytes with one newline each, the last line's place)."""
    from pyspark.sql import functions as F

    per_file = lines.groupBy("path").agg(
        F.first("file_bytes").alias("file_bytes"), F.sum(F.octet_length("value") + 1).alias("accounted_bytes"),
        F.max(F.struct("block", "position")).alias("last_line"))
    name = F.regexp_extract("path", r"(raw/(postbacks|rejected)/dt=[^/]+/[^/]+)$", 1)
    segment = r"^raw/(postbacks|rejected)/dt=([0-9-]+)/part-(.+)-([+]?[0-9]+)\.jsonl$"
    return per_file.select(
        "path", "file_bytes", "accounted_bytes", "last_line", name.alias("name"), F.regexp_extract(name, segment, 2).alias("dt"),
        F.regexp_extract(name, segment, 1).alias("spool"), F.regexp_extract(name, segment, 3).alias("writer"),
        F.regexp_extract(name, segment, 4).cast("long").alias("sequence"))


def classify_lines(lines):
    """Parses each line and gives it a `state`, as SegmentScanner and SpoolLineDecoder do:

    - `torn`: the last line of its file when it has no newline, or when it is not a valid record,
      or any line with a NUL byte that is not one (what a crash leaves); `corrupt`: any other line
      that is not a valid record. Neither counts.
    - `rejected`: a valid record in raw/rejected, or a non-verified one in raw/postbacks.
    - `postback`: a verified record in raw/postbacks with a dedup key and attribution, a window of
      0-2 and a fine value of 0-63 (anything else there is corrupt: no verified postback has it).
    - `unreadable`: a verified record without dedup_key or attribution. `postback aggregate` reads
      those again from the stored body, which takes the verifier's parser; the receiver always
      writes both, so this only flags records from elsewhere (reported, exit status 1).
    """
    from pyspark.sql import functions as F

    # A file whose lines (plus one newline each) add up to one byte more than its size ends without a newline.
    line_bytes = F.octet_length("value")
    lines = lines.drop("file_bytes").join(F.broadcast(file_facts(lines)), "path")
    is_last = F.struct("block", "position") == F.col("last_line")
    without_newline = is_last & (F.col("accounted_bytes") == F.col("file_bytes") + 1)
    # The scanner drops one \r before the \n.
    text = F.when(F.col("value").endswith("\r"), F.expr("substring(value, 1, length(value) - 1)")).otherwise(F.col("value"))
    record = F.from_json(text, record_schema(), {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    parsed = lines.select("dt", "spool", "name", "writer", "sequence", "block", "position", is_last.alias("is_last"),
                          without_newline.alias("without_newline"), (line_bytes > MAXIMUM_LINE_BYTES).alias("too_long"),
                          F.col("value").contains("\u0000").alias("has_nul"), record.alias("r"))

    r, a = F.col("r"), F.col("r.attribution")
    received = r["received_at"]
    # UTCTimestamp(iso8601:): exactly YYYY-MM-DDTHH:MM:SS.ffffffZ with a real date.
    received_day = F.make_date(F.substring(received, 1, 4).cast("int"), F.substring(received, 6, 2).cast("int"), F.substring(received, 9, 2).cast("int"))
    received_ok = received.rlike(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z$") & received_day.isNotNull()
    received_micros = (F.datediff(received_day, F.lit(datetime.date(1970, 1, 1))).cast("long") * MICROS_PER_DAY
                       + F.substring(received, 12, 2).cast("long") * MICROS_PER_HOUR
                       + F.substring(received, 15, 2).cast("long") * 60_000_000
                       + F.substring(received, 18, 2).cast("long") * 1_000_000
                       + F.substring(received, 21, 6).cast("long"))
    # Attribution(json:): protocol, app_id, ad_network_id and conversion_type are required; choices are checked.
    members_ok = F.lit(True)
    for field in ATTRIBUTION_FIELDS:
        member = a[field["key"]]
        if field["required"]:
            members_ok = members_ok & (member.isin(*field["choices"]) if field["choices"] else member.isNotNull())
        elif field["choices"]:
            members_ok = members_ok & (member.isNull() | member.isin(*field["choices"]))
    attribution_ok = a.isNull() | members_ok
    # SpoolRecord(line:): a known format, quarantine reason and flags (field, action and raw required).
    format_ok = r["format"].isNull() | r["format"].between(1, CURRENT_RECORD_FORMAT)
    flags_ok = r["flags"].isNull() | F.forall(r["flags"], lambda f: f.isNotNull() & f["field"].isin(*FLAG_FIELDS)
                                                & f["action"].isin(*FLAG_ACTIONS) & f["raw"].isNotNull())
    quarantine_ok = r["quarantine"].isNull() | r["quarantine"].isin(*QUARANTINE_REASONS)
    record_ok = (r.isNotNull() & r["_corrupt"].isNull() & received_ok & r["status"].isin(*VERIFICATION_STATUSES)
                 & (r["body"].isNotNull() | r["body_base64"].isNotNull()) & attribution_ok & format_ok & flags_ok & quarantine_ok)
    # A quarantined record (raw/unverifiable, or --input) is never counted as a postback.
    verified = (F.col("spool") == "postbacks") & (r["status"] == "verified") & r["quarantine"].isNull()
    sequence_index = F.coalesce(a["postback_sequence_index"], F.lit(0))
    in_range = sequence_index.between(0, 2) & (a["fine_value"].isNull() | a["fine_value"].between(0, 63))
    state = (F.when(F.col("without_newline"), "torn")
             .when(F.col("too_long") | ~F.coalesce(record_ok, F.lit(False)), "bad")
             .when(~verified, "rejected")
             .when(r["dedup_key"].isNull() | a.isNull(), "unreadable")
             .when(~in_range, "bad")
             .otherwise("postback"))
    # A bad line with a NUL byte is zeros a power cut left: torn wherever it is (SegmentReader.isPowerCutDamage).
    state = F.when(state == "bad", F.when(F.col("is_last") | F.col("has_nul"), "torn").otherwise("corrupt")).otherwise(state)
    claimed_protocol = F.when(r["protocol"].isin("skadnetwork", "adattributionkit"), r["protocol"])
    # The grain fields as the row key holds them (RowKeyEncoder.encodePostback); the others as stored.
    # Apple: "Nonwinning postbacks don't contain conversion values": one stored on a non-winning
    # postback is ignored and the postback flagged (SegmentScanner.emit).
    nonwinning_value = (a["did_win"] == F.lit(False)) & (a["fine_value"].isNotNull() | a["coarse_value"].isNotNull())
    grain = {
        # A rejected record is counted by what it claims to be: attribution first, then the record's own fields.
        "protocol": F.coalesce(a["protocol"], claimed_protocol),
        "ad_network_id": ascii_lower(a["ad_network_id"]),
        "postback_sequence_index": sequence_index.cast("int"),
        "fine_value": F.when(~F.coalesce(nonwinning_value, F.lit(False)), a["fine_value"].cast("int")),
        "coarse_value": F.when(~F.coalesce(nonwinning_value, F.lit(False)), a["coarse_value"]),
    }
    return parsed.select(
        "dt", "spool", "name", "writer", "sequence", "block", "position", state.alias("state"),
        received_micros.alias("received_micros"), r["dedup_key"].alias("dedup_key"), r["status"].alias("status"),
        r["reason"].alias("reason"),
        # Development: a development or test key (environment other than production), or SKAdNetwork test mode.
        ((F.coalesce(r["environment"], F.lit("")) == "production") & ~F.coalesce(a["test_mode"], F.lit(False))).alias("production"),
        # Stored with flags (a value normalized or dropped): counted in flagged_postbacks.
        (F.when(r["flags"].isNull(), F.lit(False)).otherwise(F.size(r["flags"]) > 0)
         | F.coalesce(nonwinning_value, F.lit(False))).alias("flagged"),
        # A rejected record is counted by what it claims to be: attribution first, then the record's own fields.
        F.coalesce(a["version"], r["version"]).alias("claimed_version"),
        *[grain[key].alias(key) if key in grain else a[key].alias(key) for key in GRAIN_FIELDS])


def ascii_lower(column):
    """ASCII-only lower-casing, as asciiLowercased in Swift (Unicode case mapping would make grouping
    depend on the platform's tables)."""
    from pyspark.sql import functions as F

    return F.translate(column, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# ---------------------------------------------------------------------------------------------
# Dedup: first received copy per day, and not again within the lookback (BucketResolver)

def first_copies(classified, first_day, lookback_days):
    """One row per (dt, dedup key) from `first_day` on: the first received copy's fields (earliest
    received_at, then writer, segment sequence and position in the file: SegmentTask.ordinal and the
    byte offset), how many copies came that day, and whether the key already came on one of the
    `lookback_days` days before (then no copy of that day counts)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    copies = classified.filter(F.col("state") == "postback")
    first = F.min(F.struct("received_micros", "writer", "sequence", "block", "position", "production", "flagged", *GRAIN_FIELDS))
    # Partitioned by key once: both the per-day grouping and the window over days reuse it.
    per_day = copies.repartition("dedup_key").groupBy("dedup_key", "dt").agg(first.alias("first"), F.count(F.lit(1)).alias("copies"))
    previous_day = F.lag("dt").over(Window.partitionBy("dedup_key").orderBy("dt"))
    seen_earlier = previous_day.isNotNull() & (F.datediff(F.to_date("dt"), F.to_date(previous_day)) <= lookback_days)
    return (per_day.select("dt", "dedup_key", "copies", seen_earlier.alias("seen_earlier"), "first.*")
            .filter(F.col("dt") >= first_day.isoformat()))


def conflict_counts(spark, fs, data, days):
    """The receivers' conflict evidence (raw/conflicts/, ConflictRecord) per (dt, dedup key): how many
    copies of the key came that day with other unsigned values (issue 24; ConflictSummary.keyHashes)."""
    from pyspark.sql import functions as F

    paths = []
    for day in days:
        directory = f"{data}/raw/conflicts/dt={day.isoformat()}"
        paths += [fs.qualified(f"{directory}/{name}") for name, _ in fs.list_files(directory) if parse_segment_name(name)]
    if not paths:
        return spark.range(0).select(F.lit("").alias("dt"), F.lit("").alias("dedup_key"), F.lit(0).cast("long").alias("conflicts"))
    lines = spark.read.option("lineSep", "\n").text(paths).select(
        F.regexp_extract(F.col("_metadata.file_path"), r"dt=(\d{4}-\d{2}-\d{2})", 1).alias("dt"),
        F.get_json_object("value", "$.dedup_key").alias("dedup_key"))
    return (lines.filter(F.col("dedup_key").isNotNull()).groupBy("dt", "dedup_key")
            .agg(F.count(F.lit(1)).cast("long").alias("conflicts")))


def estimated_install_date(received_micros, protocol, version, sequence_index, production):
    """Received time minus the end of the conversion window and Apple's mean send delay
    (InstallDateEstimate: 48 h before SKAdNetwork 4, then 84, 252 or 924 h by window; a development
    postback on Developer Mode's timing, 630, 810 or 990 s by window), as a UTC day."""
    from pyspark.sql import functions as F

    has_windows = (protocol == "adattributionkit") | F.coalesce(version, F.lit("")).isin(*VERSIONS_WITH_CONVERSION_WINDOWS)
    hours = (F.when(~has_windows, 48).when(sequence_index == 1, 252).when(sequence_index == 2, 924).otherwise(84)).cast("long")
    seconds = (F.when(~has_windows, 630).when(sequence_index == 1, 810).when(sequence_index == 2, 990).otherwise(630)).cast("long")
    micros = received_micros - F.when(production, hours * MICROS_PER_HOUR).otherwise(seconds * F.lit(1_000_000))
    days = ((micros - F.pmod(micros, F.lit(MICROS_PER_DAY))) / F.lit(MICROS_PER_DAY)).cast("int")
    return F.date_add(F.lit(datetime.date(1970, 1, 1)), days)


def postback_rows(firsts, conflicts):
    """Counted first copies grouped by every grain column (RowKeyEncoder.encodePostback); a first
    copy's conflicts of its day are counted in its row (BucketResolver)."""
    from pyspark.sql import functions as F

    counted = (firsts.filter(~F.col("seen_earlier")).join(conflicts, ["dt", "dedup_key"], "left")
               .withColumn("conflicts", F.coalesce(F.col("conflicts"), F.lit(0).cast("long")))).withColumn(
        "est_install_date", estimated_install_date(F.col("received_micros"), F.col("protocol"), F.col("version"), F.col("postback_sequence_index"),
                                                   F.col("production")))
    return counted.groupBy("dt", "est_install_date", *GRAIN_FIELDS).agg(
        F.sum(F.when(F.col("production"), 1).otherwise(0)).cast("long").alias("postbacks"),
        F.sum(F.when(F.col("production"), 0).otherwise(1)).cast("long").alias("development_postbacks"),
        F.sum(F.col("copies") - 1).cast("long").alias("duplicates_dropped"),
        F.sum(F.when(F.col("production") & F.col("flagged"), 1).otherwise(0)).cast("long").alias("flagged_postbacks"),
        F.sum("conflicts").cast("long").alias("conflicting_copies"))


# ---------------------------------------------------------------------------------------------
# Decoding through the decode table (DayRenderer.RowFacts), and the two tables' rows


def decode_rows(rows, tables):
    """Adds schema, label, revenue sums, campaign/geo/placement and the install counts to each row.

    Schema selection: app, protocol, conversion type and effective_from <= est_install_date <=
    effective_to. The value: `fine` or `coarse` when the postback carries one, else `null` for a
    winner (Apple withheld it: an install with unknown revenue) and `none` for a non-winner.
    """
    from pyspark.sql import functions as F

    selection = tables["selection"].select(*[F.col(c).alias("s_" + c) for c in tables["selection"].columns])
    located = rows.join(F.broadcast(selection), (F.col("app_id") == F.col("s_app_id")) & (F.col("protocol") == F.col("s_protocol"))
                        & (F.col("conversion_type") == F.col("s_conversion_type"))
                        & (F.col("est_install_date") >= F.col("s_effective_from"))
                        & (F.col("s_effective_to").isNull() | (F.col("est_install_date") <= F.col("s_effective_to"))), "left")
    kind = (F.when(F.col("fine_value").isNotNull(), "fine").when(F.col("coarse_value").isNotNull(), "coarse")
            .when(F.col("did_win") == F.lit(False), "none").otherwise("null"))
    located = located.withColumn("cv_kind", kind).withColumn(
        "cv_value", F.coalesce(F.col("fine_value").cast("string"), F.col("coarse_value")))

    values = tables["values"].select(*[F.col(c).alias("v_" + c) for c in tables["values"].columns])
    valued = located.join(F.broadcast(values), (F.col("s_schema_id") == F.col("v_schema_id")) & (F.col("protocol") == F.col("v_protocol"))
                          & (F.col("conversion_type") == F.col("v_conversion_type"))
                          & (F.col("postback_sequence_index") == F.col("v_postback_sequence_index"))
                          & (F.col("cv_kind") == F.col("v_cv_kind")) & (F.col("cv_value") == F.col("v_cv_value")), "left")

    # Source identifiers (SKAdNetwork 4, AdAttributionKit) before campaign ids (SKAdNetwork 1-3).
    id_kind = F.when(F.col("source_identifier").isNotNull(), "source_identifier").when(F.col("campaign_id").isNotNull(), "campaign_id")
    id_value = F.coalesce(F.col("source_identifier"), F.col("campaign_id").cast("string"))
    sources = tables["sources"].select(*[F.col(c).alias("m_" + c) for c in tables["sources"].columns])
    mapped = valued.join(F.broadcast(sources), (F.col("s_schema_id") == F.col("m_schema_id")) & (F.col("ad_network_id") == F.col("m_ad_network_id"))
                         & (id_kind == F.col("m_id_kind")) & (id_value == F.col("m_id_value"))
                         & (F.col("m_valid_from").isNull() | (F.col("est_install_date") >= F.col("m_valid_from")))
                         & (F.col("m_valid_to").isNull() | (F.col("est_install_date") <= F.col("m_valid_to"))), "left")

    decoded = F.coalesce(F.col("v_mapped"), F.lit(False))
    label = (F.when(F.col("cv_kind") == "null", "null_cv").when(F.col("cv_kind") == "none", F.lit(None))
             .when(F.col("s_schema_id").isNull(), "no_schema").otherwise(F.col("v_decoded_label")))
    postbacks = F.col("postbacks")
    winning = F.coalesce(F.col("did_win"), F.lit(True))
    first_window = winning & (F.col("postback_sequence_index") == 0)

    def installs_of(conversion_type):
        return F.when(first_window & (F.col("conversion_type") == conversion_type), postbacks).otherwise(F.lit(0)).cast("long")

    computed = {
        "source_identifier_digits": F.octet_length("source_identifier"),
        "campaign": F.col("m_campaign"), "geo": F.col("m_geo"), "placement": F.col("m_placement"),
        "decoded_label": label, "schema_id": F.col("s_schema_id"),
        "installs": installs_of("download"), "redownloads": installs_of("redownload"), "reengagements": installs_of("re-engagement"),
        "losses": F.when(~winning, postbacks).otherwise(F.lit(0)).cast("long"),
        "null_cv_postbacks": F.when(F.col("cv_kind") == "null", postbacks).otherwise(F.lit(0)).cast("long"),
        # Revenue only for a value that decoded; never zero for an unknown one.
        "revenue_min_sum": F.when(decoded, postbacks * F.col("v_revenue_min")),
        "revenue_max_sum": F.when(decoded, postbacks * F.col("v_revenue_max")),
        "revenue_est_sum": F.when(decoded, postbacks * F.col("v_revenue_est")),
        "currency": F.col("s_currency"), "rejected_postbacks": F.lit(0).cast("long"),
    }
    # A stored field's column shows the field as grouped (fine_cv is fine_value: the declaration names it);
    # the rest (est_install_date, cv_kind and the counts) are columns already.
    stored = {field["column"]: field["key"] for field in ATTRIBUTION_FIELDS if field["column"]}

    def column(name):
        return (computed[name] if name in computed else F.col(stored.get(name, name))).alias(name)

    return mapped.select(
        "dt", *[column(name) for name in DETAIL_COLUMNS],
        # Kept for the events table, dropped before writing.
        F.col("v_schema_id").alias("_value_schema"), "cv_value", decoded.alias("_decoded"),
        F.col("v_revenue_min").alias("_revenue_min"), F.col("v_revenue_max").alias("_revenue_max"), F.col("v_revenue_est").alias("_revenue_est"))


def development_rows(rows):
    """campaign_daily_development's rows before decoding: the rows with development postbacks, their
    development count as `postbacks` and the other counts 0 (DayRenderer: RowFacts with the development
    count), so decode_rows works out installs, losses and revenue from it."""
    from pyspark.sql import functions as F

    zero = F.lit(0).cast("long")
    return (rows.filter(F.col("development_postbacks") > 0)
            .withColumn("postbacks", F.col("development_postbacks"))
            .withColumn("development_postbacks", zero).withColumn("duplicates_dropped", zero).withColumn("flagged_postbacks", zero)
            .withColumn("conflicting_copies", zero))


def rejected_rows(classified, first_day):
    """Rejected records: every delivery counts (no dedup), on a row keyed by app, protocol, version
    and ad network (RowKeyEncoder.encodeRejected); everything else is empty."""
    from pyspark.sql import functions as F

    counts = (classified.filter((F.col("state") == "rejected") & (F.col("dt") >= first_day.isoformat()))
              .groupBy("dt", *["claimed_version" if key == "version" else key for key in REJECTED_ROW_FIELDS]).agg(F.count(F.lit(1)).cast("long").alias("rejected_postbacks")))
    zero = F.lit(0).cast("long")
    columns = []
    for name in DETAIL_COLUMNS:
        if name == "version":
            columns.append(F.col("claimed_version").alias("version"))
        elif name in REJECTED_ROW_FIELDS or name == "rejected_postbacks":
            columns.append(F.col(name))
        elif name in POSTBACK_COUNT_COLUMNS:
            columns.append(zero.alias(name))
        else:
            columns.append(F.lit(None).alias(name))
    return counts.select("dt", *columns)


def postback_detail_daily(decoded, rejected):
    from pyspark.sql import functions as F

    typed = decoded.select("dt", *DETAIL_COLUMNS)
    types = {field.name: field.dataType for field in typed.schema.fields}  # one analysis, not one per column
    rejected = rejected.select("dt", *[F.col(c).cast(types[c]).alias(c) for c in DETAIL_COLUMNS])
    return typed.unionByName(rejected)


def production_rows(detail):
    """The detail rows the production rollups group: those with production postbacks or rejected
    records. A grain seen only in development postbacks has no all-zero rollup row (DayRenderer)."""
    from pyspark.sql import functions as F

    return detail.filter((F.col("postbacks") > 0) | (F.col("rejected_postbacks") > 0))


def rollup_rows(detail, rollup):
    """A rollup of the detail rows (DayRenderer's RollupSet): grouped by its kept columns, every
    measure summed; counts as integers, an amount as SQL SUM does it (the non-empty values, empty when
    all are), which is the Swift job's rule."""
    from pyspark.sql import functions as F

    kept = set(rollup["kept"])
    measures = [c for c in rollup["columns"] if c not in kept and c not in MODEL_COLUMNS]
    return detail.groupBy("dt", *rollup["kept"]).agg(
        *[(F.sum(c) if c in MONEY_COLUMNS else F.sum(c).cast("long")).alias(c) for c in measures]).select(
        "dt", *[c for c in rollup["columns"] if c not in MODEL_COLUMNS])


def campaign_events_daily(decoded, tables):
    """Rows of counted postbacks whose value decoded, joined with the events their value implies, summed
    per grain, schema and event (DayRenderer's EventAccumulator): a max is empty once any contributing
    value has none."""
    from pyspark.sql import functions as F

    events = tables["events"].select(*[F.col(c).alias("e_" + c) for c in tables["events"].columns])
    contributing = decoded.filter((F.col("postbacks") > 0) & F.col("_decoded")).join(
        F.broadcast(events), (F.col("schema_id") == F.col("e_schema_id")) & (F.col("postback_sequence_index") == F.col("e_postback_sequence_index"))
        & (F.col("cv_kind") == F.col("e_cv_kind")) & (F.col("cv_value") == F.col("e_cv_value")))
    postbacks = F.col("postbacks")

    def sum_unless_any_null(term):
        return F.when(F.count(F.lit(1)) == F.count(term), F.sum(term))

    return contributing.groupBy("dt", *DIMENSION_COLUMNS, "schema_id", F.col("e_event_name").alias("event_name")).agg(
        F.sum(postbacks).cast("long").alias("postbacks"),
        F.sum(postbacks * F.col("e_min_count")).cast("long").alias("event_count_min_sum"),
        sum_unless_any_null(postbacks * F.col("e_max_count")).cast("long").alias("event_count_max_sum"),
        F.sum(postbacks * F.col("_revenue_min")).alias("revenue_min_sum"),
        sum_unless_any_null(postbacks * F.col("_revenue_max")).alias("revenue_max_sum"),
        F.sum(postbacks * F.col("_revenue_est")).alias("revenue_est_sum"),
        F.first("currency").alias("currency")).select("dt", *CAMPAIGN_EVENTS_DAILY_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Output: CSV lines exactly as CSVLine writes them, Parquet with types; one file per dt partition


# Cells a spreadsheet would evaluate (SpreadsheetCell, docs/aggregate.md): a text whose first
# character after any `'` is `=`, `+`, `-`, `@`, a tab or CR, unless it is a plain decimal number, is
# written quoted with a `'` before it; a reader takes one `'` off a text that starts with `'`s and one
# of those characters (no unquoted field does). Java regular expressions (`\z`: the very end).
NEUTRALISE_PATTERN = "^'*[=+\\-@\t\r]"
PLAIN_NUMBER_PATTERN = "^-?[0-9]+(\\.[0-9]+)?\\z"
NEUTRALISED_PATTERN = "^'+[=+\\-@\t\r]"


def text_cell(column):
    """A text read from the product's CSV without the `'` of a neutralised cell."""
    from pyspark.sql import functions as F

    return F.when(column.rlike(NEUTRALISED_PATTERN), F.substring(column, 2, 1 << 30)).otherwise(column)


def csv_field(name, kind):
    """One field as CSVLine writes it: empty for null, `""` for an empty string, quotes only when the
    text holds a comma, quote or line break, and a cell a spreadsheet would evaluate quoted after a
    `'`; numbers in decimal, `true`/`false`; amounts (micro-units) as the shortest exact decimal
    (`2.99`, `150`)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    column = F.col(name)
    if name in DECIMAL_SCALES:
        text = decimal_text(name, DECIMAL_SCALES[name])
    elif isinstance(kind, T.StringType):
        neutralise = column.rlike(NEUTRALISE_PATTERN) & ~column.rlike(PLAIN_NUMBER_PATTERN)
        text = (F.when(column == "", F.lit('""'))
                .when(neutralise, F.concat(F.lit('"\''), F.regexp_replace(column, '"', '""'), F.lit('"')))
                .when(column.rlike('[,"\\r\\n]'), F.concat(F.lit('"'), F.regexp_replace(column, '"', '""'), F.lit('"')))
                .otherwise(column))
    else:
        text = column.cast("string")
    return F.coalesce(text, F.lit(""))


def decimal_text(name, scale):
    """An amount kept as an integer of 10^-scale units (money: millionths) as the shortest exact
    decimal (`Money.description`: `2.99`, `150`), computed in integers only."""
    from pyspark.sql import functions as F

    unit = 10 ** scale
    fraction = F.expr(f"pmod(`{name}`, {unit}L)")
    whole = F.expr(f"(`{name}` - pmod(`{name}`, {unit}L)) div {unit}L").cast("string")
    digits = F.regexp_replace(F.lpad(fraction.cast("string"), scale, "0"), "0+$", "")
    return F.concat(whole, F.when(fraction != 0, F.concat(F.lit("."), digits)).otherwise(F.lit("")))


def csv_lines(frame, columns):
    from pyspark.sql import functions as F

    types = {field.name: field.dataType for field in frame.schema.fields}  # one analysis, not one per column
    return F.concat_ws(",", *[csv_field(name, types[name]) for name in columns])


# The declared SQL type of every output column (AggregateColumn's, through record-schema.json): the
# Parquet files carry them, as `postback aggregate --format parquet` writes them.
COLUMN_TYPES = RECORD_SCHEMA["column_types"]


def spark_type(declared):
    """Spark's name for a declared column type: DATE, BIGINT, INTEGER, BOOLEAN, VARCHAR, DECIMAL(p, s)."""
    simple = {"DATE": "date", "BIGINT": "bigint", "INTEGER": "int", "BOOLEAN": "boolean", "VARCHAR": "string", "DOUBLE": "double"}
    if declared in simple:
        return simple[declared]
    if declared.startswith("DECIMAL(") and declared.endswith(")"):
        return "decimal(" + declared[len("DECIMAL("):-1].replace(" ", "") + ")"
    raise ValueError(f"record-schema.json: column type {declared!r} has no Spark type")


def parquet_frame(frame, columns):
    """Typed columns for Parquet, each cast to its declared type; amounts (kept in millionths) as
    exact DECIMAL(38, 6)."""
    from pyspark.sql import functions as F

    def typed(column):
        target = spark_type(COLUMN_TYPES.get(column) or MODEL_TYPES[column])
        if column in DECIMAL_SCALES:
            # Through the exact text: a decimal division would round a scale beyond 6 away.
            return decimal_text(column, DECIMAL_SCALES[column]).cast(target).alias(column)
        return F.col(column).cast(target).alias(column)

    return frame.select("dt", *[typed(c) for c in columns], "_sort")


def write_table(spark, fs, frame, table, columns, days, staging, out, output_format):
    """Writes one file per requested day into `staging`, then moves each to
    OUT/table/dt=D/part-00000.<csv|parquet>. Rows are sorted by their CSV line's bytes, as the Swift
    aggregator sorts them; every day gets a file, with only the header when it has no rows."""
    from pyspark.sql import functions as F

    with_lines = frame.withColumn("_line", csv_lines(frame, columns)).withColumn("_sort", F.concat(F.col("_line"), F.lit("\n")))
    target = f"{staging}/{table}"
    if output_format == "csv":
        # One header line per day (the days need not be consecutive: cohorts are rebuilt for some install dates only).
        header = spark.createDataFrame([(day.isoformat(),) for day in days], "dt string").select(
            "dt", F.lit(0).alias("_rank"), F.lit(",".join(columns)).alias("_line"), F.lit("").alias("_sort"))
        lines = header.unionByName(with_lines.select("dt", F.lit(1).alias("_rank"), "_line", "_sort"))
        (lines.repartition("dt").sortWithinPartitions("dt", "_rank", "_sort").select("dt", "_line")
         .write.partitionBy("dt").option("lineSep", "\n").text(target))
    else:
        typed = parquet_frame(with_lines, columns)
        typed.repartition("dt").sortWithinPartitions("dt", "_sort").drop("_sort").write.partitionBy("dt").parquet(target)
        written = {name[3:] for name in list_names(fs, target) if name.startswith("dt=")}
        missing = [day for day in days if day.isoformat() not in written]
        if missing:
            # A day without rows still gets a file: an empty Parquet file with the table's schema.
            empty = spark.createDataFrame([], typed.drop("dt", "_sort").schema)
            for day in missing:
                empty.coalesce(1).write.parquet(f"{target}/dt={day.isoformat()}")
    extension = "csv" if output_format == "csv" else "parquet"
    published = {}
    for day in days:
        directory = f"{target}/dt={day.isoformat()}"
        parts = [name for name, _ in fs.list_files(directory) if name.startswith("part-")]
        if len(parts) != 1:
            raise IOError(f"{directory}: expected one part file, found {len(parts)}")
        destination = f"{out}/{table}/dt={day.isoformat()}/part-00000.{extension}"
        fs.replace(f"{directory}/{parts[0]}", destination)
        published[day.isoformat()] = destination
    return published


# ---------------------------------------------------------------------------------------------
# The null-value model (docs/modeling.md, null-eb-2): modeled columns appended to campaign_daily, fitted
# on the driver (a day's campaign_daily is small) by bench/model_reference.py, the contract's Python
# reference, which this job imports (spark-submit: --py-files bench/model_reference.py).

MODEL_COLUMNS = published_schema.MODELED_COLUMNS
_CAMPAIGN_DAILY_TYPES = published_schema.sql_types(published_schema.CAMPAIGN_DAILY)
MODEL_TYPES = {c: _CAMPAIGN_DAILY_TYPES[c] for c in MODEL_COLUMNS}
MODEL_MONEY_COLUMNS = [c for c in MODEL_COLUMNS if MODEL_TYPES[c].startswith("DECIMAL(")]
# The text columns the model reads from a campaign_daily row (the reference reads published CSV text).
MODEL_INPUTS = ["app_id", "currency", "postback_sequence_index", "conversion_type", "ad_network_id", "source_identifier",
                "campaign_id", "postbacks", "null_cv_postbacks", "revenue_est_sum"]


def model_reference():
    for directory in (os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"), os.getcwd()):
        if os.path.exists(os.path.join(directory, "model_reference.py")) and directory not in sys.path:
            sys.path.insert(0, directory)
    import model_reference as reference

    return reference


def with_model_columns(columns):
    """A table's columns with the modeled ones last (whether or not record-schema.json lists them)."""
    return [c for c in columns if c not in MODEL_COLUMNS] + MODEL_COLUMNS


def modeled_campaign_daily(spark, fs, frame, columns, days, out):
    """campaign_daily's frame with the modeled columns: each day D of the run pooled with the
    campaign_daily days D-27 … D-1 already published under OUT (or made in this run)."""
    from pyspark.sql import functions as F

    reference = model_reference()
    base = [c for c in columns if c not in MODEL_COLUMNS]
    keyed = frame.withColumn("_key", csv_lines(frame, base))
    text = {c: (decimal_text(c, 6) if c in MONEY_COLUMNS else F.col(c).cast("string")) for c in MODEL_INPUTS}
    collected = keyed.select(F.col("dt").cast("string").alias("dt"), "_key",
                             *[F.coalesce(text[c], F.lit("")).alias(c) for c in MODEL_INPUTS]).collect()
    rows_by_day = {}
    for row in collected:
        rows_by_day.setdefault(datetime.date.fromisoformat(row["dt"]), []).append(row.asDict())
    pooled = reference.MODEL["pooling_days"]
    earlier = {day - datetime.timedelta(days=back) for day in days for back in range(1, pooled)} - set(days)
    for day in sorted(earlier):
        path = f"{out}/{published_schema.CAMPAIGN_DAILY}/dt={day.isoformat()}/part-00000.csv"
        if fs.exists(path):
            import csv
            import io

            rows_by_day[day] = list(csv.DictReader(io.StringIO(fs.read_bytes(path).decode("utf-8"))))
    modeled = []
    for day in days:
        rows = sorted(rows_by_day.get(day, []), key=lambda row: row["_key"])
        for row, values in zip(rows, reference.model_rows(rows, reference.fit_day(day, rows_by_day))):
            micros = [None if values[c] == "" else int(decimal.Decimal(values[c]) * 1_000_000) for c in MODEL_MONEY_COLUMNS]
            modeled.append((day.isoformat(), row["_key"], *micros, double_text(values["modeled_null_values_var"]),
                            double_text(values["modeled_null_mean_sd"]), double_text(values["modeled_null_log_p_zero"]),
                            values["modeled_note"] or None))
    schema = "dt string, _key string, " + ", ".join(f"{c} long" for c in MODEL_MONEY_COLUMNS) + \
        ", modeled_null_values_var string, modeled_null_mean_sd string, modeled_null_log_p_zero string, modeled_note string"
    model = spark.createDataFrame(modeled, schema)
    return keyed.withColumn("dt", F.col("dt").cast("string")).join(model, ["dt", "_key"], "left").drop("_key")


def double_text(text):
    """A DOUBLE as `postback aggregate` writes it (the shortest text that reads back the same, with a
    point: 0 as 0.0); None for an empty cell."""
    return repr(float(text)) if text else None


def development_model_columns(frame):
    """The development copy carries the modeled columns, always empty (the model is production-only)."""
    from pyspark.sql import functions as F

    return frame.select("*", *[F.lit(None).cast("long" if c in MODEL_MONEY_COLUMNS else "string").alias(c) for c in MODEL_COLUMNS])


def list_names(fs, directory):
    filesystem, path = fs._resolve(directory)
    return [str(status.getPath().getName()) for status in filesystem.listStatus(path)] if filesystem.exists(path) else []


# ---------------------------------------------------------------------------------------------
# Cohorts by estimated install date: campaign_cohort_daily and campaign_cohort_daily_development
# (docs/aggregate.md "campaign_cohort_daily", docs/spend.md). Made from the published campaign_daily /
# campaign_daily_development files and the stored spend (DATA/spend/dt=DAY/SOURCE.csv) only.

# Each cohort table and the published table it is made from.
COHORT_SOURCES = published_schema.COHORT_SOURCES
COHORT_TABLES = list(COHORT_SOURCES)
# A postback whose estimated install date is I arrives by received day I + 39 (window 3: 924 h and
# up to a day), so no later day adds to cohort I; the nightly run rebuilds install dates FROM - 39 to TO.
COHORT_HORIZON_DAYS = 39
COHORT_MANIFEST_FORMAT = 1
# The columns in file order with their declared types (docs/aggregate.md's CREATE TABLE block).
COHORT_COLUMNS = published_schema.COHORT_COLUMNS
COHORT_DECLARED = [(name, published_schema.sql_types(published_schema.CAMPAIGN_COHORT_DAILY)[name]) for name in COHORT_COLUMNS]
for _name, _declared in COHORT_DECLARED:
    COLUMN_TYPES.setdefault(_name, _declared)
    if _declared.startswith("DECIMAL("):
        DECIMAL_SCALES.setdefault(_name, int(_declared[len("DECIMAL("):-1].split(",")[1]))
COHORT_KEY = ["app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign"]
# The stored spend file's columns (`postback spend import`'s canonical form), in file order.
SPEND_COLUMNS = ["date", "app_id", "ad_network_id", "campaign_id", "source_identifier", "campaign", "spend", "currency",
                 "impressions", "clicks", "reported_installs"]
EMPTY_MARKER = "\u0001empty\u0001"


def quotient_millionths(a, b, factor=1_000_000):
    """a ÷ b in millionths, rounded half up: (2·a·factor + b) div (2·b), None when b is 0. With a and b
    integers of one scale, factor 10^6 (a count over a count, millionths over millionths); for
    millionths over a count (cpi), factor 1. The reference for `quotient_column`."""
    if a is None or b is None or b == 0:
        return None
    return (2 * a * factor + b) // (2 * b)


def cohort_status(install_day, complete_through):
    """`open`, `window-1-final`, `window-2-final` or `final` from C - I (docs/aggregate.md)."""
    if complete_through is None:
        return "open"
    settled = (complete_through - install_day).days
    return "open" if settled < 4 else "window-1-final" if settled < 11 else "window-2-final" if settled < 39 else "final"


def quotient_column(a, b, factor=1_000_000):
    """`quotient_millionths` in Spark: exact in DECIMAL(38, 0) (never a double), null when b is 0 or
    either is null. Both operands are non-negative, so `div` (towards zero) is the floor."""
    from pyspark.sql import functions as F

    numerator = F.lit(2 * factor).cast("decimal(38,0)") * a.cast("decimal(38,0)") + b.cast("decimal(38,0)")
    denominator = F.lit(2).cast("decimal(38,0)") * b.cast("decimal(38,0)")
    return F.when(b != 0, F.call_function("div", numerator, denominator))


def fx_convert(micros, rate):
    """Spend in millionths at an --fx rate (10^-10 units): the product, rounded half up to millionths
    (FXRate.convert). The reference for `fx_convert_column`."""
    return (2 * micros * rate + 10 ** 10) // (2 * 10 ** 10)


def fx_convert_column(amount, rate):
    """`fx_convert` in Spark, exact in DECIMAL(38, 0)."""
    from pyspark.sql import functions as F

    exact = "decimal(38,0)"
    return F.call_function("div", F.lit(2).cast(exact) * amount.cast(exact) * rate.cast(exact) + F.lit(10 ** 10).cast(exact),
                           F.lit(2 * 10 ** 10).cast(exact))


def status_column(install_day, complete_through):
    from pyspark.sql import functions as F

    settled = F.datediff(complete_through, install_day)
    return (F.when(complete_through.isNull() | (settled < 4), "open").when(settled < 11, "window-1-final")
            .when(settled < 39, "window-2-final").otherwise("final"))


def cohort_key(frame):
    """The cohort key of a campaign_daily or spend row: the decoded (stored) campaign name when there
    is one, and then no campaign_id or source_identifier; else the campaign_id or source_identifier."""
    from pyspark.sql import functions as F

    named = F.col("campaign").isNotNull() & (F.col("campaign") != "")
    return (frame.withColumn("campaign_id", F.when(~named, F.col("campaign_id")))
            .withColumn("source_identifier", F.when(~named, F.col("source_identifier")))
            .withColumn("campaign", F.when(named, F.col("campaign"))))


def read_text_csv(spark, paths, columns):
    """CSV files as `postback` writes them (header, RFC 4180, `""` for an empty string): every column
    as text, an empty field null, a quoted empty string "" and a neutralised cell without its `'`."""
    from pyspark.sql import functions as F

    raw = (spark.read.schema(", ".join(f"`{name}` string" for name in columns)).option("header", True).option("multiLine", True)
           .option("quote", '"').option("escape", '"').option("emptyValue", EMPTY_MARKER).option("mode", "FAILFAST")
           .option("encoding", "UTF-8").csv(paths))
    return raw.select(*[F.when(F.col(c) == EMPTY_MARKER, F.lit("")).otherwise(text_cell(F.col(c))).alias(c) for c in columns],
                      F.col("_metadata.file_path").alias("_file"))


def micros_of_text(column):
    from pyspark.sql import functions as F

    return (F.col(column).cast("decimal(38,6)") * F.lit(1_000_000)).cast("long")


def cohort_source_rows(spark, files, fs=None):
    """The published campaign_daily and campaign_daily_development rows of the files listed
    ((cohort table, path, format) each), typed: amounts in millionths."""
    from pyspark.sql import functions as F

    columns = DEVELOPMENT_ROLLUP["columns"]
    counts = ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks"]
    money = ["revenue_min_sum", "revenue_max_sum", "revenue_est_sum"]
    frames = []
    for output_format in ("csv", "parquet"):
        paths = [path for _, path, kind in files if kind == output_format]
        if not paths:
            continue
        if output_format == "csv":
            # Files published with the null-value model's columns (appended) and without them are read
            # apart: each with its own header as the schema (FAILFAST refuses a line of another width).
            by_header = {}
            for path in paths:
                header = fs.first_line(path).split(",") if fs else columns
                by_header.setdefault(tuple(header if set(columns) <= set(header) else columns), []).append(path)
            parts = [read_text_csv(spark, group, list(header)).select(
                *columns, *[F.col(c) if c in header else F.lit(None).cast("string").alias(c) for c in COHORT_MODEL_INPUTS], "_file")
                for header, group in by_header.items()]
            raw = parts[0]
            for part in parts[1:]:
                raw = raw.unionByName(part)
            amounts = [micros_of_text(c).alias(c) for c in money]
            modeled_estimate = micros_of_text("modeled_null_revenue_est")
        else:
            read = spark.read.parquet(*paths)
            raw = read.select(*columns, *[F.col(c) if c in read.columns else F.lit(None).cast("string").alias(c)
                                          for c in COHORT_MODEL_INPUTS], F.col("_metadata.file_path").alias("_file"))
            amounts = [(F.col(c) * F.lit(1_000_000)).cast("long").alias(c) for c in money]
            modeled_estimate = (F.col("modeled_null_revenue_est").cast("decimal(38,6)") * F.lit(1_000_000)).cast("long")
        source = F.regexp_extract("_file", r"/([a-z_]+)/dt=[0-9-]+/part-00000\.[a-z]+$", 1)
        frames.append(raw.select(
            F.when(source == published_schema.CAMPAIGN_DAILY, published_schema.CAMPAIGN_COHORT_DAILY)
            .otherwise(published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT).alias("table"),
            F.col("est_install_date").cast("string").alias("dt"), F.col("app_id").cast("long").alias("app_id"),
            "ad_network_id", F.col("campaign_id").cast("long").alias("campaign_id"), "source_identifier", "campaign",
            F.col("postback_sequence_index").cast("int").alias("window"),
            *[F.col(c).cast("long").alias(c) for c in counts], *amounts, "currency",
            # the null-value model's columns, and the model's campaign and stratum (docs/modeling.md): the row's
            # own campaign ID and source identifier (the cohort key drops them for a named campaign), an empty
            # window as 0, the conversion type as the model pools it
            modeled_estimate.alias("_m_est"),
            *[F.col(c).cast("double").alias(alias) for c, alias in (
                ("modeled_null_values_var", "_m_var"), ("modeled_null_mean_sd", "_m_sd"), ("modeled_null_log_p_zero", "_m_lpz"))],
            F.col("modeled_note").alias("_m_note"),
            F.coalesce(F.col("postback_sequence_index").cast("int"), F.lit(0)).alias("_m_window"),
            F.when(F.col("conversion_type") == "re-engagement", "re-engagement").otherwise("install").alias("_m_kind"),
            F.col("campaign_id").cast("long").alias("_m_cid"), F.col("source_identifier").alias("_m_sid")))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def cohort_postbacks(rows, install_days):
    """Per cohort table, install date and key: the counts and each window's revenue sums (SQL SUM:
    empty when every value is), and the revenue currencies seen."""
    from pyspark.sql import functions as F

    window = F.col("window")

    def windowed(column, index):
        return F.sum(F.when(window == index, F.col(column)))

    keyed = cohort_key(rows.filter(F.col("dt").isin(*[day.isoformat() for day in install_days]) & (F.col("postbacks") > 0)))
    counted = keyed.groupBy("table", "dt", *COHORT_KEY).agg(
        F.sum("postbacks").alias("_postbacks"),
        *[F.sum(c).alias(c) for c in ("installs", "redownloads", "reengagements")],
        *[F.coalesce(windowed("postbacks", index), F.lit(0).cast("long")).alias(f"postbacks_w{index + 1}") for index in range(3)],
        F.sum(F.col("postbacks") - F.col("losses")).alias("winning_postbacks"),
        F.sum("null_cv_postbacks").alias("null_cv_postbacks"),
        F.array_sort(F.collect_set("currency")).alias("_revenue_currencies"),
        *[windowed(f"revenue_{m}_sum", index).alias(f"_revenue_{m}_w{index + 1}") for index in range(3) for m in ("est", "min", "max")])
    keys = ["table", "dt", *COHORT_KEY]
    modeled = cohort_model_parts(keyed).select(*[F.col(k).alias(f"_mk_{k}") for k in keys], *COHORT_MODEL_PARTS)
    return (counted.join(modeled, [counted[k].eqNullSafe(modeled[f"_mk_{k}"]) for k in keys], "left")
            .drop(*[f"_mk_{k}" for k in keys]))


# The modeled columns a cohort row reads from its campaign_daily rows, and the parts it sums from them.
COHORT_MODEL_INPUTS = ["modeled_null_revenue_est", "modeled_null_values_var", "modeled_null_mean_sd", "modeled_null_log_p_zero",
                       "modeled_note"]
COHORT_MODEL_PARTS = ["_m_est", "_m_var", "_m_sd", "_m_sd2", "_m_lpz", "_m_notes"]


def cohort_model_parts(keyed):
    """Per cohort table, install date and key, docs/modeling.md's sum rule over the rows with a modeled
    estimate: the estimates (millionths), values variances and log_p_zero summed; each model campaign's
    (network, source identifier, campaign ID; currency, window, conversion type as the model pools it)
    mean part summed, then squared and summed (_m_sd2); and every distinct note, sorted."""
    from pyspark.sql import functions as F

    estimated = F.col("_m_est").isNotNull()

    def part(column):
        return F.sum(F.when(estimated, F.coalesce(F.col(column), F.lit(0.0))))

    per_campaign = keyed.groupBy("table", "dt", *COHORT_KEY, "_m_window", "_m_kind", "currency", "_m_sid", "_m_cid").agg(
        F.sum("_m_est").alias("_m_est"), part("_m_var").alias("_m_var"), part("_m_sd").alias("_m_sd"),
        part("_m_lpz").alias("_m_lpz"), F.flatten(F.collect_list(F.split("_m_note", "; "))).alias("_m_notes"))
    return per_campaign.groupBy("table", "dt", *COHORT_KEY).agg(
        F.sum("_m_est").alias("_m_est"), F.sum("_m_var").alias("_m_var"), F.sum("_m_sd").alias("_m_sd"),
        F.sum(F.col("_m_sd") * F.col("_m_sd")).alias("_m_sd2"), F.sum("_m_lpz").alias("_m_lpz"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_m_notes")))).alias("_m_notes"))


def cohort_modeled_columns(spark, rows):
    """The cohort rows' modeled columns (docs/modeling.md), worked out on the driver from the summed parts
    (one line per cohort row with a revenue currency and a modeled estimate or a note): the interval is the
    gamma of the summed estimate and variance, its low end 0 when Σ log_p_zero >= ln 0.05, by
    bench/model_reference.py. Keyed by table, install date and cohort key; the other rows get them empty."""
    from pyspark.sql import functions as F

    reference = model_reference()

    def micros(amount):
        return int(decimal.Decimal(reference.money(amount)) * 1_000_000)

    wanted = rows.filter(F.col("revenue_currency").isNotNull() & (F.col("_m_est").isNotNull() | (F.size("_m_notes") > 0)))
    values = []
    for row in wanted.select("table", "dt", *COHORT_KEY, "revenue_est_cum_w3", *COHORT_MODEL_PARTS).collect():
        key = [row[k] for k in ("table", "dt", *COHORT_KEY)]
        if row["_m_notes"]:
            values.append((*key, None, None, None, None, None, None, None, "; ".join(row["_m_notes"])))
            continue
        estimate, measured = row["_m_est"], row["revenue_est_cum_w3"]
        low, high = reference.interval_low_high(estimate / 1e6, row["_m_var"] + row["_m_sd2"], row["_m_lpz"])
        total = measured + estimate if measured is not None else (estimate if estimate > 0 else None)
        values.append((*key, estimate, micros(low), micros(high), total, repr(row["_m_var"]), repr(row["_m_sd"]),
                       repr(row["_m_lpz"]), None))
    schema = ("table string, dt string, app_id long, ad_network_id string, campaign_id long, source_identifier string, "
              "campaign string, " + ", ".join(f"{c} long" for c in MODEL_MONEY_COLUMNS)
              + ", modeled_null_values_var string, modeled_null_mean_sd string, modeled_null_log_p_zero string, modeled_note string")
    return spark.createDataFrame(values, schema)


def with_cohort_modeled_columns(spark, rows):
    """`rows` with the modeled columns appended (empty where cohort_modeled_columns has no line)."""
    from pyspark.sql import functions as F

    keys = ["table", "dt", *COHORT_KEY]
    modeled = cohort_modeled_columns(spark, rows)
    modeled = modeled.select(*[F.col(k).alias(f"_mk_{k}") for k in keys], *MODEL_COLUMNS)
    return (rows.join(F.broadcast(modeled), [rows[k].eqNullSafe(modeled[f"_mk_{k}"]) for k in keys], "left")
            .drop(*[f"_mk_{k}" for k in keys]))


def cohort_spend(spark, paths):
    """Per install date and key: the spend of every source (per currency, exact), and the counts the
    rows give (SQL SUM)."""
    from pyspark.sql import functions as F

    raw = read_text_csv(spark, paths, SPEND_COLUMNS)
    rows = cohort_key(raw.select(
        F.col("date").alias("dt"), F.col("app_id").cast("long").alias("app_id"), ascii_lower(F.col("ad_network_id")).alias("ad_network_id"),
        F.col("campaign_id").cast("long").alias("campaign_id"), "source_identifier", "campaign", micros_of_text("spend").alias("spend"),
        "currency", *[F.col(c).cast("long").alias(c) for c in ("impressions", "clicks", "reported_installs")]))
    per_currency = rows.groupBy("dt", *COHORT_KEY, "currency").agg(
        F.sum("spend").alias("spend"), *[F.sum(c).alias(c) for c in ("impressions", "clicks", "reported_installs")])
    return per_currency.groupBy("dt", *COHORT_KEY).agg(
        F.array_sort(F.collect_list(F.struct("currency", "spend"))).alias("_spend_by_currency"),
        *[F.sum(c).alias(c) for c in ("impressions", "clicks", "reported_installs")])


def cohort_rows(spark, postbacks, spend, complete_through, fx):
    """The rows of both cohort tables: postbacks and spend joined by table, install date and key (the
    same spend in both tables), and every column worked out (docs/aggregate.md). `fx` holds the
    `--fx` rates (dt, from, to, rate in 10^-10 units), possibly none."""
    from pyspark.sql import functions as F

    tables = spark.createDataFrame([(table,) for table in COHORT_TABLES], "table string")
    p = postbacks.alias("p")
    s = spend.crossJoin(F.broadcast(tables)).alias("s")
    keys = ["table", "dt", *COHORT_KEY]
    joined = p.join(s, [F.col(f"p.{k}").eqNullSafe(F.col(f"s.{k}")) for k in keys], "full")
    spend_measures = ["_spend_by_currency", "impressions", "clicks", "reported_installs"]
    rows = joined.select(*[F.coalesce(F.col(f"p.{k}"), F.col(f"s.{k}")).alias(k) for k in keys],
                         *[F.col(f"s.{c}").alias(c) for c in spend_measures],
                         *[F.col(f"p.{c}").alias(c) for c in postbacks.columns if c not in keys])
    through = spark.createDataFrame([(day, value) for day, value in complete_through.items()], "dt string, complete_through string")
    rows = rows.join(F.broadcast(through), "dt", "left")

    zero = F.lit(0).cast("long")
    exact = "decimal(38,0)"
    revenue_currencies = F.coalesce(F.col("_revenue_currencies"), F.array().cast("array<string>"))
    one_revenue_currency = F.size(revenue_currencies) == 1
    target = F.when(one_revenue_currency, revenue_currencies[0])
    # The day's rates into the revenue's currency, by the spend's currency.
    rates = fx.groupBy("dt", "to").agg(F.map_from_entries(F.collect_list(F.struct("from", "rate"))).alias("_rates"))
    rows = (rows.withColumn("_target", target)
            .join(F.broadcast(rates), (rows["dt"] == rates["dt"]) & (F.col("_target") == rates["to"]), "left")
            .drop(rates["dt"]).drop(rates["to"]))
    target = F.col("_target")
    rate_of = lambda currency: F.element_at(F.col("_rates"), currency)  # noqa: E731

    spend_list = F.col("_spend_by_currency")
    # Spend brought into the revenue's currency: each currency is that one or has a rate for the day.
    convertible = (spend_list.isNotNull() & target.isNotNull()
                   & F.forall(spend_list, lambda row: (row["currency"] == target) | rate_of(row["currency"]).isNotNull()))
    converted_total = F.aggregate(spend_list, F.lit(0).cast(exact), lambda total, row: total + F.when(
        row["currency"] == target, row["spend"].cast(exact)).otherwise(fx_convert_column(row["spend"], rate_of(row["currency"])))).cast("long")
    foreign = F.filter(spend_list, lambda row: row["currency"] != target)
    one_spend_currency = F.size(spend_list) == 1
    spend_value = F.when(convertible, converted_total).when(one_spend_currency, spend_list[0]["spend"])
    spend_currency = F.when(convertible, target).when(one_spend_currency, spend_list[0]["currency"])
    fx_rate = F.when(convertible & (F.size(foreign) == 1), rate_of(foreign[0]["currency"]))

    def revenue(measure, index):
        return F.when(one_revenue_currency, F.col(f"_revenue_{measure}_w{index}"))

    def sql_sum(*terms):
        return F.when(F.greatest(*[t.isNotNull() for t in terms]), sum((F.coalesce(t, zero) for t in terms[1:]), F.coalesce(terms[0], zero)))

    columns = {
        "complete_through": F.col("complete_through"),
        "spend": spend_value, "spend_currency": spend_currency, "spend_fx_rate": fx_rate.cast(exact),
        "impressions": F.col("impressions"), "clicks": F.col("clicks"), "reported_installs": F.col("reported_installs"),
        **{c: F.coalesce(F.col(c), zero) for c in ("installs", "redownloads", "reengagements", "postbacks_w1", "postbacks_w2",
                                                     "postbacks_w3", "winning_postbacks", "null_cv_postbacks")},
        "revenue_currency": target,
    }
    for index in (1, 2, 3):
        for measure in ("est", "min", "max"):
            columns[f"revenue_{measure}_w{index}"] = revenue(measure, index)
    for index in (2, 3):
        for measure in ("est", "min", "max"):
            columns[f"revenue_{measure}_cum_w{index}"] = sql_sum(*[revenue(measure, w) for w in range(1, index + 1)])
    columns["null_cv_share"] = quotient_column(columns["null_cv_postbacks"], columns["winning_postbacks"])
    columns["cpi"] = F.when(spend_value.isNotNull(), quotient_column(spend_value, columns["installs"], factor=1))
    # Why the ROAS columns are empty, the first that applies (the order postback aggregate checks them in).
    note = (F.when(spend_list.isNull(), "no-spend")
            .when(spend_value.isNull(), "mixed-spend-currencies")
            .when(F.size(revenue_currencies) > 1, "mixed-revenue-currencies")
            .when(target.isNull() | columns["revenue_est_cum_w3"].isNull(), "no-revenue")
            .when(spend_currency != target, "currency-mismatch")
            .when(spend_value == 0, "zero-spend"))
    columns["roas_note"] = note
    for index, numerator in ((1, columns["revenue_est_w1"]), (2, columns["revenue_est_cum_w2"]), (3, columns["revenue_est_cum_w3"])):
        columns[f"roas_w{index}"] = F.when(note.isNull(), quotient_column(numerator, spend_value))
    columns["reported_installs_excess"] = F.col("reported_installs") - columns["installs"]
    columns["cohort_status"] = status_column(F.col("dt").cast("date"), F.col("complete_through").cast("date"))
    return rows.select("table", "dt", *[F.col(c) for c in COHORT_KEY],
                       *[columns[c].alias(c) for c in COHORT_COLUMNS if c not in COHORT_KEY],
                       F.coalesce(F.col("_postbacks"), zero).alias("_postbacks"),
                       F.col("_revenue_est_w1"), F.col("_revenue_est_w2"), F.col("_revenue_est_w3"), "_revenue_currencies",
                       spend_list.alias("_spend_by_currency"), *COHORT_MODEL_PARTS)


def fx_scaled(text):
    """A rate of `--fx` as an integer of 10^-10 units (FXRate(decimal:)): digits, at most 12 before the
    point and 10 after it, positive; None otherwise."""
    whole, point, fraction = text.partition(".")
    if not whole or len(whole) > 12 or not (whole.isascii() and whole.isdigit()):
        return None
    if point and (not fraction or len(fraction) > 10 or not (fraction.isascii() and fraction.isdigit())):
        return None
    scaled = int(whole) * 10 ** 10 + int((fraction or "0").ljust(10, "0"))
    return scaled if scaled > 0 else None


def load_fx(fs, path):
    """The `--fx FILE` rates (`date,from,to,rate`: one `from` is `rate` `to`), checked as `postback
    aggregate` checks them: [(day, from, to, rate in 10^-10 units)], and the file's bytes."""
    import csv
    import io

    data = fs.read_bytes(path)
    records = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    strip = lambda field: field.strip(" ")  # noqa: E731
    if not records or [strip(f) for f in records[0]] != ["date", "from", "to", "rate"]:
        raise UsageError(f"{path}:1: the header must be date,from,to,rate (one 'from' is 'rate' 'to', e.g. 2026-03-10,USD,EUR,0.9234)")
    rates, seen = [], set()
    for number, record in enumerate(records[1:], start=2):
        if not record:
            continue
        fields = [strip(f) for f in record]
        if len(fields) != 4:
            raise UsageError(f"{path}:{number}: 4 fields expected (date,from,to,rate)")
        day = day_of("dt=" + fields[0])
        if day is None:
            raise UsageError(f"{path}:{number}:1: '{fields[0]}' is not a day (YYYY-MM-DD)")
        for column in (1, 2):
            if not (len(fields[column]) == 3 and fields[column].isascii() and fields[column].isupper() and fields[column].isalpha()):
                raise UsageError(f"{path}:{number}:{column + 1}: '{fields[column]}' is not an ISO 4217 code (e.g. EUR, USD)")
        rate = fx_scaled(fields[3])
        if rate is None:
            raise UsageError(f"{path}:{number}:4: rate '{fields[3]}' is not a positive decimal with at most ten decimals")
        if (day, fields[1], fields[2]) in seen:
            raise UsageError(f"{path}:{number}: a second rate for {fields[1]}->{fields[2]} on {day}")
        seen.add((day, fields[1], fields[2]))
        rates.append((day, fields[1], fields[2], rate))
    return rates, data


def fx_frame(spark, rates):
    return spark.createDataFrame([(day.isoformat(), source, target, decimal.Decimal(rate)) for day, source, target, rate in rates],
                                 "dt string, from string, to string, rate decimal(38,0)")


def empty_spend(spark):
    return spark.createDataFrame([], "dt string, app_id long, ad_network_id string, campaign_id long, source_identifier string, campaign string, "
                                     "_spend_by_currency array<struct<currency:string,spend:long>>, impressions long, clicks long, reported_installs long")


def day_of(name, prefix="dt=", suffix=""):
    """The day of `dt=YYYY-MM-DD` + suffix, or None."""
    if not (name.startswith(prefix) and name.endswith(suffix) and len(name) == len(prefix) + 10 + len(suffix)):
        return None
    try:
        return datetime.date.fromisoformat(name[len(prefix):len(prefix) + 10])
    except ValueError:
        return None


class CohortPlan:
    """What a run rebuilds, decided on the driver from listings and manifests: the install dates, the
    campaign_daily files and spend files each one reads, and complete_through."""

    def __init__(self, fs, args, days):
        first = days[0] - datetime.timedelta(days=COHORT_HORIZON_DAYS)
        self.window = days_between(first, days[-1])
        # Published days (a manifest); whether each was published whole (not partial) is read when asked.
        self.manifests = f"{args.out}/_manifests"
        self.published = {day for day in (day_of(name, suffix=".json") for name, _ in fs.list_files(self.manifests)) if day is not None}
        self.whole = {}
        # Published cohorts and what they read.
        self.cohort_manifests = {}
        for name, _ in fs.list_files(f"{args.out}/_cohort_manifests"):
            day = day_of(name, suffix=".json")
            if day is not None:
                self.cohort_manifests[day] = f"{args.out}/_cohort_manifests/{name}"
        # Stored spend: DATA/spend/dt=DAY/SOURCE.csv.
        self.spend_files = {}
        for name in list_names(fs, f"{args.data}/spend"):
            day = day_of(name)
            if day is not None:
                files = sorted(f for f, _ in fs.list_files(f"{args.data}/spend/{name}") if f.endswith(".csv") and not f.startswith("."))
                if files:
                    self.spend_files[day] = [f"{args.data}/spend/{name}/{f}" for f in files]
        self.spend_digests = {}
        in_window = set(self.window)
        # Any other install date whose spend files changed since its cohort was published (or that has none published).
        self.other_days = []
        for day in sorted(self.spend_files):
            if day in in_window:
                continue
            digests = self.digests(fs, day)
            published = self.published_spend(fs, args, day)
            if published != {store_relative(args, path): digest for path, digest in digests.items()}:
                self.other_days.append(day)
        self.candidates = sorted(in_window | set(self.other_days))
        # complete_through: the last received day up to which every day from the install date on is published
        # whole, at most I + 39 (nothing can be added after it).
        self.complete_through = {}
        for day in self.candidates:
            through = None
            probe = day
            while self.published_whole(fs, probe) and (probe - day).days <= COHORT_HORIZON_DAYS:
                through = probe
                probe += datetime.timedelta(days=1)
            self.complete_through[day] = through
        # The campaign_daily files each install date reads: received days I .. I + 39 that are published.
        self.sources = {}
        # The CSV file when a day has both (the same rows), as postback aggregate reads them.
        extension_order = ("csv", "parquet")
        self.files_by_day = {}
        for day in self.candidates:
            files = []
            for offset in range(COHORT_HORIZON_DAYS + 1):
                received = day + datetime.timedelta(days=offset)
                if received not in self.published:
                    continue
                for table in COHORT_TABLES:
                    source = COHORT_SOURCES[table]
                    key = (source, received)
                    if key not in self.sources:
                        self.sources[key] = self.find_source(fs, args.out, source, received, extension_order)
                    if self.sources[key]:
                        files.append(self.sources[key])
            self.files_by_day[day] = files

    def published_whole(self, fs, day):
        if day not in self.published:
            return False
        if day not in self.whole:
            self.whole[day] = not json.loads(fs.read_bytes(f"{self.manifests}/dt={day.isoformat()}.json")).get("partial", False)
        return self.whole[day]

    @staticmethod
    def find_source(fs, out, source, received, extension_order):
        directory = f"{out}/{source}/dt={received.isoformat()}"
        names = {name for name, _ in fs.list_files(directory)}
        for extension in extension_order:
            if f"part-00000.{extension}" in names:
                return (COHORT_TABLES[list(COHORT_SOURCES.values()).index(source)], f"{directory}/part-00000.{extension}", extension)
        return None

    def digests(self, fs, day):
        if day not in self.spend_digests:
            self.spend_digests[day] = {path: hashlib.sha256(fs.read_bytes(path)).hexdigest() for path in self.spend_files.get(day, [])}
        return self.spend_digests[day]

    def published_manifest(self, fs, day):
        path = self.cohort_manifests.get(day)
        return json.loads(fs.read_bytes(path)) if path else None

    def published_spend(self, fs, args, day):
        manifest = self.published_manifest(fs, day)
        if manifest is None:
            return None
        return {i["path"]: i["sha256"] for i in manifest.get("inputs", []) if i["path"].startswith("spend/")}


def input_facts(spark, fs, paths):
    """{path: (bytes, sha256)} of the files listed, computed where the files are (one Spark job)."""
    from pyspark.sql import functions as F

    if not paths:
        return {}
    from urllib.parse import unquote

    # binaryFile names each file by its URI (percent-encoded where the path needs it).
    qualified = {unquote(fs.qualified(path)): path for path in paths}
    facts = {}
    for row in (spark.read.format("binaryFile").load([fs.qualified(path) for path in paths])
                .select("path", "length", F.sha2("content", 256).alias("sha256")).collect()):
        facts[qualified.get(unquote(row["path"]), row["path"])] = (int(row["length"]), row["sha256"])
    missing = [path for path in paths if path not in facts]
    if missing:
        raise IOError(f"{missing[0]}: could not be read for its checksum")
    return facts


def publish_cohorts(spark, fs, args, days, staging, spark_version):
    """Rebuilds the cohorts of install dates FROM - 39 to TO that have postbacks, spend or a published
    cohort, and of any other install date whose spend files changed since its cohort was published;
    writes both tables, then each install date's manifest. Returns the install dates it refused to
    make worse (fewer postbacks or development postbacks, or an earlier complete_through, than
    published, without --force)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    plan = CohortPlan(fs, args, days)
    source_files = sorted({f for files in plan.files_by_day.values() for f in files})
    spend_paths = [path for day in plan.candidates for path in plan.spend_files.get(day, [])]
    facts = input_facts(spark, fs, [path for _, path, _ in source_files] + spend_paths)

    postbacks = (cohort_postbacks(cohort_source_rows(spark, source_files, fs), plan.candidates) if source_files
                 else None)
    spend = cohort_spend(spark, spend_paths) if spend_paths else empty_spend(spark)
    if postbacks is None:
        postbacks = cohort_postbacks_empty(spark)
    through = {day.isoformat(): (value.isoformat() if value else None) for day, value in plan.complete_through.items()}
    rates, fx_bytes = load_fx(fs, args.fx) if args.fx else ([], None)
    rows = with_cohort_modeled_columns(spark, cohort_rows(spark, postbacks, spend, through, fx_frame(spark, rates))).persist(
        StorageLevel.MEMORY_AND_DISK)

    # Totals as postback aggregate counts them: postbacks, installs and revenue of the production table
    # (revenue per currency of each row whose postbacks have one currency), and the development table's
    # postbacks.
    totals = {}
    for row in rows.groupBy("table", "dt").agg(F.count(F.lit(1)).alias("rows"), F.sum("_postbacks").alias("postbacks"),
                                                F.sum("installs").alias("installs")).collect():
        totals[(row["table"], row["dt"])] = {"rows": int(row["rows"]), "postbacks": int(row["postbacks"]), "installs": int(row["installs"])}
    revenue = {}
    for row in (rows.filter((F.col("table") == published_schema.CAMPAIGN_COHORT_DAILY) & (F.size("_revenue_currencies") == 1))
                .select("dt", F.col("_revenue_currencies")[0].alias("currency"),
                        (F.coalesce("_revenue_est_w1", F.lit(0)) + F.coalesce("_revenue_est_w2", F.lit(0))
                         + F.coalesce("_revenue_est_w3", F.lit(0))).cast("long").alias("amount"))
                .groupBy("dt", "currency").agg(F.sum("amount").alias("amount")).collect()):
        revenue.setdefault(row["dt"], {})[row["currency"]] = int(row["amount"])
    spend_totals = {}
    for row in (spend.select("dt", F.explode("_spend_by_currency").alias("s")).groupBy("dt", "s.currency")
                .agg(F.sum("s.spend").alias("amount")).collect()):
        spend_totals.setdefault(row["dt"], {})[row["currency"]] = int(row["amount"])

    with_rows = {dt for (_, dt) in totals}
    in_window = set(plan.window)
    rebuilt = [day for day in plan.candidates
               if day not in in_window or day.isoformat() in with_rows or day in plan.spend_files or day in plan.cohort_manifests]
    refused, accepted = [], []
    for day in rebuilt:
        published = plan.published_manifest(fs, day)
        if published is not None and not args.force:
            new_postbacks = [totals.get((table, day.isoformat()), {}).get("postbacks", 0) for table in COHORT_TABLES]
            old_totals = published.get("totals", {})
            old_postbacks = [old_totals.get("postbacks", 0), old_totals.get("development_postbacks", 0)]
            old_through = published.get("complete_through")
            new_through = plan.complete_through[day]
            # Production postbacks only, as a day's rule compares decoded production postbacks: a rerun
            # that drops development (test) postbacks is not a loss.
            if (new_postbacks[0] < old_postbacks[0]
                    or (old_through is not None and (new_through is None or new_through.isoformat() < old_through))):
                refused.append((day, published, new_postbacks, new_through))
                continue
        accepted.append(day)
    summaries = []
    if not accepted:
        rows.unpersist()
        return refused, summaries

    published_files = {}
    accepted_text = [day.isoformat() for day in accepted]
    for table in COHORT_TABLES:
        frame = rows.filter((F.col("table") == table) & F.col("dt").isin(*accepted_text))
        published_files[table] = write_table(spark, fs, frame, table, COHORT_COLUMNS + MODEL_COLUMNS, accepted, staging, args.out,
                                             args.format)
    for day in accepted:
        text = day.isoformat()
        inputs = [{"path": store_relative(args, path), "bytes": facts[path][0], "sha256": facts[path][1]}
                  for path in [path for _, path, _ in plan.files_by_day[day]] + plan.spend_files.get(day, [])]
        outputs = []
        for table in COHORT_TABLES:
            path = published_files[table][text]
            data = fs.read_bytes(path)
            outputs.append({"table": table, "path": store_relative(args, path),
                            "rows": totals.get((table, text), {}).get("rows", 0), "bytes": len(data),
                            "sha256": hashlib.sha256(data).hexdigest()})
        production = totals.get((published_schema.CAMPAIGN_COHORT_DAILY, text), {})
        development = totals.get((published_schema.CAMPAIGN_COHORT_DAILY_DEVELOPMENT, text), {})
        amounts = revenue.get(text, {})
        spent = spend_totals.get(text, {})
        through = plan.complete_through[day]
        manifest = {
            "format": COHORT_MANIFEST_FORMAT, "dt": text, "tool": f"{TOOL} (Apache Spark {spark_version})",
            "cohort_status": cohort_status(day, through),
            "complete_through": through.isoformat() if through else None,
            "inputs": inputs,
            # The rates used, named by the file's base name: the same rates from another path are the same run.
            **({"fx_rates": {"file": args.fx.rstrip("/").rsplit("/", 1)[-1] or args.fx, "bytes": len(fx_bytes),
                             "sha256": hashlib.sha256(fx_bytes).hexdigest()}} if args.fx else {}),
            "outputs": outputs,
            # The production table's postbacks, installs and revenue; the development table's postbacks;
            # the spend as imported (before any --fx conversion).
            "totals": {"postbacks": production.get("postbacks", 0),
                       "installs": production.get("installs", 0),
                       "development_postbacks": development.get("postbacks", 0),
                       "spend_by_currency": {c: ExactDecimal(money_text(spent[c])) for c in sorted(spent)},
                       "revenue_est_by_currency": {c: ExactDecimal(money_text(amounts[c])) for c in sorted(amounts)}},
        }
        previous = plan.published_manifest(fs, day)
        fs.write_bytes(f"{args.out}/_cohort_manifests/dt={text}.json", (json_with_exact_revenue(manifest) + "\n").encode())
        # Changed: any output or input differs from the published cohort's (its manifest lists them all).
        summaries.append({"cohort": text, "rows": totals.get((published_schema.CAMPAIGN_COHORT_DAILY, text), {}).get("rows", 0),
                          "cohort_status": manifest["cohort_status"],
                          "changed": previous is None or {k: v for k, v in previous.items() if k != "tool"}
                          != json.loads(json_with_exact_revenue({k: v for k, v in manifest.items() if k != "tool"}))})
    rows.unpersist()
    return refused, summaries


def cohort_text(summaries):
    """postback aggregate's line for the cohort pass."""
    if not summaries:
        return "cohorts: none to build (no postbacks or spend in reach)"
    changed = sum(1 for summary in summaries if summary["changed"])
    not_final = sum(1 for summary in summaries if summary["cohort_status"] != "final")
    return (f"cohorts {summaries[0]['cohort']}..{summaries[-1]['cohort']}: {changed} of {len(summaries)} rewritten; "
            f"{not_final} not final yet (later postbacks can still add to them)")


def cohort_postbacks_empty(spark):
    columns = ", ".join(["table string", "dt string", "app_id long", "ad_network_id string", "campaign_id long", "source_identifier string",
                         "campaign string", "_postbacks long", "installs long", "redownloads long", "reengagements long",
                         "postbacks_w1 long", "postbacks_w2 long", "postbacks_w3 long", "winning_postbacks long", "null_cv_postbacks long",
                         "_revenue_currencies array<string>",
                         *[f"_revenue_{m}_w{w} long" for w in (1, 2, 3) for m in ("est", "min", "max")],
                         "_m_est long", "_m_var double", "_m_sd double", "_m_sd2 double", "_m_lpz double", "_m_notes array<string>"])
    return spark.createDataFrame([], columns)


# ---------------------------------------------------------------------------------------------
# Manifests and summaries


def day_facts(classified, firsts, daily, frames, segments, days):
    """Per day: the manifest's inputs, totals and rejected-by-status (one small Spark job each)."""
    from pyspark.sql import functions as F

    requested = {day.isoformat() for day in days}
    per_file = {row["name"]: row for row in classified.groupBy("name").agg(
        F.count(F.lit(1)).alias("lines"),
        F.sum(F.when(F.col("state") == "postback", 1).otherwise(0)).alias("postbacks"),
        F.sum(F.when(F.col("state") == "rejected", 1).otherwise(0)).alias("rejected"),
        F.sum(F.when(F.col("state") == "corrupt", 1).otherwise(0)).alias("corrupt_lines"),
        F.sum(F.when(F.col("state") == "unreadable", 1).otherwise(0)).alias("unreadable_lines"),
        F.max(F.col("state") == "torn").alias("torn_tail")).collect()}
    duplicates = {row["dt"]: row for row in firsts.groupBy("dt").agg(
        F.sum(F.when(~F.col("seen_earlier"), F.col("copies") - 1).otherwise(0)).alias("same_day"),
        F.sum(F.when(F.col("seen_earlier"), F.col("copies")).otherwise(0)).alias("earlier_days")).collect()}
    sums = ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "development_postbacks", "rejected_postbacks"]
    totals = {row["dt"]: row for row in daily.groupBy("dt").agg(
        *[F.sum(c).alias(c) for c in sums],
        # A row has a revenue estimate exactly when a schema decoded its value (zero revenue included).
        F.sum(F.when(F.col("revenue_est_sum").isNotNull(), F.col("postbacks")).otherwise(0)).alias("decoded_postbacks"),
        F.count(F.lit(1)).alias("rows")).collect()}
    # Never a sum across currencies: one total per day and currency.
    revenue_by_currency = {}
    for row in (daily.filter(F.col("revenue_est_sum").isNotNull() & F.col("currency").isNotNull() & (F.col("postbacks") > 0))
                .groupBy("dt", "currency").agg(F.sum("revenue_est_sum").alias("revenue")).collect()):
        revenue_by_currency.setdefault(row["dt"], {})[row["currency"]] = int(row["revenue"])
    # Rows of every table but the detail's (counted with its totals above).
    rows_by_table = {table: {row["dt"]: row["rows"] for row in frame.groupBy("dt").agg(F.count(F.lit(1)).alias("rows")).collect()}
                     for table, (frame, _) in frames.items() if table != DETAIL_TABLE}
    # Counted postbacks that no schema decodes, by app (manifest `apps_without_schema`).
    without_schema = {}
    for row in (daily.filter(F.col("schema_id").isNull() & (F.col("postbacks") > 0)).groupBy("dt", "app_id")
                .agg(F.sum("postbacks").alias("postbacks")).orderBy("app_id").collect()):
        without_schema.setdefault(row["dt"], []).append({"app_id": int(row["app_id"]), "postbacks": int(row["postbacks"])})
    statuses = {}
    for row in classified.filter((F.col("state") == "rejected")).groupBy("dt", "status").count().collect():
        statuses.setdefault(row["dt"], {})[row["status"]] = row["count"]

    facts = {}
    for day in sorted(requested):
        inputs = []
        for segment in segments:
            if segment["dt"] != day:
                continue
            counts = per_file.get(segment["name"])
            inputs.append({"path": segment["name"], "spool": segment["spool"], "bytes": segment["bytes"],
                           "lines": counts["lines"] if counts else 0, "postbacks": counts["postbacks"] if counts else 0,
                           "rejected": counts["rejected"] if counts else 0, "corrupt_lines": counts["corrupt_lines"] if counts else 0,
                           "torn_tail": bool(counts["torn_tail"]) if counts else False,
                           "unreadable_lines": counts["unreadable_lines"] if counts else 0})
        day_totals = totals.get(day)
        total = {c: int(day_totals[c] or 0) if day_totals else 0 for c in sums}
        revenue = revenue_by_currency.get(day, {})
        facts[day] = {
            "inputs": inputs,
            "spool_segments": sum(1 for i in inputs if i["spool"] == "postbacks"),
            "totals": {
                **{c: total[c] for c in sums[:6]},
                "decoded_postbacks": int(day_totals["decoded_postbacks"] or 0) if day_totals else 0,
                "revenue_est_by_currency": {currency: ExactDecimal(money_text(revenue[currency])) for currency in sorted(revenue)},
                "development_postbacks": total["development_postbacks"], "rejected_postbacks": total["rejected_postbacks"],
                "duplicates_same_day": int(duplicates[day]["same_day"]) if day in duplicates else 0,
                "duplicates_of_earlier_days": int(duplicates[day]["earlier_days"]) if day in duplicates else 0,
                "corrupt_lines": sum(i["corrupt_lines"] for i in inputs), "torn_tails": sum(1 for i in inputs if i["torn_tail"]),
                "unreadable_lines": sum(i["unreadable_lines"] for i in inputs)},
            "rows": {DETAIL_TABLE: int(day_totals["rows"]) if day_totals else 0,
                     **{table: int(rows.get(day, 0)) for table, rows in rows_by_table.items()}},
            "rejected_by_status": {s: statuses.get(day, {})[s] for s in VERIFICATION_STATUSES if s in statuses.get(day, {})},
            "apps_without_schema": without_schema.get(day, []),
        }
    return facts


def money_text(micros):
    whole, fraction = divmod(micros, 1_000_000)
    return str(whole) if fraction == 0 else f"{whole}.{fraction:06d}".rstrip("0")


def write_manifest(fs, args, day, facts, segments, published, output_format, tables, spark_version):
    """`_manifests/dt=D.json`, written after every table (its presence marks a complete day)."""
    window_start = (day - datetime.timedelta(days=args.lookback_days)).isoformat()
    manifest = {
        "format": 3, "dt": day.isoformat(), "tool": f"{TOOL} (Apache Spark {spark_version})", "lookback_days": args.lookback_days,
        "spool_segments": facts["spool_segments"], "partial": False,
        "output_format": output_format,
        "inputs": facts["inputs"],
        "lookback_inputs": [{"path": s["name"], "bytes": s["bytes"]} for s in segments
                            if s["spool"] == "postbacks" and window_start <= s["dt"] < day.isoformat()],
        "decode_table": [{"table": t, "sha256": tables["digests"][t]} for t in DECODE_TABLES],
        "outputs": [{"table": table, "path": store_relative(args, published[table][day.isoformat()]), "rows": facts["rows"][table],
                     "bytes": fs_size(fs, published[table][day.isoformat()])} for table in TABLES],
        "totals": facts["totals"],
        "apps_without_schema": facts["apps_without_schema"],
        "rejected_by_status": facts["rejected_by_status"],
    }
    fs.write_bytes(f"{args.out}/_manifests/dt={day.isoformat()}.json", (json_with_exact_revenue(manifest) + "\n").encode())
    return manifest


class ExactDecimal(str):
    """An exact decimal amount kept as text, written into JSON as a number (as postback aggregate
    writes money), never through a float."""


def json_with_exact_revenue(value):
    """JSON text in which every ExactDecimal is written as a JSON number literal."""
    marks = []

    def mark(item):
        if isinstance(item, ExactDecimal):
            marks.append(str(item))
            return f"@money{len(marks) - 1}@"
        if isinstance(item, dict):
            return {key: mark(member) for key, member in item.items()}
        if isinstance(item, list):
            return [mark(member) for member in item]
        return item

    text = json.dumps(mark(value))
    for index, amount in enumerate(marks):
        text = text.replace(f'"@money{index}@"', amount, 1)
    return text


def store_relative(args, path):
    """A path as the Swift manifest gives it: relative to the store when it is inside it."""
    return path[len(args.data) + 1:] if path.startswith(args.data + "/") else path


def fs_size(fs, path):
    filesystem, hadoop_path = fs._resolve(path)
    return int(filesystem.getFileStatus(hadoop_path).getLen())


def revenue_text(by_currency):
    """"EUR 13115, USD 11906.43", as postback aggregate prints it; amounts in different currencies are never added."""
    return ", ".join(f"{currency} {amount}" for currency, amount in sorted(by_currency.items())) or "none"


def text_summary(day, manifest):
    totals = manifest["totals"]
    rows = {output["table"]: output["rows"] for output in manifest["outputs"]}
    text = (f"{day}: {totals['postbacks']} postbacks ({totals['installs']} installs, {totals['redownloads']} redownloads, "
            f"{totals['reengagements']} re-engagements, {totals['losses']} losses, {totals['null_cv_postbacks']} null values), "
            f"revenue estimate {revenue_text(totals['revenue_est_by_currency'])}; {totals['development_postbacks']} development, {totals['rejected_postbacks']} rejected, "
            f"{totals['duplicates_same_day'] + totals['duplicates_of_earlier_days']} duplicates dropped; "
            f"{rows[DETAIL_TABLE]} + {rows[published_schema.CAMPAIGN_EVENTS_DAILY]} rows from {len(manifest['inputs'])} files")
    if manifest.get("apps_without_schema"):
        text += "; no schema for apps " + ", ".join(f"{a['app_id']} ({a['postbacks']})" for a in manifest["apps_without_schema"]) + ": counted, no revenue"
    if totals["torn_tails"]:
        text += f"; {totals['torn_tails']} torn tails skipped"
    return text


# ---------------------------------------------------------------------------------------------


def lock_local_output(out):
    """On a local --out, takes the lock `postback aggregate` takes (flock on OUT/.lock), so the two
    never write one store at once. Object storage has no such lock: run one job at a time there."""
    import fcntl

    if "://" in out and not out.startswith("file:"):
        return None
    directory = out[len("file:"):] if out.startswith("file:") else out
    os.makedirs(directory, exist_ok=True)
    handle = open(f"{directory}/.lock", "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise UsageError(f"{directory}/.lock is held: another aggregation is writing {directory}") from None
    return handle


class PhaseTrace:
    """Phase timings on stderr when POSTBACK_AGGREGATE_TRACE=1 (as for postback aggregate)."""

    def __init__(self):
        self.enabled = os.environ.get("POSTBACK_AGGREGATE_TRACE") == "1"
        self.last = time.time()

    def mark(self, phase):
        now = time.time()
        if self.enabled:
            print(f"trace: {phase}: {now - self.last:.2f} s", file=sys.stderr, flush=True)
        self.last = now


def run(args):
    from pyspark import StorageLevel
    import pyspark

    trace = PhaseTrace()
    lock = lock_local_output(args.out)  # held until the process ends
    spark = start_spark(args)
    fs = FileSystem(spark)
    staging = f"{args.out}/_staging-{uuid.uuid4().hex}"
    decode_directory = None
    trace.mark("start Spark")
    try:
        if not fs.exists(args.data):
            raise UsageError(f"--data {args.data} does not exist")
        decode_directory = args.decode_table or export_decode_table(args.schemas, args.postback)
        tables = load_decode_tables(spark, fs, decode_directory, staging)
        days = days_between(args.first, args.last)
        lookback = days_between(args.first - datetime.timedelta(days=args.lookback_days), args.first - datetime.timedelta(days=1))
        segments = list_segments(fs, args.data, days, lookback)
        trace.mark(f"decode table, {len(segments)} segments listed")

        # Parsed once, used by the dedup, the rejected rows and the manifests.
        classified = classify_lines(read_spool_lines(spark, segments)).persist(StorageLevel.MEMORY_AND_DISK)
        firsts = first_copies(classified, args.first, args.lookback_days).persist(StorageLevel.MEMORY_AND_DISK)
        rows = postback_rows(firsts, conflict_counts(spark, fs, args.data, days)).persist(StorageLevel.MEMORY_AND_DISK)
        decoded = decode_rows(rows, tables).persist(StorageLevel.MEMORY_AND_DISK)
        daily = postback_detail_daily(decoded, rejected_rows(classified, args.first)).persist(StorageLevel.MEMORY_AND_DISK)
        events = campaign_events_daily(decoded, tables).persist(StorageLevel.MEMORY_AND_DISK)
        development = rollup_rows(decode_rows(development_rows(rows), tables).select("dt", *DETAIL_COLUMNS), DEVELOPMENT_ROLLUP)
        frames = {DETAIL_TABLE: (daily, DETAIL_COLUMNS), published_schema.CAMPAIGN_EVENTS_DAILY: (events, CAMPAIGN_EVENTS_DAILY_COLUMNS),
                  published_schema.CAMPAIGN_DAILY_DEVELOPMENT: (development.persist(StorageLevel.MEMORY_AND_DISK), DEVELOPMENT_ROLLUP["columns"]),
                  **{rollup["table"]: (rollup_rows(production_rows(daily), rollup).persist(StorageLevel.MEMORY_AND_DISK), rollup["columns"])
                     for rollup in ROLLUPS}}
        for table in published_schema.MODELED_TABLES:
            frame, columns = frames[table]
            columns = with_model_columns(columns)
            frame = (modeled_campaign_daily(spark, fs, frame, columns, days, args.out) if table == published_schema.CAMPAIGN_DAILY
                     else development_model_columns(frame))
            frames[table] = (frame.persist(StorageLevel.MEMORY_AND_DISK), columns)
        trace.mark("null-value model")
        published = {}
        for table in TABLES:
            frame, columns = frames[table]
            published[table] = write_table(spark, fs, frame, table, columns, days, staging, args.out, args.format)
            trace.mark(f"{table} written")
        facts = day_facts(classified, firsts, daily, frames, segments, days)
        trace.mark("manifest facts")
        problems = 0
        for day in days:
            manifest = write_manifest(fs, args, day, facts[day.isoformat()], segments, published, args.format, tables, pyspark.__version__)
            totals = manifest["totals"]
            problems += totals["corrupt_lines"] + totals["unreadable_lines"]
            if totals["corrupt_lines"]:
                print(f"postback_aggregate: {day}: {totals['corrupt_lines']} corrupt lines not counted", file=sys.stderr)
            if totals["unreadable_lines"]:
                print(f"postback_aggregate: {day}: {totals['unreadable_lines']} verified records without dedup_key or attribution "
                      "not counted (run postback aggregate for them)", file=sys.stderr)
            rows = {output["table"]: output["rows"] for output in manifest["outputs"]}
            # `postback aggregate --json`'s names: campaign_daily_rows counts the detail table's rows.
            summary = {"dt": day.isoformat(), **totals, "campaign_daily_rows": rows[DETAIL_TABLE],
                       "campaign_events_daily_rows": rows[published_schema.CAMPAIGN_EVENTS_DAILY]}
            print(json_with_exact_revenue(summary) if args.json else text_summary(day, manifest), flush=True)
        if not args.skip_cohorts:
            refused, summaries = publish_cohorts(spark, fs, args, days, staging, pyspark.__version__)
            trace.mark("cohorts written")
            if args.json:
                for summary in summaries:
                    if summary["changed"]:
                        print(json.dumps({k: summary[k] for k in ("cohort", "rows", "cohort_status")}, separators=(",", ":")), flush=True)
            else:
                print(cohort_text(summaries), flush=True)
            if refused:
                for day, published, postbacks, through in refused:
                    old = published.get("totals", {})
                    print(f"postback_aggregate: cohort {day}: not replaced: this run has {postbacks[0]} postbacks and "
                          f"{postbacks[1]} development postbacks through {through.isoformat() if through else 'no complete day'}, "
                          f"the published one {old.get('postbacks', 0)} and {old.get('development_postbacks', 0)} through "
                          f"{published.get('complete_through') or 'no complete day'} "
                          "(a lost campaign_daily partition?); rerun with --force to replace it", file=sys.stderr)
                return 2
        return 1 if problems else 0
    finally:
        fs.delete_tree(staging)
        if not args.decode_table and decode_directory:
            shutil.rmtree(decode_directory, ignore_errors=True)
        spark.stop()
        if lock:
            lock.close()


def main(argv=None):
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else argv)
        return run(args)
    except UsageError as error:
        print(f"postback_aggregate: {error}", file=sys.stderr)
        return 2
    except (OSError, IOError) as error:
        print(f"postback_aggregate: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
