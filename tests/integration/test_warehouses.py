"""Named warehouses (--warehouses=FILE): the file checked at start-up (its
s3 buckets reached with each warehouse's own endpoint and profile, on
moto), /v1/config?warehouse=NAME answering the warehouse's prefix, and the
{prefix} of every /v1/{prefix}/ route naming a warehouse: the default
one's name is the default catalog, a name of no warehouse is 404
NoSuchWarehouseException, and a further warehouse has a catalog of its
own (namespaces, tables, hooks, the audit log, purges), its tables inside
its own location."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, RESTError

from conftest import (
    TableHandle,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    client_token,
    free_port,
    run_floe,
    wait_until,
    TIME_SCALE,
)
from s3_servers import (KEY_ID, REGION, SECRET, S3Server, make_bucket,
                        moto_checking_signatures)


@pytest.fixture(scope="module")
def moto():
    server = S3Server()
    yield server
    server.stop()


def credentials_file(tmp_path, profile="lake"):
    path = tmp_path / "credentials"
    path.write_text(f"[default]\naws_access_key_id = not-this-one\naws_secret_access_key = x\n\n"
                    f"[{profile}]\naws_access_key_id = {KEY_ID}\n"
                    f"aws_secret_access_key = {SECRET}\n")
    return path


def warehouses_file(tmp_path, entries) -> str:
    path = tmp_path / f"warehouses-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps({"warehouses": entries}))
    return str(path)


def s3_entry(name, moto, bucket, profile="lake", **extra):
    return {"name": name, "location": f"s3://{bucket}/{name}",
            "s3": {"endpoint": moto.url, "region": REGION, "path-style": True,
                   "profile": profile, **extra}}


@pytest.fixture(scope="module")
def two_warehouses(postgres, moto, tmp_path_factory):
    """A floe whose default warehouse is file:// ("warehouse") with two
    more: "files" on file:// and "lake" on moto's S3."""
    tmp = tmp_path_factory.mktemp("warehouses")
    bucket = make_bucket(moto)
    entries = [{"name": "files", "location": f"file://{tmp}/files"},
               s3_entry("lake", moto, bucket)]
    f = _start_floe_on_fresh_db(postgres, env={
        "FLOE_WAREHOUSES": warehouses_file(tmp, entries),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials_file(tmp)),
    })
    f.bucket = bucket
    f.files_location = f"file://{tmp}/files"
    yield f
    _stop_and_check(f)


def test_config_answers_each_warehouse_its_prefix(two_warehouses):
    f = two_warehouses
    plain = assert_ok_json(f.get("/v1/config"))
    assert plain["overrides"] == {}
    # The default warehouse by its name keeps the answer it always had:
    # no prefix, so its clients' paths do not change.
    assert assert_ok_json(f.get("/v1/config", params={"warehouse": "warehouse"}))["overrides"] == {}
    for name in ("files", "lake"):
        got = assert_ok_json(f.get("/v1/config", params={"warehouse": name}))
        assert got["overrides"] == {"prefix": name}
        assert got["endpoints"] == plain["endpoints"]
        assert got["defaults"] == plain["defaults"]
    # A warehouse's URL, in another spelling, names it too.
    got = assert_ok_json(f.get("/v1/config",
                               params={"warehouse": f.files_location.replace("file://", "file:") + "/"}))
    assert got["overrides"] == {"prefix": "files"}
    got = assert_ok_json(f.get("/v1/config", params={"warehouse": f"s3://{f.bucket}/lake"}))
    assert got["overrides"] == {"prefix": "lake"}


def test_an_unknown_warehouse_is_404(two_warehouses):
    f = two_warehouses
    for name in ("nope", "Files", "lake2", f"s3://{f.bucket}/lake/below"):
        r = f.get("/v1/config", params={"warehouse": name})
        assert_error(r, 404, "NoSuchWarehouseException")
        assert r.json()["error"]["message"] == f"Warehouse does not exist: {name}"


