"""The Iceberg view API over HTTP against the real daemon and PostgreSQL:
create, load, list, exists, replace (the view commit), rename and drop, the
names views share with tables, and the errors in Iceberg's words."""

from __future__ import annotations

import threading

import pytest

from conftest import assert_error, assert_ok_json

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "name", "type": "string", "required": False}]}


def version(vid=1, sql="SELECT id, name FROM db.t", dialect="spark", schema_id=0, ns=("v",)):
    return {"version-id": vid, "timestamp-ms": 1700000000000, "schema-id": schema_id,
            "summary": {"engine-name": "spark", "engine-version": "3.5"},
            "default-namespace": list(ns),
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}]}


def create_view(f, ns, name, **extra):
    body = {"name": name, "schema": SCHEMA, "view-version": version(ns=ns)}
    body.update(extra)
    return f.post(f"/v1/namespaces/{'%1F'.join(ns)}/views", json=body)


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return uniq


def test_create_load_list_exists_drop(floe, ns):
    r = create_view(floe, [ns], "v1", properties={"comment": "first"})
    body = assert_ok_json(r)
    m = body["metadata"]
    assert body["metadata-location"].endswith(".metadata.json")
    assert m["format-version"] == 1 and m["current-version-id"] == 1
    assert m["properties"]["comment"] == "first"
    assert m["versions"][0]["representations"][0]["sql"] == "SELECT id, name FROM db.t"
    assert len(m["version-log"]) == 1

    loaded = assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views/v1"))
    assert loaded["metadata"] == m
    assert loaded["metadata-location"] == body["metadata-location"]

    assert floe.head(f"/v1/namespaces/{ns}/views/v1").status_code == 204
    assert floe.head(f"/v1/namespaces/{ns}/views/nope").status_code == 404

    listed = assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views"))
    assert listed["identifiers"] == [{"namespace": [ns], "name": "v1"}]
    # A view is no table, and no table is a view.
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns}/tables"))["identifiers"] == []
    assert_error(floe.get(f"/v1/namespaces/{ns}/tables/v1"), 404, "NoSuchTableException")

    assert floe.delete(f"/v1/namespaces/{ns}/views/v1").status_code == 204
    r = floe.get(f"/v1/namespaces/{ns}/views/v1")
    assert_error(r, 404, "NoSuchViewException")
    assert r.json()["error"]["message"] == f"View does not exist: {ns}.v1"
    assert_error(floe.delete(f"/v1/namespaces/{ns}/views/v1"), 404, "NoSuchViewException")


def test_names_are_shared_with_tables(floe, ns):
    assert_ok_json(floe.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA}))
    r = create_view(floe, [ns], "t")
    assert_error(r, 409, "AlreadyExistsException")
    assert r.json()["error"]["message"] == f"Table with same name already exists: {ns}.t"
    assert_ok_json(create_view(floe, [ns], "v"))
    r = create_view(floe, [ns], "v")
    assert_error(r, 409, "AlreadyExistsException")
    assert r.json()["error"]["message"] == f"View already exists: {ns}.v"
    r = floe.post(f"/v1/namespaces/{ns}/tables", json={"name": "v", "schema": SCHEMA})
    assert_error(r, 409, "AlreadyExistsException")
    assert r.json()["error"]["message"] == f"View with same name already exists: {ns}.v"
    # A namespace holding a view is not empty.
    assert floe.delete(f"/v1/namespaces/{ns}/tables/t").status_code == 204
    assert_error(floe.delete(f"/v1/namespaces/{ns}"), 409, "NamespaceNotEmptyException")
    assert floe.delete(f"/v1/namespaces/{ns}/views/v").status_code == 204
    assert floe.delete(f"/v1/namespaces/{ns}").status_code == 204


def test_create_in_a_missing_namespace(floe, uniq):
    r = create_view(floe, [uniq + "_missing"], "v")
    assert_error(r, 404, "NoSuchNamespaceException")


