"""Table routes of floe's Iceberg REST API, over raw HTTP, against a real daemon.

Expectations are computed here, from the Iceberg REST spec and the table
metadata semantics, and compared with what floe serves and what it writes
to the warehouse.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import (
    assert_error,
    assert_ok_json,
    assert_request_id,
    describe,
    make_shared_tmpdir,
    ns_path,
    wait_until,
)

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"},
    ],
}

METADATA_FILE_RE = re.compile(r"^(\d{5})-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.metadata\.json$")

BASES = ["/v1", "/v1/warehouse"]


# --------------------------------------------------------------------------
# helpers


def warehouse_of(floe) -> Path:
    """The default warehouse: <data dir>/warehouse (the Floe class sets the data dir)."""
    return floe.workdir / "data" / "warehouse"


def local_path(uri: str) -> Path:
    """The local file of a file:// location (taken literally, as PyIceberg does)."""
    assert isinstance(uri, str) and uri.startswith("file:///"), f"not a file:// URI: {uri!r}"
    return Path(uri[len("file://"):])


def read_json_file(uri: str) -> dict:
    path = local_path(uri)
    assert path.is_file(), f"metadata file {path} does not exist"
    return json.loads(path.read_text())


def segment(name: str) -> str:
    """One path segment; "." and ".." are escaped so that no client or proxy
    treats them as dot-segments."""
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return quote(name, safe="")


def tables_path(base, ns) -> str:
    return f"{base}/namespaces/{'%1F'.join(segment(level) for level in ns)}/tables"


def table_path(base, ns, name) -> str:
    return f"{tables_path(base, ns)}/{segment(name)}"


def ident(ns, name) -> dict:
    return {"namespace": list(ns), "name": name}


def create_table(floe, ns, name, schema=SCHEMA, base="/v1", **extra) -> dict:
    body = {"name": name, "schema": schema}
    body.update(extra)
    r = floe.post(tables_path(base, ns), json=body)
    return assert_ok_json(r)


def load_table(floe, ns, name, base="/v1", **params) -> dict:
    return assert_ok_json(floe.get(table_path(base, ns, name), params=params))


def commit(floe, ns, name, requirements=(), updates=(), base="/v1"):
    return floe.post(table_path(base, ns, name),
                     json={"requirements": list(requirements), "updates": list(updates)})


def commit_ok(floe, ns, name, requirements=(), updates=(), base="/v1") -> dict:
    body = assert_ok_json(commit(floe, ns, name, requirements, updates, base))
    assert set(body) >= {"metadata-location", "metadata"}, body
    return body


def now_ms() -> int:
    return int(time.time() * 1000)


def fake_snapshot(table_location, snapshot_id, parent_id, seq, **extra) -> dict:
    snap = {
        "snapshot-id": snapshot_id,
        "sequence-number": seq,
        "timestamp-ms": now_ms(),
        "manifest-list": f"{table_location}/metadata/snap-{snapshot_id}-1-{uuid.uuid4()}.avro",
        "summary": {"operation": "append"},
        "schema-id": 0,
    }
    if parent_id is not None:
        snap["parent-snapshot-id"] = parent_id
    snap.update(extra)
    return snap


def add_snapshot_updates(snap, ref="main", ref_type="branch") -> list:
    return [
        {"action": "add-snapshot", "snapshot": snap},
        {"action": "set-snapshot-ref", "ref-name": ref, "type": ref_type,
         "snapshot-id": snap["snapshot-id"]},
    ]


def assert_file_matches(body: dict):
    """The file named by metadata-location holds exactly the served metadata."""
    on_disk = read_json_file(body["metadata-location"])
    assert on_disk == body["metadata"], (
        f"{body['metadata-location']} differs from the served metadata:\n"
        f"file:   {json.dumps(on_disk, sort_keys=True)}\nserved: {json.dumps(body['metadata'], sort_keys=True)}")


def file_number(metadata_location: str, table_location: str) -> int:
    path = local_path(metadata_location)
    assert str(path.parent) == str(local_path(table_location)) + "/metadata", (
        f"{metadata_location} is not in {table_location}/metadata")
    m = METADATA_FILE_RE.match(path.name)
    assert m, f"metadata file name {path.name!r} is not NNNNN-<uuid>.metadata.json"
    return int(m.group(1))


def assert_mentions(message: str, *values):
    """Each value appears in the message as a whole token."""
    for v in values:
        pat = rf"(?<![\w-]){re.escape(str(v))}(?![\w-])"
        assert re.search(pat, message), f"message {message!r} should mention {v!r}"


def listing(directory: Path) -> dict:
    """Every file under a directory, relative path -> bytes."""
    out = {}
    for root, _dirs, files in os.walk(directory):
        for f in files:
            p = Path(root) / f
            out[str(p.relative_to(directory))] = p.read_bytes()
    return out


@pytest.fixture
def ns(floe, uniq):
    """A fresh namespace in the module's shared catalog."""
    floe.create_namespace([uniq])
    return [uniq]


@pytest.fixture
def own_floe(postgres, floe_factory):
    """A floe of its own with an explicit --warehouse inside a scratch directory.

    Returns (floe, scratch dir, warehouse dir); the scratch directory also
    holds things outside the warehouse that floe must never touch.
    """
    scratch = make_shared_tmpdir("floe-it-tables-")
    wh = scratch / "wh"
    try:
        f = floe_factory(args=[f"--warehouse=file://{wh}"],
                         env={"FLOE_DATABASE_URL": postgres.new_database()})
        yield f, scratch, wh
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------
# create, load, exists, list, drop


@pytest.mark.parametrize("base", BASES)
def test_create_load_exists_drop(floe, ns, base):
    wh = warehouse_of(floe)
    created = create_table(floe, ns, "events", base=base, properties={"owner": "ana"})
    meta = created["metadata"]
    expected_location = f"file://{wh}/{ns[0]}/events"
    assert meta["location"] == expected_location
    assert meta["format-version"] == 2
    assert meta["schemas"] == [SCHEMA]
    assert meta["current-schema-id"] == 0
    assert meta["last-column-id"] == 2
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": []}]
    assert meta["default-spec-id"] == 0
    assert meta["last-partition-id"] == 999
    assert meta["sort-orders"] == [{"order-id": 0, "fields": []}]
    assert meta["default-sort-order-id"] == 0
    assert meta["properties"].get("owner") == "ana", meta["properties"]
    assert "format-version" not in meta["properties"]
    assert meta["current-snapshot-id"] in (-1, None)
    assert meta["snapshots"] == [] and meta["snapshot-log"] == [] and meta["metadata-log"] == []
    assert meta["last-sequence-number"] == 0
    uuid.UUID(meta["table-uuid"])
    assert file_number(created["metadata-location"], expected_location) == 0
    assert_file_matches(created)

    loaded = load_table(floe, ns, "events", base=base)
    assert loaded["metadata-location"] == created["metadata-location"]
    assert loaded["metadata"] == meta

    r = floe.head(table_path(base, ns, "events"))
    assert r.status_code == 204, describe(r)
    assert r.content == b""
    assert_request_id(r)

    listed = assert_ok_json(floe.get(tables_path(base, ns)))
    assert listed["identifiers"] == [ident(ns, "events")]

    r = floe.delete(table_path(base, ns, "events"))
    assert r.status_code == 204, describe(r)
    assert_request_id(r)

    assert_error(floe.get(table_path(base, ns, "events")), 404, "NoSuchTableException")
    r = floe.head(table_path(base, ns, "events"))
    assert r.status_code == 404, describe(r)
    assert assert_ok_json(floe.get(tables_path(base, ns)))["identifiers"] == []
    assert_error(floe.delete(table_path(base, ns, "events")), 404, "NoSuchTableException")
    # A drop without purge leaves the files where they are.
    assert local_path(created["metadata-location"]).is_file()

    # The name can be used again, for a new table.
    again = create_table(floe, ns, "events", base=base)
    assert again["metadata"]["table-uuid"] != meta["table-uuid"]