def test_a_prefix_naming_no_warehouse_is_404(two_warehouses):
    f = two_warehouses
    f.create_namespace(["default_only"])
    for method, path, body in (
            ("GET", "/v1/nope/namespaces", None),
            ("POST", "/v1/nope/namespaces", {"namespace": ["x"]}),
            ("GET", "/v1/nope/namespaces/default_only", None),
            ("GET", "/v1/nope/namespaces/default_only/tables", None),
            ("GET", "/v1/nope/namespaces/default_only/tables/t", None),
            ("POST", "/v1/nope/tables/rename", {"source": {"namespace": ["a"], "name": "b"},
                                                "destination": {"namespace": ["a"], "name": "c"}}),
            ("POST", "/v1/nope/transactions/commit", {"table-changes": []}),
            ("GET", "/v1/nope/namespaces/default_only/views", None),
            ("GET", "/v1/nope/audit-log", None),
            ("GET", "/v1/nope/audit-hooks", None),
            ("GET", "/v1/nope/purges", None)):
        r = f.request(method, path, json=body)
        assert_error(r, 404, "NoSuchWarehouseException")
        assert r.json()["error"]["message"] == "Warehouse does not exist: nope"
    # Nothing was made.
    assert ["x"] not in f.list_namespaces()
    # A HEAD has no body but the status.
    assert f.head("/v1/nope/namespaces/default_only").status_code == 404
    # A percent-encoded prefix is decoded before it is looked up.
    assert_ok_json(f.get("/v1/ware%68ouse/namespaces"))
    r = f.get("/v1/no%2Fpe/namespaces")
    assert_error(r, 404, "NoSuchWarehouseException")
    assert r.json()["error"]["message"] == "Warehouse does not exist: no/pe"


def test_the_default_warehouse_is_served_with_and_without_its_prefix(two_warehouses):
    f = two_warehouses
    f.create_namespace(["both_ways"], {"k": "v"})
    plain = assert_ok_json(f.get("/v1/namespaces/both_ways"))
    prefixed = assert_ok_json(f.get("/v1/warehouse/namespaces/both_ways"))
    assert plain == prefixed
    assert prefixed["properties"]["location"].startswith("file://")


def test_each_warehouse_has_a_catalog_of_its_own(two_warehouses):
    f = two_warehouses
    f.create_namespace(["shared"], {"owner": "default"})
    f.create_namespace(["shared"], {"owner": "files"}, base="/v1/files")
    f.create_namespace(["only_files"], base="/v1/files")
    f.create_namespace(["shared", "child"], base="/v1/files")
    # The same levels are two namespaces, each with its own properties.
    assert assert_ok_json(f.get("/v1/namespaces/shared"))["properties"]["owner"] == "default"
    files_ns = assert_ok_json(f.get("/v1/files/namespaces/shared"))
    assert files_ns["properties"]["owner"] == "files"
    assert files_ns["properties"]["location"].startswith(f.files_location + "/")
    # Listings keep to their warehouse.
    assert ["only_files"] not in f.list_namespaces()
    assert ["only_files"] in f.list_namespaces(base="/v1/files")
    assert f.list_namespaces(["shared"]) == []
    assert f.list_namespaces(["shared"], base="/v1/files") == [["shared", "child"]]
    assert_error(f.get("/v1/namespaces/only_files"), 404, "NoSuchNamespaceException")
    assert_error(f.get("/v1/lake/namespaces/only_files"), 404, "NoSuchNamespaceException")
    # One name, two tables, each under its warehouse's location.
    mine = TableHandle(f, ["shared"], "orders")
    theirs = TableHandle(f, ["shared"], "orders", base="/v1/files")
    mine.create()
    theirs.create()
    assert not mine.load()["metadata-location"].startswith(f.files_location)
    assert theirs.load()["metadata-location"].startswith(f.files_location + "/shared/")
    assert mine.load()["metadata"]["table-uuid"] != theirs.load()["metadata"]["table-uuid"]
    # A drop in one leaves the other.
    assert f.delete(theirs.url).status_code == 204
    assert_error(f.get(theirs.url), 404, "NoSuchTableException")
    assert mine.load()["metadata"]["table-uuid"]
    # A rename stays inside its warehouse.
    TableHandle(f, ["only_files"], "t", base="/v1/files").create()
    r = f.post("/v1/files/tables/rename", json={
        "source": {"namespace": ["only_files"], "name": "t"},
        "destination": {"namespace": ["shared"], "name": "t2"}})
    assert r.status_code == 204, r.text
    assert_ok_json(f.get("/v1/files/namespaces/shared/tables/t2"))
    assert_error(f.get("/v1/namespaces/shared/tables/t2"), 404, "NoSuchTableException")
    r = f.post("/v1/files/tables/rename", json={
        "source": {"namespace": ["shared"], "name": "t2"},
        "destination": {"namespace": ["no_such_here"], "name": "t3"}})
    assert_error(r, 404, "NoSuchNamespaceException")
    # A namespace that holds something in one warehouse does not keep the
    # other's from being dropped.
    f.create_namespace(["empty_here"])
    f.create_namespace(["empty_here"], base="/v1/files")
    TableHandle(f, ["empty_here"], "x", base="/v1/files").create()
    assert f.delete("/v1/namespaces/empty_here").status_code == 204
    assert_error(f.delete("/v1/files/namespaces/empty_here"), 409, "NamespaceNotEmptyException")


