"""Vended credentials on an s3:// warehouse, against moto's server with
its IAM checks on: every S3 request must be signed by a key moto knows and
allowed by that key's policies, so an engine given no credentials of its
own reaches the data only with what floe vended. With
--s3-vended-credentials=static floe hands out its own key; with sts it
calls STS AssumeRole (moto's) with a session policy scoped to the table's
prefix, read-only for a principal who may only read, under a role whose
own policy only reads (moto enforces a role's policies, not the session
policy, which /moto-api/data.json shows floe sent)."""

from __future__ import annotations

import json
import os
import re
import uuid

import pyarrow as pa
import pytest
import requests
from botocore.exceptions import ClientError
from pyiceberg.catalog import load_catalog

from s3_servers import REGION, S3Server, Proxy, s3_env
from conftest import (
    Floe,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    client_token,
    make_client,
    wait_until,
)

DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
M = "/management/v1"
RW_ROLE = "arn:aws:iam::123456789012:role/floe-tables"
RO_ROLE = "arn:aws:iam::123456789012:role/floe-readers"
READ_ACTIONS = ["s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:GetBucketLocation"]
ENGINE_KEYS = {"s3.access-key-id", "s3.secret-access-key", "s3.path-style-access",
               "client.region", "s3.region", "s3.endpoint"}


def allow(actions, resource="*"):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": actions, "Resource": resource}]})


def iam_server() -> S3Server:
    """moto with IAM checks after the first eleven requests, which make
    floe's user, its key and policy, the bucket, the two roles with their
    policies (one that may do anything in S3, one that only reads), and a
    user that may use S3 but not STS."""
    server = S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "11"})
    iam = server.client("iam")
    iam.create_user(UserName="floe")
    key = iam.create_access_key(UserName="floe")["AccessKey"]
    iam.put_user_policy(UserName="floe", PolicyName="all", PolicyDocument=allow("*"))
    server.client().create_bucket(Bucket="lake")
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
    iam.create_role(RoleName="floe-tables", AssumeRolePolicyDocument=trust)
    iam.put_role_policy(RoleName="floe-tables", PolicyName="s3", PolicyDocument=allow("s3:*"))
    iam.create_role(RoleName="floe-readers", AssumeRolePolicyDocument=trust)
    iam.put_role_policy(RoleName="floe-readers", PolicyName="read",
                        PolicyDocument=allow(["s3:GetObject", "s3:ListBucket",
                                              "s3:GetBucketLocation"]))
    iam.create_user(UserName="no-sts")
    other = iam.create_access_key(UserName="no-sts")["AccessKey"]
    iam.put_user_policy(UserName="no-sts", PolicyName="s3", PolicyDocument=allow("s3:*"))
    server.key = (key["AccessKeyId"], key["SecretAccessKey"])
    server.no_sts_key = (other["AccessKeyId"], other["SecretAccessKey"])
    return server


@pytest.fixture(scope="module")
def iam_s3():
    server = iam_server()
    yield server
    server.stop()


@pytest.fixture
def own_iam_s3():
    """A server of the test's own: moto's model data cannot be read once
    some objects engines write are stored (a property of one raises), and
    the test reads what STS was asked."""
    server = iam_server()
    yield server
    server.stop()


def floe_env(s3: S3Server, warehouse: str, mode: str, **extra) -> dict:
    key_id, secret = s3.key
    env = s3_env(s3.url, warehouse, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret,
                 FLOE_S3_VENDED_CREDENTIALS=mode)
    if mode == "sts":
        env.update(FLOE_S3_STS_ENDPOINT=s3.url, FLOE_S3_STS_ROLE_ARN=RW_ROLE,
                   FLOE_S3_STS_READ_ROLE_ARN=RO_ROLE)
    env.update(extra)
    return env


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


def start(postgres, s3, mode, **extra) -> Floe:
    warehouse = f"s3://lake/wh-{uuid.uuid4().hex[:8]}"
    f = _start_floe_on_fresh_db(postgres, env=floe_env(s3, warehouse, mode, **extra))
    f.warehouse = warehouse
    return f


def catalog(f: Floe, token: str | None = None):
    props = {"type": "rest", "uri": f.url}
    if token is not None:
        props["token"] = token
    return load_catalog(f"vend-{uuid.uuid4().hex[:6]}", **props)


