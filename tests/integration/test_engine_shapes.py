"""The request shapes engines send, against the real daemon: DuckDB's create
commit, Trino's create transaction and namespace location, the one-slash
file:/ locations Java and Hadoop write, metadata files dropped after a
commit, and the names and schemas every create must accept or refuse.

Each body here is the one the engine sends (read from its sources), so a
test failing here is an engine statement failing for a user."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import assert_error, assert_ok_json, describe, ns_path

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
    ],
}


# --------------------------------------------------------------------------
# helpers


def warehouse_of(f) -> Path:
    return f.workdir / "data" / "warehouse"


def tables_url(ns) -> str:
    return f"/v1/namespaces/{ns_path(ns)}/tables"


def table_url(ns, name) -> str:
    return f"{tables_url(ns)}/{quote(name, safe='')}"


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


def stage(f, ns, name, **extra) -> dict:
    body = {"name": name, "schema": SCHEMA, "stage-create": True}
    body.update(extra)
    return assert_ok_json(f.post(tables_url(ns), json=body))


def duckdb_create_updates(meta: dict, spec_fields=(), data=()) -> list:
    """The updates of DuckDB's create commit (IcebergTableSet::Create and
    StageSingleTableCommit): the spec and order come before
    set-current-schema, which is sent last, after any data."""
    return [
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": meta["format-version"]},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 2},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": list(spec_fields)}},
        {"action": "set-default-spec", "spec-id": 0},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": 0},
        {"action": "set-location", "location": meta["location"]},
        {"action": "set-properties", "updates": {}},
        *data,
        {"action": "set-current-schema", "schema-id": 0},
    ]


# --------------------------------------------------------------------------
# DuckDB: the spec before set-current-schema


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_duckdb_create_commit_spec_before_current_schema(floe, ns, partitioned):
    staged = stage(floe, ns, "duck")
    fields = [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}] if partitioned else []
    r = floe.post(table_url(ns, "duck"), json={
        "identifier": {"namespace": ns, "name": "duck"},
        "requirements": [{"type": "assert-create"}],
        "updates": duckdb_create_updates(staged["metadata"], fields),
    })
    body = assert_ok_json(r)
    meta = body["metadata"]
    assert meta["current-schema-id"] == 0
    assert meta["schemas"] == [SCHEMA]
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": fields}]
    assert meta["last-partition-id"] == (1000 if partitioned else 999)
    assert meta["default-spec-id"] == 0 and meta["default-sort-order-id"] == 0
    loaded = assert_ok_json(floe.get(table_url(ns, "duck")))
    assert loaded["metadata-location"] == body["metadata-location"]
    assert loaded["metadata"] == meta


def test_duckdb_create_table_as_commit(floe, ns):
    staged = stage(floe, ns, "ctas")
    loc = staged["metadata"]["location"]
    sid = 4242
    data = [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": sid, "sequence-number": 1, "timestamp-ms": 1767229100000,
            "manifest-list": f"{loc}/metadata/snap-{sid}.avro",
            "summary": {"operation": "append", "added-records": "3"}, "schema-id": 0}},
        {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": sid, "type": "branch"},
    ]
    r = floe.post(table_url(ns, "ctas"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": duckdb_create_updates(staged["metadata"], data=data),
    })
    meta = assert_ok_json(r)["metadata"]
    assert meta["current-snapshot-id"] == sid
    assert meta["refs"] == {"main": {"snapshot-id": sid, "type": "branch"}}


def test_partitioned_spec_without_any_schema_is_refused(floe, ns):
    staged = stage(floe, ns, "noschema")
    updates = [u for u in duckdb_create_updates(
        staged["metadata"], [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}])
        if u["action"] != "add-schema"]
    r = floe.post(table_url(ns, "noschema"), json={"requirements": [{"type": "assert-create"}],
                                                   "updates": updates})
    assert_error(r, 400, "BadRequestException", message_has="schema")
    assert floe.head(table_url(ns, "noschema")).status_code == 404, describe(r)


# --------------------------------------------------------------------------
# Trino: the namespace location, and a create transaction that fails


def java_create_updates(meta: dict, location: str) -> list:
    """The updates of the Java client's create transaction (RESTSessionCatalog
    createTransaction, which Trino's TrinoRestCatalog uses)."""
    return [
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
        {"action": "set-properties", "updates": {"write.format.default": "PARQUET"}},
    ]