def test_a_table_location_stays_inside_its_warehouse(two_warehouses, tmp_path):
    f = two_warehouses
    f.create_namespace(["placed"], base="/v1/files")
    f.create_namespace(["placed"])
    default_ns = assert_ok_json(f.get("/v1/namespaces/placed"))["properties"]["location"]
    # A location of the default warehouse is outside "files".
    r = f.post("/v1/files/namespaces/placed/tables", json={
        "name": "stray", "schema": TableHandle.SCHEMA, "location": default_ns + "/stray"})
    assert_error(r, 400, "BadRequestException")
    # And the other way round.
    r = f.post("/v1/namespaces/placed/tables", json={
        "name": "stray", "schema": TableHandle.SCHEMA,
        "location": f.files_location + "/placed/stray"})
    assert_error(r, 400, "BadRequestException")
    # Inside its own warehouse it is taken.
    body = assert_ok_json(f.post("/v1/files/namespaces/placed/tables", json={
        "name": "placed_here", "schema": TableHandle.SCHEMA,
        "location": f.files_location + "/elsewhere/placed_here"}))
    assert body["metadata"]["location"] == f.files_location + "/elsewhere/placed_here"


def test_hooks_audit_log_and_purges_are_each_warehouses(two_warehouses):
    f = two_warehouses
    f.create_namespace(["audited"], base="/v1/files")
    hook = assert_ok_json(f.post("/v1/files/audit-hooks", json={
        "name": "files-only", "url": "http://127.0.0.1:9/never"}), 201)
    hook_id = hook["id"]
    assert hook_id in [h["id"] for h in assert_ok_json(f.get("/v1/files/audit-hooks"))["hooks"]]
    assert hook_id not in [h["id"] for h in assert_ok_json(f.get("/v1/audit-hooks"))["hooks"]]
    assert_error(f.get(f"/v1/audit-hooks/{hook_id}"), 404)
    assert_error(f.delete(f"/v1/audit-hooks/{hook_id}"), 404)
    assert assert_ok_json(f.get(f"/v1/files/audit-hooks/{hook_id}"))["id"] == hook_id

    t = TableHandle(f, ["audited"], "dropped_one", base="/v1/files")
    t.create()
    where = Path(t.load()["metadata"]["location"][len("file://"):])
    assert where.is_dir() and str(where).startswith(f.files_location[len("file://"):])
    assert f.delete(t.url, params={"purgeRequested": "true"}).status_code == 204
    # The janitor purges it below its own warehouse's directory.
    assert wait_until(lambda: not where.exists(), 30 * TIME_SCALE), "the files were purged"

    def events(base):
        return assert_ok_json(f.get(f"{base}/audit-log", params={"limit": 1000}))["events"]
    mine = wait_until(lambda: [e for e in events("/v1/files")
                               if e["event"] == "hook.registered"], 10)
    assert mine and all(e["details"].get("warehouse") == "files" for e in events("/v1/files"))
    assert not [e for e in events("/v1") if e["details"].get("warehouse") == "files"]
    # The purge of the dropped table is listed under its warehouse only
    # (or already done, when the janitor came first).
    listed = assert_ok_json(f.get("/v1/purges"))["purges"]
    assert all(not p["location"].startswith(f.files_location) for p in listed)
    assert f.delete(f"/v1/files/audit-hooks/{hook_id}").status_code == 204