def test_replace_adds_a_version_and_keeps_history(floe, ns):
    created = assert_ok_json(create_view(floe, [ns], "v"))
    uuid = created["metadata"]["view-uuid"]
    r = floe.post(f"/v1/namespaces/{ns}/views/v", json={
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [
            {"action": "add-view-version",
             "view-version": version(vid=2, sql="SELECT id FROM db.t")},
            {"action": "set-current-view-version", "view-version-id": -1},
            {"action": "set-properties", "updates": {"owner": "ana"}}]})
    body = assert_ok_json(r)
    m = body["metadata"]
    assert m["current-version-id"] == 2
    assert [v["version-id"] for v in m["versions"]] == [1, 2]
    assert m["properties"]["owner"] == "ana"
    assert body["metadata-location"] != created["metadata-location"]
    assert "/00001-" in body["metadata-location"]
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views/v"))["metadata"] == m

    # A failed requirement changes nothing.
    r = floe.post(f"/v1/namespaces/{ns}/views/v", json={
        "requirements": [{"type": "assert-view-uuid",
                          "uuid": "00000000-0000-0000-0000-000000000000"}],
        "updates": [{"action": "set-properties", "updates": {"x": "y"}}]})
    assert_error(r, 409, "CommitFailedException")
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views/v"))["metadata"] == m
    # A table action is no view action.
    r = floe.post(f"/v1/namespaces/{ns}/views/v", json={
        "updates": [{"action": "add-snapshot", "snapshot": {}}]})
    # (refused as Iceberg's own servers refuse a view rule)
    assert_error(r, 400, "IllegalArgumentException")
    assert_error(floe.post(f"/v1/namespaces/{ns}/views/nope", json={"updates": []}),
                 404, "NoSuchViewException")


def test_concurrent_replaces_all_land(floe, ns):
    assert_ok_json(create_view(floe, [ns], "v"))
    errors = []

    def writer(i):
        r = floe.post(f"/v1/namespaces/{ns}/views/v", json={
            "updates": [{"action": "set-properties", "updates": {f"k{i}": str(i)}}]})
        if r.status_code != 200:
            errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    props = assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views/v"))["metadata"]["properties"]
    assert {f"k{i}" for i in range(8)} <= set(props)


def test_rename_across_namespaces(floe, ns):
    floe.create_namespace([ns + "_b"])
    assert_ok_json(create_view(floe, [ns], "v"))
    r = floe.post("/v1/views/rename", json={
        "source": {"namespace": [ns], "name": "v"},
        "destination": {"namespace": [ns + "_b"], "name": "w"}})
    assert r.status_code == 204, r.text
    assert_error(floe.get(f"/v1/namespaces/{ns}/views/v"), 404, "NoSuchViewException")
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns}_b/views/w"))["metadata"]
    # Onto a table's name: refused, nothing moves.
    assert_ok_json(floe.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA}))
    r = floe.post("/v1/views/rename", json={
        "source": {"namespace": [ns + "_b"], "name": "w"},
        "destination": {"namespace": [ns], "name": "t"}})
    assert_error(r, 409, "AlreadyExistsException")
    r = floe.post("/v1/views/rename", json={
        "source": {"namespace": [ns], "name": "nope"},
        "destination": {"namespace": [ns], "name": "x"}})
    assert_error(r, 404, "NoSuchViewException")


def test_register_a_view_from_its_metadata_file(floe, ns):
    created = assert_ok_json(create_view(floe, [ns], "v"))
    loc = created["metadata-location"]
    assert floe.delete(f"/v1/namespaces/{ns}/views/v").status_code == 204
    r = floe.post(f"/v1/namespaces/{ns}/register-view",
                  json={"name": "again", "metadata-location": loc})
    body = assert_ok_json(r)
    assert body["metadata-location"] == loc
    assert body["metadata"] == created["metadata"]
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views/again"))["metadata"] == body["metadata"]
    # Taken names, files outside the warehouse and table metadata are refused.
    r = floe.post(f"/v1/namespaces/{ns}/register-view",
                  json={"name": "again", "metadata-location": loc})
    assert_error(r, 409, "AlreadyExistsException")
    r = floe.post(f"/v1/namespaces/{ns}/register-view",
                  json={"name": "elsewhere", "metadata-location": "file:///etc/passwd"})
    assert_error(r, 400, "BadRequestException")
    t = assert_ok_json(floe.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA}))
    r = floe.post(f"/v1/namespaces/{ns}/register-view",
                  json={"name": "not_a_view", "metadata-location": t["metadata-location"]})
    assert_error(r, 400, "BadRequestException")
    assert floe.head(f"/v1/namespaces/{ns}/views/not_a_view").status_code == 404