def create_table(f: Floe, ns: str, name: str, headers=None, **extra):
    body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}
    body.update(extra)
    return f.post(f"/v1/namespaces/{ns}/tables", json=body, headers=headers or {})


def s3_as(s3: S3Server, config: dict):
    """A boto3 S3 client with the vended credentials only."""
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=config["s3.endpoint"], region_name=REGION,
                        aws_access_key_id=config["s3.access-key-id"],
                        aws_secret_access_key=config["s3.secret-access-key"],
                        aws_session_token=config.get("s3.session-token"),
                        config=Config(s3={"addressing_style": "path"}))


def assumed_roles(s3: S3Server) -> list[dict]:
    """The assumed-role sessions moto's STS issued, with their session
    policies, from its model data."""
    # (Named by moto's own host, so it is never taken for a bucket.)
    r = requests.get(s3.url + "/moto-api/data.json", timeout=10,
                     headers={"Host": "motoapi.amazonaws.com"})
    assert r.status_code == 200, (r.status_code, r.text[:500])
    return r.json()["sts"]["AssumedRole"]


@pytest.mark.parametrize("mode", ["static", "sts"])
def test_pyiceberg_writes_and_reads_with_vended_credentials_only(postgres, iam_s3, mode,
                                                                 no_aws_env):
    f = start(postgres, iam_s3, mode)
    try:
        cat = catalog(f)
        cat.create_namespace("sales")
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
        table = cat.create_table("sales.orders", schema=schema)
        rows = pa.table({"id": [1, 2], "city": ["Oslo", "Lima"]}, schema=schema)
        table.append(rows)
        got = catalog(f).load_table("sales.orders").scan().to_arrow().sort_by("id")
        assert got.to_pydict() == {"id": [1, 2], "city": ["Oslo", "Lima"]}

        r = f.get("/v1/namespaces/sales/tables/orders", headers=DELEGATION)
        body = assert_ok_json(r)
        assert r.headers.get("Cache-Control") == "no-store"
        location = body["metadata"]["location"]
        [cred] = body["storage-credentials"]
        assert cred["prefix"] == location == f"{f.warehouse}/sales/orders"
        assert ENGINE_KEYS <= set(cred["config"]), cred["config"].keys()
        assert cred["config"] == body["config"]
        assert body["config"]["s3.endpoint"] == iam_s3.url
        assert body["config"]["s3.path-style-access"] == "true"
        assert body["config"]["client.region"] == REGION
        key_id, secret = iam_s3.key
        if mode == "static":
            # floe's own key, passed through: no session, no expiry.
            assert body["config"]["s3.access-key-id"] == key_id
            assert "s3.session-token" not in body["config"]
        else:
            assert body["config"]["s3.access-key-id"] != key_id
            assert body["config"]["s3.secret-access-key"] != secret
            assert body["config"]["s3.session-token"]
            assert int(body["config"]["s3.session-token-expires-at-ms"]) > 0
        # No secret reaches floe's log.
        log = f.log_tail(200000)
        assert body["config"]["s3.secret-access-key"] not in log
        assert secret not in log
    finally:
        _stop_and_check(f)


def test_no_header_no_credentials_and_mode_off_none(postgres, iam_s3):
    f = start(postgres, iam_s3, "sts")
    g = start(postgres, iam_s3, "off")
    try:
        for x in (f, g):
            x.create_namespace(["n"])
            assert create_table(x, "n", "t").status_code == 200
        # Without the header: nothing, though floe could vend.
        body = assert_ok_json(f.get("/v1/namespaces/n/tables/t"))
        assert body["config"] == {} and "storage-credentials" not in body
        # Another delegation mechanism alone asks for nothing either.
        body = assert_ok_json(f.get("/v1/namespaces/n/tables/t",
                                    headers={"X-Iceberg-Access-Delegation": "remote-signing"}))
        assert "storage-credentials" not in body
        # In a list, among others and in any case, it does.
        body = assert_ok_json(f.get("/v1/namespaces/n/tables/t", headers={
            "X-Iceberg-Access-Delegation": "remote-signing , Vended-Credentials"}))
        assert len(body["storage-credentials"]) == 1
        # Off (the default): the header is answered with nothing.
        body = assert_ok_json(g.get("/v1/namespaces/n/tables/t", headers=DELEGATION))
        assert body["config"] == {} and "storage-credentials" not in body
        body = assert_ok_json(create_table(g, "n", "t2", headers=DELEGATION))
        assert body["config"] == {} and "storage-credentials" not in body
        body = assert_ok_json(g.get("/v1/namespaces/n/tables/t/credentials"))
        assert body == {"storage-credentials": []}
    finally:
        _stop_and_check(f)
        _stop_and_check(g)


