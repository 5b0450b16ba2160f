"""An s3:// warehouse against real S3 servers on loopback (moto's server
mode, and versitygw on a directory): floe writes its metadata objects there with conditional PUTs, PyIceberg
writes and reads data with its own S3 credentials, register reads an
existing metadata object, a purge removes exactly the table's prefix, and
floe's start-up checks the bucket and the credentials. A small proxy in
front of the S3 server stands for it going down or answering 503, so a
commit's failure is seen from floe's side while the stored objects stay.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog

from s3_servers import (KEY_ID, REGION, SECRET, SERVERS, Proxy, keys, make_bucket,
                        moto_checking_signatures, s3_env)
from conftest import (
    Floe,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    free_port,
    run_floe,
    wait_until,
)

@pytest.fixture(scope="module", params=sorted(SERVERS))
def s3(request):
    """Each test runs against moto and against versitygw."""
    server = SERVERS[request.param]()
    yield server
    server.stop()


@pytest.fixture
def floe_s3(postgres, s3):
    bucket = make_bucket(s3)
    f = _start_floe_on_fresh_db(postgres, env=s3_env(s3.url, f"s3://{bucket}/warehouse"))
    f.bucket = bucket
    yield f
    _stop_and_check(f)


def catalog(f: Floe, endpoint: str, key: str = KEY_ID, secret: str = SECRET):
    return load_catalog("s3test", **{
        "type": "rest",
        "uri": f.url,
        "s3.endpoint": endpoint,
        "s3.access-key-id": key,
        "s3.secret-access-key": secret,
        "s3.region": REGION,
        "s3.path-style-access": "true",
    })


def load(f: Floe, ns: str, name: str) -> dict:
    return assert_ok_json(f.get(f"/v1/namespaces/{ns}/tables/{name}"))


def create_table(f: Floe, ns: str, name: str, **extra):
    body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}
    body.update(extra)
    return f.post(f"/v1/namespaces/{ns}/tables", json=body)


def test_pyiceberg_writes_and_reads_a_table_in_s3(floe_s3, s3):
    f = floe_s3
    cat = catalog(f, s3.url)
    cat.create_namespace("sales")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
    table = cat.create_table("sales.orders", schema=schema)
    # The default location is the namespace's below the warehouse prefix.
    assert table.location() == f"s3://{f.bucket}/warehouse/sales/orders"
    rows = pa.table({"id": [1, 2, 3], "city": ["Oslo", "Lima", "Pune"]}, schema=schema)
    table.append(rows)
    table.append(rows.slice(0, 1))

    again = catalog(f, s3.url).load_table("sales.orders")
    got = again.scan().to_arrow().sort_by("id").to_pydict()
    assert got == {"id": [1, 1, 2, 3], "city": ["Oslo", "Oslo", "Lima", "Pune"]}

    # Every metadata object floe wrote is in the bucket under the table's
    # prefix, the current one among them, and nothing outside it.
    answer = load(f, "sales", "orders")
    current = answer["metadata-location"]
    assert current.startswith(f"s3://{f.bucket}/warehouse/sales/orders/metadata/")
    stored = keys(s3, f.bucket)
    meta = sorted(k for k in stored if k.endswith(".metadata.json"))
    assert current.removeprefix(f"s3://{f.bucket}/") in meta
    assert len(meta) == 3  # create and two appends
    assert all(k.startswith("warehouse/sales/orders/") for k in stored)
    body = s3.client().get_object(Bucket=f.bucket,
                                  Key=current.removeprefix(f"s3://{f.bucket}/"))["Body"].read()
    assert json.loads(body)["location"] == f"s3://{f.bucket}/warehouse/sales/orders"
    assert json.loads(body)["current-snapshot-id"] == answer["metadata"]["current-snapshot-id"]


def test_register_reads_an_existing_metadata_object(floe_s3, s3):
    f = floe_s3
    f.create_namespace(["reg"])
    r = create_table(f, "reg", "source")
    assert r.status_code == 200, r.text
    meta = r.json()["metadata"]
    # A copy of the table under a new location, as another catalog left it.
    new_loc = f"s3://{f.bucket}/warehouse/reg/copied"
    meta["location"] = new_loc
    meta["table-uuid"] = str(uuid.uuid4())
    key = "warehouse/reg/copied/metadata/00000-copy.metadata.json"
    s3.client().put_object(Bucket=f.bucket, Key=key, Body=json.dumps(meta).encode())
    r = f.post("/v1/namespaces/reg/register",
               json={"name": "copied", "metadata-location": f"s3://{f.bucket}/{key}"})
    assert r.status_code == 200, r.text
    got = load(f, "reg", "copied")
    assert got["metadata-location"] == f"s3://{f.bucket}/{key}"
    assert got["metadata"]["table-uuid"] == meta["table-uuid"]

    # An object that is not there is a clear 400, not a crash.
    r = f.post("/v1/namespaces/reg/register",
               json={"name": "ghost",
                     "metadata-location": f"s3://{f.bucket}/warehouse/reg/ghost/m.json"})
    assert_error(r, 400, "BadRequestException")
    assert "no such object" in r.json()["error"]["message"]


def test_drop_with_purge_removes_exactly_the_tables_prefix(floe_s3, s3):
    f = floe_s3
    cli = s3.client()
    f.create_namespace(["p"])
    for name in ("t", "t2"):
        assert create_table(f, "p", name).status_code == 200
    # Data files an engine wrote under each table, a neighbour whose name
    # starts like the table's, and objects outside the warehouse prefix.
    for k in ("warehouse/p/t/data/a.parquet", "warehouse/p/t/data/b.parquet",
              "warehouse/p/t2/data/a.parquet", "warehouse/p/t-keep/x",
              "warehouse-other/p/t/data/a.parquet", "outside.txt"):
        cli.put_object(Bucket=f.bucket, Key=k, Body=b"x")
    before = keys(s3, f.bucket)
    doomed = {k for k in before if k.startswith("warehouse/p/t/")}
    assert len(doomed) == 3  # two data files and the metadata object

    r = f.delete("/v1/namespaces/p/tables/t", params={"purgeRequested": "true"})
    assert r.status_code == 204, r.text
    assert wait_until(lambda: not (keys(s3, f.bucket) & doomed), 20), keys(s3, f.bucket)
    assert keys(s3, f.bucket) == before - doomed
    assert wait_until(lambda: assert_ok_json(f.get("/v1/purges"))["purges"] == [], 20)


def test_many_objects_are_deleted_in_batches(floe_s3, s3):
    f = floe_s3
    cli = s3.client()
    f.create_namespace(["big"])
    assert create_table(f, "big", "t").status_code == 200
    for i in range(1001):  # two pages: 1,000 and 1
        cli.put_object(Bucket=f.bucket, Key=f"warehouse/big/t/data/{i:05d}.parquet", Body=b"")
    r = f.delete("/v1/namespaces/big/tables/t", params={"purgeRequested": "true"})
    assert r.status_code == 204, r.text
    assert wait_until(lambda: not keys(s3, f.bucket, "warehouse/big/t/"), 60)


def test_a_location_outside_the_warehouse_is_refused(floe_s3, s3):
    f = floe_s3
    other = make_bucket(s3)
    f.create_namespace(["out"])
    for loc in (f"s3://{f.bucket}/elsewhere/t", f"s3://{f.bucket}/warehouse",
                f"s3://{f.bucket}/warehouse-x/t", f"s3://{other}/warehouse/t",
                "file:///tmp/floe-outside", f"s3://{f.bucket}/warehouse/../t",
                "s3://Bad_Bucket/warehouse/t"):
        r = create_table(f, "out", "t", location=loc)
        assert r.status_code == 400, (loc, r.text)
        assert_error(r, 400, "BadRequestException")
    assert keys(s3, other) == set()
    assert not any(k.startswith("elsewhere") for k in keys(s3, f.bucket))
    r = create_table(f, "out", "inside", location=f"s3://{f.bucket}/warehouse/custom/inside")
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"].startswith(
        f"s3://{f.bucket}/warehouse/custom/inside/metadata/")


def test_a_bucket_that_does_not_exist_stops_the_start(postgres, s3):
    r = run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(),
                          **s3_env(s3.url, "s3://no-such-bucket-here/wh")})
    assert r.returncode == 2, r.stderr
    assert "bucket no-such-bucket-here does not exist" in r.stderr
    assert SECRET not in r.stderr


def test_an_unreachable_endpoint_stops_the_start(postgres):
    r = run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(),
                          **s3_env(f"http://127.0.0.1:{free_port()}", "s3://some-bucket/wh")})
    assert r.returncode == 1, r.stderr
    assert "object storage cannot be reached" in r.stderr


def test_bad_s3_options_are_refused(postgres, s3):
    base = s3_env(s3.url, "s3://some-bucket/wh")
    for extra, words in (({"FLOE_S3_PATH_STYLE": "yes"}, "--s3-path-style"),
                         ({"FLOE_S3_ENDPOINT": "ftp://x"}, "--s3-endpoint"),
                         ({"FLOE_S3_ENDPOINT": "http://h/path"}, "--s3-endpoint"),
                         ({"FLOE_S3_REGION": "US East"}, "--s3-region"),
                         ({"FLOE_WAREHOUSE": "s3://UPPER/wh"}, "valid S3 bucket"),
                         ({"FLOE_WAREHOUSE": "gs://b/wh"}, "file:// and s3://")):
        r = run_floe([], env={**base, **extra})
        assert r.returncode == 2, (extra, r.stderr)
        assert words in r.stderr, (extra, r.stderr)


def test_no_credentials_stop_the_start(postgres, s3, tmp_path):
    env = s3_env(s3.url, "s3://some-bucket/wh", AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    del env["AWS_ACCESS_KEY_ID"]
    del env["AWS_SECRET_ACCESS_KEY"]
    r = run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(), **env})
    assert r.returncode == 2, r.stderr
    assert "shared credentials file" in r.stderr


def test_credentials_from_a_profile(postgres, s3, tmp_path):
    bucket = make_bucket(s3)
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = wrong\n\n[floe]\n"
                     f"aws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    env = s3_env(s3.url, f"s3://{bucket}/wh", AWS_SHARED_CREDENTIALS_FILE=str(creds),
                 FLOE_S3_PROFILE="floe")
    f = _start_floe_on_fresh_db(postgres, env=env)
    try:
        f.create_namespace(["n"])
        assert create_table(f, "n", "t").status_code == 200
        assert any(k.startswith("wh/n/t/metadata/") for k in keys(s3, bucket))
    finally:
        _stop_and_check(f)


@pytest.fixture(scope="module")
def s3_with_auth():
    """An S3 server that checks every request's signature against its IAM
    users (moto_checking_signatures)."""
    server = moto_checking_signatures()
    yield server
    server.stop()


def test_wrong_credentials_stop_the_start(postgres, s3_with_auth):
    key_id, _ = s3_with_auth.key
    env = s3_env(s3_with_auth.url, "s3://signed/wh", AWS_ACCESS_KEY_ID=key_id,
                 AWS_SECRET_ACCESS_KEY="not-the-secret-at-all")
    r = run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(), **env})
    assert r.returncode == 2, r.stderr
    assert "refused floe's credentials for the bucket signed" in r.stderr
    assert "not-the-secret-at-all" not in r.stderr


def test_signed_requests_are_accepted_by_a_checking_server(postgres, s3_with_auth):
    key_id, secret = s3_with_auth.key
    env = s3_env(s3_with_auth.url, "s3://signed/wh", AWS_ACCESS_KEY_ID=key_id,
                 AWS_SECRET_ACCESS_KEY=secret)
    f = _start_floe_on_fresh_db(postgres, env=env)
    try:
        f.create_namespace(["sig"])
        r = create_table(f, "sig", "t")
        assert r.status_code == 200, r.text
        first = r.json()["metadata-location"]
        r = f.post("/v1/namespaces/sig/tables/t", json={
            "requirements": [], "updates": [
                {"action": "set-properties", "updates": {"k": "v"}}]})
        assert r.status_code == 200, r.text
        loc = r.json()["metadata-location"]
        # register reads it back with a signed GET: the object is read,
        # and its table's uuid is the one already registered.
        r = f.post("/v1/namespaces/sig/register", json={"name": "again",
                                                         "metadata-location": loc})
        assert_error(r, 409, "AlreadyExistsException")
        assert "already registered" in r.json()["error"]["message"]
        # (moto's signature check refuses any listing with a '/' in its
        # prefix, boto3's own too: the objects are looked at one by one.)
        s3cli = s3_with_auth.client(key=key_id, secret=secret)
        for m in (first, loc):
            assert m.startswith("s3://signed/wh/sig/t/metadata/")
            s3cli.head_object(Bucket="signed", Key=m.removeprefix("s3://signed/"))
    finally:
        _stop_and_check(f)


def commit_property(f: Floe, ns: str, name: str, value: str):
    return f.post(f"/v1/namespaces/{ns}/tables/{name}", json={
        "requirements": [], "updates": [
            {"action": "set-properties", "updates": {"k": value}}]})


@pytest.mark.parametrize("fault", ["down", "503"])
def test_storage_failing_during_a_commit_is_a_known_failure(postgres, s3, fault):
    bucket = make_bucket(s3)
    proxy = Proxy(s3.port)
    f = _start_floe_on_fresh_db(postgres, env=s3_env(proxy.url, f"s3://{bucket}/wh"))
    try:
        f.create_namespace(["k"])
        assert create_table(f, "k", "t").status_code == 200
        before = load(f, "k", "t")["metadata-location"]
        stored = keys(s3, bucket)

        if fault == "down":
            proxy.down()
        else:
            proxy.mode = "503"
        seen = len(proxy.seen)
        r = commit_property(f, "k", "t", "during")
        # Nothing was swapped: a clean 503 with the Iceberg error body,
        # never the "state unknown" answers (500, 502, 504).
        assert_error(r, 503, "ServiceUnavailableException")
        assert "object storage" in r.json()["error"]["message"]
        assert r.headers.get("Retry-After") == "1"
        if fault == "503":
            assert len(proxy.seen) - seen == 4  # the PUT, tried four times
        assert load(f, "k", "t")["metadata-location"] == before
        assert keys(s3, bucket) == stored

        if fault == "down":
            proxy.up()
        else:
            proxy.mode = "pass"
        r = commit_property(f, "k", "t", "after")
        assert r.status_code == 200, r.text
        after = load(f, "k", "t")
        assert after["metadata-location"] != before
        assert after["metadata"]["properties"]["k"] == "after"
    finally:
        _stop_and_check(f)
        proxy.down()


def test_a_lost_answer_to_a_put_is_settled_by_reading_the_object_back(postgres, s3):
    """The S3 server stores the object but its answer is lost: the retry
    gets 412 for floe's own object, which floe reads back and recognises."""
    bucket = make_bucket(s3)
    proxy = Proxy(s3.port)
    f = _start_floe_on_fresh_db(postgres, env=s3_env(proxy.url, f"s3://{bucket}/wh"))
    try:
        f.create_namespace(["l"])
        assert create_table(f, "l", "t").status_code == 200
        before = load(f, "l", "t")["metadata-location"]
        lose = {"left": 1}
        serve = proxy._serve

        def losing(c):
            # Forward the PUT, then close without an answer.
            if lose["left"] > 0:
                req = proxy._read_request(c)
                answer = proxy.forward(req)
                if req.startswith(b"PUT "):
                    lose["left"] -= 1
                else:
                    c.sendall(answer)
                c.close()
                return
            serve(c)

        proxy._serve = losing
        r = commit_property(f, "l", "t", "once")
        assert r.status_code == 200, r.text
        assert lose["left"] == 0
        after = load(f, "l", "t")
        assert after["metadata-location"] != before
        assert after["metadata-location"] == r.json()["metadata-location"]
        assert "found its own object" in f.log()
        metas = {k for k in keys(s3, bucket) if k.endswith(".metadata.json")}
        assert len(metas) == 2
    finally:
        _stop_and_check(f)
        proxy.down()