def test_plus_in_a_table_path_is_a_plus(floe, ns):
    """Tables "p q" and "p+q": a path that says p+q (as iceberg-go and
    iceberg-rust send it) names "p+q", never "p q"; a purge of it leaves the
    other table and its files alone. A space is %20."""
    a = create_table(floe, ns, "p q")
    b = create_table(floe, ns, "p+q")
    assert a["metadata"]["table-uuid"] != b["metadata"]["table-uuid"]
    got = assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}/tables/p+q"))
    assert got["metadata"]["table-uuid"] == b["metadata"]["table-uuid"]
    got = assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}/tables/p%20q"))
    assert got["metadata"]["table-uuid"] == a["metadata"]["table-uuid"]
    r = floe.delete(f"/v1/namespaces/{ns[0]}/tables/p+q", params={"purgeRequested": "true"})
    assert r.status_code == 204, r.text
    assert floe.head(f"/v1/namespaces/{ns[0]}/tables/p%2Bq").status_code == 404
    still = assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}/tables/p%20q"))
    assert still["metadata-location"] == a["metadata-location"]
    local = still["metadata-location"].removeprefix("file://")
    assert os.path.exists(local), local


def test_unknown_table_and_namespace(floe, ns):
    assert_error(floe.get(table_path("/v1", ns, "ghost")), 404, "NoSuchTableException")
    assert floe.head(table_path("/v1", ns, "ghost")).status_code == 404
    assert_error(floe.delete(table_path("/v1", ns, "ghost")), 404, "NoSuchTableException")
    assert_error(commit(floe, ns, "ghost", updates=[{"action": "set-properties", "updates": {"a": "b"}}]),
                 404, "NoSuchTableException")
    for method in ("GET", "DELETE"):
        r = floe.request(method, table_path("/v1", ["no_such_ns_x"], "t"))
        assert_error(r, 404)
    assert floe.head(table_path("/v1", ["no_such_ns_x"], "t")).status_code == 404
    assert_error(floe.get(tables_path("/v1", ["no_such_ns_x"])), 404, "NoSuchNamespaceException")


def test_list_tables_only_lists_the_namespace(floe, ns):
    floe.create_namespace(ns + ["child"])
    create_table(floe, ns, "a")
    create_table(floe, ns + ["child"], "b")
    assert assert_ok_json(floe.get(tables_path("/v1", ns)))["identifiers"] == [ident(ns, "a")]
    assert assert_ok_json(floe.get(tables_path("/v1", ns + ["child"])))["identifiers"] == [
        ident(ns + ["child"], "b")]