def test_create_and_staged_create_answer_credentials(postgres, iam_s3):
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["c"])
        body = assert_ok_json(create_table(f, "c", "t", headers=DELEGATION))
        assert body["storage-credentials"][0]["prefix"] == f"{f.warehouse}/c/t"
        assert body["config"]["s3.session-token"]
        body = assert_ok_json(create_table(f, "c", "staged", headers=DELEGATION,
                                           **{"stage-create": True}))
        assert body["metadata-location"] is None
        assert body["storage-credentials"][0]["prefix"] == f"{f.warehouse}/c/staged"
        # The staged table's writer may put its files below its prefix.
        s3_as(iam_s3, body["config"]).put_object(
            Bucket="lake", Key=f"{f.warehouse[len('s3://lake/'):]}/c/staged/data/a.parquet",
            Body=b"x")
    finally:
        _stop_and_check(f)


def test_expiring_credentials_name_their_refresh_endpoint(postgres, iam_s3):
    # Iceberg Java's S3FileIO refreshes vended credentials before they
    # expire at client.refresh-credentials-endpoint (relative to the
    # catalog URI): floe's loadCredentials route of the table.
    f = start(postgres, iam_s3, "sts")
    g = start(postgres, iam_s3, "static")
    try:
        f.create_namespace(["a"])
        f.create_namespace(["a", "b"])
        created = assert_ok_json(create_table(f, "a%1Fb", "t", headers=DELEGATION))
        want = "v1/namespaces/a%1Fb/tables/t/credentials"
        loaded = assert_ok_json(f.get("/v1/namespaces/a%1Fb/tables/t", headers=DELEGATION))
        for body in (created, loaded):
            assert body["config"]["client.refresh-credentials-endpoint"] == want
            [cred] = body["storage-credentials"]
            assert cred["config"] == body["config"]
        # The endpoint answers, for the same table, resolved against the URI.
        fresh = assert_ok_json(f.get("/" + want))["storage-credentials"]
        assert fresh[0]["prefix"] == loaded["storage-credentials"][0]["prefix"]
        assert fresh[0]["config"]["client.refresh-credentials-endpoint"] == want
        # Not asked for credentials: no endpoint either.
        plain = assert_ok_json(f.get("/v1/namespaces/a%1Fb/tables/t"))
        assert "client.refresh-credentials-endpoint" not in plain["config"]
        # floe's own key pair never expires: nothing to refresh.
        g.create_namespace(["s"])
        body = assert_ok_json(create_table(g, "s", "t", headers=DELEGATION))
        assert "s3.session-token-expires-at-ms" not in body["config"]
        assert "client.refresh-credentials-endpoint" not in body["config"]
        body = assert_ok_json(g.get("/v1/namespaces/s/tables/t", headers=DELEGATION))
        assert "client.refresh-credentials-endpoint" not in body["config"]
    finally:
        _stop_and_check(f)
        _stop_and_check(g)


def test_the_credentials_route_answers_fresh_credentials(postgres, iam_s3):
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["r"])
        assert create_table(f, "r", "t").status_code == 200
        r = f.get("/v1/namespaces/r/tables/t/credentials")
        body = assert_ok_json(r)
        assert r.headers.get("Cache-Control") == "no-store"
        [cred] = body["storage-credentials"]
        assert cred["prefix"] == f"{f.warehouse}/r/t"
        assert cred["config"]["s3.session-token"]
        # Kept until shortly before they expire: the same ones again.
        again = assert_ok_json(f.get("/v1/namespaces/r/tables/t/credentials"))
        assert again == body
        assert_error(f.get("/v1/namespaces/r/tables/nope/credentials"), 404,
                     "NoSuchTableException", "Table does not exist: r.nope")
    finally:
        _stop_and_check(f)


