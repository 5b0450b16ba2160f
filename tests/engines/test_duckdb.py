"""DuckDB against floe: the Iceberg extension attaches floe as a REST catalog
and does what a DuckDB user does, and PyIceberg reads what DuckDB wrote
(and DuckDB what PyIceberg wrote).

DuckDB is the PyPI package ``duckdb``; its extensions (iceberg, and the avro
and httpfs extensions iceberg needs) come from the PyPI packages
``duckdb-extension-*`` of the same version and are loaded from those
packages' files: nothing is fetched from DuckDB's extension repository.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pyarrow as pa
import pytest

duckdb = pytest.importorskip("duckdb")


def extension_file(name: str) -> Path:
    """The signed extension file a duckdb-extension-<name> package ships."""
    mod = importlib.import_module(f"duckdb_extension_{name}")
    files = sorted(Path(mod.__file__).parent.glob(f"extensions/v{duckdb.__version__}/{name}.duckdb_extension"))
    if not files:
        pytest.fail(f"duckdb-extension-{name} has no extension for DuckDB {duckdb.__version__}: "
                    "install the same version as duckdb (tests/engines/requirements.txt)")
    return files[0]


def new_connection():
    """A DuckDB connection with the iceberg extension (and those it needs)
    loaded from the packages' files."""
    c = duckdb.connect(config={"autoinstall_known_extensions": "false",
                               "autoload_known_extensions": "false"})
    for name in ("avro", "httpfs", "iceberg"):
        c.execute(f"LOAD '{extension_file(name)}'")
    return c


def connect(floe, options: str = ""):
    """A DuckDB connection with floe attached as the catalog ``floe``: the
    Iceberg REST catalog at floe's URL, with the admin client's credential
    (DuckDB gets its token from floe's POST /v1/oauth/tokens)."""
    c = new_connection()
    cid, secret = floe.credential.split(":", 1)
    c.execute(f"ATTACH 'warehouse' AS floe (TYPE iceberg, ENDPOINT '{floe.url}', "
              f"AUTHORIZATION_TYPE 'oauth2', CLIENT_ID '{cid}', CLIENT_SECRET '{secret}', "
              f"OAUTH2_SERVER_URI '{floe.url}/v1/oauth/tokens'{options})")
    return c


@pytest.fixture
def con(floe):
    c = connect(floe)
    yield c
    c.close()


# A table created and written in one DuckDB transaction (CREATE TABLE AS, or
# CREATE TABLE then INSERT before COMMIT) is a staged create by default:
# floe registers nothing until the commit, and DuckDB writes its manifest
# into <table location>/metadata/ before that commit without creating the
# directory on a local file system, so floe makes it, empty, when it answers
# the staged create. Both ways of creating are run.
@pytest.fixture(params=[
    pytest.param("", id="staged"),
    pytest.param(", STAGE_CREATE_TABLES false", id="unstaged"),
])
def con_create(floe, request):
    c = connect(floe, request.param)
    yield c
    c.close()


def rows(con, sql):
    return con.execute(sql).fetchall()


def test_create_insert_select_and_pyiceberg_reads(con, ns, pyiceberg):
    con.execute(f"CREATE SCHEMA floe.{ns}")
    con.execute(f"CREATE TABLE floe.{ns}.orders (id INTEGER, customer VARCHAR, amount DOUBLE)")
    con.execute(f"INSERT INTO floe.{ns}.orders VALUES (1, 'ada', 10.5), (2, 'bob', 20.0), (3, 'cy', 7.25)")
    assert rows(con, f"SELECT id, customer, amount FROM floe.{ns}.orders ORDER BY id") == [
        (1, "ada", 10.5), (2, "bob", 20.0), (3, "cy", 7.25)]

    assert (ns,) in pyiceberg.list_namespaces()
    table = pyiceberg.load_table((ns, "orders"))
    assert [f.name for f in table.schema().fields] == ["id", "customer", "amount"]
    got = table.scan().to_arrow().sort_by("id")
    assert got.column("customer").to_pylist() == ["ada", "bob", "cy"]
    assert got.column("amount").to_pylist() == [10.5, 20.0, 7.25]