@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 50])
def test_list_tables_pagination_walks_all_pages(floe, ns, page_size):
    names = [f"t{i:02d}" for i in range(7)] + ["Zeta", "alpha", "with space"]
    for n in names:
        create_table(floe, ns, n)

    everything = assert_ok_json(floe.get(tables_path("/v1", ns)))
    assert sorted(i["name"] for i in everything["identifiers"]) == sorted(names)
    assert everything.get("next-page-token") is None

    seen = []
    token = ""
    pages = 0
    while True:
        r = floe.get(tables_path("/v1", ns), params={"pageToken": token, "pageSize": page_size})
        body = assert_ok_json(r)
        pages += 1
        assert pages <= len(names) + 2, "pagination does not end"
        assert len(body["identifiers"]) <= page_size, describe(r)
        for i in body["identifiers"]:
            assert i["namespace"] == ns, body
            seen.append(i["name"])
        assert "next-page-token" in body, describe(r)
        token = body["next-page-token"]
        if token is None:
            break
        assert isinstance(token, str) and token, describe(r)
    assert sorted(seen) == sorted(names), f"pages gave {seen}"
    assert len(seen) == len(set(seen)), f"a table appeared twice: {seen}"
    assert pages >= -(-len(names) // page_size)


def test_list_tables_bad_page_size_is_400(floe, ns):
    for bad in ("0", "-1", "abc"):
        assert_error(floe.get(tables_path("/v1", ns), params={"pageSize": bad}), 400)


# --------------------------------------------------------------------------
# createTable: options and errors


def test_create_with_explicit_location_inside_warehouse(floe, ns):
    wh = warehouse_of(floe)
    loc = f"file://{wh}/custom/place/t1"
    created = create_table(floe, ns, "t1", location=loc + "/")
    assert created["metadata"]["location"] == loc, "a trailing '/' must be stripped"
    assert file_number(created["metadata-location"], loc) == 0
    assert_file_matches(created)


def test_create_with_partition_spec_and_sort_order(floe, ns):
    schema = {"type": "struct", "schema-id": 7, "fields": [
        {"id": 10, "name": "id", "required": True, "type": "long"},
        {"id": 11, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 12, "name": "cat", "required": False, "type": "string"},
    ]}
    spec = {"spec-id": 3, "fields": [
        {"source-id": 11, "field-id": 2000, "name": "ts_day", "transform": "day"},
        {"source-id": 12, "field-id": 2001, "name": "cat", "transform": "identity"},
    ]}
    order = {"order-id": 5, "fields": [
        {"source-id": 10, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]}
    meta = create_table(floe, ns, "parted", schema=schema, **{"partition-spec": spec, "write-order": order})["metadata"]
    # All ids are assigned afresh, as an Iceberg catalog does.
    assert meta["schemas"] == [{"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 3, "name": "cat", "required": False, "type": "string"},
    ]}]
    assert meta["last-column-id"] == 3
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": [
        {"source-id": 2, "field-id": 1000, "name": "ts_day", "transform": "day"},
        {"source-id": 3, "field-id": 1001, "name": "cat", "transform": "identity"},
    ]}]
    assert meta["last-partition-id"] == 1001
    assert meta["sort-orders"] == [{"order-id": 1, "fields": [
        {"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]}]
    assert meta["default-sort-order-id"] == 1


def test_create_errors(floe, ns):
    wh = warehouse_of(floe)
    url = tables_path("/v1", ns)
    assert_error(floe.post(url, json={"name": "nos"}), 400, message_has="schema")
    assert_error(floe.post(url, json={"schema": SCHEMA}), 400, message_has="name")
    assert_error(floe.post(url, data="{not json", headers={"Content-Type": "application/json"}), 400)
    assert_error(floe.post(tables_path("/v1", ["no_such_ns_y"]), json={"name": "t", "schema": SCHEMA}),
                 404, "NoSuchNamespaceException")
    for fv in ("4", "0", "abc"):
        assert_error(floe.post(url, json={"name": f"fv{fv}", "schema": SCHEMA,
                                          "properties": {"format-version": fv}}),
                     400, message_has="format")
    elsewhere = make_shared_tmpdir("floe-it-outside-")
    outside = [
        f"file://{elsewhere}/t",
        f"file://{wh}-evil/t",          # shares the warehouse's path as a string prefix
        f"file://{wh}/../escape/t",     # leaves through '..'
        f"file://{wh}",                 # the warehouse itself
    ]
    for loc in outside:
        r = floe.post(url, json={"name": "out", "schema": SCHEMA, "location": loc})
        assert_error(r, 400)
    assert list(elsewhere.iterdir()) == [], "floe wrote outside its warehouse"
    shutil.rmtree(elsewhere, ignore_errors=True)
    assert not (wh.parent / "escape").exists()
    assert not Path(f"{wh}-evil").exists()
    assert assert_ok_json(floe.get(url))["identifiers"] == []

    create_table(floe, ns, "dup", properties={"v": "1"})
    r = floe.post(url, json={"name": "dup", "schema": SCHEMA, "properties": {"v": "2"}})
    assert_error(r, 409, "AlreadyExistsException")
    assert load_table(floe, ns, "dup")["metadata"]["properties"]["v"] == "1"
    # A staged create of an existing table is refused too.
    r = floe.post(url, json={"name": "dup", "schema": SCHEMA, "stage-create": True})
    assert_error(r, 409, "AlreadyExistsException")


@pytest.mark.parametrize("fv", [1, 2, 3])
def test_create_format_versions(floe, ns, fv):
    created = create_table(floe, ns, f"v{fv}", properties={"format-version": str(fv), "k": "v"})
    meta = created["metadata"]
    assert meta["format-version"] == fv
    assert meta["properties"].get("k") == "v"
    assert "format-version" not in meta["properties"]
    assert meta["current-snapshot-id"] in (-1, None)
    if fv == 1:
        # v1 readers need the single schema and partition spec.
        assert meta["schema"]["fields"] == SCHEMA["fields"], meta
        assert meta["partition-spec"] == [], meta
    if fv >= 3:
        assert meta["next-row-id"] == 0, meta
    else:
        assert "next-row-id" not in meta, meta
    assert_file_matches(created)
    assert load_table(floe, ns, f"v{fv}")["metadata"] == meta


def test_v3_row_lineage_advances_next_row_id(floe, ns):
    created = create_table(floe, ns, "lineage", properties={"format-version": "3"})
    loc = created["metadata"]["location"]
    s1 = fake_snapshot(loc, 101, None, 1, **{"first-row-id": 0, "added-rows": 10})
    body = commit_ok(floe, ns, "lineage", updates=add_snapshot_updates(s1))
    assert body["metadata"]["next-row-id"] == 10
    s2 = fake_snapshot(loc, 102, 101, 2, **{"first-row-id": 10, "added-rows": 5})
    body = commit_ok(floe, ns, "lineage", updates=add_snapshot_updates(s2))
    assert body["metadata"]["next-row-id"] == 15
    assert body["metadata"]["current-snapshot-id"] == 102
    assert_file_matches(body)


# --------------------------------------------------------------------------
# commits: the metadata files


def test_every_commit_writes_the_served_metadata_to_a_new_numbered_file(floe, ns):
    created = create_table(floe, ns, "hist")
    loc = created["metadata"]["location"]
    history = [created]  # each element: a successful response

    def step(requirements, updates, check):
        prev = history[-1]
        body = commit_ok(floe, ns, "hist", requirements, updates)
        meta = body["metadata"]
        n = len(history)
        assert file_number(body["metadata-location"], loc) == n, body["metadata-location"]
        assert body["metadata-location"] != prev["metadata-location"]
        assert_file_matches(body)
        # The previous files are appended to metadata-log, oldest first.
        assert meta["metadata-log"] == [
            {"metadata-file": h["metadata-location"], "timestamp-ms": h["metadata"]["last-updated-ms"]}
            for h in history], meta["metadata-log"]
        assert meta["last-updated-ms"] >= prev["metadata"]["last-updated-ms"]
        assert meta["table-uuid"] == created["metadata"]["table-uuid"]
        check(meta)
        loaded = load_table(floe, ns, "hist")
        assert loaded["metadata-location"] == body["metadata-location"]
        assert loaded["metadata"] == meta
        history.append(body)

    step([], [{"action": "set-properties", "updates": {"owner": "ana", "tier": "gold"}}],
         lambda m: m["properties"].get("owner") == "ana" or pytest.fail(m["properties"]))

    new_schema = {"type": "struct", "schema-id": 1, "fields": SCHEMA["fields"] + [
        {"id": 3, "name": "ts", "required": False, "type": "timestamptz"}]}

    def schema_check(m):
        assert m["current-schema-id"] == 1
        assert [s["schema-id"] for s in m["schemas"]] == [0, 1]
        assert m["schemas"][1]["fields"] == new_schema["fields"]
        assert m["last-column-id"] == 3
    step([{"type": "assert-current-schema-id", "current-schema-id": 0},
          {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2}],
         [{"action": "add-schema", "schema": new_schema, "last-column-id": 3},
          {"action": "set-current-schema", "schema-id": -1}], schema_check)

    spec = {"spec-id": 1, "fields": [{"source-id": 1, "field-id": 1000, "name": "id_bucket",
                                      "transform": "bucket[16]"}]}

    def spec_check(m):
        assert m["default-spec-id"] == 1
        assert m["partition-specs"][-1] == spec
        assert m["last-partition-id"] == 1000
    step([{"type": "assert-default-spec-id", "default-spec-id": 0}],
         [{"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1}], spec_check)

    order = {"order-id": 1, "fields": [{"source-id": 3, "transform": "identity", "direction": "asc",
                                        "null-order": "nulls-first"}]}

    def order_check(m):
        assert m["default-sort-order-id"] == 1
        assert m["sort-orders"][-1] == order
    step([{"type": "assert-default-sort-order-id", "default-sort-order-id": 0}],
         [{"action": "add-sort-order", "sort-order": order},
          {"action": "set-default-sort-order", "sort-order-id": -1}], order_check)

    snap = fake_snapshot(loc, 5001, None, 1)

    def snap_check(m):
        assert m["current-snapshot-id"] == 5001
        assert m["refs"] == {"main": {"snapshot-id": 5001, "type": "branch"}}
        assert m["last-sequence-number"] == 1
        assert [s["snapshot-id"] for s in m["snapshots"]] == [5001]
        assert m["snapshots"][0]["manifest-list"] == snap["manifest-list"]
        assert [e["snapshot-id"] for e in m["snapshot-log"]] == [5001]
    step([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
         add_snapshot_updates(snap), snap_check)

    step([], [{"action": "remove-properties", "removals": ["tier", "not-there"]}],
         lambda m: ("tier" not in m["properties"] and m["properties"].get("owner") == "ana")
         or pytest.fail(m["properties"]))

    # Every earlier file is still there, unchanged.
    for h in history:
        assert read_json_file(h["metadata-location"]) == h["metadata"]


def test_metadata_log_is_capped_by_previous_versions_max(floe, ns):
    created = create_table(floe, ns, "capped", properties={"write.metadata.previous-versions-max": "2"})
    locations = [created["metadata-location"]]
    body = created
    for i in range(4):
        body = commit_ok(floe, ns, "capped", updates=[{"action": "set-properties", "updates": {"i": str(i)}}])
        locations.append(body["metadata-location"])
    assert [e["metadata-file"] for e in body["metadata"]["metadata-log"]] == locations[-3:-1]
    assert_file_matches(body)


def test_commit_without_changes_writes_nothing(floe, ns):
    created = create_table(floe, ns, "noop", properties={"a": "1"})
    for updates in ([], [{"action": "set-properties", "updates": {}}],
                    [{"action": "set-properties", "updates": {"a": "1"}}],
                    [{"action": "remove-properties", "removals": ["absent"]}]):
        body = commit_ok(floe, ns, "noop", updates=updates)
        assert body["metadata-location"] == created["metadata-location"], updates
        assert body["metadata"] == created["metadata"], updates
    meta_dir = local_path(created["metadata-location"]).parent
    assert [p.name for p in meta_dir.iterdir()] == [local_path(created["metadata-location"]).name]


# --------------------------------------------------------------------------
# loadTable: snapshots=refs, ETag


def build_snapshot_history(floe, ns, name):
    """Snapshots 1..4 on main, tag 'v1' -> 1, branch 'audit' -> 3; 2 is no ref's target."""
    created = create_table(floe, ns, name)
    loc = created["metadata"]["location"]
    parent = None
    for seq, sid in enumerate([1001, 1002, 1003, 1004], start=1):
        snap = fake_snapshot(loc, sid, parent, seq)
        commit_ok(floe, ns, name,
                  [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
                  add_snapshot_updates(snap))
        parent = sid
    commit_ok(floe, ns, name,
              [{"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": None}],
              [{"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 1001}])
    commit_ok(floe, ns, name, [],
              [{"action": "set-snapshot-ref", "ref-name": "audit", "type": "branch", "snapshot-id": 1003}])
    return load_table(floe, ns, name)


def test_load_with_snapshots_refs_keeps_only_ref_targets(floe, ns):
    full = build_snapshot_history(floe, ns, "refs")
    meta = full["metadata"]
    assert sorted(s["snapshot-id"] for s in meta["snapshots"]) == [1001, 1002, 1003, 1004]
    assert meta["refs"] == {
        "main": {"snapshot-id": 1004, "type": "branch"},
        "v1": {"snapshot-id": 1001, "type": "tag"},
        "audit": {"snapshot-id": 1003, "type": "branch"},
    }
    assert [e["snapshot-id"] for e in meta["snapshot-log"]] == [1001, 1002, 1003, 1004]

    explicit_all = load_table(floe, ns, "refs", snapshots="all")
    assert explicit_all == full

    trimmed = load_table(floe, ns, "refs", snapshots="refs")
    assert trimmed["metadata-location"] == full["metadata-location"]
    tmeta = trimmed["metadata"]
    kept_ids = sorted(s["snapshot-id"] for s in tmeta["snapshots"])
    assert kept_ids == [1001, 1003, 1004], kept_ids
    # The kept snapshots are served as they are, and nothing else changes.
    by_id = {s["snapshot-id"]: s for s in meta["snapshots"]}
    for s in tmeta["snapshots"]:
        assert s == by_id[s["snapshot-id"]]
    rest_full = {k: v for k, v in meta.items() if k != "snapshots"}
    rest_trimmed = {k: v for k, v in tmeta.items() if k != "snapshots"}
    assert rest_trimmed == rest_full

    assert_error(floe.get(table_path("/v1", ns, "refs"), params={"snapshots": "some"}), 400)


def test_etag_and_if_none_match(floe, ns):
    create_table(floe, ns, "cached")
    url = table_path("/v1", ns, "cached")
    r1 = floe.get(url)
    assert r1.status_code == 200
    etag = r1.headers.get("ETag")
    assert etag, f"loadTable has no ETag: {dict(r1.headers)}"

    same = floe.get(url)
    assert same.headers.get("ETag") == etag, "the ETag must be stable while the table is unchanged"

    r = floe.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 304, describe(r)
    assert r.content == b""
    assert_request_id(r)

    r = floe.get(url, headers={"If-None-Match": '"something-else"'})
    assert r.status_code == 200, describe(r)
    assert r.json() == r1.json()

    body = commit_ok(floe, ns, "cached", updates=[{"action": "set-properties", "updates": {"x": "1"}}])
    r2 = floe.get(url, headers={"If-None-Match": etag})
    assert r2.status_code == 200, f"a stale ETag must not give 304 after a commit: {describe(r2)}"
    assert r2.json()["metadata-location"] == body["metadata-location"]
    assert r2.json()["metadata"] == body["metadata"]
    etag2 = r2.headers.get("ETag")
    assert etag2 and etag2 != etag
    assert floe.get(url, headers={"If-None-Match": etag2}).status_code == 304


def test_etag_of_a_recreated_table_differs(floe, ns):
    """A table dropped and created again under the same name is a new table."""
    create_table(floe, ns, "phoenix")
    url = table_path("/v1", ns, "phoenix")
    etag = floe.get(url).headers["ETag"]
    assert floe.delete(url).status_code == 204
    create_table(floe, ns, "phoenix")
    r = floe.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 200, describe(r)


# --------------------------------------------------------------------------
# commits: requirements and invalid updates


@pytest.fixture
def evolved(floe, ns):
    """A table with schema 1 current, snapshots 7001 <- 7002 on main, and a tag."""
    created = create_table(floe, ns, "req")
    loc = created["metadata"]["location"]
    schema1 = {"type": "struct", "schema-id": 1, "fields": SCHEMA["fields"] + [
        {"id": 3, "name": "extra", "required": False, "type": "int"}]}
    commit_ok(floe, ns, "req", [], [{"action": "add-schema", "schema": schema1},
                                    {"action": "set-current-schema", "schema-id": -1}])
    commit_ok(floe, ns, "req", [], add_snapshot_updates(fake_snapshot(loc, 7001, None, 1)))
    commit_ok(floe, ns, "req", [], add_snapshot_updates(fake_snapshot(loc, 7002, 7001, 2)))
    commit_ok(floe, ns, "req", [], [{"action": "set-snapshot-ref", "ref-name": "release", "type": "tag",
                                     "snapshot-id": 7001}])
    return load_table(floe, ns, "req")


FAILING_REQUIREMENTS = [
    # (requirement, values the message must name: expected and actual)
    ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7001}, ["main", 7001, 7002]),
    ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}, ["main"]),
    ({"type": "assert-ref-snapshot-id", "ref": "release", "snapshot-id": 7002}, ["release", 7002, 7001]),
    ({"type": "assert-ref-snapshot-id", "ref": "nightly", "snapshot-id": 7002}, ["nightly", 7002]),
    ({"type": "assert-current-schema-id", "current-schema-id": 0}, [0, 1]),
    ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2}, [2, 3]),
    ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1005}, [1005, 999]),
    ({"type": "assert-default-spec-id", "default-spec-id": 4}, [4, 0]),
    ({"type": "assert-default-sort-order-id", "default-sort-order-id": 6}, [6, 0]),
    ({"type": "assert-table-uuid", "uuid": "11111111-2222-4333-8444-555555555555"},
     ["11111111-2222-4333-8444-555555555555", "TABLE_UUID"]),
    ({"type": "assert-create"}, ["STAGED"]),
]


@pytest.mark.parametrize("requirement,mentions", FAILING_REQUIREMENTS,
                         ids=[f"{r['type']}-{i}" for i, (r, _) in enumerate(FAILING_REQUIREMENTS)])
def test_failed_requirement_is_409_naming_expected_and_actual(floe, ns, evolved, requirement, mentions):
    before = evolved
    updates = [{"action": "set-properties", "updates": {"should-not": "land"}}]
    if mentions == ["STAGED"]:
        # assert-create comes with the updates of a whole new table.
        loc = before["metadata"]["location"]
        updates = staged_create_updates(str(uuid.uuid4()), loc, {"should-not": "land"})
        mentions = []
    mentions = [before["metadata"]["table-uuid"] if m == "TABLE_UUID" else m for m in mentions]
    r = commit(floe, ns, "req", [requirement], updates)
    if requirement["type"] == "assert-create":
        # Clients map any 409 of a commit to CommitFailedException.
        err = assert_error(r, 409, message_has="exists")
    else:
        err = assert_error(r, 409, "CommitFailedException")
    assert_mentions(err["message"], *mentions)
    after = load_table(floe, ns, "req")
    assert after == before, "a failed commit must leave the table unchanged"


def test_requirements_that_hold_let_the_commit_land(floe, ns, evolved):
    m = evolved["metadata"]
    reqs = [
        {"type": "assert-table-uuid", "uuid": m["table-uuid"].upper()},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7002},
        {"type": "assert-ref-snapshot-id", "ref": "release", "snapshot-id": 7001},
        {"type": "assert-ref-snapshot-id", "ref": "nightly", "snapshot-id": None},
        {"type": "assert-current-schema-id", "current-schema-id": 1},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
    ]
    body = commit_ok(floe, ns, "req", reqs, [{"action": "set-properties", "updates": {"landed": "yes"}}])
    assert body["metadata"]["properties"]["landed"] == "yes"
    assert body["metadata-location"] != evolved["metadata-location"]


def test_first_failing_requirement_wins_and_nothing_lands(floe, ns, evolved):
    """One failing requirement among passing ones: 409 and the table is unchanged."""
    m = evolved["metadata"]
    reqs = [
        {"type": "assert-table-uuid", "uuid": m["table-uuid"]},
        {"type": "assert-current-schema-id", "current-schema-id": 1},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 9999},
    ]
    r = commit(floe, ns, "req", reqs, [{"action": "set-properties", "updates": {"x": "y"}}])
    err = assert_error(r, 409, "CommitFailedException")
    assert_mentions(err["message"], 9999, 7002)
    assert load_table(floe, ns, "req") == evolved


BAD_UPDATES = [
    ("unknown action", [{"action": "frobnicate-table"}]),
    ("unknown requirement", "REQ"),
    ("ref to unknown snapshot", [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                                  "snapshot-id": 424242}]),
    ("format-version downgrade", [{"action": "upgrade-format-version", "format-version": 1}]),
    ("format-version 4", [{"action": "upgrade-format-version", "format-version": 4}]),
    ("unknown current schema", [{"action": "set-current-schema", "schema-id": 77}]),
    ("no schema added for -1", [{"action": "set-current-schema", "schema-id": -1}]),
    ("duplicate snapshot", "DUP"),
    ("sequence number going backwards", "SEQ"),
    ("location outside the warehouse", "OUTSIDE"),
    ("missing action", [{"updates": {"a": "b"}}]),
    ("updates not a list", {"action": "set-properties"}),
]


@pytest.mark.parametrize("what,updates", BAD_UPDATES, ids=[w for w, _ in BAD_UPDATES])
def test_invalid_update_is_400_and_changes_nothing(request, floe, ns, evolved, what, updates):
    loc = evolved["metadata"]["location"]
    requirements = []
    if updates == "REQ":
        requirements = [{"type": "assert-something-new", "value": 1}]
        updates = []
    elif updates == "DUP":
        updates = [{"action": "add-snapshot", "snapshot": fake_snapshot(loc, 7002, 7002, 3)}]
    elif updates == "SEQ":
        updates = add_snapshot_updates(fake_snapshot(loc, 7003, 7002, 1))
    elif updates == "OUTSIDE":
        outside = make_shared_tmpdir("floe-it-outside-")
        request.addfinalizer(lambda: shutil.rmtree(outside, ignore_errors=True))
        # The location alone, then a change that would write a file there.
        updates = [{"action": "set-location", "location": f"file://{outside}/t"},
                   {"action": "set-properties", "updates": {"moved": "yes"}}]
    # A valid update first: none of the commit may land.
    updates = ([{"action": "set-properties", "updates": {"partial": "yes"}}] + updates
               if isinstance(updates, list) else updates)
    r = floe.post(table_path("/v1", ns, "req"), json={"requirements": requirements, "updates": updates})
    if what == "sequence number going backwards":
        # Iceberg answers a stale sequence number with a retryable 409 ("Validation
        # failed, please retry"), as floe does. Never 5xx, never a write.
        assert r.status_code == 409, f"{what}: {describe(r)}"
    else:
        assert r.status_code == 400, f"{what}: {describe(r)}"
    assert_error(r, r.status_code)
    assert load_table(floe, ns, "req") == evolved
    if what == "location outside the warehouse":
        assert not any(outside.iterdir()), "floe wrote outside its warehouse"


def test_upgrade_format_version(floe, ns):
    create_table(floe, ns, "up")
    body = commit_ok(floe, ns, "up", [], [{"action": "upgrade-format-version", "format-version": 3}])
    assert body["metadata"]["format-version"] == 3
    assert body["metadata"]["next-row-id"] == 0
    assert_file_matches(body)


# --------------------------------------------------------------------------
# staged create


def staged_create_updates(table_uuid, location, props):
    schema = {"type": "struct", "schema-id": 0, "fields": SCHEMA["fields"]}
    return [
        {"action": "assign-uuid", "uuid": table_uuid},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": schema, "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": [
            {"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]"}]}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
        {"action": "set-properties", "updates": props},
    ]


