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
