"""One S3 store per s3:// warehouse: a default warehouse in one bucket and a
further warehouse (--warehouses) in another, on moto with its IAM checks on
and each warehouse's keys allowed only its own bucket, so a request signed
with the other warehouse's keys is refused by the storage. floe starts only
when each bucket is reached with its own warehouse's keys, the default
warehouse serves as before beside the further one, and the further
warehouse's tables are written, read, vended and signed in its own bucket
with its own keys and endpoint."""

from __future__ import annotations

import json
import os
import uuid

import boto3
import pyarrow as pa
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from pyiceberg.catalog import load_catalog

from conftest import (
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_ok_json,
    run_floe,
)
from s3_servers import REGION, S3Server, s3_env

DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
MAIN_BUCKET = "main-bucket"
LAKE_BUCKET = "lake-bucket"


LAKE_ROLE = "arn:aws:iam::123456789012:role/lake-tables"


def bucket_policy(family: str) -> str:
    """S3 on the buckets named FAMILY-*, which a missing one of them is too
    (moto then answers 404, not 403), and assuming a role."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:*",
         "Resource": [f"arn:aws:s3:::{family}-*", f"arn:aws:s3:::{family}-*/*"]},
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]})


@pytest.fixture(scope="module")
def iam_s3():
    """moto checking every signature after the first ten requests, which
    make two users, each with a key and a policy allowing S3 on its own
    buckets only (main-*, lake-*), the two buckets, and a role (with its
    policy) that may use the lake-* buckets only. .main and .lake are the
    users' (key id, secret)."""
    server = S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "10"})
    try:
        iam = server.client("iam")
        keys = {}
        for user in ("main", "lake"):
            iam.create_user(UserName=user)
            k = iam.create_access_key(UserName=user)["AccessKey"]
            iam.put_user_policy(UserName=user, PolicyName="own-bucket",
                                PolicyDocument=bucket_policy(user))
            keys[user] = (k["AccessKeyId"], k["SecretAccessKey"])
        server.client().create_bucket(Bucket=MAIN_BUCKET)
        server.client().create_bucket(Bucket=LAKE_BUCKET)
        trust = json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
        iam.create_role(RoleName="lake-tables", AssumeRolePolicyDocument=trust)
        iam.put_role_policy(RoleName="lake-tables", PolicyName="lake",
                            PolicyDocument=bucket_policy("lake"))
        server.main, server.lake = keys["main"], keys["lake"]
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture
def no_aws_env(monkeypatch, tmp_path):
    """The test process holds no storage credentials: an engine in it has
    only what floe vends."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def s3_client(s3: S3Server, key: tuple[str, str], token: str | None = None):
    return boto3.client("s3", endpoint_url=s3.url, region_name=REGION,
                        aws_access_key_id=key[0], aws_secret_access_key=key[1],
                        aws_session_token=token,
                        config=Config(s3={"addressing_style": "path"}))


def keys_in(s3: S3Server, bucket: str, key: tuple[str, str], prefix: str) -> set[str]:
    """The bucket's keys below prefix. (Listed whole: moto checking
    signatures refuses a listing whose prefix holds a '/'.)"""
    out = set()
    for page in s3_client(s3, key).get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update(o["Key"] for o in page.get("Contents", []) if o["Key"].startswith(prefix))
    return out


def setup(tmp_path, s3: S3Server, lake_key, lake_bucket=LAKE_BUCKET, default_key=None,
          lake_endpoint=None, **extra) -> dict:
    """floe's environment: the default warehouse s3://main-bucket/wh-*
    signed with default_key (the main user's unless given), and the further
    warehouse "lake" at s3://LAKE_BUCKET/lake-* whose profile holds
    lake_key, reached at lake_endpoint (the server's URL unless given)."""
    extra = {k: v for k, v in extra.items() if v is not None}
    tag = uuid.uuid4().hex[:8]
    creds = tmp_path / f"credentials-{tag}"
    creds.write_text(f"[lake]\naws_access_key_id = {lake_key[0]}\n"
                     f"aws_secret_access_key = {lake_key[1]}\n")
    whf = tmp_path / f"warehouses-{tag}.json"
    whf.write_text(json.dumps({"warehouses": [
        {"name": "lake", "location": f"s3://{lake_bucket}/lake-{tag}",
         "s3": {"endpoint": lake_endpoint or s3.url, "region": REGION, "path-style": True,
                "profile": "lake"}}]}))
    key_id, secret = default_key or s3.main
    env = s3_env(s3.url, f"s3://{MAIN_BUCKET}/wh-{tag}", AWS_ACCESS_KEY_ID=key_id,
                 AWS_SECRET_ACCESS_KEY=secret, AWS_SHARED_CREDENTIALS_FILE=str(creds),
                 FLOE_WAREHOUSES=str(whf), **extra)
    env["warehouse"] = env["FLOE_WAREHOUSE"]
    env["lake"] = f"s3://{lake_bucket}/lake-{tag}"
    return env


def start(postgres, env: dict):
    f = _start_floe_on_fresh_db(postgres, env={k: v for k, v in env.items()
                                               if k not in ("warehouse", "lake")})
    f.warehouse, f.lake = env["warehouse"], env["lake"]
    return f


def run_start(postgres, env: dict, tmp_path):
    """floe started to its first failure (or until it would serve)."""
    env = {k: v for k, v in env.items() if k not in ("warehouse", "lake")}
    return run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(),
                             "FLOE_DATA_DIR": str(tmp_path / "data"), **env})


