"""Metadata engine limits over HTTP: assign-uuid takes only a UUID and never
changes a table's uuid; names whose escaped form cannot be a path are a 400
before anything is written; large but legal metadata (tens of thousands of
fields, snapshots, refs, statistics) is validated in linear time, so such a
request finishes well inside a generous bound (the CPU numbers are in
bench/README.md, not asserted here).
"""
from __future__ import annotations

import json
import time
import uuid as uuidlib

import pytest
import requests

from conftest import TIME_SCALE, TableHandle, assert_error, assert_ok_json, ns_path

GENEROUS_S = 30 * TIME_SCALE  # the quadratic code took minutes for these bodies


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


def files_under(path):
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


# --------------------------------------------------------------------------
# assign-uuid


@pytest.mark.parametrize("bad", ["", "not-a-uuid", "9c12d44103fe46939a96a0705ddf69c1",
                                 "{9c12d441-03fe-4693-9a96-a0705ddf69c1}", 42, None])
def test_assign_uuid_refuses_what_is_not_a_uuid(floe, ns, bad):
    t = TableHandle(floe, ns, "u")
    t.create()
    before = t.load()
    r = t.commit([{"action": "assign-uuid", "uuid": bad}])
    assert_error(r, 400, "BadRequestException")
    after = t.load()
    # The table is untouched and still served by every route.
    assert after["metadata-location"] == before["metadata-location"]
    assert after["metadata"]["table-uuid"] == before["metadata"]["table-uuid"]
    assert_ok_json(floe.get(t.refs_url))
    assert_ok_json(floe.get(t.url, params={"snapshots": "refs"}))


def test_assign_uuid_cannot_change_a_table_uuid(floe, ns):
    t = TableHandle(floe, ns, "u")
    t.create()
    before = t.load()
    other = str(uuidlib.uuid4())
    r = t.commit([{"action": "assign-uuid", "uuid": other}])
    assert_error(r, 400, "BadRequestException")
    assert "reassign" in r.json()["error"]["message"]
    assert t.load()["metadata-location"] == before["metadata-location"]


def test_assign_uuid_with_the_same_uuid_is_a_noop(floe, ns):
    t = TableHandle(floe, ns, "u")
    t.create()
    before = t.load()
    own = before["metadata"]["table-uuid"]
    for value in (own, own.upper()):
        body = t.commit_ok([{"action": "assign-uuid", "uuid": value}])
        assert body["metadata-location"] == before["metadata-location"]
        assert body["metadata"]["table-uuid"] == own


def staged_updates(location=None):
    schema = dict(TableHandle.SCHEMA)
    ups = [
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": schema},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]
    if location:
        ups.append({"action": "set-location", "location": location})
    return ups


def test_staged_create_keeps_the_client_uuid_and_refuses_a_second(floe, ns):
    staged = assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                                      json={"name": "s", "schema": TableHandle.SCHEMA,
                                            "stage-create": True}))
    loc = staged["metadata"]["location"]
    mine = str(uuidlib.uuid4())
    t = TableHandle(floe, ns, "s")
    r = t.commit([{"action": "assign-uuid", "uuid": mine}] + staged_updates(loc) +
                 [{"action": "assign-uuid", "uuid": str(uuidlib.uuid4())}],
                 [{"type": "assert-create"}])
    assert_error(r, 400, "BadRequestException")
    assert_error(floe.get(t.url), 404, "NoSuchTableException")
    body = t.commit_ok([{"action": "assign-uuid", "uuid": mine}] + staged_updates(loc),
                       [{"type": "assert-create"}])
    assert body["metadata"]["table-uuid"] == mine
    assert t.metadata()["table-uuid"] == mine


def test_staged_create_without_assign_uuid_gets_one(floe, ns):
    staged = assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                                      json={"name": "s2", "schema": TableHandle.SCHEMA,
                                            "stage-create": True}))
    t = TableHandle(floe, ns, "s2")
    body = t.commit_ok(staged_updates(staged["metadata"]["location"]), [{"type": "assert-create"}])
    assert str(uuidlib.UUID(body["metadata"]["table-uuid"])) == body["metadata"]["table-uuid"]


# --------------------------------------------------------------------------
# names whose escaped form is too long for a path


def warehouse(floe):
    return floe.workdir / "data" / "warehouse"


def test_table_name_that_escapes_too_long_is_400(floe, ns):
    name = "%" * 255  # a legal 255-byte name; its path segment is 765 bytes
    r = floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                  json={"name": name, "schema": TableHandle.SCHEMA})
    assert_error(r, 400, "BadRequestException")
    assert "255" in r.json()["error"]["message"]
    assert_error(floe.get(TableHandle(floe, ns, name).url), 404, "NoSuchTableException")
    assert files_under(warehouse(floe) / ns[0]) == []


