"""Iceberg table branching and tagging from Spark, through floe.

The walk-through a data engineer follows: load a first batch of cell towers
from CSV into a new table (DataFrame writeTo ... createOrReplace), write a
second batch to an ingestion branch with the DataFrame ``branch`` option,
read the branch with ``VERSION AS OF``, inspect the ``snapshots`` and
``refs`` metadata tables, cherry-pick the branch's snapshot onto main, and
tag a snapshot with ``CREATE TAG ... RETAIN 365 DAYS``.  floe's own view of
the refs (GET .../refs) must agree with Spark's at every step.
"""

from __future__ import annotations

import csv

from conftest import CATALOG

DAY_MS = 24 * 3600 * 1000

HEADER = ["id", "device_id", "manufacturer", "event_type", "latitude", "longitude", "signal_dbm"]


def towers(start, n):
    makers = ["TowerCo", "CellWorks", "RadioNet"]
    events = ["online", "maintenance", "offline"]
    return [[start + i, f"dev-{start + i:04d}", makers[i % 3], events[(i * 7) % 3],
             round(45.0 + i * 0.01, 4), round(7.5 + i * 0.02, 4), -60 - (i % 30)]
            for i in range(n)]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)
    return str(path)


def ids(df):
    return sorted(r["id"] for r in df.select("id").collect())


def test_branch_write_cherrypick_and_tag(spark, ns, rest, tmp_path):
    t = f"{CATALOG}.{ns}.cell_towers"
    first, second = towers(1, 40), towers(1001, 25)

    # First batch: CSV -> a new Iceberg table.
    df = spark.read.csv(write_csv(tmp_path / "cell_towers_1.csv", first), header=True, inferSchema=True)
    df.writeTo(t).using("iceberg").tableProperty("write.format.default", "parquet").createOrReplace()
    assert spark.table(t).count() == len(first)
    table = rest(ns, "cell_towers")
    meta = table.metadata()
    assert meta["properties"].get("write.format.default") == "parquet", meta["properties"]
    first_snapshot = table.head("main")

    # Second batch, to a branch with the DataFrame writer's branch option.
    batch = spark.read.csv(write_csv(tmp_path / "cell_towers_2.csv", second), header=True, inferSchema=True)
    batch.createOrReplaceTempView("batch_temp_view")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH ingestion_branch")
    batch.write.format("iceberg").option("branch", "ingestion_branch").mode("append").save(t)

    # main still holds the first batch; the branch holds both.
    assert ids(spark.sql(f"SELECT * FROM {t}")) == [r[0] for r in first]
    on_branch = spark.sql(f"SELECT * FROM {t} VERSION AS OF 'ingestion_branch'")
    assert ids(on_branch) == [r[0] for r in first + second]
    assert ids(spark.sql(f"SELECT * FROM {t}.branch_ingestion_branch")) == [r[0] for r in first + second]
    assert table.head("main") == first_snapshot

    # The snapshots metadata table: the first load and the branch append.
    snaps = spark.sql(f"SELECT snapshot_id, parent_id, operation, summary FROM {t}.snapshots "
                      f"ORDER BY committed_at").collect()
    # (createOrReplace commits its rows as a replace: Iceberg calls that an overwrite)
    assert [s["operation"] for s in snaps] == ["overwrite", "append"]
    assert snaps[0]["snapshot_id"] == first_snapshot
    assert snaps[1]["parent_id"] == first_snapshot
    assert int(snaps[1]["summary"]["added-records"]) == len(second)
    floe_snaps = sorted(s["snapshot-id"] for s in table.metadata()["snapshots"])
    assert floe_snaps == sorted(s["snapshot_id"] for s in snaps)

    # The refs metadata table agrees with floe's refs.
    refs = {r["name"]: r for r in spark.sql(f"SELECT * FROM {t}.refs").collect()}
    assert set(refs) == {"main", "ingestion_branch"}
    assert refs["ingestion_branch"]["type"] == "BRANCH"
    branch_snapshot = spark.sql(
        f"SELECT snapshot_id FROM {t}.refs WHERE name == 'ingestion_branch'").collect()[0][0]
    assert branch_snapshot == snaps[1]["snapshot_id"]
    floe_refs = {r["name"]: r for r in table.refs()}
    assert floe_refs["ingestion_branch"]["snapshot-id"] == branch_snapshot
    assert floe_refs["ingestion_branch"]["type"] == "branch"
    assert floe_refs["main"]["snapshot-id"] == first_snapshot

    # Cherry-pick the branch's snapshot onto main (catalog-qualified table name, as in the article).
    res = spark.sql(f"CALL {CATALOG}.system.cherrypick_snapshot('{t}', {branch_snapshot})").collect()
    assert res[0]["source_snapshot_id"] == branch_snapshot
    assert res[0]["current_snapshot_id"] == branch_snapshot  # its parent is main's head: a fast-forward
    assert spark.sql(f"SELECT COUNT(*) FROM {t}").collect()[0][0] == len(first) + len(second)
    assert table.head("main") == branch_snapshot

    # A tag, kept for a year, and a read as of the tag.
    spark.sql(f"ALTER TABLE {t} CREATE TAG businessOrg RETAIN 365 DAYS")
    tagged = spark.sql(f"SELECT * FROM {t} VERSION AS OF 'businessOrg'")
    assert ids(tagged) == [r[0] for r in first + second]
    tag = spark.sql(f"SELECT * FROM {t}.refs WHERE name = 'businessOrg'").collect()
    assert len(tag) == 1 and tag[0]["type"] == "TAG", tag
    assert tag[0]["snapshot_id"] == branch_snapshot
    assert tag[0]["max_reference_age_in_ms"] == 365 * DAY_MS
    floe_tag = table.floe.get(table.ref_url("businessOrg")).json()
    assert floe_tag["type"] == "tag" and floe_tag["snapshot-id"] == branch_snapshot, floe_tag
    assert floe_tag["max-ref-age-ms"] == 365 * DAY_MS, floe_tag

    # main moves on; the tag still shows the tagged rows.
    spark.sql(f"INSERT INTO {t} SELECT * FROM batch_temp_view WHERE id < 1006")
    assert spark.table(t).count() == len(first) + len(second) + 5
    assert ids(spark.sql(f"SELECT * FROM {t} VERSION AS OF 'businessOrg'")) == [r[0] for r in first + second]
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 'ingestion_branch'").first()[0] == \
        len(first) + len(second)


