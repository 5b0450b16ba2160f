"""Row-level changes, schema evolution, rename and drop, from Spark through floe.

MERGE INTO, DELETE FROM and UPDATE on format-version 2 tables, both
copy-on-write (data files rewritten) and merge-on-read (position delete
files); ALTER TABLE schema evolution (add, rename, drop a column, widen int
to bigint); ALTER TABLE ... RENAME TO; DROP TABLE with and without PURGE.
Every result is compared with an expectation computed here in Python, and
floe's stored metadata with what Spark reports.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from conftest import CATALOG, it, table_dir

ITEMS = [(1, "apple", 10), (2, "pear", 20), (3, "plum", 30), (4, "fig", 40), (5, "kiwi", 50), (6, "lime", 60)]
SCHEMA = StructType([StructField("id", LongType()), StructField("name", StringType()),
                     StructField("qty", IntegerType())])


def rows_of(spark, t):
    return sorted(tuple(r) for r in spark.table(t).collect())


def latest_snapshot(spark, t):
    return spark.sql(f"SELECT snapshot_id, operation, summary FROM {t}.snapshots "
                     f"ORDER BY committed_at DESC LIMIT 1").first()


def assert_floe_agrees(spark, t, table):
    """floe's main is Spark's current snapshot, and floe knows every snapshot Spark lists."""
    meta = table.metadata()
    spark_ids = sorted(r["snapshot_id"] for r in spark.sql(f"SELECT snapshot_id FROM {t}.snapshots").collect())
    assert sorted(s["snapshot-id"] for s in meta["snapshots"]) == spark_ids
    assert meta["current-snapshot-id"] == meta["refs"]["main"]["snapshot-id"]
    assert meta["refs"]["main"]["snapshot-id"] == spark.sql(
        f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'").first()[0]
    return meta


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_delete_update(spark, ns, rest, mode):
    name = "items_" + mode.replace("-", "_")
    t = f"{CATALOG}.{ns}.{name}"
    spark.sql(f"""CREATE TABLE {t} (id bigint, name string, qty int) USING iceberg
                  TBLPROPERTIES ('format-version' = '2',
                                 'write.delete.mode' = '{mode}',
                                 'write.update.mode' = '{mode}',
                                 'write.merge.mode' = '{mode}')""")
    table = rest(ns, name)
    meta = table.metadata()
    assert meta["format-version"] == 2
    assert meta["properties"]["write.merge.mode"] == mode
    # One data file holding every row, so that the changes below touch part of a file.
    spark.createDataFrame(ITEMS, SCHEMA).coalesce(1).writeTo(t).append()
    expected = {r[0]: r for r in ITEMS}

    def check(operation):
        assert rows_of(spark, t) == sorted(expected.values())
        snap = latest_snapshot(spark, t)
        summary = snap["summary"]
        if mode == "merge-on-read":
            assert snap["operation"] in ("overwrite", "delete"), snap
            assert int(summary.get("added-position-deletes", "0")) > 0, (operation, summary)
        else:
            assert snap["operation"] in ("overwrite", "delete"), snap
            assert int(summary.get("added-position-deletes", "0")) == 0, (operation, summary)
            assert int(summary.get("deleted-data-files", "0")) > 0, (operation, summary)
        assert_floe_agrees(spark, t, table)

    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    del expected[2]
    check("delete")

    spark.sql(f"UPDATE {t} SET qty = qty + 5, name = upper(name) WHERE id IN (3, 4)")
    for i in (3, 4):
        _, n, q = expected[i]
        expected[i] = (i, n.upper(), q + 5)
    check("update")

    spark.createDataFrame(
        [(1, "apple", 11, "U"), (5, "kiwi", 0, "D"), (7, "mango", 70, "I"), (8, "date", 80, "I")],
        "id bigint, name string, qty int, op string").createOrReplaceTempView(f"changes_{name}")
    spark.sql(f"""MERGE INTO {t} AS tgt USING changes_{name} AS src ON tgt.id = src.id
                  WHEN MATCHED AND src.op = 'D' THEN DELETE
                  WHEN MATCHED THEN UPDATE SET tgt.qty = src.qty
                  WHEN NOT MATCHED THEN INSERT (id, name, qty) VALUES (src.id, src.name, src.qty)""")
    expected[1] = (1, "apple", 11)
    del expected[5]
    expected[7] = (7, "mango", 70)
    expected[8] = (8, "date", 80)
    check("merge")

    delete_files = spark.sql(f"SELECT count(*) FROM {t}.delete_files").first()[0]
    if mode == "merge-on-read":
        assert delete_files > 0
    else:
        assert delete_files == 0
    # Every state stays readable by snapshot: the first append still has all six rows.
    first = spark.sql(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at LIMIT 1").first()[0]
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t} VERSION AS OF {first}").collect()) == ITEMS


def test_schema_evolution(spark, ns, rest):
    t = f"{CATALOG}.{ns}.people"
    spark.sql(f"CREATE TABLE {t} (id int, name string, score int) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'ada', 90), (2, 'grace', 85)")
    table = rest(ns, "people")
    fields0 = {f["name"]: f for f in table.metadata()["schemas"][0]["fields"]}

    spark.sql(f"ALTER TABLE {t} ADD COLUMN country string COMMENT 'ISO code'")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (joined date, level int)")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN name TO full_name")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN level TYPE bigint")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN score")

    cols = [(f.name, f.dataType.simpleString()) for f in spark.table(t).schema.fields]
    assert cols == [("id", "bigint"), ("full_name", "string"), ("country", "string"),
                    ("joined", "date"), ("level", "bigint")]

    meta = table.metadata()
    current = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    fields = {f["name"]: f for f in current["fields"]}
    assert set(fields) == {"id", "full_name", "country", "joined", "level"}
    assert fields["id"]["id"] == fields0["id"]["id"] and fields["id"]["type"] == "long"
    assert fields["full_name"]["id"] == fields0["name"]["id"], "a rename keeps the field id"
    assert fields["country"].get("doc") == "ISO code"
    assert "score" not in fields
    assert len(meta["schemas"]) >= 6, [s["schema-id"] for s in meta["schemas"]]

    big = 2**31 + 7
    spark.sql(f"INSERT INTO {t} VALUES ({big}, 'linus', 'FI', DATE '2024-05-01', {big})")
    rows = sorted(tuple(r) for r in spark.table(t).collect())
    import datetime as dt
    assert rows == [(1, "ada", None, None, None), (2, "grace", None, None, None),
                    (big, "linus", "FI", dt.date(2024, 5, 1), big)]
    # The old snapshot is still read with its own schema.
    first = spark.sql(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at LIMIT 1").first()[0]
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {first}").first()[0] == 2

    # Narrowing is refused by Iceberg itself, before anything reaches the catalog.
    with pytest.raises(Exception):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE int")


def test_rename_table(spark, ns, rest, floe):
    t = f"{CATALOG}.{ns}.before"
    spark.sql(f"CREATE TABLE {t} (id bigint, v string) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    uuid = rest(ns, "before").metadata()["table-uuid"]

    spark.sql(f"ALTER TABLE {t} RENAME TO {ns}.after")
    names = sorted(r["tableName"] for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{ns}").collect())
    assert names == ["after"]
    assert rows_of(spark, f"{CATALOG}.{ns}.after") == [(1, "a"), (2, "b")]
    it.assert_error(floe.get(rest(ns, "before").url), 404, "NoSuchTableException")
    assert rest(ns, "after").metadata()["table-uuid"] == uuid
    with pytest.raises(Exception, match="(?i)not found|cannot be found|TABLE_OR_VIEW_NOT_FOUND"):
        spark.table(t).count()

    # The renamed table takes writes; the old name is free for a new table.
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.after VALUES (3, 'c')")
    assert rows_of(spark, f"{CATALOG}.{ns}.after") == [(1, "a"), (2, "b"), (3, "c")]
    spark.sql(f"CREATE TABLE {t} (x int) USING iceberg")
    assert spark.table(t).count() == 0

    # Renaming onto an existing table is refused.
    with pytest.raises(Exception, match="(?i)already exists"):
        spark.sql(f"ALTER TABLE {CATALOG}.{ns}.after RENAME TO {ns}.before")


def test_drop_table_and_purge(spark, ns, rest, floe):
    for name in ("kept", "purged"):
        spark.sql(f"CREATE TABLE {CATALOG}.{ns}.{name} (id bigint, v string) USING iceberg")
        spark.sql(f"INSERT INTO {CATALOG}.{ns}.{name} VALUES (1, 'a'), (2, 'b')")
        spark.sql(f"INSERT INTO {CATALOG}.{ns}.{name} VALUES (3, 'c')")
    kept_dir = table_dir(rest(ns, "kept"))
    purged_dir = table_dir(rest(ns, "purged"))
    kept_files = sorted(p for p in kept_dir.rglob("*") if p.is_file())
    purged_files = sorted(p for p in purged_dir.rglob("*") if p.is_file())
    assert any(p.suffix == ".parquet" for p in kept_files) and any(p.suffix == ".parquet" for p in purged_files)

    # DROP TABLE: gone from the catalog, files kept.
    spark.sql(f"DROP TABLE {CATALOG}.{ns}.kept")
    it.assert_error(floe.get(rest(ns, "kept").url), 404, "NoSuchTableException")
    assert all(p.exists() for p in kept_files), "a drop without PURGE must keep the files"

    # DROP TABLE ... PURGE: gone from the catalog and its files deleted.
    spark.sql(f"DROP TABLE {CATALOG}.{ns}.purged PURGE")
    it.assert_error(floe.get(rest(ns, "purged").url), 404, "NoSuchTableException")
    # floe's janitor purges right after the drop, off the request thread.
    def left():
        return sorted(str(p) for p in purged_dir.rglob("*") if p.is_file()) if purged_dir.exists() else []
    it.wait_until(lambda: not left(), 15)
    assert not left(), f"files left after DROP TABLE ... PURGE: {left()}"
    assert sorted(r["tableName"] for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{ns}").collect()) == []