def _requested_paths(f):
    return re.findall(r"\b(?:GET|HEAD|POST|DELETE|PUT) (/\S*)", f.log())


def test_pyiceberg_chooses_a_warehouse_by_name(two_warehouses):
    f = two_warehouses
    # The default warehouse by name: no prefix, the default catalog.
    cat = RestCatalog("floe", uri=f.url, warehouse="warehouse")
    earlier = _requested_paths(f).count("/v1/namespaces")
    cat.create_namespace("py_default")
    assert ("py_default",) in cat.list_namespaces()

    # A further one: PyIceberg takes its prefix and works in its catalog.
    # floe logs a request once its answer is sent, so the line may come a
    # moment after the client has the answer: count from the default
    # catalog's last request (the second of its two) on.
    assert wait_until(lambda: _requested_paths(f).count("/v1/namespaces") >= earlier + 2, 10)
    before = len(_requested_paths(f))
    files = RestCatalog("floe", uri=f.url, warehouse="files")
    assert ("py_default",) not in files.list_namespaces()
    files.create_namespace("py_files")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = files.create_table("py_files.people", schema=schema)
    table.append(pa.table({"id": [1, 2], "name": ["ada", "grace"]}, schema=schema))
    back = files.load_table("py_files.people").scan().to_arrow()
    assert sorted(back.column("name").to_pylist()) == ["ada", "grace"]
    assert table.metadata_location.startswith(f.files_location + "/py_files/people/")
    data = [p for p in Path(f.files_location[len("file://"):]).rglob("*.parquet")]
    assert data, "the data files are in the warehouse's own directory"

    def files_paths():
        return [p for p in _requested_paths(f)[before:] if "namespaces" in p]
    wait_until(lambda: "/v1/files/namespaces/py_files/tables/people" in files_paths(), 10)
    paths = files_paths()
    assert paths and all(p.startswith("/v1/files/namespaces") for p in paths), paths
    # The default catalog has none of it.
    assert ("py_files",) not in cat.list_namespaces()
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("py_files")

    # An unknown name stops the client at its first request.
    with pytest.raises((RESTError, NoSuchNamespaceError), match="Warehouse does not exist: nope"):
        RestCatalog("floe", uri=f.url, warehouse="nope")


def test_help_documents_the_option():
    r = run_floe(["--help"])
    assert r.returncode == 0
    assert "--warehouses" in r.stdout and "FLOE_WAREHOUSES" in r.stdout


# --- start-up: every bad configuration stops floe with a clear message ---


def _start(postgres, env):
    return run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(), **env})


@pytest.mark.parametrize("entries, says", [
    ([{"name": "a", "location": "file:///tmp/wh-a"}, {"name": "a", "location": "file:///tmp/wh-b"}],
     'warehouse "a" is named twice'),
    ([{"name": "warehouse", "location": "file:///tmp/wh-a"}],
     "the name is the default warehouse's"),
    ([{"name": "has space", "location": "file:///tmp/wh-a"}], 'invalid name "has space"'),
    ([{"name": "tables", "location": "file:///tmp/wh-a"}], 'invalid name "tables"'),
    ([{"name": "a", "location": "file:///tmp/wh-a"}, {"name": "b", "location": "file:///tmp/wh-a/b"}],
     "overlaps warehouse \"a\"'s file:///tmp/wh-a"),
    ([{"name": "a", "location": "gs://bucket/x"}], "only file:// and s3:// warehouses"),
    ([{"name": "a", "location": "s3://bucket-a/x"}], 'needs "s3" options'),
    ([{"name": "a", "location": "s3://bucket-a/x", "s3": {"profile": "p",
                                                          "secret-access-key": "s"}}],
     'unknown s3 option "secret-access-key"'),
])
def test_a_bad_warehouses_file_stops_the_start(postgres, tmp_path, entries, says):
    r = _start(postgres, {"FLOE_WAREHOUSES": warehouses_file(tmp_path, entries)})
    assert r.returncode == 2, r.stderr
    assert "--warehouses (FLOE_WAREHOUSES): the warehouses file" in r.stderr
    assert says in r.stderr, r.stderr


