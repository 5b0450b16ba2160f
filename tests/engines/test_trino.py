"""Trino against floe: Trino's Iceberg connector with floe as its REST
catalog (``iceberg.catalog.type=rest``) does what a Trino user does, and
PyIceberg and Spark see the same tables.

One Trino server (tests/engines/trino_server.py) serves the whole module;
it starts in about 20 seconds.
"""

from __future__ import annotations

import pyarrow as pa
import pytest


def test_create_schema_without_location_then_table(trino, ns, pyiceberg):
    # No WITH (location = ...): the table location comes from floe.
    trino.query(f"CREATE SCHEMA floe.{ns}")
    trino.query(f"CREATE TABLE floe.{ns}.orders (id integer, customer varchar, amount double)")
    assert trino.query(f"INSERT INTO floe.{ns}.orders VALUES (1, 'ada', 10.5), (2, 'bob', 20.0)") == [[2]]
    assert trino.query(f"SELECT id, customer, amount FROM floe.{ns}.orders ORDER BY id") == [
        [1, "ada", 10.5], [2, "bob", 20.0]]

    table = pyiceberg.load_table((ns, "orders"))
    assert table.location().startswith("file:")
    got = table.scan().to_arrow().sort_by("id")
    assert got.column("customer").to_pylist() == ["ada", "bob"]
    assert [t for t in trino.query(f"SHOW TABLES FROM floe.{ns}")] == [["orders"]]


def test_create_table_as_select(trino, ns, pyiceberg):
    trino.query(f"CREATE SCHEMA floe.{ns}")
    assert trino.query(
        f"CREATE TABLE floe.{ns}.squares AS SELECT n, n * n AS sq FROM UNNEST(sequence(1, 5)) AS t(n)") == [[5]]
    got = pyiceberg.load_table((ns, "squares")).scan().to_arrow().sort_by("n")
    assert got.column("sq").to_pylist() == [1, 4, 9, 16, 25]


def test_update_and_delete(trino, ns, pyiceberg):
    trino.query(f"CREATE SCHEMA floe.{ns}")
    t = f"floe.{ns}.stock"
    trino.query(f"CREATE TABLE {t} (sku varchar, qty integer)")
    trino.query(f"INSERT INTO {t} VALUES ('a', 1), ('b', 2), ('c', 3)")
    assert trino.query(f"UPDATE {t} SET qty = qty + 10 WHERE sku = 'b'") == [[1]]
    assert trino.query(f"DELETE FROM {t} WHERE sku = 'c'") == [[1]]
    assert trino.query(f"SELECT sku, qty FROM {t} ORDER BY sku") == [["a", 1], ["b", 12]]

    # PyIceberg applies Trino's position deletes the same way.
    got = pyiceberg.load_table((ns, "stock")).scan().to_arrow().sort_by("sku")
    assert list(zip(got.column("sku").to_pylist(), got.column("qty").to_pylist())) == [("a", 1), ("b", 12)]


def test_snapshots_table_and_optimize(trino, ns, pyiceberg):
    trino.query(f"CREATE SCHEMA floe.{ns}")
    t = f"floe.{ns}.events"
    trino.query(f"CREATE TABLE {t} (id bigint, kind varchar)")
    for i in range(3):
        trino.query(f"INSERT INTO {t} VALUES ({i}, 'k{i}')")
    snaps = trino.query(f'SELECT snapshot_id, operation FROM floe.{ns}."events$snapshots" ORDER BY committed_at')
    # Trino's CREATE TABLE commits an empty append of its own, then one per INSERT.
    assert [op for _, op in snaps] == ["append"] * 4
    # The snapshots Trino lists are those floe keeps.
    table = pyiceberg.load_table((ns, "events"))
    assert [s for s, _ in snaps] == [s.snapshot_id for s in table.metadata.snapshots]
    assert trino.query(f'SELECT count(*) FROM floe.{ns}."events$files"') == [[3]]

    trino.query(f"ALTER TABLE {t} EXECUTE optimize")
    assert trino.query(f'SELECT count(*) FROM floe.{ns}."events$files"') == [[1]]
    ops = trino.query(f'SELECT operation FROM floe.{ns}."events$snapshots" ORDER BY committed_at')
    assert [o for (o,) in ops] == ["append"] * 4 + ["replace"]
    assert trino.query(f"SELECT count(*), sum(id) FROM {t}") == [[3, 3]]
    table.refresh()
    assert table.current_snapshot().summary.operation.value == "replace"