def test_create_table_as_select(con_create, ns, pyiceberg):
    con = con_create
    con.execute(f"CREATE SCHEMA floe.{ns}")
    con.execute(f"CREATE TABLE floe.{ns}.squares AS SELECT i AS n, i * i AS sq FROM range(1, 6) t(i)")
    assert rows(con, f"SELECT sum(sq) FROM floe.{ns}.squares") == [(55,)]
    got = pyiceberg.load_table((ns, "squares")).scan().to_arrow().sort_by("n")
    assert got.column("sq").to_pylist() == [1, 4, 9, 16, 25]


def test_create_and_insert_in_one_transaction(con_create, ns, pyiceberg):
    con = con_create
    con.execute(f"CREATE SCHEMA floe.{ns}")
    con.execute("BEGIN")
    con.execute(f"CREATE TABLE floe.{ns}.events (id INTEGER, kind VARCHAR)")
    con.execute(f"INSERT INTO floe.{ns}.events VALUES (1, 'open'), (2, 'close')")
    con.execute("COMMIT")
    got = pyiceberg.load_table((ns, "events")).scan().to_arrow().sort_by("id")
    assert got.column("kind").to_pylist() == ["open", "close"]


def test_update_and_delete(con, ns, pyiceberg):
    con.execute(f"CREATE SCHEMA floe.{ns}")
    t = f"floe.{ns}.stock"
    con.execute(f"CREATE TABLE {t} (sku VARCHAR, qty INTEGER)")
    con.execute(f"INSERT INTO {t} VALUES ('a', 1), ('b', 2), ('c', 3)")
    con.execute(f"UPDATE {t} SET qty = qty + 10 WHERE sku = 'b'")
    con.execute(f"DELETE FROM {t} WHERE sku = 'c'")
    assert rows(con, f"SELECT sku, qty FROM {t} ORDER BY sku") == [("a", 1), ("b", 12)]

    # PyIceberg applies DuckDB's delete files the same way.
    table = pyiceberg.load_table((ns, "stock"))
    got = table.scan().to_arrow().sort_by("sku")
    assert list(zip(got.column("sku").to_pylist(), got.column("qty").to_pylist())) == [("a", 1), ("b", 12)]
    # One snapshot per statement: insert, update, delete.
    assert len(table.metadata.snapshots) == 3


def test_duckdb_reads_what_pyiceberg_wrote(con, ns, pyiceberg):
    pyiceberg.create_namespace(ns)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Oslo", "Lima", "Pune"]})
    table = pyiceberg.create_table((ns, "cities"), schema=data.schema)
    table.append(data)
    table.append(pa.table({"id": pa.array([4], pa.int64()), "city": ["Kyiv"]}))

    assert rows(con, f"SELECT id, city FROM floe.{ns}.cities ORDER BY id") == [
        (1, "Oslo"), (2, "Lima"), (3, "Pune"), (4, "Kyiv")]
    # DuckDB appends to PyIceberg's table, and PyIceberg sees it.
    con.execute(f"INSERT INTO floe.{ns}.cities VALUES (5, 'Accra')")
    table.refresh()
    assert sorted(table.scan().to_arrow().column("city").to_pylist()) == ["Accra", "Kyiv", "Lima", "Oslo", "Pune"]


def test_drop_table_and_schema(con, ns, pyiceberg):
    con.execute(f"CREATE SCHEMA floe.{ns}")
    con.execute(f"CREATE TABLE floe.{ns}.tmp (x INTEGER)")
    assert pyiceberg.table_exists((ns, "tmp"))
    con.execute(f"DROP TABLE floe.{ns}.tmp")
    assert not pyiceberg.table_exists((ns, "tmp"))
    con.execute(f"DROP SCHEMA floe.{ns}")
    assert (ns,) not in pyiceberg.list_namespaces()