def test_a_location_inside_the_default_warehouse_stops_the_start(postgres, tmp_path):
    data = tmp_path / "data"
    entries = [{"name": "inner", "location": f"file://{data}/warehouse/inner"}]
    r = _start(postgres, {"FLOE_DATA_DIR": str(data),
                          "FLOE_WAREHOUSES": warehouses_file(tmp_path, entries)})
    assert r.returncode == 2, r.stderr
    assert "overlaps the default warehouse's" in r.stderr


def test_a_missing_or_broken_file_stops_the_start(postgres, tmp_path):
    r = _start(postgres, {"FLOE_WAREHOUSES": str(tmp_path / "none.json")})
    assert r.returncode == 2, r.stderr
    assert "cannot open the warehouses file" in r.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"warehouses": [')
    r = _start(postgres, {"FLOE_WAREHOUSES": str(broken)})
    assert r.returncode == 2, r.stderr
    assert "not JSON" in r.stderr


def test_an_s3_warehouses_bucket_is_checked_with_its_own_storage(postgres, moto, tmp_path):
    creds = credentials_file(tmp_path)
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(creds)}
    # No such bucket on its endpoint.
    r = _start(postgres, {**env, "FLOE_WAREHOUSES": warehouses_file(
        tmp_path, [s3_entry("lake", moto, "no-such-bucket-here")])})
    assert r.returncode == 2, r.stderr
    assert 'cannot use the warehouse "lake"' in r.stderr
    assert "bucket no-such-bucket-here does not exist" in r.stderr
    # A profile the credentials file does not have.
    bucket = make_bucket(moto)
    r = _start(postgres, {**env, "FLOE_WAREHOUSES": warehouses_file(
        tmp_path, [s3_entry("lake", moto, bucket, profile="missing")])})
    assert r.returncode == 2, r.stderr
    assert 'cannot use the warehouse "lake"' in r.stderr
    assert "missing" in r.stderr
    assert SECRET not in r.stderr
    # An endpoint nothing listens on: the storage cannot be reached.
    entry = s3_entry("lake", moto, bucket)
    entry["s3"]["endpoint"] = f"http://127.0.0.1:{free_port()}"
    r = _start(postgres, {**env, "FLOE_WAREHOUSES": warehouses_file(tmp_path, [entry])})
    assert r.returncode == 1, r.stderr
    assert 'cannot use the warehouse "lake"' in r.stderr