def test_namespace_without_location_answers_its_default_location(floe, uniq):
    wh = warehouse_of(floe)
    created = floe.create_namespace([uniq])
    assert created["properties"] == {"location": f"file://{wh}/{uniq}"}
    floe.create_namespace([uniq, "a b/c"], {"owner": "ana"})
    loaded = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path([uniq, 'a b/c'])}"))
    # The levels are escaped as in a table's default location.
    assert loaded["properties"] == {"owner": "ana", "location": f"file://{wh}/{uniq}/a b%2Fc"}

    # A table created without a location lands below it.
    t = assert_ok_json(floe.post(tables_url([uniq, "a b/c"]), json={"name": "t", "schema": SCHEMA}))
    assert t["metadata"]["location"] == f"file://{wh}/{uniq}/a b%2Fc/t"

    # The default is not stored: a location set replaces it, and removing it
    # brings the default back.
    url = f"/v1/namespaces/{uniq}/properties"
    assert_ok_json(floe.post(url, json={"updates": {"location": "file:///elsewhere/x"}}))
    assert assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"] == {"location": "file:///elsewhere/x"}
    body = assert_ok_json(floe.post(url, json={"removals": ["location"]}))
    assert body["removed"] == ["location"]
    assert assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"] == {"location": f"file://{wh}/{uniq}"}


def trino_table_location(f, ns, name) -> str:
    """Where Trino puts a new table (TrinoRestCatalog.defaultTableLocation
    with iceberg.unique-table-location): below the namespace's location."""
    nsloc = assert_ok_json(f.get(f"/v1/namespaces/{ns_path(ns)}"))["properties"].get("location")
    assert nsloc, "no namespace location: Trino would create the table unstaged"
    return f"{nsloc}/{name}-{uuid.uuid4().hex}"


def local(location: str) -> Path:
    assert location.startswith("file://"), location
    return Path(location[len("file://"):])


def test_trino_create_table_in_a_schema_without_location(floe, ns):
    location = trino_table_location(floe, ns, "orders")
    staged = stage(floe, ns, "orders", location=location)
    assert staged["metadata-location"] is None
    assert staged["metadata"]["location"] == location
    # Trino refuses to create a table on a non-empty location: staging
    # must leave it empty, and register nothing.
    assert files_under(local(location)) == []
    assert floe.head(table_url(ns, "orders")).status_code == 404
    r = floe.post(table_url(ns, "orders"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], location)})
    body = assert_ok_json(r)
    assert body["metadata"]["location"] == location
    assert body["metadata-location"].startswith(f"{location}/metadata/00000-")
    assert [p.name for p in files_under(local(location))] == [body["metadata-location"].rsplit("/", 1)[1]]


def test_failed_create_commit_leaves_nothing_and_a_retry_works(floe, ns):
    location = trino_table_location(floe, ns, "retried")
    staged = stage(floe, ns, "retried", location=location)
    good = java_create_updates(staged["metadata"], location)

    # A create commit that fails: an invalid update, then a requirement
    # the create may not carry.
    bad = good + [{"action": "set-default-spec", "spec-id": 7}]
    assert_error(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}], "updates": bad}), 400, "BadRequestException")
    assert_error(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}, {"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": good}), 400, "BadRequestException")
    assert floe.head(table_url(ns, "retried")).status_code == 404
    assert assert_ok_json(floe.get(tables_url(ns)))["identifiers"] == []
    assert files_under(local(location)) == []

    # The retry (Trino's next CREATE TABLE) is not told it already exists.
    staged = stage(floe, ns, "retried", location=location)
    body = assert_ok_json(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], location)}))
    assert body["metadata"]["location"] == location


def test_failed_create_at_a_taken_location_leaves_nothing(floe, ns):
    """A create whose location is another table's is refused before any
    file is written, and the other table's files are left as they were."""
    first = assert_ok_json(floe.post(tables_url(ns), json={"name": "first", "schema": SCHEMA}))
    taken = first["metadata"]["location"]
    before = files_under(local(taken))
    staged = stage(floe, ns, "second")
    r = floe.post(table_url(ns, "second"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], taken + "/inner")})
    assert_error(r, 400, "BadRequestException", message_has="overlaps")
    assert floe.head(table_url(ns, "second")).status_code == 404
    assert files_under(local(taken)) == before