def test_each_bucket_is_reached_with_its_own_warehouses_keys(postgres, iam_s3, tmp_path):
    # Each key reaches only its own bucket, so floe starts only when the
    # default warehouse's HeadBucket is signed with the environment's key
    # and the further one's with its profile's.
    f = start(postgres, setup(tmp_path, iam_s3, iam_s3.lake))
    try:
        assert 'warehouse "lake": ' + f.lake in f.log()
        assert iam_s3.main[1] not in f.log() and iam_s3.lake[1] not in f.log()
    finally:
        _stop_and_check(f)

    # The further warehouse's profile holding the default warehouse's key.
    r = run_start(postgres, setup(tmp_path, iam_s3, iam_s3.main), tmp_path)
    assert r.returncode == 2, r.stderr
    assert 'cannot use the warehouse "lake"' in r.stderr
    assert f"refused floe's credentials for the bucket {LAKE_BUCKET}" in r.stderr
    assert iam_s3.main[1] not in r.stderr

    # The default warehouse signed with the further warehouse's key.
    env = setup(tmp_path, iam_s3, iam_s3.lake, default_key=iam_s3.lake)
    r = run_start(postgres, env, tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"cannot use the warehouse {env['warehouse']}" in r.stderr
    assert f"refused floe's credentials for the bucket {MAIN_BUCKET}" in r.stderr


def test_a_missing_bucket_of_the_further_warehouse_stops_the_start(postgres, iam_s3,
                                                                   tmp_path):
    r = run_start(postgres, setup(tmp_path, iam_s3, iam_s3.lake, lake_bucket="lake-missing"),
                  tmp_path)
    assert r.returncode == 2, r.stderr
    assert 'cannot use the warehouse "lake"' in r.stderr
    assert f"bucket lake-missing does not exist at {iam_s3.url}" in r.stderr


def catalog(f, **props):
    return load_catalog(f"stores-{uuid.uuid4().hex[:6]}", type="rest", uri=f.url, **props)


def write_and_read(cat, ident: str):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
    cat.create_namespace(ident.split(".")[0])
    table = cat.create_table(ident, schema=schema)
    table.append(pa.table({"id": [1, 2], "city": ["Oslo", "Lima"]}, schema=schema))
    got = cat.load_table(ident).scan().to_arrow().sort_by("id")
    assert got.to_pydict() == {"id": [1, 2], "city": ["Oslo", "Lima"]}


def assert_reaches_only(s3: S3Server, config: dict, own: str, other: str):
    """The vended credentials in config list their own bucket and are
    refused in the other one."""
    key = (config["s3.access-key-id"], config["s3.secret-access-key"])
    client = s3_client(s3, key, config.get("s3.session-token"))
    client.head_bucket(Bucket=own)
    with pytest.raises(ClientError) as refused:
        client.list_objects_v2(Bucket=other)
    assert refused.value.response["Error"]["Code"] in ("AccessDenied", "403")
    with pytest.raises(ClientError):
        client.put_object(Bucket=other, Key="not-yours", Body=b"x")


def test_the_default_warehouse_serves_as_before_beside_a_further_one(postgres, iam_s3,
                                                                     tmp_path, no_aws_env):
    f = start(postgres, setup(tmp_path, iam_s3, iam_s3.lake,
                              FLOE_S3_VENDED_CREDENTIALS="static"))
    try:
        write_and_read(catalog(f), "sales.orders")
        body = assert_ok_json(f.get("/v1/namespaces/sales/tables/orders", headers=DELEGATION))
        assert body["metadata"]["location"] == f"{f.warehouse}/sales/orders"
        # Static vending hands out the default warehouse's key, which
        # reaches its bucket only.
        assert body["config"]["s3.access-key-id"] == iam_s3.main[0]
        assert body["config"]["s3.endpoint"] == iam_s3.url
        assert_reaches_only(iam_s3, body["config"], MAIN_BUCKET, LAKE_BUCKET)
        prefix = f.warehouse.removeprefix(f"s3://{MAIN_BUCKET}/") + "/sales/orders/"
        written = keys_in(iam_s3, MAIN_BUCKET, iam_s3.main, prefix)
        assert any(k.endswith(".metadata.json") for k in written), written
        assert any(k.endswith(".parquet") for k in written), written
        # None in the further warehouse's bucket (shared by this module's
        # tests, hence by the warehouse's name).
        name = f.warehouse.rsplit("/", 1)[1]
        assert not [k for k in keys_in(iam_s3, LAKE_BUCKET, iam_s3.lake, "") if name in k]
        log = f.log()
        assert iam_s3.main[1] not in log and iam_s3.lake[1] not in log
    finally:
        _stop_and_check(f)


@pytest.mark.parametrize("mode", ["static", "sts"])
def test_a_further_warehouse_keeps_its_tables_in_its_own_bucket(postgres, iam_s3, tmp_path,
                                                                no_aws_env, mode):
    # With sts, the further warehouse's AssumeRole goes to its own endpoint
    # (no --s3-sts-endpoint: that is the default warehouse's), signed with
    # its profile's key.
    f = start(postgres, setup(tmp_path, iam_s3, iam_s3.lake, FLOE_S3_VENDED_CREDENTIALS=mode,
                              FLOE_S3_STS_ROLE_ARN=LAKE_ROLE if mode == "sts" else None))
    try:
        write_and_read(catalog(f, warehouse="lake"), "sales.orders")
        body = assert_ok_json(f.get("/v1/lake/namespaces/sales/tables/orders",
                                    headers=DELEGATION))
        location = body["metadata"]["location"]
        assert location == f"{f.lake}/sales/orders"
        [cred] = body["storage-credentials"]
        assert cred["prefix"] == location
        # The further warehouse's own key (or one of its role's), endpoint
        # and addressing.
        if mode == "static":
            assert body["config"]["s3.access-key-id"] == iam_s3.lake[0]
        else:
            assert body["config"]["s3.access-key-id"] not in (iam_s3.lake[0], iam_s3.main[0])
            assert body["config"]["s3.session-token"]
        assert body["config"]["s3.endpoint"] == iam_s3.url
        assert body["config"]["s3.path-style-access"] == "true"
        assert_reaches_only(iam_s3, body["config"], LAKE_BUCKET, MAIN_BUCKET)
        # Its metadata and data objects are in its bucket, none in the
        # default warehouse's.
        prefix = f.lake.removeprefix(f"s3://{LAKE_BUCKET}/") + "/sales/orders/"
        written = keys_in(iam_s3, LAKE_BUCKET, iam_s3.lake, prefix)
        assert any(k.endswith(".metadata.json") for k in written), written
        assert any(k.endswith(".parquet") for k in written), written
        name = f.lake.rsplit("/", 1)[1]
        assert not [k for k in keys_in(iam_s3, MAIN_BUCKET, iam_s3.main, "") if name in k]
        # The default warehouse's catalog is another tree.
        assert ("sales",) not in catalog(f).list_namespaces()
    finally:
        _stop_and_check(f)


def test_a_further_warehouses_tables_are_signed_with_its_own_store(postgres, iam_s3, tmp_path,
                                                                   no_aws_env):
    # The further warehouse reaches the same server under another host
    # name, so the answer shows whose endpoint it names.
    lake_url = iam_s3.url.replace("127.0.0.1", "localhost")
    f = start(postgres, setup(tmp_path, iam_s3, iam_s3.lake, lake_endpoint=lake_url,
                              FLOE_S3_REMOTE_SIGNING="on"))
    signing = {"X-Iceberg-Access-Delegation": "remote-signing"}
    try:
        for prefix, endpoint in (("/v1/lake", lake_url), ("/v1", iam_s3.url)):
            assert f.post(f"{prefix}/namespaces", json={"namespace": ["rs"]}).status_code == 200
            created = f.post(f"{prefix}/namespaces/rs/tables", headers=signing, json={
                "name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
                    {"id": 1, "name": "id", "type": "long", "required": False}]}})
            assert created.status_code == 200, created.text
            loaded = assert_ok_json(f.get(f"{prefix}/namespaces/rs/tables/t", headers=signing))
            for body in (created.json(), loaded):
                assert body["config"]["s3.remote-signing-enabled"] == "true"
                assert body["config"]["s3.endpoint"] == endpoint
                assert body["config"]["s3.signer.endpoint"] == \
                    f"{prefix[1:]}/namespaces/rs/tables/t/sign"
        # A read of the further table's metadata object, signed by floe
        # with the further warehouse's key, is accepted by the checking
        # server; unsigned it is refused.
        loc = assert_ok_json(f.get("/v1/lake/namespaces/rs/tables/t"))["metadata-location"]
        assert loc.startswith(f"{f.lake}/rs/t/metadata/")
        uri = f"{lake_url}/{LAKE_BUCKET}/{loc.removeprefix(f's3://{LAKE_BUCKET}/')}"
        assert requests.get(uri, timeout=30).status_code == 403
        r = f.post("/v1/lake/namespaces/rs/tables/t/sign",
                   json={"region": REGION, "uri": uri, "method": "GET", "headers": {}})
        answer = assert_ok_json(r)
        added = {k: v[0] for k, v in answer["headers"].items()}
        assert f"Credential={iam_s3.lake[0]}/" in added["Authorization"]
        got = requests.get(answer["uri"], headers=added, timeout=30)
        assert got.status_code == 200, got.text
        assert json.loads(got.content)["location"] == f"{f.lake}/rs/t"
        # The same object asked for under the default warehouse's table
        # of that name is outside that table: refused.
        r = f.post("/v1/namespaces/rs/tables/t/sign",
                   json={"region": REGION, "uri": uri, "method": "GET", "headers": {}})
        assert r.status_code == 403, r.text
        log = f.log()
        assert iam_s3.lake[1] not in log and "Signature=" not in log
    finally:
        _stop_and_check(f)