def test_the_s3_warehouses_profile_is_used_not_the_environments_keys(postgres, tmp_path):
    """With moto checking signatures, the start succeeds only when the
    warehouse's own profile signs its HeadBucket."""
    server = moto_checking_signatures("signed-lake")
    try:
        key, secret = server.key
        creds = tmp_path / "credentials"
        creds.write_text(f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
                         f"[lake]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
        whf = warehouses_file(tmp_path, [s3_entry("lake", server, "signed-lake")])
        good = _start_floe_on_fresh_db(postgres, env={
            "AWS_SHARED_CREDENTIALS_FILE": str(creds),
            "AWS_ACCESS_KEY_ID": "wrong-key", "AWS_SECRET_ACCESS_KEY": "wrong-secret",
            "FLOE_WAREHOUSES": whf})
        try:
            assert 'warehouse "lake": s3://signed-lake/lake' in good.log()
        finally:
            _stop_and_check(good)
        creds.write_text(f"[default]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n\n"
                         "[lake]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n")
        r = _start(postgres, {"AWS_SHARED_CREDENTIALS_FILE": str(creds),
                              "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                              "FLOE_WAREHOUSES": whf})
        assert r.returncode == 2, r.stderr
        assert 'cannot use the warehouse "lake"' in r.stderr
        assert "refused floe's credentials" in r.stderr
        assert secret not in r.stderr
    finally:
        server.stop()


M = "/management/v1"


@pytest.fixture(scope="module")
def authed_warehouses(postgres, tmp_path_factory):
    """floe with authentication on, its default warehouse and "files"."""
    tmp = tmp_path_factory.mktemp("authed-warehouses")
    f = _start_floe_on_fresh_db(postgres, env={
        "FLOE_AUTH": "floe",
        "FLOE_WAREHOUSES": warehouses_file(
            tmp, [{"name": "files", "location": f"file://{tmp}/files"}]),
    })
    f.authenticate()
    yield f
    _stop_and_check(f)


def test_grants_hold_in_their_warehouse_only(authed_warehouses):
    f = authed_warehouses
    for base in ("/v1", "/v1/files"):
        f.create_namespace(["db"], base=base)
        TableHandle(f, ["db"], "t", base=base).create()
    body = assert_ok_json(f.post(f"{M}/principals", json={"name": "reader", "kind": "client"}),
                          201)
    reader = client_token(f, body["credential"])
    assert_ok_json(f.post(f"{M}/roles", json={"name": "files_readers"}), 201)
    assert f.request("PUT", f"{M}/roles/files_readers/members/reader").status_code == 204
    grant = {"privilege": "TABLE_READ",
             "on": {"kind": "namespace", "namespace": ["db"], "warehouse": "files"}}
    assert assert_ok_json(f.post(f"{M}/roles/files_readers/grants", json=grant), 201) == {
        "role": "files_readers", **grant}
    catalog_grant = {"privilege": "NAMESPACE_CREATE",
                     "on": {"kind": "catalog", "warehouse": "files"}}
    assert_ok_json(f.post(f"{M}/roles/files_readers/grants", json=catalog_grant), 201)
    listed = assert_ok_json(f.get(f"{M}/roles/files_readers/grants"))["grants"]
    assert sorted((g["privilege"], g["on"].get("warehouse")) for g in listed) == [
        ("NAMESPACE_CREATE", "files"), ("TABLE_READ", "files")], listed

    def as_reader(method, path, **kw):
        return requests.request(method, f.url + path, timeout=30,
                                headers={"Authorization": f"Bearer {reader}"}, **kw)
    # Read in "files" first, so a decision kept for it is there to leak.
    assert_ok_json(as_reader("GET", "/v1/files/namespaces/db/tables/t"))
    assert_error(as_reader("GET", "/v1/namespaces/db/tables/t"), 403, "ForbiddenException")
    assert_error(as_reader("GET", "/v1/warehouse/namespaces/db/tables/t"), 403,
                 "ForbiddenException")
    assert [["db"]] == [n for n in assert_ok_json(
        as_reader("GET", "/v1/files/namespaces"))["namespaces"]]
    assert assert_ok_json(as_reader("GET", "/v1/namespaces"))["namespaces"] == []
    # A grant on one warehouse's catalog is not one on another's.
    assert as_reader("POST", "/v1/files/namespaces",
                     json={"namespace": ["made_by_reader"]}).status_code == 200
    assert_error(as_reader("POST", "/v1/namespaces", json={"namespace": ["made_by_reader"]}),
                 403, "ForbiddenException")
    # What the management API says the principal holds, per warehouse.
    p = assert_ok_json(f.get(f"{M}/principals/reader/privileges",
                             params={"namespace": "db", "table": "t", "warehouse": "files"}))
    assert p["privileges"] == ["TABLE_READ"] and p["object"]["warehouse"] == "files", p
    p = assert_ok_json(f.get(f"{M}/principals/reader/privileges",
                             params={"namespace": "db", "table": "t"}))
    assert p["privileges"] == [] and "warehouse" not in p["object"], p
    # A warehouse that does not exist is named so.
    r = f.post(f"{M}/roles/files_readers/grants",
               json={"privilege": "TABLE_READ", "on": {"kind": "catalog", "warehouse": "nope"}})
    assert_error(r, 404, "NoSuchWarehouseException")
    r = f.post(f"{M}/roles/files_readers/grants",
               json={"privilege": "TABLE_READ", "on": {"kind": "catalog", "warehouse": 7}})
    assert_error(r, 400, "BadRequestException")
    # Revoking names the warehouse as granting did (any grant lets its
    # holder read what it is on: both go).
    for g in (grant, catalog_grant):
        r = f.post(f"{M}/roles/files_readers/grants/revoke", json=g)
        assert r.status_code == 200, r.text
    assert assert_ok_json(f.get(f"{M}/roles/files_readers/grants"))["grants"] == []
    assert_error(as_reader("GET", "/v1/files/namespaces/db/tables/t"), 403, "ForbiddenException")
