"""S3 remote signing: an engine that asks for it (X-Iceberg-Access-Delegation:
remote-signing) gets a table's signer endpoint in the load answer and has
each S3 request signed by floe with floe's own credentials, for the table's
own objects only and with the methods its privileges allow. The S3 server
(moto's server mode) checks every request's signature against its IAM
users, so a request the signer did not sign right is refused by S3 itself.
PyIceberg (FsspecFileIO, the FileIO with a remote signer) creates, writes
and reads a table holding no storage credentials of its own.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog import load_catalog

from s3_servers import REGION, S3Server, s3_env
from conftest import (
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    client_token,
    make_client,
)
from test_authorization import grant
from test_s3_warehouse import s3_with_auth  # noqa: F401 (a fixture)

BUCKET = "signed"
DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials, remote-signing"}
SIGNING_KEYS = {"s3.remote-signing-enabled", "s3.signer", "s3.signer.endpoint",
                "s3.endpoint", "s3.path-style-access", "client.region"}


def floe_env(s3: S3Server, **extra) -> dict:
    key_id, secret = s3.key
    return s3_env(s3.url, f"s3://{BUCKET}/wh", AWS_ACCESS_KEY_ID=key_id,
                  AWS_SECRET_ACCESS_KEY=secret, FLOE_AUTH="floe", **extra)


@pytest.fixture(scope="module")
def signing(postgres, s3_with_auth):
    f = _start_floe_on_fresh_db(postgres, env=floe_env(s3_with_auth,
                                                       FLOE_S3_REMOTE_SIGNING="on"))
    f.authenticate()
    f.create_namespace(["rs"])
    for name in ("t", "t2"):
        r = f.post("/v1/namespaces/rs/tables", json=table_body(name))
        assert r.status_code == 200, r.text
    yield f
    _stop_and_check(f)


def table_body(name: str, **extra) -> dict:
    body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}
    body.update(extra)
    return body


def sign(f, table: str, method: str, uri: str, token: str | None = None, headers=None,
         **extra) -> requests.Response:
    body = {"region": REGION, "uri": uri, "method": method, "headers": headers or {}}
    body.update(extra)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return f.post(f"/v1/namespaces/rs/tables/{table}/sign", json=body, headers=auth)


def obj(s3: S3Server, key: str, query: str = "") -> str:
    return f"{s3.url}/{BUCKET}/{key}" + (f"?{query}" if query else "")


def test_load_and_create_answer_the_signer_config(signing, s3_with_auth):
    f = signing
    cfg = assert_ok_json(f.get("/v1/namespaces/rs/tables/t", headers=DELEGATION))["config"]
    assert SIGNING_KEYS <= set(cfg)
    assert cfg["s3.remote-signing-enabled"] == "true"
    assert cfg["s3.signer"] == "S3V4RestSigner"
    # Relative to the catalog's URI, as PyIceberg and Iceberg Java resolve it.
    assert cfg["s3.signer.endpoint"] == "v1/namespaces/rs/tables/t/sign"
    assert cfg["s3.endpoint"] == s3_with_auth.url
    assert cfg["s3.path-style-access"] == "true"
    assert cfg["client.region"] == REGION
    # Not asked for: nothing about signing, and no credential of floe's.
    plain = assert_ok_json(f.get("/v1/namespaces/rs/tables/t"))
    assert not SIGNING_KEYS & set(plain["config"])
    assert s3_with_auth.key[1] not in json.dumps(plain)
    assert s3_with_auth.key[1] not in json.dumps(cfg)

    r = f.post("/v1/namespaces/rs/tables", json=table_body("created"), headers=DELEGATION)
    assert r.status_code == 200, r.text
    assert r.json()["config"]["s3.signer.endpoint"] == "v1/namespaces/rs/tables/created/sign"
    r = f.post("/v1/namespaces/rs/tables", json=table_body("staged", **{"stage-create": True}),
               headers=DELEGATION)
    assert r.status_code == 200, r.text
    assert r.json()["config"]["s3.remote-signing-enabled"] == "true"
    # A nested namespace is written as the path has it (levels joined by %1F).
    f.create_namespace(["rs", "deep er"])
    r = f.post("/v1/namespaces/rs%1Fdeep%20er/tables", json=table_body("x"), headers=DELEGATION)
    assert r.status_code == 200, r.text
    assert r.json()["config"]["s3.signer.endpoint"] == \
        "v1/namespaces/rs%1Fdeep%20er/tables/x/sign"


def test_pyiceberg_writes_and_reads_with_no_storage_credentials(signing, s3_with_auth,
                                                                 monkeypatch):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    f = signing
    # PyIceberg 0.12's FsspecFileIO registers its signer on each thread's
    # S3 client as that thread first uses it, and a request racing the
    # registration goes out unsigned (S3 refuses it): one worker thread.
    from pyiceberg.utils.concurrent import ExecutorFactory
    monkeypatch.setenv("PYICEBERG_MAX_WORKERS", "1")
    monkeypatch.setattr(ExecutorFactory, "_instance", None)
    cat = load_catalog("signing", **{
        "type": "rest",
        "uri": f.url,
        "token": f.token,
        "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
        "header.X-Iceberg-Access-Delegation": "remote-signing",
    })
    cat.create_namespace("engine")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
    table = cat.create_table("engine.orders", schema=schema)
    rows = pa.table({"id": [1, 2, 3], "city": ["Oslo", "Lima", "Pune"]}, schema=schema)
    table.append(rows)
    table.append(rows.slice(0, 1))
    again = cat.load_table("engine.orders")
    got = again.scan().to_arrow().sort_by("id").to_pydict()
    assert got == {"id": [1, 1, 2, 3], "city": ["Oslo", "Oslo", "Lima", "Pune"]}

    # The data files are in the bucket, under the table's prefix: written by
    # PyIceberg with floe's signatures (moto checked each one). (moto's
    # signature check refuses a listing with a '/' in its prefix, boto3's
    # own too: the files are looked at one by one.)
    key_id, secret = s3_with_auth.key
    s3cli = s3_with_auth.client(key=key_id, secret=secret)
    files = [t.file.file_path for t in again.scan().plan_files()]
    assert len(files) == 2
    for path in files:
        assert path.startswith(f"s3://{BUCKET}/wh/engine/orders/data/")
        s3cli.head_object(Bucket=BUCKET, Key=path.removeprefix(f"s3://{BUCKET}/"))
    # Signatures and floe's credentials are never logged.
    log = f.log()
    assert "Signature=" not in log and secret not in log


def test_a_signed_request_is_accepted_by_the_checking_server(signing, s3_with_auth):
    f = signing
    loc = assert_ok_json(f.get("/v1/namespaces/rs/tables/t"))["metadata-location"]
    key = loc.removeprefix(f"s3://{BUCKET}/")
    # Unsigned, S3 refuses it: the server does check.
    assert requests.get(obj(s3_with_auth, key), timeout=30).status_code == 403
    r = sign(f, "t", "GET", obj(s3_with_auth, key), headers={"Range": ["bytes=0-0"]})
    answer = assert_ok_json(r)
    assert r.headers["Cache-Control"] == "no-store"
    assert set(answer) == {"uri", "headers"}
    added = {k: v[0] for k, v in answer["headers"].items()}
    assert added["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    assert "range" in added["Authorization"]
    assert added["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    got = requests.get(answer["uri"], headers={"Range": "bytes=0-0", **added}, timeout=30)
    assert got.status_code == 206, got.text
    assert got.content == b"{"
    # A header changed after signing breaks the signature.
    got = requests.get(answer["uri"], headers={"Range": "bytes=0-1", **added}, timeout=30)
    assert got.status_code == 403


def test_objects_outside_the_table_are_refused(signing, s3_with_auth):
    f = signing
    s3 = s3_with_auth
    for uri in (obj(s3, "wh/rs/t2/data/x.parquet"),   # another table
                obj(s3, "wh/rs/t"),                    # the table's prefix itself
                obj(s3, "wh/rs/tx/data/x.parquet"),
                obj(s3, "wh/x.parquet"),
                f"{s3.url}/other-bucket/wh/rs/t/data/x.parquet",
                f"http://localhost:1/{BUCKET}/wh/rs/t/data/x.parquet",
                obj(s3, "", "list-type=2&prefix=wh/rs/t"),    # would list t2 too
                obj(s3, "", "list-type=2"),
                obj(s3, "", "acl"),
                obj(s3, "", "")):
        r = sign(f, "t", "GET", uri)
        assert_error(r, 403, "ForbiddenException")
    msg = sign(f, "t", "GET", obj(s3, "wh/rs/t2/data/x.parquet")).json()["error"]["message"]
    assert "wh/rs/t/" in msg and "wh/rs/t2/data/x.parquet" in msg
    # PATCH and OPTIONS are never signed.
    assert_error(sign(f, "t", "PATCH", obj(s3, "wh/rs/t/data/x")), 403, "ForbiddenException")
    # The table's own objects and listings are.
    assert_ok_json(sign(f, "t", "PUT", obj(s3, "wh/rs/t/data/x.parquet")))
    assert_ok_json(sign(f, "t", "GET", obj(s3, "", "list-type=2&prefix=wh%2Frs%2Ft%2F")))
    # DeleteObjects: every key of its body is checked, and a body is needed.
    delete = obj(s3, "", "delete")
    inside = ("<Delete><Object><Key>wh/rs/t/data/a</Key></Object>"
              "<Object><Key>wh/rs/t/data/b</Key></Object></Delete>")
    assert_ok_json(sign(f, "t", "POST", delete, body=inside))
    outside = inside.replace("wh/rs/t/data/b", "wh/rs/t2/data/b")
    r = sign(f, "t", "POST", delete, body=outside)
    assert_error(r, 403, "ForbiddenException")
    assert "wh/rs/t2/data/b" in r.json()["error"]["message"]
    assert_error(sign(f, "t", "POST", delete), 403, "ForbiddenException")
    # A table that does not exist has nothing to sign.
    assert_error(sign(f, "nope", "GET", obj(s3, "wh/rs/nope/x")), 404, "NoSuchTableException")


def test_a_reader_gets_reads_signed_but_not_writes(signing, s3_with_auth):
    f = signing
    s3 = s3_with_auth
    grant(f, "r_signreader", "TABLE_READ", ["rs"], "t")
    reader = client_token(f, make_client(f, "signreader", roles=("r_signreader",)))
    assert_ok_json(sign(f, "t", "GET", obj(s3, "wh/rs/t/data/x.parquet"), token=reader))
    assert_ok_json(sign(f, "t", "HEAD", obj(s3, "wh/rs/t/data/x.parquet"), token=reader))
    for method in ("PUT", "POST", "DELETE"):
        r = sign(f, "t", method, obj(s3, "wh/rs/t/data/x.parquet"), token=reader)
        assert_error(r, 403, "ForbiddenException", "lacks TABLE_WRITE on table rs.t")
    # Another table of the namespace: not even a read.
    r = sign(f, "t2", "GET", obj(s3, "wh/rs/t2/data/x.parquet"), token=reader)
    assert_error(r, 403, "ForbiddenException", "lacks TABLE_READ")
    # Not authenticated: 401, as on every route.
    r = requests.post(f"{f.url}/v1/namespaces/rs/tables/t/sign", timeout=30, json={
        "region": REGION, "uri": obj(s3, "wh/rs/t/x"), "method": "GET", "headers": {}})
    assert_error(r, 401, "NotAuthorizedException")


def test_malformed_sign_requests_are_bad_requests(signing, s3_with_auth):
    f = signing
    s3 = s3_with_auth
    good = obj(s3, "wh/rs/t/data/x.parquet")
    url = f"/v1/namespaces/rs/tables/t/sign"
    for body in ({"uri": good, "method": "GET", "headers": {}},            # no region
                 {"region": REGION, "method": "GET", "headers": {}},       # no uri
                 {"region": REGION, "uri": good, "method": "GET"},         # no headers
                 {"region": REGION, "uri": good, "method": "FETCH", "headers": {}},
                 {"region": REGION, "uri": good, "method": "GET", "headers": []},
                 {"region": REGION, "uri": good, "method": "GET", "headers": {"a": [1]}},
                 {"region": REGION, "uri": good, "method": "GET", "headers": {"a b": ["x"]}},
                 {"region": REGION, "uri": good, "method": "GET",
                  "headers": {"x-amz-security-token": ["mine"]}},
                 {"region": REGION, "uri": good, "method": "GET",
                  "headers": {f"x-h{i}": ["v"] for i in range(100)}},
                 {"region": REGION, "uri": good, "method": "GET",
                  "headers": {"x": ["v" * 9000]}},
                 {"region": REGION, "uri": good, "method": "GET", "headers": {},
                  "provider": "gcs"},
                 {"region": REGION, "uri": "not a uri", "method": "GET", "headers": {}},
                 {"region": REGION, "uri": obj(s3, "wh/rs/t/%zz"), "method": "GET",
                  "headers": {}},
                 {"region": REGION, "uri": obj(s3, "wh/rs/t/%00x"), "method": "GET",
                  "headers": {}},
                 {"region": REGION, "uri": obj(s3, "wh/rs/t/../t2/x"), "method": "GET",
                  "headers": {}},
                 {"region": REGION, "uri": obj(s3, "wh/rs/t//x"), "method": "GET",
                  "headers": {}},
                 {"region": REGION, "uri": good + "#frag", "method": "GET", "headers": {}},
                 {"region": REGION, "uri": good + "?" + "&".join(["a=b"] * 40),
                  "method": "GET", "headers": {}},
                 {"region": REGION, "uri": "x" * 9000, "method": "GET", "headers": {}},
                 [1, 2]):
        r = f.post(url, json=body)
        assert_error(r, 400, "BadRequestException")
    r = f.post(url, data=b"{not json", headers={"Content-Type": "application/json"})
    assert_error(r, 400, "BadRequestException")
    assert "x-amz-security-token" in f.post(url, json={
        "region": REGION, "uri": good, "method": "GET",
        "headers": {"X-Amz-Security-Token": ["mine"]}}).json()["error"]["message"]


def test_with_the_mode_off_nothing_is_signed(postgres, s3_with_auth):
    f = _start_floe_on_fresh_db(postgres, env=floe_env(s3_with_auth))
    try:
        f.authenticate()
        f.create_namespace(["off"])
        r = f.post("/v1/namespaces/off/tables", json=table_body("t"), headers=DELEGATION)
        assert r.status_code == 200, r.text
        assert not SIGNING_KEYS & set(r.json()["config"])
        cfg = assert_ok_json(f.get("/v1/namespaces/off/tables/t", headers=DELEGATION))["config"]
        assert not SIGNING_KEYS & set(cfg)
        r = f.post("/v1/namespaces/off/tables/t/sign", json={
            "region": REGION, "uri": f"{s3_with_auth.url}/{BUCKET}/wh/off/t/x",
            "method": "GET", "headers": {}})
        assert_error(r, 406, "UnsupportedOperationException", "remote signing is off")
    finally:
        _stop_and_check(f)


def test_the_mode_needs_an_s3_warehouse(tmp_path):
    from conftest import run_floe
    r = run_floe([], env={"FLOE_S3_REMOTE_SIGNING": "on",
                          "FLOE_WAREHOUSE": f"file://{tmp_path}"})
    assert r.returncode == 2, r.stderr
    assert "--s3-remote-signing" in r.stderr and "s3:// warehouse" in r.stderr
    r = run_floe([], env={"FLOE_S3_REMOTE_SIGNING": "yes"})
    assert r.returncode == 2, r.stderr
    assert "expected on or off" in r.stderr