def test_staged_create_then_commit(floe, ns):
    wh = warehouse_of(floe)
    r = floe.post(tables_path("/v1", ns), json={"name": "staged", "schema": SCHEMA, "stage-create": True,
                                                "properties": {"stage": "1"}})
    body = assert_ok_json(r)
    assert "metadata-location" in body and body["metadata-location"] is None, body
    staged_meta = body["metadata"]
    expected_location = f"file://{wh}/{ns[0]}/staged"
    assert staged_meta["location"] == expected_location
    assert staged_meta["schemas"][0]["fields"] == SCHEMA["fields"]

    # Nothing exists yet: no catalog entry, no metadata file.
    assert_error(floe.get(table_path("/v1", ns, "staged")), 404, "NoSuchTableException")
    assert floe.head(table_path("/v1", ns, "staged")).status_code == 404
    assert assert_ok_json(floe.get(tables_path("/v1", ns)))["identifiers"] == []
    meta_dir = local_path(expected_location) / "metadata"
    assert not meta_dir.exists() or not any(meta_dir.iterdir())

    new_uuid = staged_meta["table-uuid"]
    updates = staged_create_updates(new_uuid, expected_location, {"stage": "1", "owner": "etl"})
    committed = commit_ok(floe, ns, "staged", [{"type": "assert-create"}], updates)
    meta = committed["metadata"]
    assert meta["table-uuid"] == new_uuid
    assert meta["location"] == expected_location
    assert meta["schemas"] == [{"type": "struct", "schema-id": 0, "fields": SCHEMA["fields"]}]
    assert meta["current-schema-id"] == 0
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]"}]}]
    assert meta["default-spec-id"] == 0
    assert meta["properties"].get("owner") == "etl" and meta["properties"].get("stage") == "1"
    assert meta["metadata-log"] == []
    assert file_number(committed["metadata-location"], expected_location) == 0
    assert_file_matches(committed)

    loaded = load_table(floe, ns, "staged")
    assert loaded["metadata-location"] == committed["metadata-location"]
    assert loaded["metadata"] == meta
    assert assert_ok_json(floe.get(tables_path("/v1", ns)))["identifiers"] == [ident(ns, "staged")]

    # The table exists now: a second create-commit fails and changes nothing.
    r = commit(floe, ns, "staged", [{"type": "assert-create"}],
               staged_create_updates(str(uuid.uuid4()), expected_location, {"other": "x"}))
    assert_error(r, 409, message_has="exists")
    assert load_table(floe, ns, "staged") == loaded


