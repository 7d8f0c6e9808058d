"""Checks postback's Parquet files with two independent readers, pyarrow and DuckDB (.build/venv).

    scripts/venv-python scripts/parquet_check.py tables DATA      every agg/<table>/dt=*/part-00000.parquet of
                                                                  a store written with --format both, against
                                                                  its CSV twin and spark/record-schema.json
    scripts/venv-python scripts/parquet_check.py files SPEC.json  files the writer's tests made, against the
                                                                  values they were made from

Prints one JSON object: {"problems": [...], ...}; exit status 0 when there are none, 1 otherwise.
(scripts/parquet-readers and Tests/AggregationTests/ParquetTests run it.)
"""
import datetime
import decimal
import glob
import json
import os
import re
import sys

import duckdb
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The Arrow type each declared SQL type must arrive as, and DuckDB's name for it.
ARROW = {"VARCHAR": "string", "BIGINT": "int64", "INTEGER": "int32", "BOOLEAN": "bool", "DATE": "date32[day]",
         "DECIMAL(38, 6)": "decimal128(38, 6)", "DOUBLE": "double"}
DUCKDB = {"DECIMAL(38, 6)": "DECIMAL(38,6)"}
EPOCH = datetime.date(1970, 1, 1)
# docs/aggregate.md, "Cells a spreadsheet would evaluate": a text cell written with a `'` before
# `=`, `+`, `-`, `@`, a tab or CR (after any `'`s) holds the text without that first `'`.
NEUTRALISED = re.compile("'+[=+\\-@\t\r]")


def cell_text(value):
    return value[1:] if isinstance(value, str) and NEUTRALISED.match(value) else value


def statistics_problems(where, parquet_file, names, rows_by_group):
    """Each row group's min, max and null count equal the values' own."""
    problems = []
    metadata = parquet_file.metadata
    for group in range(metadata.num_row_groups):
        for index, name in enumerate(names):
            values = rows_by_group[group][name]
            present = [v for v in values if v is not None]
            stats = metadata.row_group(group).column(index).statistics
            if stats is None:
                problems.append(f"{where}: {name}: row group {group} has no statistics")
                continue
            if stats.null_count != len(values) - len(present):
                problems.append(f"{where}: {name}: null_count {stats.null_count}, {len(values) - len(present)} nulls")
            if present and (not stats.has_min_max or stats.min != min(present) or stats.max != max(present)):
                problems.append(f"{where}: {name}: row group {group} min/max {stats.min!r}/{stats.max!r}, "
                                f"values {min(present)!r}/{max(present)!r}")
            if not present and stats.has_min_max:
                problems.append(f"{where}: {name}: min/max on an all-null chunk")
    return problems


def groups_of(parquet_file):
    return [parquet_file.read_row_group(g).to_pydict() for g in range(parquet_file.metadata.num_row_groups)]


def check_tables(data):
    schema = json.load(open(os.path.join(ROOT, "spark/record-schema.json")))
    columns = {schema["tables"][0]: schema["detail_columns"],
               published_schema.CAMPAIGN_EVENTS_DAILY: schema["campaign_events_daily_columns"],
               **{r["table"]: r["columns"] for r in schema["rollups"]}}
    columns[published_schema.CAMPAIGN_DAILY_DEVELOPMENT] = columns[schema["development_rollup"]]
    for table in schema["modeled_tables"]:
        columns[table] = columns[table] + schema["modeled_columns"]
    types = schema["column_types"]
    required = set(schema["postback_count_columns"])
    problems, checked = [], {"files": 0, "rows": 0, "leading_zero_identifiers": 0, "bytes_parquet": 0, "bytes_csv": 0}
    con = duckdb.connect()
    for table in schema["tables"]:
        names = columns[table]
        csv_types = ", ".join(f"'{n}': '{types[n]}'" for n in names)
        files = sorted(glob.glob(f"{data}/agg/{table}/dt=*/part-00000.parquet"))
        if not files:
            problems.append(f"{table}: no Parquet file")
        for path in files:
            where = os.path.relpath(path, data)
            csv_path = path[: -len(".parquet")] + ".csv"
            checked["files"] += 1
            checked["bytes_parquet"] += os.path.getsize(path)
            checked["bytes_csv"] += os.path.getsize(csv_path)
            parquet_file = pq.ParquetFile(path)
            arrow = parquet_file.schema_arrow
            if arrow.names != names:
                problems.append(f"{where}: columns {arrow.names}, declared {names}")
                continue
            for field in arrow:
                if str(field.type) != ARROW[types[field.name]]:
                    problems.append(f"{where}: {field.name} is {field.type}, declared {types[field.name]}")
                if field.nullable == (field.name in required):
                    problems.append(f"{where}: {field.name} nullable={field.nullable}")
            described = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}', hive_partitioning = false)").fetchall()
            for name, kind, *_ in described:
                if kind != DUCKDB.get(types[name], types[name]):
                    problems.append(f"{where}: DuckDB reads {name} as {kind}, declared {types[name]}")
            # The CSV, read with every declared type (as docs/aggregate.md shows) and a neutralised text
            # cell's `'` taken off, is the reference. An
            # unquoted empty field is null; a quoted one ("") is the empty string, as CSVLine writes it
            # and the report reads it (DuckDB would make it null too unless told).
            varchar = [i for i, n in enumerate(names) if types[n] == "VARCHAR"]
            expected = [tuple(cell_text(v) if i in varchar else v for i, v in enumerate(row)) for row in con.execute(
                f"SELECT * FROM read_csv('{csv_path}', hive_partitioning = false, header = true, auto_detect = false, quote = '\"', escape = '\"', "
                f"delim = ',', new_line = '\\n', allow_quoted_nulls = false, columns = {{{csv_types}}})").fetchall()]
            from_duckdb = con.execute(f"SELECT * FROM read_parquet('{path}', hive_partitioning = false)").fetchall()
            from_arrow = [tuple(row.values()) for row in parquet_file.read().to_pylist()]
            checked["rows"] += len(expected)
            for reader, rows in (("DuckDB", from_duckdb), ("pyarrow", from_arrow)):
                if rows != expected:
                    first = next((i for i, (a, b) in enumerate(zip(rows, expected)) if a != b), min(len(rows), len(expected)))
                    problems.append(f"{where}: {reader} reads {len(rows)} rows, the CSV has {len(expected)}; first "
                                    f"difference at row {first}: {rows[first:first + 1]} vs {expected[first:first + 1]}")
            if "source_identifier" in names:
                position = names.index("source_identifier")
                checked["leading_zero_identifiers"] += sum(
                    1 for row in from_arrow if row[position] is not None and row[position].startswith("0"))
            problems += statistics_problems(where, parquet_file, names, groups_of(parquet_file))
    return problems, checked