def test_reads_what_pyiceberg_wrote(trino, ns, pyiceberg):
    pyiceberg.create_namespace(ns)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Oslo", "Lima", "Pune"]})
    pyiceberg.create_table((ns, "cities"), schema=data.schema).append(data)
    assert trino.query(f"SELECT id, city FROM floe.{ns}.cities ORDER BY id") == [
        [1, "Oslo"], [2, "Lima"], [3, "Pune"]]


def test_reads_a_branch_spark_wrote(trino, spark, ns):
    t = f"floe.{ns}.sales"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit VALUES (3, 30)")

    assert trino.query(f"SELECT id FROM {t} ORDER BY id") == [[1], [2]]
    assert trino.query(f"SELECT id FROM {t} FOR VERSION AS OF 'audit' ORDER BY id") == [[1], [2], [3]]
    refs = trino.query(f'SELECT name, type FROM floe.{ns}."sales$refs" ORDER BY name')
    assert refs == [["audit", "BRANCH"], ["main", "BRANCH"]]


def test_drop_table_and_schema(trino, ns, pyiceberg):
    trino.query(f"CREATE SCHEMA floe.{ns}")
    trino.query(f"CREATE TABLE floe.{ns}.tmp (x integer)")
    assert pyiceberg.table_exists((ns, "tmp"))
    trino.query(f"DROP TABLE floe.{ns}.tmp")
    assert not pyiceberg.table_exists((ns, "tmp"))
    trino.query(f"DROP SCHEMA floe.{ns}")
    assert (ns,) not in pyiceberg.list_namespaces()


def test_error_is_trinos_not_a_crash(trino, ns):
    from trino_server import TrinoError

    with pytest.raises(TrinoError) as e:
        trino.query(f"SELECT * FROM floe.{ns}.nothing_here")
    assert "does not exist" in e.value.message


def view_metadata(floe, ns, name):
    r = floe.get(f"/v1/namespaces/{ns}/views/{name}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


def test_views_trino_makes_and_replaces(trino, ns, floe):
    trino.query(f"CREATE SCHEMA floe.{ns}")
    t = f"floe.{ns}.orders"
    trino.query(f"CREATE TABLE {t} (id integer, region varchar)")
    trino.query(f"INSERT INTO {t} VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    v = f"floe.{ns}.eu_orders"
    trino.query(f"CREATE VIEW {v} AS SELECT id FROM {t} WHERE region = 'eu'")
    assert trino.query(f"SELECT id FROM {v} ORDER BY id") == [[1], [3]]
    m = view_metadata(floe, ns, "eu_orders")
    assert m["versions"][0]["representations"][0]["dialect"] == "trino"

    trino.query(f"CREATE OR REPLACE VIEW {v} AS SELECT id FROM {t} WHERE region = 'us'")
    assert trino.query(f"SELECT id FROM {v}") == [[2]]
    m = view_metadata(floe, ns, "eu_orders")
    assert len(m["versions"]) == 2 and m["current-version-id"] == 2
    assert ["eu_orders"] in trino.query(f"SHOW TABLES FROM floe.{ns}")

    trino.query(f"DROP VIEW {v}")
    assert floe.get(f"/v1/namespaces/{ns}/views/eu_orders").status_code == 404


def test_a_view_spark_made_read_by_trino_in_its_own_dialect(trino, spark, ns, floe):
    t = f"floe.{ns}.sales"
    spark.sql(f"CREATE NAMESPACE floe.{ns}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30)")
    spark.sql(f"CREATE VIEW floe.{ns}.big AS SELECT id FROM {t} WHERE amount > 15")
    m = view_metadata(floe, ns, "big")
    current = next(x for x in m["versions"] if x["version-id"] == m["current-version-id"])
    assert [r["dialect"] for r in current["representations"]] == ["spark"]

    # A second dialect joins the version, as a tool that translates views
    # would commit it: the same version with a Trino query beside Spark's.
    both = dict(current)
    both["version-id"] = current["version-id"] + 1
    both["representations"] = current["representations"] + [
        {"type": "sql", "dialect": "trino", "sql": f"SELECT id FROM {t} WHERE amount > 15"}]
    r = floe.post(f"/v1/namespaces/{ns}/views/big", json={
        "requirements": [{"type": "assert-view-uuid", "uuid": m["view-uuid"]}],
        "updates": [{"action": "add-view-version", "view-version": both},
                    {"action": "set-current-view-version", "view-version-id": -1}]})
    assert r.status_code == 200, r.text

    assert trino.query(f"SELECT id FROM floe.{ns}.big ORDER BY id") == [[2], [3]]
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM floe.{ns}.big").collect()) == [2, 3]