def test_staged_create_commit_in_unknown_namespace_is_404(floe):
    loc = f"file://{warehouse_of(floe)}/no_such_ns_z/t"
    r = commit(floe, ["no_such_ns_z"], "t", [{"type": "assert-create"}],
               staged_create_updates(str(uuid.uuid4()), loc, {}))
    assert r.status_code == 404, describe(r)


def test_staged_create_commit_outside_the_warehouse_is_400(floe, ns):
    outside = make_shared_tmpdir("floe-it-outside-")
    try:
        r = commit(floe, ns, "escape", [{"type": "assert-create"}],
                   staged_create_updates(str(uuid.uuid4()), f"file://{outside}/t", {}))
        assert_error(r, 400)
        assert list(outside.iterdir()) == [], "floe wrote outside its warehouse"
        assert floe.head(table_path("/v1", ns, "escape")).status_code == 404
    finally:
        shutil.rmtree(outside, ignore_errors=True)


# --------------------------------------------------------------------------
# register


def test_register_from_an_existing_metadata_file(floe, ns):
    wh = warehouse_of(floe)
    created = create_table(floe, ns, "orig")
    loc = created["metadata"]["location"]
    v1 = commit_ok(floe, ns, "orig", [], add_snapshot_updates(fake_snapshot(loc, 8001, None, 1)))
    v2 = commit_ok(floe, ns, "orig", [], [{"action": "set-properties", "updates": {"gen": "2"}}])

    # A copy of the current file, elsewhere in the warehouse.
    copy_path = wh / "registered" / "copy.metadata.json"
    copy_path.parent.mkdir(parents=True)
    shutil.copyfile(local_path(v2["metadata-location"]), copy_path)
    copy_uri = f"file://{copy_path}"
    file_meta = json.loads(copy_path.read_text())

    r = floe.delete(table_path("/v1", ns, "orig"))
    assert r.status_code == 204, describe(r)
    assert local_path(v2["metadata-location"]).is_file()

    reg_url = f"/v1/namespaces/{ns_path(ns)}/register"
    body = assert_ok_json(floe.post(reg_url, json={"name": "again", "metadata-location": copy_uri}))
    assert body["metadata-location"] == copy_uri
    assert body["metadata"] == file_meta
    loaded = load_table(floe, ns, "again")
    assert loaded["metadata-location"] == copy_uri
    assert loaded["metadata"] == file_meta
    assert floe.head(table_path("/v1", ns, "again")).status_code == 204
    assert json.loads(copy_path.read_text()) == file_meta, "register must not modify the file"

    r = floe.post(reg_url, json={"name": "again", "metadata-location": f"file://{local_path(v1['metadata-location'])}"})
    assert_error(r, 409, "AlreadyExistsException")
    assert load_table(floe, ns, "again")["metadata-location"] == copy_uri

    body = assert_ok_json(floe.post(reg_url, json={"name": "again", "metadata-location": v1["metadata-location"],
                                                   "overwrite": True}))
    assert body["metadata-location"] == v1["metadata-location"]
    assert body["metadata"] == v1["metadata"]
    assert load_table(floe, ns, "again")["metadata"] == v1["metadata"]

    # The registered table takes commits: the next file follows in its location.
    after = commit_ok(floe, ns, "again", [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 8001}],
                      [{"action": "set-properties", "updates": {"registered": "yes"}}])
    assert_file_matches(after)
    assert str(local_path(after["metadata-location"]).parent) == str(local_path(loc)) + "/metadata"
    assert after["metadata"]["metadata-log"][-1]["metadata-file"] == v1["metadata-location"]
    assert after["metadata"]["properties"]["registered"] == "yes"


