"""Named warehouses (--warehouses=FILE): the file checked at start-up (its
s3 buckets reached with each warehouse's own endpoint and profile, on
moto), /v1/config?warehouse=NAME answering the warehouse's prefix, and the
{prefix} of every /v1/{prefix}/ route naming a warehouse: the default
one's name is the default catalog, a name of no warehouse is 404
NoSuchWarehouseException, and a further warehouse, whose catalog is not
served yet, is refused rather than answered from the default's tree."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, RESTError

from conftest import (
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    free_port,
    run_floe,
    wait_until,
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


def test_a_further_warehouse_is_not_served_from_the_default_catalog(two_warehouses):
    f = two_warehouses
    f.create_namespace(["seen_by_default"])
    for name in ("files", "lake"):
        for method, path, body in (
                ("GET", f"/v1/{name}/namespaces", None),
                ("POST", f"/v1/{name}/namespaces", {"namespace": [f"made_in_{name}"]}),
                ("GET", f"/v1/{name}/namespaces/seen_by_default", None),
                ("GET", f"/v1/{name}/namespaces/seen_by_default/tables", None)):
            r = f.request(method, path, json=body)
            assert_error(r, 406, "UnsupportedOperationException")
            assert r.json()["error"]["message"] == (
                f"Warehouse {name} has no catalog of its own yet: only the default "
                "warehouse's catalog is served")
        assert [f"made_in_{name}"] not in f.list_namespaces()


def _requested_paths(f):
    return re.findall(r"\b(?:GET|HEAD|POST|DELETE|PUT) (/\S*)", f.log())


def test_pyiceberg_chooses_a_warehouse_by_name(two_warehouses):
    f = two_warehouses
    # The default warehouse by name: no prefix, the default catalog.
    cat = RestCatalog("floe", uri=f.url, warehouse="warehouse")
    cat.create_namespace("py_default")
    assert ("py_default",) in cat.list_namespaces()

    # A further one: PyIceberg takes its prefix, and is refused there.
    # floe logs a request once its answer is sent, so the line may come a
    # moment after the client has the answer: count from the default
    # catalog's last request on.
    wait_until(lambda: "/v1/namespaces" in _requested_paths(f)[-1:], 10)
    before = len(_requested_paths(f))
    lake = RestCatalog("floe", uri=f.url, warehouse="lake")
    with pytest.raises(RESTError, match="Warehouse lake has no catalog of its own yet"):
        lake.list_namespaces()
    def lake_paths():
        return [p for p in _requested_paths(f)[before:] if "namespaces" in p]
    wait_until(lambda: lake_paths(), 10)
    paths = lake_paths()
    assert paths and all(p.startswith("/v1/lake/namespaces") for p in paths), paths

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