def test_history_and_undrop_of_a_table_in_s3(floe_s3, s3):
    """A load as of a version reads that commit's metadata object back from
    the bucket; a table dropped without purge comes back with its data."""
    f = floe_s3
    cat = catalog(f, s3.url)
    cat.create_namespace("hist")
    schema = pa.schema([pa.field("id", pa.int64())])
    table = cat.create_table("hist.t", schema=schema)
    table.append(pa.table({"id": [1, 2]}, schema=schema))
    first = table.current_snapshot().snapshot_id
    table.append(pa.table({"id": [3]}, schema=schema))

    commits = assert_ok_json(f.get("/v1/namespaces/hist/tables/t/commits"))["commits"]
    assert [c["version"] for c in commits] == [3, 2, 1]
    old = assert_ok_json(f.get("/v1/namespaces/hist/tables/t", params={"as-of-version": 2}))
    assert old["metadata-location"] == commits[1]["metadata-location"]
    assert old["metadata"]["current-snapshot-id"] == first
    key = old["metadata-location"].removeprefix(f"s3://{f.bucket}/")
    assert json.loads(s3.client().get_object(Bucket=f.bucket, Key=key)["Body"].read()) \
        == old["metadata"]

    assert f.delete("/v1/namespaces/hist/tables/t").status_code == 204
    back = assert_ok_json(f.post("/v1/namespaces/hist/tables/t/undrop"))
    assert back["metadata-location"] == commits[0]["metadata-location"]
    rows = catalog(f, s3.url).load_table("hist.t").scan().to_arrow().to_pydict()
    assert sorted(rows["id"]) == [1, 2, 3]