def test_a_reader_gets_credentials_the_storage_refuses_for_a_write(postgres, own_iam_s3):
    iam_s3 = own_iam_s3
    f = start(postgres, iam_s3, "sts", FLOE_AUTH="floe")
    try:
        f.authenticate()
        f.create_namespace(["ro"])
        assert create_table(f, "ro", "t").status_code == 200
        assert f.post(f"{M}/roles", json={"name": "readers"}).status_code == 201
        grant = {"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["ro"]}}
        assert f.post(f"{M}/roles/readers/grants", json=grant).status_code == 201
        reader = client_token(f, make_client(f, "reader", roles=("readers",)))
        prefix = f"{f.warehouse[len('s3://lake/'):]}/ro/t"

        r = requests.get(f"{f.url}/v1/namespaces/ro/tables/t", timeout=30,
                         headers={**DELEGATION, "Authorization": f"Bearer {reader}"})
        ro = assert_ok_json(r)["config"]
        cli = s3_as(iam_s3, ro)
        meta = assert_ok_json(r)["metadata-location"]
        cli.get_object(Bucket="lake", Key=meta[len("s3://lake/"):])  # reads
        with pytest.raises(ClientError) as refused:
            cli.put_object(Bucket="lake", Key=f"{prefix}/data/evil.parquet", Body=b"x")
        assert refused.value.response["Error"]["Code"] == "AccessDenied"

        # The admin may write: read-write credentials, which the storage
        # takes for a write below the table's prefix.
        rw = assert_ok_json(f.get("/v1/namespaces/ro/tables/t", headers=DELEGATION))["config"]
        s3_as(iam_s3, rw).put_object(Bucket="lake", Key=f"{prefix}/data/ok.parquet", Body=b"x")

        # What floe asked STS for: the reader's role with a read-only
        # session policy on the table's prefix, the admin's with writes.
        sessions = {(s["role_arn"], s["session_name"]): s for s in assumed_roles(iam_s3)}
        ro_policy = json.loads(sessions[(RO_ROLE, "floe-reader")]["policy"])
        actions = [a for st in ro_policy["Statement"] for a in
                   (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])]
        assert sorted(actions) == sorted(READ_ACTIONS), actions
        resources = [st["Resource"] for st in ro_policy["Statement"]]
        assert f"arn:aws:s3:::lake/{prefix}/*" in resources, resources
        listing = [st for st in ro_policy["Statement"] if st["Action"] == "s3:ListBucket"][0]
        assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}/", f"{prefix}/*"]}}
        rw_policy = json.loads(sessions[(RW_ROLE, "floe-admin")]["policy"])
        rw_actions = {a for st in rw_policy["Statement"] for a in
                      (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])}
        assert {"s3:PutObject", "s3:DeleteObject"} <= rw_actions

        # A principal who may not read the table gets no credentials.
        nobody = client_token(f, make_client(f, "nobody", roles=()))
        r = requests.get(f"{f.url}/v1/namespaces/ro/tables/t/credentials", timeout=30,
                         headers={"Authorization": f"Bearer {nobody}"})
        assert_error(r, 403, "ForbiddenException")
        r = requests.get(f"{f.url}/v1/namespaces/ro/tables/t/credentials", timeout=30,
                         headers={"Authorization": f"Bearer {reader}"})
        assert assert_ok_json(r)["storage-credentials"][0]["config"]["s3.access-key-id"] == \
            ro["s3.access-key-id"]

        # Granted a write, the reader's next credentials are read-write.
        grant = {"privilege": "TABLE_WRITE", "on": {"kind": "namespace", "namespace": ["ro"]}}
        assert f.post(f"{M}/roles/readers/grants", json=grant).status_code == 201

        def upgraded():
            r = requests.get(f"{f.url}/v1/namespaces/ro/tables/t/credentials", timeout=30,
                             headers={"Authorization": f"Bearer {reader}"})
            got = assert_ok_json(r)["storage-credentials"][0]["config"]
            return got if got["s3.access-key-id"] != ro["s3.access-key-id"] else None
        assert wait_until(upgraded, 10), "the grant did not reach the vended credentials"
        s3_as(iam_s3, upgraded()).put_object(Bucket="lake", Key=f"{prefix}/data/now.parquet",
                                             Body=b"x")
    finally:
        _stop_and_check(f)


def string_like(pattern: str, value: str) -> bool:
    """IAM's StringLike: '*' any run of characters, '?' one, and ${*},
    ${?}, ${$} the literal characters."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith(("${*}", "${?}", "${$}"), i):
            out += re.escape(pattern[i + 2])
            i += 4
        elif pattern[i] == "*":
            out, i = out + ".*", i + 1
        elif pattern[i] == "?":
            out, i = out + ".", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.fullmatch(out, value, re.S) is not None


def test_a_session_policy_lists_the_table_and_no_sibling(postgres, own_iam_s3):
    """The s3:prefix a vended session may list: the table's key and a '/',
    never the bare key, which lists every table whose name starts with
    this one's (t lists t2). moto does not enforce session policies, so
    the policy STS was sent is evaluated as IAM evaluates StringLike."""
    iam_s3 = own_iam_s3
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["ls"])
        for name in ("t", "t2"):
            assert create_table(f, "ls", name).status_code == 200
        assert_ok_json(f.get("/v1/namespaces/ls/tables/t/credentials"))
        key = f"{f.warehouse[len('s3://lake/'):]}/ls/t"
        policies = [json.loads(s["policy"]) for s in assumed_roles(iam_s3)
                    if f'"{key}/*"' in s["policy"]]
        assert policies, "no session policy for the table was sent to STS"
        for policy in policies:
            [listing] = [st for st in policy["Statement"] if st["Action"] == "s3:ListBucket"]
            patterns = listing["Condition"]["StringLike"]["s3:prefix"]

            def may_list(prefix: str) -> bool:
                return any(string_like(p, prefix) for p in patterns)

            for prefix in (f"{key}/", f"{key}/data/", f"{key}/metadata/00001"):
                assert may_list(prefix), (prefix, patterns)
            for prefix in (key, f"{key}2/", f"{key}2", f"{key}2/data/", key[:-1], ""):
                assert not may_list(prefix), f"the session may list {prefix!r}: {patterns}"
    finally:
        _stop_and_check(f)


def test_sts_down_is_a_clear_error_and_nothing_is_created(postgres, iam_s3):
    proxy = Proxy(iam_s3.port)
    f = start(postgres, iam_s3, "sts", FLOE_S3_STS_ENDPOINT=proxy.url)
    try:
        f.create_namespace(["d"])
        assert create_table(f, "d", "t").status_code == 200
        proxy.down()
        r = f.get("/v1/namespaces/d/tables/t", headers=DELEGATION)
        assert_error(r, 503, "ServiceUnavailableException", "STS cannot be reached")
        assert r.headers.get("Retry-After")
        r = create_table(f, "d", "t2", headers=DELEGATION)
        assert_error(r, 503, "ServiceUnavailableException", "STS cannot be reached")
        assert f.head("/v1/namespaces/d/tables/t2").status_code == 404
        # Without the header the table still loads.
        assert f.get("/v1/namespaces/d/tables/t").status_code == 200
    finally:
        proxy.down()
        _stop_and_check(f)


def test_a_refusing_sts_is_a_clear_error(postgres, iam_s3):
    # floe's key may use S3 but not STS: AssumeRole is refused.
    key_id, secret = iam_s3.no_sts_key
    f = start(postgres, iam_s3, "sts", AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)
    try:
        f.create_namespace(["x"])
        assert create_table(f, "x", "t").status_code == 200
        r = f.get("/v1/namespaces/x/tables/t/credentials")
        assert_error(r, 503, "ServiceUnavailableException",
                     "Cannot vend storage credentials: STS refused AssumeRole (403 AccessDenied)")
        r = f.get("/v1/namespaces/x/tables/t", headers=DELEGATION)
        assert_error(r, 503, "ServiceUnavailableException", "STS refused AssumeRole")
        assert secret not in f.log_tail(200000)
    finally:
        _stop_and_check(f)


def test_client_endpoint_is_what_engines_are_told(postgres, iam_s3):
    f = start(postgres, iam_s3, "static", FLOE_S3_CLIENT_ENDPOINT="http://s3.example:9000")
    try:
        f.create_namespace(["e"])
        body = assert_ok_json(create_table(f, "e", "t", headers=DELEGATION))
        assert body["config"]["s3.endpoint"] == "http://s3.example:9000"
    finally:
        _stop_and_check(f)


def duckdb_connection():
    """A DuckDB connection with the iceberg extension loaded from the
    duckdb-extension-* packages, as the engine tests drive it."""
    pytest.importorskip("duckdb")
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "engines" / "test_duckdb.py"
    spec = importlib.util.spec_from_file_location("duckdb_engine_helpers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.new_connection()


def test_duckdb_reads_and_writes_with_vended_credentials(postgres, iam_s3, no_aws_env):
    f = start(postgres, iam_s3, "sts")
    con = None
    try:
        cat = catalog(f)
        cat.create_namespace("duck")
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
        cat.create_table("duck.t", schema=schema).append(
            pa.table({"id": [1, 2], "city": ["Oslo", "Lima"]}, schema=schema))

        con = duckdb_connection()
        # No S3 secret of its own: what it reads and writes it does with
        # what floe vends for the table.
        con.execute(f"ATTACH 'warehouse' AS floe (TYPE iceberg, ENDPOINT '{f.url}', "
                    "AUTHORIZATION_TYPE 'none')")
        assert con.execute("SELECT id, city FROM floe.duck.t ORDER BY id").fetchall() == \
            [(1, "Oslo"), (2, "Lima")]
        con.execute("INSERT INTO floe.duck.t VALUES (3, 'Pune')")
        got = catalog(f).load_table("duck.t").scan().to_arrow().sort_by("id").to_pydict()
        assert got == {"id": [1, 2, 3], "city": ["Oslo", "Lima", "Pune"]}
    finally:
        if con is not None:
            con.close()
        _stop_and_check(f)


def test_no_idempotency_record_keeps_vended_secrets(postgres, iam_s3):
    import psycopg
    from conftest import database_url
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["i"])
        secrets = []
        for name, staged in (("t", False), ("staged", True)):
            key = str(uuid.uuid4())
            r = create_table(f, "i", name, headers={**DELEGATION, "Idempotency-Key": key},
                             **{"stage-create": staged})
            body = assert_ok_json(r)
            secrets.append(body["config"]["s3.secret-access-key"])
            secrets.append(body["config"]["s3.session-token"])
            again = create_table(f, "i", name, headers={**DELEGATION, "Idempotency-Key": key},
                                 **{"stage-create": staged})
            assert again.status_code == 200, again.text
        with psycopg.connect(database_url(f)) as conn:
            rows = [str(r) for r in conn.execute("SELECT * FROM idempotency_keys").fetchall()]
        assert rows, "no idempotency key was recorded"
        for row in rows:
            for secret in secrets:
                assert secret not in row
    finally:
        _stop_and_check(f)


REFRESH = "client.refresh-credentials-endpoint"


def resolve(f: Floe, endpoint: str) -> str:
    """An endpoint a config names, resolved against the catalog URI as
    Iceberg Java's RESTUtil.resolveEndpoint does (an absolute URL as it
    is, else the URI, one '/', the path)."""
    if endpoint.startswith(("http://", "https://")):
        return endpoint
    return f.url.rstrip("/") + "/" + endpoint.lstrip("/")


def test_sts_credentials_name_their_refresh_endpoint(postgres, iam_s3):
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["fr"])
        # (No character that needs escaping in the name: moto's STS then
        # answers floe's AssumeRole with SignatureDoesNotMatch.)
        f.create_namespace(["fr", "deep~er"])
        body = assert_ok_json(create_table(f, "fr", "t", headers=DELEGATION))
        assert body["config"][REFRESH] == "v1/namespaces/fr/tables/t/credentials"
        assert body["storage-credentials"][0]["config"][REFRESH] == body["config"][REFRESH]
        for path, table, want in (
                ("fr", "t", "v1/namespaces/fr/tables/t/credentials"),
                ("fr%1Fdeep~er", "x", "v1/namespaces/fr%1Fdeep~er/tables/x/credentials")):
            if table == "x":
                assert create_table(f, path, "x").status_code == 200
            body = assert_ok_json(f.get(f"/v1/namespaces/{path}/tables/{table}",
                                        headers=DELEGATION))
            assert body["config"][REFRESH] == want
            [cred] = body["storage-credentials"]
            assert cred["config"][REFRESH] == want
            # What Iceberg's VendedCredentialsProvider does with it: GET
            # it, take the one s3 credential, which must carry the key,
            # the secret, the session token and its expiry.
            r = f.session.get(resolve(f, want), timeout=30)
            [fresh] = assert_ok_json(r)["storage-credentials"]
            assert fresh["prefix"] == cred["prefix"] and fresh["prefix"].startswith("s3")
            for k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token",
                      "s3.session-token-expires-at-ms"):
                assert fresh["config"][k] == cred["config"][k], k
        # Without the header nothing is vended, and no endpoint named.
        assert REFRESH not in assert_ok_json(f.get("/v1/namespaces/fr/tables/t"))["config"]
    finally:
        _stop_and_check(f)


def test_static_credentials_name_no_refresh_endpoint(postgres, iam_s3):
    # floe's own key does not expire, and Iceberg refuses a refreshed
    # credential without a session token: no endpoint to refresh from.
    f = start(postgres, iam_s3, "static")
    try:
        f.create_namespace(["fs"])
        body = assert_ok_json(create_table(f, "fs", "t", headers=DELEGATION))
        assert body["storage-credentials"] and REFRESH not in body["config"]
        body = assert_ok_json(f.get("/v1/namespaces/fs/tables/t", headers=DELEGATION))
        assert body["storage-credentials"] and REFRESH not in body["config"]
        assert REFRESH not in body["storage-credentials"][0]["config"]
    finally:
        _stop_and_check(f)


def test_register_answers_credentials_when_asked(postgres, iam_s3):
    import psycopg
    from conftest import database_url
    f = start(postgres, iam_s3, "sts")
    try:
        f.create_namespace(["rg"])
        made = assert_ok_json(create_table(f, "rg", "t"))
        mloc, location = made["metadata-location"], made["metadata"]["location"]
        # Dropped without purge, the files stay, to be registered again.
        assert f.delete("/v1/namespaces/rg/tables/t").status_code == 204

        reg = {"name": "again", "metadata-location": mloc}
        plain = assert_ok_json(f.post("/v1/namespaces/rg/register", json=reg))
        assert plain["config"] == {} and "storage-credentials" not in plain
        assert f.delete("/v1/namespaces/rg/tables/again").status_code == 204

        key = str(uuid.uuid4())
        r = f.post("/v1/namespaces/rg/register", json=reg,
                   headers={**DELEGATION, "Idempotency-Key": key})
        body = assert_ok_json(r)
        assert r.headers.get("Cache-Control") == "no-store"
        assert body["metadata-location"] == mloc
        [cred] = body["storage-credentials"]
        assert cred["prefix"] == location
        assert cred["config"] == body["config"]
        assert ENGINE_KEYS <= set(body["config"]), body["config"].keys()
        assert body["config"]["s3.session-token"]
        assert body["config"][REFRESH] == "v1/namespaces/rg/tables/again/credentials"
        # They reach the registered table's objects.
        got = s3_as(iam_s3, body["config"]).get_object(Bucket="lake",
                                                       Key=mloc[len("s3://lake/"):])
        assert json.loads(got["Body"].read())["location"] == location

        # The replay of the key carries no secrets, nor does the database.
        again = f.post("/v1/namespaces/rg/register", json=reg,
                       headers={**DELEGATION, "Idempotency-Key": key})
        replay = assert_ok_json(again)
        assert again.headers.get("Idempotency-Replayed") == "true"
        assert replay["metadata-location"] == mloc
        assert replay["config"] == {} and "storage-credentials" not in replay
        with psycopg.connect(database_url(f)) as conn:
            rows = [str(row) for row in conn.execute(
                "SELECT * FROM idempotency_keys").fetchall()]
        assert rows
        for row in rows:
            assert body["config"]["s3.secret-access-key"] not in row
            assert body["config"]["s3.session-token"] not in row
    finally:
        _stop_and_check(f)


def test_a_register_that_cannot_vend_registers_nothing(postgres, iam_s3):
    proxy = Proxy(iam_s3.port)
    f = start(postgres, iam_s3, "sts", FLOE_S3_STS_ENDPOINT=proxy.url)
    try:
        f.create_namespace(["rd"])
        made = assert_ok_json(create_table(f, "rd", "t"))
        assert f.delete("/v1/namespaces/rd/tables/t").status_code == 204
        proxy.down()
        reg = {"name": "t", "metadata-location": made["metadata-location"]}
        r = f.post("/v1/namespaces/rd/register", json=reg, headers=DELEGATION)
        assert_error(r, 503, "ServiceUnavailableException", "STS cannot be reached")
        assert f.head("/v1/namespaces/rd/tables/t").status_code == 404
        # Without the header it registers.
        assert f.post("/v1/namespaces/rd/register", json=reg).status_code == 200
    finally:
        proxy.down()
        _stop_and_check(f)