def test_too_long_name_with_multibyte_characters_gets_a_valid_message(floe, ns):
    # 246 bytes; its segment is 256 bytes, and byte 40 is inside an "é".
    name = "a" + "é" * 120 + "%" * 5
    r = floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                  json={"name": name, "schema": TableHandle.SCHEMA})
    assert_error(r, 400, "BadRequestException")
    assert "256 bytes" in r.json()["error"]["message"]


def test_namespace_level_that_escapes_too_long_is_400_at_table_create(floe, uniq):
    level = uniq + "/" * (255 - len(uniq))
    floe.create_namespace([level])
    t = TableHandle(floe, [level], "t")
    r = floe.post(f"{t.ns_url}/tables", json={"name": "t", "schema": TableHandle.SCHEMA})
    assert_error(r, 400, "BadRequestException")
    assert_error(floe.get(t.url), 404, "NoSuchTableException")


def test_deep_namespace_whose_path_is_too_long_is_400(floe, uniq):
    # 16 levels of 253 bytes: each segment fits NAME_MAX, the path does
    # not fit PATH_MAX.
    levels = [uniq + "y" * (253 - len(uniq))] + [f"{i:02d}" + "x" * 251 for i in range(15)]
    for depth in range(1, len(levels) + 1):
        floe.create_namespace(levels[:depth])
    t = TableHandle(floe, levels, "t")
    r = floe.post(f"{t.ns_url}/tables", json={"name": "t", "schema": TableHandle.SCHEMA})
    assert_error(r, 400, "BadRequestException")
    assert files_under(warehouse(floe) / levels[0]) == []


def test_long_plain_name_still_works(floe, ns):
    name = "n" * 255
    t = TableHandle(floe, ns, name)
    t.create()
    assert t.load()["metadata-location"]


# --------------------------------------------------------------------------
# large but legal metadata


def snapshot(i):
    s = {"snapshot-id": i, "sequence-number": i, "timestamp-ms": 1767225600000 + i,
         "manifest-list": f"file:///nowhere/snap-{i}.avro", "summary": {"operation": "append"}}
    if i > 1:
        s["parent-snapshot-id"] = i - 1
    return s


def timed(call):
    t0 = time.monotonic()
    r = call()
    return r, time.monotonic() - t0


def post_compact(floe, path, body):
    return floe.post(path, data=json.dumps(body, separators=(",", ":")),
                     headers={"Content-Type": "application/json"}, timeout=GENEROUS_S)


def test_create_table_with_100000_fields(floe, ns):
    n = 100000  # about 6 MB: the quadratic duplicate-id check took ~45 s
    schema = {"type": "struct", "fields": [
        {"id": i, "name": f"c{i}", "required": False, "type": "long"} for i in range(1, n + 1)]}
    spec = {"fields": [{"source-id": i, "name": f"p{i}", "transform": "identity"}
                       for i in range(n - 999, n + 1)]}
    r, took = timed(lambda: post_compact(floe, f"/v1/namespaces/{ns_path(ns)}/tables",
                                         {"name": "wide", "schema": schema,
                                          "partition-spec": spec}))
    body = assert_ok_json(r)
    assert took < GENEROUS_S
    m = body["metadata"]
    assert m["last-column-id"] == n
    assert len(m["schemas"][0]["fields"]) == n
    assert len(m["partition-specs"][0]["fields"]) == 1000
    # A duplicate id at the very end is still found.
    schema["fields"].append({"id": 7, "name": "again", "required": False, "type": "long"})
    r, took = timed(lambda: post_compact(floe, f"/v1/namespaces/{ns_path(ns)}/tables",
                                         {"name": "wide2", "schema": schema}))
    assert_error(r, 400, "BadRequestException")
    assert took < GENEROUS_S