def test_a_file_default_warehouse_beside_an_s3_one_vends_and_signs_for_it(postgres, iam_s3,
                                                                          tmp_path,
                                                                          no_aws_env):
    # The default warehouse on local files, floe holding no S3 keys of its
    # own: vending and signing are for the further warehouse's tables.
    env = setup(tmp_path, iam_s3, iam_s3.lake, FLOE_S3_VENDED_CREDENTIALS="static",
                FLOE_S3_REMOTE_SIGNING="on")
    for name in ("FLOE_S3_ENDPOINT", "FLOE_S3_REGION", "FLOE_S3_PATH_STYLE",
                 "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(name)
    env["FLOE_WAREHOUSE"] = env["warehouse"] = (tmp_path / "local").as_uri()
    f = start(postgres, env)
    try:
        write_and_read(catalog(f, warehouse="lake"), "sales.orders")
        body = assert_ok_json(f.get("/v1/lake/namespaces/sales/tables/orders",
                                    headers=DELEGATION))
        assert body["config"]["s3.access-key-id"] == iam_s3.lake[0]
        assert_reaches_only(iam_s3, body["config"], LAKE_BUCKET, MAIN_BUCKET)
        # The local warehouse's tables need and get no credentials.
        write_and_read(catalog(f), "local.events")
        body = assert_ok_json(f.get("/v1/namespaces/local/tables/events",
                                    headers={"X-Iceberg-Access-Delegation":
                                             "vended-credentials,remote-signing"}))
        assert "storage-credentials" not in body
        assert not [k for k in body.get("config", {}) if k.startswith("s3.")]
        assert body["metadata"]["location"].startswith(env["warehouse"])
        r = f.post("/v1/namespaces/local/tables/events/sign", json={
            "region": REGION, "uri": f"{iam_s3.url}/{LAKE_BUCKET}/x", "method": "GET",
            "headers": {}})
        assert r.status_code == 406, r.text
        assert r.json()["error"]["type"] == "UnsupportedOperationException"
    finally:
        _stop_and_check(f)


def test_vending_with_no_s3_warehouse_at_all_stops_the_start(tmp_path):
    whf = tmp_path / "warehouses.json"
    whf.write_text(json.dumps({"warehouses": [
        {"name": "files", "location": (tmp_path / "files").as_uri()}]}))
    for option, value in (("FLOE_S3_VENDED_CREDENTIALS", "static"),
                          ("FLOE_S3_REMOTE_SIGNING", "on")):
        r = run_floe([], env={"FLOE_WAREHOUSE": (tmp_path / "wh").as_uri(),
                              "FLOE_WAREHOUSES": str(whf), option: value})
        assert r.returncode == 2, r.stderr
        assert "need" in r.stderr and "an s3:// warehouse (--warehouse or one of " \
            "--warehouses)" in r.stderr, r.stderr