def test_create_or_replace_branch_and_tag_retention(spark, ns, rest):
    """CREATE OR REPLACE BRANCH with retention, REPLACE BRANCH AS OF VERSION, DROP TAG / BRANCH."""
    t = f"{CATALOG}.{ns}.events"
    spark.sql(f"CREATE TABLE {t} (id bigint, kind string) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    table = rest(ns, "events")
    s1 = table.head("main")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    s2 = table.head("main")
    assert s2 != s1

    spark.sql(f"ALTER TABLE {t} CREATE BRANCH IF NOT EXISTS dev AS OF VERSION {s1} "
              f"RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    dev = {r["name"]: r for r in table.refs()}["dev"]
    assert dev["snapshot-id"] == s1
    assert dev.get("max-ref-age-ms") == 7 * DAY_MS, dev
    assert dev.get("min-snapshots-to-keep") == 2, dev
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 'dev'").first()[0] == 2

    spark.sql(f"ALTER TABLE {t} CREATE OR REPLACE BRANCH dev AS OF VERSION {s2}")
    assert {r["name"]: r for r in table.refs()}["dev"]["snapshot-id"] == s2
    spark.sql(f"ALTER TABLE {t} REPLACE BRANCH dev AS OF VERSION {s1}")
    assert {r["name"]: r for r in table.refs()}["dev"]["snapshot-id"] == s1

    spark.sql(f"ALTER TABLE {t} CREATE TAG v1 AS OF VERSION {s1}")
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 'v1'").first()[0] == 2
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {s1}").first()[0] == 2
    spark.sql(f"ALTER TABLE {t} DROP TAG v1")
    spark.sql(f"ALTER TABLE {t} DROP BRANCH dev")
    assert sorted(r["name"] for r in table.refs()) == ["main"]
    assert sorted(r["name"] for r in spark.sql(f"SELECT name FROM {t}.refs").collect()) == ["main"]