def test_30000_snapshots_ancestry_and_15000_removals(floe, ns):
    """30,000 snapshots in three commits (with tags and statistics), a
    fast-forward over the whole history, then an expiry of the 15,000 below
    main sent as Java sends it (one remove-snapshots per id), newest first.
    Each request is linear now; the scans per snapshot and per statistics
    entry made the expiry take about a minute."""
    n, batch, removed = 30000, 10000, 15000
    t = TableHandle(floe, ns, "deep")
    t.create()
    for start in range(1, n + 1, batch):
        ids = range(start, start + batch)
        updates = [{"action": "add-snapshot", "snapshot": snapshot(i)} for i in ids]
        updates.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                        "snapshot-id": ids[-1]})
        updates += [{"action": "set-snapshot-ref", "ref-name": f"tag{i}", "type": "tag",
                     "snapshot-id": i} for i in ids if i % 10 == 1]
        updates += [{"action": "set-statistics", "statistics": {
            "snapshot-id": i, "statistics-path": f"file:///nowhere/{i}.stats",
            "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}}
            for i in ids]
        r, took = timed(lambda: post_compact(floe, t.url, {"requirements": [], "updates": updates}))
        m = assert_ok_json(r)["metadata"]
        assert took < GENEROUS_S
    assert len(m["snapshots"]) == n and len(m["statistics"]) == n
    assert len(m["refs"]) == 1 + n // 10
    assert m["current-snapshot-id"] == n

    # The ancestry walk of a fast-forward over the whole history.
    assert_ok_json(floe.post(t.refs_url, json={"name": "ff", "type": "branch", "snapshot-id": 1}),
                   201)
    r, took = timed(lambda: floe.post(t.ref_url("ff") + "/fast-forward", json={"to": "main"},
                                      timeout=GENEROUS_S))
    assert_ok_json(r)
    assert took < GENEROUS_S

    # Expire as Java does: one remove-snapshots per id.
    gone = range(n - 1, n - 1 - removed, -1)
    r, took = timed(lambda: post_compact(floe, t.url, {"requirements": [], "updates": [
        {"action": "remove-snapshots", "snapshot-ids": [i]} for i in gone]}))
    m = assert_ok_json(r)["metadata"]
    assert took < GENEROUS_S
    gone_set = set(gone)
    kept = [i for i in range(1, n + 1) if i not in gone_set]
    ids = [s["snapshot-id"] for s in m["snapshots"]]
    assert ids == kept
    assert [s["snapshot-id"] for s in m["statistics"]] == ids
    tags = {k: v["snapshot-id"] for k, v in m["refs"].items() if k.startswith("tag")}
    assert tags == {f"tag{i}": i for i in kept if i % 10 == 1}
    assert m["refs"]["main"]["snapshot-id"] == n and m["refs"]["ff"]["snapshot-id"] == n
    # main's log entry for snapshot 20,000 went, and with it all before it.
    assert [e["snapshot-id"] for e in m["snapshot-log"]] == [n]

    names = [ref["name"] for ref in assert_ok_json(floe.get(t.refs_url))["refs"]]
    assert names == sorted(names) and len(names) == len(m["refs"])

    trimmed = assert_ok_json(floe.get(t.url, params={"snapshots": "refs"}))["metadata"]
    assert sorted(s["snapshot-id"] for s in trimmed["snapshots"]) == \
        sorted(set(tags.values()) | {n})


def test_transaction_of_60000_changes_finds_a_duplicate_quickly(floe):
    """Each table may appear once in a transaction; the check compared every
    change with every earlier one, level by level (minutes of CPU for this
    body: one table name in 60,000 namespaces of 16 levels)."""
    deep = ["a"] * 15
    changes = [{"identifier": {"namespace": deep + [str(i)], "name": "t"}, "updates": []}
               for i in range(60000)]
    changes.append({"identifier": {"namespace": deep + ["0"], "name": "t"}, "updates": []})
    r, took = timed(lambda: post_compact(floe, "/v1/transactions/commit",
                                         {"table-changes": changes}))
    assert_error(r, 400, "BadRequestException")
    assert "twice" in r.json()["error"]["message"]
    assert took < GENEROUS_S


def test_commit_of_40000_schemas_and_specs_on_a_wide_table(floe, ns):
    """Each add-schema / add-spec looks for an identical one by content, not
    by comparing with every schema so far, and add-spec binds to the current
    schema's field index built once per commit, not once per spec (minutes
    of CPU for this body on a 20,000-column table)."""
    n, width = 20000, 20000
    wide = {"type": "struct", "fields": [
        {"id": i, "name": "id" if i == 1 else f"w{i}", "required": i == 1,
         "type": "long"} for i in range(1, width + 1)]}
    t = TableHandle(floe, ns, "evolving")
    assert_ok_json(post_compact(floe, f"{t.ns_url}/tables", {"name": "evolving", "schema": wide}))
    updates = []
    for i in range(n):
        updates.append({"action": "add-schema", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": width + 1 + i, "name": f"c{i}", "required": False, "type": "int"}]}})
        updates.append({"action": "add-spec", "spec": {"fields": [
            {"source-id": 1, "name": f"b{i}", "transform": "bucket[4]"}]}})
    updates.append({"action": "set-current-schema", "schema-id": -1})
    updates.append({"action": "set-default-spec", "spec-id": -1})
    r, took = timed(lambda: post_compact(floe, t.url, {"requirements": [], "updates": updates}))
    m = assert_ok_json(r)["metadata"]
    assert took < GENEROUS_S
    assert len(m["schemas"]) == n + 1 and m["current-schema-id"] == n
    assert len(m["partition-specs"]) == n + 1 and m["default-spec-id"] == n
    assert m["last-column-id"] == width + n