def test_register_errors(floe, ns):
    wh = warehouse_of(floe)
    reg_url = f"/v1/namespaces/{ns_path(ns)}/register"
    created = create_table(floe, ns, "src")

    outside = make_shared_tmpdir("floe-it-outside-")
    try:
        out_file = outside / "00000-x.metadata.json"
        shutil.copyfile(local_path(created["metadata-location"]), out_file)
        r = floe.post(reg_url, json={"name": "outside", "metadata-location": f"file://{out_file}"})
        assert_error(r, 400)
    finally:
        shutil.rmtree(outside, ignore_errors=True)

    r = floe.post(reg_url, json={"name": "missing", "metadata-location": f"file://{wh}/nope/x.metadata.json"})
    assert 400 <= r.status_code < 500, describe(r)
    assert_error(r, r.status_code)

    bad = wh / "garbage" / "bad.metadata.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("{this is not json")
    r = floe.post(reg_url, json={"name": "garbage", "metadata-location": f"file://{bad}"})
    assert_error(r, 400)

    assert_error(floe.post(reg_url, json={"name": "nofile"}), 400)
    r = floe.post("/v1/namespaces/no_such_ns_r/register",
                  json={"name": "x", "metadata-location": created["metadata-location"]})
    assert_error(r, 404, "NoSuchNamespaceException")
    # The existing table is refused without overwrite.
    r = floe.post(reg_url, json={"name": "src", "metadata-location": created["metadata-location"]})
    assert_error(r, 409, "AlreadyExistsException")
    names = sorted(i["name"] for i in assert_ok_json(floe.get(tables_path("/v1", ns)))["identifiers"])
    assert names == ["src"]


# --------------------------------------------------------------------------
# rename


def test_rename_across_namespaces(floe, ns):
    floe.create_namespace(ns + ["dst"])
    created = create_table(floe, ns, "mover")
    commit_ok(floe, ns, "mover", [], [{"action": "set-properties", "updates": {"k": "v"}}])
    before = load_table(floe, ns, "mover")

    r = floe.post("/v1/tables/rename", json={"source": ident(ns, "mover"),
                                             "destination": ident(ns + ["dst"], "moved")})
    assert r.status_code == 204, describe(r)
    assert_request_id(r)

    assert_error(floe.get(table_path("/v1", ns, "mover")), 404, "NoSuchTableException")
    after = load_table(floe, ns + ["dst"], "moved")
    assert after == before, "a rename keeps the table's metadata and files"
    assert after["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    assert assert_ok_json(floe.get(tables_path("/v1", ns)))["identifiers"] == []
    assert assert_ok_json(floe.get(tables_path("/v1", ns + ["dst"])))["identifiers"] == [
        ident(ns + ["dst"], "moved")]

    # The renamed table takes commits under its new name.
    body = commit_ok(floe, ns + ["dst"], "moved", [], [{"action": "set-properties", "updates": {"k2": "v2"}}])
    assert_file_matches(body)
    assert body["metadata"]["metadata-log"][-1]["metadata-file"] == before["metadata-location"]


def test_rename_within_namespace_with_prefix(floe, ns):
    create_table(floe, ns, "a")
    r = floe.post("/v1/warehouse/tables/rename", json={"source": ident(ns, "a"), "destination": ident(ns, "b")})
    assert r.status_code == 204, describe(r)
    assert floe.head(table_path("/v1", ns, "a")).status_code == 404
    assert floe.head(table_path("/v1", ns, "b")).status_code == 204


def test_rename_errors(floe, ns):
    create_table(floe, ns, "one")
    create_table(floe, ns, "two")
    one = load_table(floe, ns, "one")
    two = load_table(floe, ns, "two")

    def rename(src, dst):
        return floe.post("/v1/tables/rename", json={"source": src, "destination": dst})

    assert_error(rename(ident(ns, "ghost"), ident(ns, "x")), 404, "NoSuchTableException")
    assert_error(rename(ident(["no_such_src_ns"], "one"), ident(ns, "x")), 404)
    assert_error(rename(ident(ns, "one"), ident(["no_such_dst_ns"], "x")), 404, "NoSuchNamespaceException")
    assert_error(rename(ident(ns, "one"), ident(ns, "two")), 409, "AlreadyExistsException")
    assert_error(floe.post("/v1/tables/rename", json={"source": ident(ns, "one")}), 400)
    assert load_table(floe, ns, "one") == one
    assert load_table(floe, ns, "two") == two
    assert floe.head(table_path("/v1", ns, "x")).status_code == 404


# --------------------------------------------------------------------------
# drop with purge


def test_drop_with_purge_removes_only_the_table_directory(own_floe):
    f, scratch, wh = own_floe
    f.create_namespace(["db"])
    created = create_table(f, ["db"], "t")
    assert created["metadata"]["location"] == f"file://{wh}/db/t", "--warehouse sets where tables live"
    loc = created["metadata"]["location"]
    for i in range(3):
        commit_ok(f, ["db"], "t", [], [{"action": "set-properties", "updates": {"i": str(i)}}])
    table_dir = local_path(loc)
    (table_dir / "data").mkdir()
    (table_dir / "data" / "00000-0-part.parquet").write_bytes(b"PAR1 fake PAR1")

    keep = create_table(f, ["db"], "t2")          # a table whose name extends "t"
    (wh / "db" / "notes.txt").write_text("keep me")
    (wh / "db" / "t_sibling").mkdir()
    (wh / "db" / "t_sibling" / "file").write_text("keep me too")
    (scratch / "outside").mkdir()
    (scratch / "outside" / "precious").write_text("never touch")
    before_outside = listing(scratch / "outside")
    before_t2 = listing(local_path(keep["metadata"]["location"]))

    r = f.delete(table_path("/v1", ["db"], "t"), params={"purgeRequested": "true"})
    assert r.status_code == 204, describe(r)
    # The janitor purges right after the drop, off the request thread.
    assert wait_until(lambda: not table_dir.exists(), 15), f"purge left {sorted(listing(table_dir))}"
    assert_error(f.get(table_path("/v1", ["db"], "t")), 404, "NoSuchTableException")

    assert (wh / "db" / "notes.txt").read_text() == "keep me"
    assert (wh / "db" / "t_sibling" / "file").read_text() == "keep me too"
    assert listing(local_path(keep["metadata"]["location"])) == before_t2
    assert load_table(f, ["db"], "t2")["metadata-location"] == keep["metadata-location"]
    assert listing(scratch / "outside") == before_outside


def test_drop_without_purge_keeps_files(own_floe):
    f, _scratch, _wh = own_floe
    f.create_namespace(["db"])
    for name, params in (("plain", {}), ("nopurge", {"purgeRequested": "false"})):
        created = create_table(f, ["db"], name)
        commit_ok(f, ["db"], name, [], [{"action": "set-properties", "updates": {"k": "v"}}])
        before = listing(local_path(created["metadata"]["location"]))
        assert len(before) == 2, before
        r = f.delete(table_path("/v1", ["db"], name), params=params)
        assert r.status_code == 204, describe(r)
        assert f.head(table_path("/v1", ["db"], name)).status_code == 404
        assert listing(local_path(created["metadata"]["location"])) == before


def test_purge_never_touches_files_outside_the_warehouse(own_floe):
    """A registered metadata file may name a location outside the warehouse:
    floe may refuse it, but a purge must never delete anything there."""
    f, scratch, wh = own_floe
    f.create_namespace(["db"])
    created = create_table(f, ["db"], "src")
    outside_dir = scratch / "outside-table"
    (outside_dir / "metadata").mkdir(parents=True)
    (outside_dir / "metadata" / "keep.json").write_text("{}")
    (outside_dir / "data.parquet").write_bytes(b"data")
    before = listing(outside_dir)

    crafted = json.loads(local_path(created["metadata-location"]).read_text())
    crafted["location"] = f"file://{outside_dir}"
    crafted["table-uuid"] = str(uuid.uuid4())
    crafted_path = wh / "db" / "crafted" / "metadata" / "00000-crafted.metadata.json"
    crafted_path.parent.mkdir(parents=True)
    crafted_path.write_text(json.dumps(crafted))

    r = f.post("/v1/namespaces/db/register", json={"name": "crafted", "metadata-location": f"file://{crafted_path}"})
    # A location outside the warehouse is refused at registration, so no
    # purge can ever reach it.
    assert_error(r, 400, "BadRequestException", "is outside the warehouse")
    assert f.head(table_path("/v1", ["db"], "crafted")).status_code == 404
    assert listing(outside_dir) == before


def test_purge_of_one_table_never_removes_another_tables_files(own_floe):
    """A table placed (explicitly) at a parent directory of another table:
    purging it must not destroy the other table."""
    f, _scratch, wh = own_floe
    f.create_namespace(["db"])
    other = create_table(f, ["db"], "other")
    other_files = listing(local_path(other["metadata"]["location"]))
    r = f.post(tables_path("/v1", ["db"]), json={"name": "wide", "schema": SCHEMA,
                                                 "location": f"file://{wh}/db"})
    # A table may not enclose another table's location: refused at create,
    # so no purge of it can reach the other table's files.
    assert_error(r, 400, "BadRequestException", "overlaps the location of table db.other")
    assert listing(local_path(other["metadata"]["location"])) == other_files, (
        "purging table db.wide deleted the files of table db.other")
    assert_ok_json(f.get(table_path("/v1", ["db"], "other")))


@pytest.mark.parametrize("levels,name", [
    ([".."], "t"), (["."], "t"), (["a", ".."], ".."), (["with/slash"], "t"), (["pct%2F"], "x%2e%2e"),
])
def test_default_locations_stay_inside_the_warehouse(own_floe, levels, name):
    f, scratch, wh = own_floe
    for i in range(1, len(levels) + 1):
        f.create_namespace(levels[:i])
    created = create_table(f, levels, name)
    path = local_path(created["metadata-location"])
    assert path.is_file(), created["metadata-location"]
    real = os.path.realpath(path)
    assert real.startswith(os.path.realpath(wh) + "/"), f"{created['metadata-location']} is outside {wh}"
    assert sorted(p.name for p in scratch.iterdir()) == ["wh"], "floe wrote outside its warehouse"
    assert_file_matches(created)
    r = f.delete(table_path("/v1", levels, name), params={"purgeRequested": "true"})
    assert r.status_code == 204, describe(r)
    assert wait_until(lambda: not path.exists(), 15), f"{path} was not purged"
    assert wh.is_dir()


# --------------------------------------------------------------------------
# transactions


def test_transaction_with_a_failing_requirement_changes_nothing(floe, ns):
    a = create_table(floe, ns, "ta")
    b = create_table(floe, ns, "tb")
    body = {"table-changes": [
        {"identifier": ident(ns, "ta"),
         "requirements": [{"type": "assert-table-uuid", "uuid": a["metadata"]["table-uuid"]}],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]},
        {"identifier": ident(ns, "tb"),
         "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 42}],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]},
    ]}
    for base in BASES:
        r = floe.post(f"{base}/transactions/commit", json=body)
        err = assert_error(r, 409, "CommitFailedException")
        assert_mentions(err["message"], 42)
        for name, orig in (("ta", a), ("tb", b)):
            now = load_table(floe, ns, name)
            assert now["metadata-location"] == orig["metadata-location"], f"{name} changed"
            assert now["metadata"] == orig["metadata"]


def test_transaction_with_an_invalid_update_changes_nothing(floe, ns):
    a = create_table(floe, ns, "ua")
    b = create_table(floe, ns, "ub")
    body = {"table-changes": [
        {"identifier": ident(ns, "ua"), "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]},
        {"identifier": ident(ns, "ub"), "requirements": [],
         "updates": [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 31337}]},
    ]}
    assert_error(floe.post("/v1/transactions/commit", json=body), 400)
    assert load_table(floe, ns, "ua") == a
    assert load_table(floe, ns, "ub") == b

    body["table-changes"][1]["identifier"] = ident(ns, "ghost")
    body["table-changes"][1]["updates"] = [{"action": "set-properties", "updates": {"txn": "1"}}]
    assert_error(floe.post("/v1/transactions/commit", json=body), 404, "NoSuchTableException")
    assert load_table(floe, ns, "ua") == a

    assert_error(floe.post("/v1/transactions/commit", json={"table-changes": [
        {"requirements": [], "updates": []}]}), 400)


def test_transaction_that_holds_commits_every_table(floe, ns):
    a = create_table(floe, ns, "sa")
    b = create_table(floe, ns, "sb")
    loc_b = b["metadata"]["location"]
    body = {"table-changes": [
        {"identifier": ident(ns, "sa"),
         "requirements": [{"type": "assert-table-uuid", "uuid": a["metadata"]["table-uuid"]}],
         "updates": [{"action": "set-properties", "updates": {"txn": "a"}}]},
        {"identifier": ident(ns, "sb"),
         "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
         "updates": add_snapshot_updates(fake_snapshot(loc_b, 9001, None, 1))},
    ]}
    r = floe.post("/v1/transactions/commit", json=body)
    assert r.status_code == 204, describe(r)
    assert r.content == b""

    na = load_table(floe, ns, "sa")
    nb = load_table(floe, ns, "sb")
    assert na["metadata-location"] != a["metadata-location"]
    assert nb["metadata-location"] != b["metadata-location"]
    assert na["metadata"]["properties"]["txn"] == "a"
    assert nb["metadata"]["current-snapshot-id"] == 9001
    for before, now in ((a, na), (b, nb)):
        assert file_number(now["metadata-location"], now["metadata"]["location"]) == 1
        assert_file_matches(now)
        assert now["metadata"]["metadata-log"] == [
            {"metadata-file": before["metadata-location"], "timestamp-ms": before["metadata"]["last-updated-ms"]}]


# --------------------------------------------------------------------------
# metrics and credentials


def scan_report(table_name, snapshot_id):
    return {
        "report-type": "scan-report",
        "table-name": table_name,
        "snapshot-id": snapshot_id,
        "filter": {"type": "gt", "term": "id", "value": 100},
        "schema-id": 0,
        "projected-field-ids": [1, 2],
        "projected-field-names": ["id", "data"],
        "metrics": {
            "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 2644235116},
            "result-data-files": {"unit": "count", "value": 1},
            "result-delete-files": {"unit": "count", "value": 0},
            "total-data-manifests": {"unit": "count", "value": 1},
            "total-delete-manifests": {"unit": "count", "value": 0},
            "scanned-data-manifests": {"unit": "count", "value": 1},
            "skipped-data-manifests": {"unit": "count", "value": 0},
            "total-file-size-in-bytes": {"unit": "bytes", "value": 10},
            "total-delete-file-size-in-bytes": {"unit": "bytes", "value": 0},
        },
        "metadata": {"engine-name": "spark", "engine-version": "3.5.1", "iceberg-version": "1.6.1"},
    }


def commit_report(table_name, snapshot_id):
    return {
        "report-type": "commit-report",
        "table-name": table_name,
        "snapshot-id": snapshot_id,
        "sequence-number": 1,
        "operation": "append",
        "metrics": {
            "total-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 150000000},
            "attempts": {"unit": "count", "value": 1},
            "added-data-files": {"unit": "count", "value": 1},
            "added-records": {"unit": "count", "value": 3},
            "total-records": {"unit": "count", "value": 3},
        },
        "metadata": {"engine-name": "spark"},
    }


def test_report_metrics(floe, ns):
    create_table(floe, ns, "measured")
    url = table_path("/v1", ns, "measured") + "/metrics"
    for report in (scan_report(f"{ns[0]}.measured", 1), commit_report(f"{ns[0]}.measured", 1)):
        r = floe.post(url, json=report)
        assert r.status_code == 204, describe(r)
        assert r.content == b""
        assert_request_id(r)
    r = floe.post(table_path("/v1", ns, "ghost") + "/metrics", json=scan_report(f"{ns[0]}.ghost", 1))
    assert_error(r, 404, "NoSuchTableException")


def test_load_credentials(floe, ns):
    create_table(floe, ns, "creds")
    for base in BASES:
        body = assert_ok_json(floe.get(table_path(base, ns, "creds") + "/credentials"))
        assert body == {"storage-credentials": []}
    assert_error(floe.get(table_path("/v1", ns, "ghost") + "/credentials"), 404, "NoSuchTableException")


def test_a_table_route_in_a_missing_namespace_is_no_such_table(floe):
    # Engines resolve ns.t.branch_x / ns.t.refs by first loading table
    # branch_x in namespace ns.t: the answer must be NoSuchTableException.
    r = floe.get("/v1/namespaces/no_such_ns_q%1Ft/tables/branch_audit")
    assert_error(r, 404, "NoSuchTableException")
    assert "does not exist" in r.json()["error"]["message"]
    assert floe.head("/v1/namespaces/no_such_ns_q/tables/t").status_code == 404
    r = floe.post("/v1/namespaces/no_such_ns_q/tables/t", json={"requirements": [], "updates": []})
    assert_error(r, 404, "NoSuchTableException")


def test_create_after_rename_gets_a_location_of_its_own(floe, uniq):
    assert_ok_json(floe.post("/v1/namespaces", json={"namespace": [uniq]}))
    first = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/tables",
                                     json={"name": "before", "schema": SCHEMA}))
    r = floe.post("/v1/tables/rename", json={
        "source": {"namespace": [uniq], "name": "before"},
        "destination": {"namespace": [uniq], "name": "after"}})
    assert r.status_code == 204, describe(r)
    second = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/tables",
                                      json={"name": "before", "schema": SCHEMA}))
    old_loc = first["metadata"]["location"]
    new_loc = second["metadata"]["location"]
    assert new_loc != old_loc and new_loc.startswith(old_loc + "-"), (old_loc, new_loc)
    moved = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}/tables/after"))
    assert moved["metadata"]["location"] == old_loc