def expected_value(kind, value):
    if value is None:
        return None
    if kind == "string":
        return bytes.fromhex(value).decode("utf-8")
    if kind == "boolean":
        return value
    if kind == "date":
        return EPOCH + datetime.timedelta(days=int(value))
    if kind == "decimal":
        return decimal.Decimal(int(value)).scaleb(-6, context=decimal.Context(prec=60))
    if kind == "double":
        return float(value)
    return int(value)


def check_files(spec_path):
    spec = json.load(open(spec_path))
    arrow_types = {"string": "string", "int32": "int32", "int64": "int64", "boolean": "bool", "date": "date32[day]",
                   "decimal": "decimal128(38, 6)", "double": "double"}
    problems = []
    con = duckdb.connect()
    for file in spec["files"]:
        where = os.path.basename(file["path"])
        try:
            parquet_file = pq.ParquetFile(file["path"])
            columns = file["columns"]
            names = [c["name"] for c in columns]
            expected = {c["name"]: [expected_value(c["type"], v) for v in c["values"]] for c in columns}
            rows = len(columns[0]["values"]) if columns else 0
            group_rows = file["row_group_rows"]
            if parquet_file.metadata.num_rows != rows:
                problems.append(f"{where}: {parquet_file.metadata.num_rows} rows, expected {rows}")
            if parquet_file.metadata.num_row_groups != -(-rows // group_rows):
                problems.append(f"{where}: {parquet_file.metadata.num_row_groups} row groups for {rows} rows by {group_rows}")
            if parquet_file.metadata.created_by != spec["created_by"]:
                problems.append(f"{where}: created_by {parquet_file.metadata.created_by}")
            for column, field in zip(columns, parquet_file.schema_arrow):
                if field.name != column["name"] or str(field.type) != arrow_types[column["type"]] \
                        or field.nullable != column["nullable"]:
                    problems.append(f"{where}: field {field}, expected {column['name']} {column['type']}")
            table = parquet_file.read().to_pydict()
            for name in names:
                if table[name] != expected[name]:
                    problems.append(f"{where}: pyarrow reads {name} as {table[name][:8]}..., expected {expected[name][:8]}...")
            duck = con.execute(f"SELECT * FROM read_parquet('{file['path']}')").fetchall()
            if duck != list(zip(*[expected[n] for n in names])):
                problems.append(f"{where}: DuckDB reads other rows: {duck[:3]}")
            groups = [{n: expected[n][g:g + group_rows] for n in names} for g in range(0, rows, group_rows)]
            problems += statistics_problems(where, parquet_file, names, groups)
        except Exception as error:  # a file a reader refuses is a problem to report, not a crash
            problems.append(f"{where}: {type(error).__name__}: {error}")
    return problems, {"files": len(spec["files"])}


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("tables", "files"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    problems, checked = (check_tables if sys.argv[1] == "tables" else check_files)(sys.argv[2])
    print(json.dumps({"problems": problems, "checked": checked}, default=str))
    sys.exit(1 if problems else 0)