def test_pyiceberg_view_api(floe, ns):
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    cat = load_catalog("floe", **{"type": "rest", "uri": floe.url})
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    vv = ViewVersion(version_id=1, schema_id=0, timestamp_ms=1700000000000,
                     summary={"engine-name": "pyiceberg"}, default_namespace=[ns],
                     representations=[SQLViewRepresentation(
                         type="sql", sql="SELECT id, name FROM t", dialect="duckdb")])
    view = cat.create_view((ns, "py_view"), schema, vv, properties={"k": "v"})
    assert view.metadata.current_version_id == 1
    assert cat.view_exists((ns, "py_view"))
    assert not cat.view_exists((ns, "nope"))
    assert (ns, "py_view") in cat.list_views(ns)
    loaded = cat.load_view((ns, "py_view"))
    assert loaded.metadata.properties["k"] == "v"
    assert loaded.metadata.versions[0].representations[0].root.sql == "SELECT id, name FROM t"
    with pytest.raises(ViewAlreadyExistsError):
        cat.create_view((ns, "py_view"), schema, vv)
    cat.drop_view((ns, "py_view"))
    with pytest.raises(NoSuchViewError):
        cat.load_view((ns, "py_view"))


def test_privileges_on_views(postgres, uniq):
    """A view takes the privileges of a table of its name: a reader loads,
    lists and tests it and changes nothing; a listing shows only the views
    the caller may read."""
    from conftest import _start_floe_on_fresh_db, _stop_and_check
    from test_authorization import As, forbidden, principal

    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe"})
    try:
        f.authenticate()
        ns, other = uniq, uniq + "_other"
        f.create_namespace([ns])
        f.create_namespace([other])
        assert_ok_json(create_view(f, [ns], "v"))
        assert_ok_json(create_view(f, [other], "hidden"))
        tok = principal(f, "view_reader", [("NAMESPACE_READ", [ns]), ("TABLE_READ", [ns])])
        with As(f, tok):
            assert assert_ok_json(f.get(f"/v1/namespaces/{ns}/views/v"))["metadata"]
            assert f.head(f"/v1/namespaces/{ns}/views/v").status_code == 204
            listed = assert_ok_json(f.get(f"/v1/namespaces/{ns}/views"))["identifiers"]
            assert [i["name"] for i in listed] == ["v"]
            forbidden(create_view(f, [ns], "w"),
                      f"Principal view_reader lacks TABLE_CREATE on namespace {ns}")
            forbidden(f.post(f"/v1/namespaces/{ns}/views/v", json={
                "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
                f"Principal view_reader lacks TABLE_WRITE on table {ns}.v")
            forbidden(f.delete(f"/v1/namespaces/{ns}/views/v"),
                      f"Principal view_reader lacks TABLE_DROP on table {ns}.v")
            forbidden(f.get(f"/v1/namespaces/{other}/views/hidden"),
                      f"Principal view_reader lacks TABLE_READ on table {other}.hidden")
        # Nothing changed.
        m = assert_ok_json(f.get(f"/v1/namespaces/{ns}/views/v"))["metadata"]
        assert "k" not in m.get("properties", {})
        assert [e["event"] for e in assert_ok_json(f.get(
            "/v1/audit-log", params={"namespace": ns}))["events"]
            if e["event"].startswith("view.")] == []
        # The drop a writer makes is an audit event naming its principal.
        assert f.delete(f"/v1/namespaces/{ns}/views/v").status_code == 204
        ev = [e for e in assert_ok_json(f.get("/v1/audit-log", params={"namespace": ns}))["events"]
              if e["event"] == "view.dropped"]
        assert len(ev) == 1 and ev[0]["principal"] != "anonymous"
    finally:
        _stop_and_check(f)


def test_list_views_in_pages(floe, ns):
    for name in ("a", "b", "c"):
        assert_ok_json(create_view(floe, [ns], name))
    first = assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views",
                                    params={"pageToken": "", "pageSize": 2}))
    assert [i["name"] for i in first["identifiers"]] == ["a", "b"]
    assert first["next-page-token"]
    rest = assert_ok_json(floe.get(f"/v1/namespaces/{ns}/views",
                                   params={"pageToken": first["next-page-token"], "pageSize": 2}))
    assert [i["name"] for i in rest["identifiers"]] == ["c"]
    assert rest["next-page-token"] is None
    assert_error(floe.get(f"/v1/namespaces/{ns}_missing/views"), 404, "NoSuchNamespaceException")
