#!/usr/bin/env python3
"""Unit checks of the cohort rules in spark/postback_aggregate.py on hand-made inputs: the quotients
(`null_cv_share`, `cpi`, ROAS: exact, rounded half up to millionths, empty for a 0 divisor), the --fx
conversion's rounding, and `cohort_status` from complete_through (docs/aggregate.md,
"campaign_cohort_daily"). The Spark expressions are checked against the pure-Python reference and
against exact fractions.

    scripts/venv-python spark/test_cohort_rules.py      # about 10 s, most of it starting the JVM

spark/test-equivalence checks the same rules end to end against `postback aggregate`.
The last line is `cohort rules: N passed, N failed`.
"""

import datetime
import fractions
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import postback_aggregate as job  # noqa: E402


def half_up(exact):
    """An exact non-negative fraction rounded half up to an integer (the definition, not the formula)."""
    return int(exact + fractions.Fraction(1, 2))


def main():
    passed = failed = 0

    def check(condition, what):
        nonlocal passed, failed
        passed, failed = passed + bool(condition), failed + (not condition)
        print(("ok    " if condition else "FAIL  ") + what)

    # (a, b, factor): counts over counts and millionths over millionths (factor 10^6), millionths over a count (factor 1).
    cases = [(1, 3, 10**6), (2, 3, 10**6), (1, 2, 10**6), (1, 8, 10**6), (5, 2_000_000, 10**6), (7, 0, 10**6), (0, 5, 10**6),
             (1_000_000, 3, 1), (1_500_001, 3_000_002, 10**6), (83_250_000, 7, 1), (10_000_000, 6_463_800, 10**6),
             (999_999_999_999_999, 1, 1), (123_456_789_012, 987_654_321, 10**6), (1, 2_000_000, 1), (3, 2_000_000, 1),
             (2_999_999, 6_000_000, 10**6), (1, 2, 1), (5, 10, 1), (1, 3, 1)]
    for a, b, factor in cases:
        reference = job.quotient_millionths(a, b, factor)
        # a ÷ b in millionths: with factor 10^6 both are of one scale; with 1, a is millionths and b a count.
        exact = None if b == 0 else half_up(fractions.Fraction(a * factor, b))
        check(reference == exact, f"quotient_millionths({a}, {b}, {factor}) = {reference}, the exact half-up {exact}")

    install = datetime.date(2026, 3, 1)
    statuses = [(None, "open"), (0, "open"), (3, "open"), (4, "window-1-final"), (10, "window-1-final"), (11, "window-2-final"),
                (38, "window-2-final"), (39, "final")]
    for offset, expected in statuses:
        through = None if offset is None else install + datetime.timedelta(days=offset)
        check(job.cohort_status(install, through) == expected, f"cohort_status(I, I + {offset}) = {expected}")
    check(job.fx_scaled("0.9234") == 9_234_000_000 and job.fx_scaled("1") == 10**10 and job.fx_scaled("0") is None
          and job.fx_scaled("1.") is None and job.fx_scaled("0.12345678901") is None, "--fx rates read as 10^-10 units")

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.ansi.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        frame = spark.createDataFrame([(a, b, factor) for a, b, factor in cases], "a long, b long, factor long")
        results = {}
        for factor in (1, 10**6):
            for row in frame.filter(F.col("factor") == factor).select("a", "b", job.quotient_column(F.col("a"), F.col("b"), factor).alias("q")).collect():
                results[(row["a"], row["b"], factor)] = row["q"]
        for a, b, factor in cases:
            check(results[(a, b, factor)] == job.quotient_millionths(a, b, factor), f"quotient_column({a}, {b}, {factor}) = {results[(a, b, factor)]}")
        days = spark.createDataFrame([(install.isoformat(), None if offset is None else (install + datetime.timedelta(days=offset)).isoformat(), expected)
                                      for offset, expected in statuses], "i string, c string, expected string")
        for row in days.select("c", "expected", job.status_column(F.col("i").cast("date"), F.col("c").cast("date")).alias("status")).collect():
            check(row["status"] == row["expected"], f"status_column(I, {row['c']}) = {row['status']}")
        # --fx: the spend's millionths times the rate, rounded half up (7 USD at 0.9234 is 6.4638; 0.000001 at 0.5 rounds up to 0.000001).
        amounts = spark.createDataFrame([(7_000_000, 9_234_000_000, 6_463_800), (1, 5_000_000_000, 1), (1, 4_999_999_999, 0), (3, 10**10 // 3, 1)],
                                        "m long, rate long, expected long")
        for row in amounts.select("m", "rate", "expected", job.fx_convert_column(F.col("m"), F.col("rate")).alias("got")).collect():
            check(row["got"] == row["expected"] == job.fx_convert(row["m"], row["rate"]),
                  f"{row['m']} millionths at {row['rate']} 10^-10 = {row['got']} millionths")
        texts = spark.createDataFrame([(83_250_000,), (150_000_000,), (1,), (0,), (9_234_000_000,)], "v long")
        got = [row["t"] for row in texts.select(job.decimal_text("v", 6).alias("t")).collect()]
        check(got == ["83.25", "150", "0.000001", "0", "9234"], f"amounts as the shortest exact decimal: {got}")
        rate = [row["t"] for row in texts.select(job.decimal_text("v", 10).alias("t")).collect()]
        check(rate[-1] == "0.9234", f"a rate as the shortest exact decimal: {rate[-1]}")
    finally:
        spark.stop()
    print(f"cohort rules: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
