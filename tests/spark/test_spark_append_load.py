"""An incremental append load that enforces the target table's schema.

The standard batch pattern of a lakehouse ingestion job: read the source
CSV files with the *target table's* schema in FAILFAST mode (a batch whose
data does not match the schema fails the job instead of being loaded with
nulls), compute max(date) of the target, keep only the source rows newer
than it, and append them to the target (partitioned by date).

A mismatching batch must fail and leave the table untouched (no commit
reaches floe); a good batch that overlaps what is already loaded must add
only the newer rows.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from conftest import CATALOG

HEADER = "salesorder|item|date|customer|article|amount"


def write_source(dirpath, name, lines):
    dirpath.mkdir(parents=True, exist_ok=True)
    (dirpath / name).write_text("\n".join(lines) + "\n")
    return dirpath


def sales_line(order, item, date, customer, article, amount):
    return f"{order}|{item}|{date}|{customer}|{article}|{amount}"


def load_data(spark, target: str, source_dir):
    """The append load: schema from the target, FAILFAST, incremental on max(date)."""
    target_schema = spark.table(target).schema
    source = (spark.read.format("csv")
              .schema(target_schema)
              .options(header=True, delimiter="|", mode="FAILFAST")
              .load(str(source_dir)))
    max_date = spark.table(target).agg(F.max("date").alias("max_date")).first()["max_date"]
    appended = source if max_date is None else source.filter(F.col("date") > F.lit(max_date))
    appended.writeTo(target).append()


def rows_of(spark, t):
    return sorted(tuple(r) for r in spark.table(t).collect())


def test_append_load_failfast_then_incremental(spark, ns, rest, access_log, tmp_path):
    t = f"{CATALOG}.{ns}.failfast_table"
    spark.sql(f"""CREATE TABLE {t} (salesorder int, item int, date date, customer string,
                                    article string, amount int)
                  USING iceberg PARTITIONED BY (date)""")
    table = rest(ns, "failfast_table")

    d = dt.date
    initial = [(1, 1, d(2016, 6, 1), "customer1", "article1", 100),
               (1, 2, d(2016, 6, 1), "customer1", "article2", 200),
               (2, 1, d(2016, 6, 2), "customer2", "article3", 50)]
    src = write_source(tmp_path / "in" / "initial", "part-0.csv",
                       [HEADER] + [sales_line(*r) for r in initial])
    load_data(spark, t, src)
    assert rows_of(spark, t) == sorted(initial)
    loaded_head = table.head("main")

    # Batch 1 does not match the schema: an amount that is not an integer.
    bad_type = write_source(tmp_path / "in" / "bad_type", "part-0.csv", [
        HEADER,
        sales_line(3, 1, "2016-06-03", "customer3", "article1", 10),
        sales_line(3, 2, "2016-06-03", "customer3", "article2", "12,50 EUR"),
    ])
    # Batch 2 does not match the schema: an extra column.
    bad_cols = write_source(tmp_path / "in" / "bad_cols", "part-0.csv", [
        HEADER + "|discount",
        sales_line(4, 1, "2016-06-04", "customer4", "article1", 10) + "|5",
    ])
    for bad in (bad_type, bad_cols):
        log = access_log()
        with pytest.raises(Exception) as exc:
            load_data(spark, t, bad)
        assert "FAILFAST" in str(exc.value) or "Malformed" in str(exc.value), str(exc.value)[:2000]
        # Nothing lands: no commit reached floe, main did not move, the rows are unchanged.
        commits = log.find("POST", rf"/tables/failfast_table$")
        assert not commits, f"a failed load must not commit:\n{log.text()}"
        assert table.head("main") == loaded_head
        assert rows_of(spark, t) == sorted(initial)

    # A good batch overlapping the loaded dates: only rows after max(date) = 2016-06-02 are appended.
    newer = [(3, 1, d(2016, 6, 3), "customer3", "article1", 10),
             (4, 1, d(2016, 6, 4), "customer4", "article4", 70),
             (4, 2, d(2016, 6, 4), "customer4", "article5", 30)]
    older = [(1, 1, d(2016, 6, 1), "customer1", "article1", 100),  # already loaded
             (2, 2, d(2016, 6, 2), "customer2", "article9", 999)]  # not newer than max(date)
    src = write_source(tmp_path / "in" / "good", "part-0.csv",
                       [HEADER] + [sales_line(*r) for r in older + newer])
    log = access_log()
    load_data(spark, t, src)
    assert rows_of(spark, t) == sorted(initial + newer)
    assert len(log.find("POST", rf"/tables/failfast_table$", 200)) == 1, log.text()

    snap = spark.sql(f"SELECT operation, summary FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
    assert snap["operation"] == "append"
    assert int(snap["summary"]["added-records"]) == len(newer)
    assert table.head("main") == spark.sql(
        f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'").first()[0]

    # Partitioned by date: one partition per loaded day.
    parts = sorted(r["partition"]["date"] for r in spark.sql(f"SELECT partition FROM {t}.partitions").collect())
    assert parts == [d(2016, 6, 1), d(2016, 6, 2), d(2016, 6, 3), d(2016, 6, 4)]
    spec = table.metadata()["partition-specs"]
    assert any(f["transform"] == "identity" for s in spec for f in s["fields"]), spec

    # Running the same load again appends nothing new.
    load_data(spark, t, src)
    assert rows_of(spark, t) == sorted(initial + newer)
