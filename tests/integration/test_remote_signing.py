"""S3 remote signing: an engine that asks for it (X-Iceberg-Access-Delegation:
remote-signing) gets a table's signer endpoint in the load answer and has
each S3 request signed by floe with floe's own credentials, for the table's
own objects only, with the methods its privileges allow and only the
headers that act on the object named. The S3 server (moto's server mode)
checks every request's signature against its IAM users, so a request the
signer did not sign right is refused by S3 itself. PyIceberg (FsspecFileIO,
the FileIO with a remote signer) creates, writes and reads a table holding
no storage credentials of its own.

The attacks of a principal who may write one table (a signed copy of
another table's object, a DeleteObjects whose body is swapped after
signing) are made against versitygw, which checks the payload hash and
refuses x-amz-* headers left out of a signature, as AWS S3 does (moto
does neither): each signed request floe answers is sent to it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog import load_catalog

from s3_servers import REGION, S3Server, VersityServer, s3_env
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
         ns: str = "rs", **extra) -> requests.Response:
    body = {"region": REGION, "uri": uri, "method": method, "headers": headers or {}}
    body.update(extra)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return f.post(f"/v1/namespaces/{ns}/tables/{table}/sign", json=body, headers=auth)


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


def test_only_headers_that_act_on_the_named_object_are_signed(signing, s3_with_auth):
    f = signing
    s3 = s3_with_auth
    put = obj(s3, "wh/rs/t/data/x.parquet")
    # A copy reads a second object; the rest are refused because floe does
    # not know them to act on the named object only: every one is 403,
    # naming the header, whatever its case.
    refused = {
        "x-amz-copy-source": "/signed/wh/rs/t2/data/x.parquet",
        "X-Amz-Copy-Source-Range": "bytes=0-9",
        "x-amz-copy-source-if-match": '"abc"',
        "x-amz-metadata-directive": "REPLACE",
        "x-amz-tagging-directive": "COPY",
        "x-amz-source-expected-bucket-owner": "123456789012",
        "x-amz-rename-source": "/signed/wh/rs/t2/data/x.parquet",
        "x-amz-website-redirect-location": "/wh/rs/t2/data/x.parquet",
        "x-amz-grant-read": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"',
        "x-amz-grant-full-control": "id=123",
        "x-amz-object-lock-mode": "COMPLIANCE",
        "x-amz-object-lock-retain-until-date": "2099-01-01T00:00:00Z",
        "x-amz-bypass-governance-retention": "true",
        "x-amz-some-future-header": "x",
        "x-minio-extract": "true",
        # MinIO unpacks an archive carrying it into objects of any key.
        "X-Amz-Meta-Snowball-Auto-Extract": "true",
        "x-amz-meta-minio-snowball-prefix": "wh/rs/t2/",
        "X-Custom": "x",
    }
    for name, value in refused.items():
        r = sign(f, "t", "PUT", put, headers={name: [value]})
        assert_error(r, 403, "ForbiddenException", name.lower())
    r = sign(f, "t", "PUT", put, headers={"x-amz-copy-source": ["/signed/wh/rs/t2/x"]})
    assert_error(r, 403, "ForbiddenException", ("floe signs no copy", "names a second object"))
    # Only the canned ACLs that keep an object to its owner (floe's
    # credentials); none that lets anyone else read or write it.
    for acl in ("public-read", "public-read-write", "authenticated-read", "aws-exec-read"):
        r = sign(f, "t", "PUT", put, headers={"x-amz-acl": [acl]})
        assert_error(r, 403, "ForbiddenException", "private")
    r = sign(f, "t", "PUT", put, headers={"x-amz-acl": ["private", "public-read"]})
    assert_error(r, 403, "ForbiddenException")
    # Nor a change of an object's ACL or lock through its subresource.
    for sub in ("acl", "retention", "legal-hold"):
        r = sign(f, "t", "PUT", obj(s3, "wh/rs/t/data/x.parquet", sub))
        assert_error(r, 403, "ForbiddenException", sub)
    assert_ok_json(sign(f, "t", "GET", obj(s3, "wh/rs/t/data/x.parquet", "acl")))
    assert_ok_json(sign(f, "t", "PUT", obj(s3, "wh/rs/t/data/x.parquet", "tagging")))

    # What PyIceberg (botocore) and Iceberg Java (AWS SDK v2) send: signed,
    # but for the headers a client or proxy may change on the way.
    engine = {"User-Agent": ["Botocore/1.40"], "Expect": ["100-continue"],
              "x-amz-checksum-crc32": ["AAAAAA=="], "x-amz-sdk-checksum-algorithm": ["CRC32"],
              "Content-Type": ["application/octet-stream"],
              "Content-MD5": ["1B2M2Y8AsgTpgAmY7PhCfg=="],
              "amz-sdk-invocation-id": ["1"], "amz-sdk-request": ["attempt=1; max=3"],
              "traceparent": ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
              "x-amz-server-side-encryption": ["AES256"], "x-amz-storage-class": ["STANDARD"],
              "x-amz-meta-origin": ["spark"], "x-amz-tagging": ["k=v"],
              "x-amz-acl": ["bucket-owner-full-control"], "If-None-Match": ["*"]}
    added = assert_ok_json(sign(f, "t", "PUT", put, headers=engine))["headers"]
    signed = re.search(r"SignedHeaders=([^,]+)", added["Authorization"][0]).group(1).split(";")
    assert signed == sorted(["content-md5", "content-type", "host", "if-none-match",
                             "x-amz-acl", "x-amz-checksum-crc32", "x-amz-content-sha256",
                             "x-amz-date", "x-amz-meta-origin", "x-amz-sdk-checksum-algorithm",
                             "x-amz-server-side-encryption", "x-amz-storage-class",
                             "x-amz-tagging"]), signed
    get = {"Range": ["bytes=0-9"], "If-Match": ['"abc"'], "x-amz-checksum-mode": ["ENABLED"],
           "x-amz-te": ["append-md5"]}
    assert_ok_json(sign(f, "t", "GET", put, headers=get))


# --- Attacks by a writer of one table, against an S3 server that checks ---

@pytest.fixture(scope="module")
def gateway():
    """versitygw holding the bucket of the warehouse and another one."""
    server = VersityServer()
    cli = server.client()
    cli.create_bucket(Bucket=BUCKET)
    cli.create_bucket(Bucket="elsewhere")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gw_signing(postgres, gateway):
    """floe signing for a warehouse on versitygw: tables a.t and a.t2, and
    b.other in another namespace; .writer is the token of a principal who
    may write a.t (and so read it) and nothing else."""
    env = s3_env(gateway.url, f"s3://{BUCKET}/wh", AWS_ACCESS_KEY_ID=gateway.key,
                 AWS_SECRET_ACCESS_KEY=gateway.secret, FLOE_AUTH="floe",
                 FLOE_S3_REMOTE_SIGNING="on")
    f = _start_floe_on_fresh_db(postgres, env=env)
    f.authenticate()
    f.create_namespace(["a"])
    f.create_namespace(["b"])
    for ns, name in (("a", "t"), ("a", "t2"), ("b", "other")):
        r = f.post(f"/v1/namespaces/{ns}/tables", json=table_body(name))
        assert r.status_code == 200, r.text
    grant(f, "r_one_table", "TABLE_WRITE", ["a"], "t")
    f.writer = client_token(f, make_client(f, "onetable", roles=("r_one_table",)))
    yield f
    _stop_and_check(f)


def send(answer: dict, method: str, headers=None, data: bytes = b"") -> requests.Response:
    """Makes a signed request as an engine does: its own headers, then
    those floe answered."""
    h = {k: ",".join(v) for k, v in (headers or {}).items()}
    h.update({k: v[0] for k, v in answer["headers"].items()})
    return requests.request(method, answer["uri"], headers=h, data=data, timeout=30)


def exists(s3, bucket: str, key: str) -> bool:
    try:
        s3.client().head_object(Bucket=bucket, Key=key)
        return True
    except Exception:  # noqa: BLE001 (botocore's 404)
        return False


def md5_of(body: bytes) -> str:
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def test_a_writer_of_one_table_cannot_copy_another_object_into_it(gw_signing, gateway):
    f = gw_signing
    s3 = gateway
    cli = s3.client()
    sources = {"a sibling table": (BUCKET, "wh/a/t2/data/secret.parquet"),
               "another namespace": (BUCKET, "wh/b/other/data/secret.parquet"),
               "another bucket": ("elsewhere", "secret.parquet")}
    for bucket, key in sources.values():
        cli.put_object(Bucket=bucket, Key=key, Body=f"secret of {bucket}/{key}".encode())
    target = "wh/a/t/data/stolen.parquet"
    # A multipart upload of the table's own object is a write floe signs.
    r = sign(f, "t", "POST", obj(s3, target, "uploads"), token=f.writer, ns="a")
    up = send(assert_ok_json(r), "POST")
    assert up.status_code == 200, up.text
    upload_id = re.search(r"<UploadId>([^<]+)</UploadId>", up.text).group(1)

    attempts = []
    for what, (bucket, key) in sources.items():
        attempts.append((f"CopyObject of {what}", obj(s3, target),
                         {"x-amz-copy-source": [f"/{bucket}/{key}"]}))
        attempts.append((f"CopyObject of {what} (any case)", obj(s3, target),
                         {"X-Amz-Copy-Source": [f"{bucket}/{key}"]}))
        attempts.append((f"UploadPartCopy of {what}",
                         obj(s3, target, f"partNumber=1&uploadId={upload_id}"),
                         {"x-amz-copy-source": [f"{bucket}/{key}"],
                          "x-amz-copy-source-range": ["bytes=0-9"]}))
    answers = []
    for what, uri, headers in attempts:
        r = sign(f, "t", "PUT", uri, token=f.writer, headers=headers, ns="a")
        if r.status_code == 200:  # a signature: the engine makes the copy
            send(r.json(), "PUT", headers)
        answers.append((what, r))
    # Nothing was copied into the writer's table: no object, no part.
    assert not exists(s3, BUCKET, target), "another object was copied into the table"
    parts = cli.list_parts(Bucket=BUCKET, Key=target, UploadId=upload_id).get("Parts", [])
    assert parts == [], "another object was copied into a part of the table's upload"
    for what, r in answers:
        err = assert_error(r, 403, "ForbiddenException", "x-amz-copy-source")
        assert "copy" in err["message"], (what, err)
    # The sources are intact.
    for bucket, key in sources.values():
        body = cli.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert body == f"secret of {bucket}/{key}".encode()

    # The header added after signing a plain PUT: the S3 server refuses an
    # x-amz-* header the signature does not cover (AWS S3 and versitygw do;
    # floe's guarantee rests on it, docs/storage.md).
    r = sign(f, "t", "PUT", obj(s3, target), token=f.writer, ns="a")
    got = send(assert_ok_json(r), "PUT", {"x-amz-copy-source": [f"/{BUCKET}/wh/a/t2/data/secret.parquet"]})
    assert got.status_code == 403 and "x-amz-copy-source" in got.text, got.text
    assert not exists(s3, BUCKET, target)
    r = sign(f, "t", "DELETE", obj(s3, target, f"uploadId={upload_id}"), token=f.writer, ns="a")
    assert send(assert_ok_json(r), "DELETE").status_code == 204


def test_a_signed_delete_holds_only_for_the_body_floe_checked(gw_signing, gateway):
    f = gw_signing
    s3 = gateway
    cli = s3.client()
    own = "wh/a/t/data/junk.parquet"
    others = ["wh/a/t2/data/keep.parquet", "wh/b/other/data/keep.parquet"]
    delete = obj(s3, "", "delete")

    def plant():
        for key in [own, *others]:
            cli.put_object(Bucket=BUCKET, Key=key, Body=b"x")

    def doc(*keys) -> bytes:
        return ("<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys)
                + "</Delete>").encode()

    innocent = doc(own)
    swapped = doc(*others)
    sha = hashlib.sha256(innocent).hexdigest()

    # The engine has the innocent body signed, then sends another (with
    # that body's Content-MD5, which S3 wants and which it left unsigned).
    # floe signs the innocent body's SHA-256: S3 refuses the other body.
    plant()
    r = sign(f, "t", "POST", delete, token=f.writer, ns="a", body=innocent.decode())
    answer = assert_ok_json(r)
    got = send(answer, "POST", {"Content-MD5": [md5_of(swapped)]}, swapped)
    assert all(exists(s3, BUCKET, k) for k in others), \
        f"a body floe never saw deleted another table's objects: {got.text}"
    assert got.status_code == 400 and "XAmzContentSHA256Mismatch" in got.text, got.text
    assert answer["headers"]["x-amz-content-sha256"] == [sha]
    assert "x-amz-content-sha256" in answer["headers"]["Authorization"][0]

    # The engine's own payload hash, Content-MD5 or UNSIGNED-PAYLOAD, when
    # not the checked body's, is refused: the signature would hold for
    # another body.
    lies = {"UNSIGNED-PAYLOAD": {"x-amz-content-sha256": ["UNSIGNED-PAYLOAD"]},
            "the other body's hash": {"x-amz-content-sha256": [hashlib.sha256(swapped).hexdigest()]},
            "the other body's MD5": {"Content-MD5": [md5_of(swapped)]}}
    for what, headers in lies.items():
        plant()
        r = sign(f, "t", "POST", delete, token=f.writer, ns="a", body=innocent.decode(),
                 headers=headers)
        if r.status_code == 200:
            send(r.json(), "POST", {"Content-MD5": [md5_of(swapped)], **headers}, swapped)
        assert all(exists(s3, BUCKET, k) for k in others), \
            f"signed with {what}, another body deleted another table's objects"
        err = assert_error(r, 403, "ForbiddenException", ("body floe checked", "body it checked"))
        assert "DeleteObjects" in err["message"] or "Content-MD5" in err["message"], err

    # The checked body itself, as signed: S3 deletes the table's own object.
    plant()
    r = sign(f, "t", "POST", delete, token=f.writer, ns="a", body=innocent.decode(),
             headers={"Content-MD5": [md5_of(innocent)], "x-amz-content-sha256": [sha]})
    got = send(assert_ok_json(r), "POST", {"Content-MD5": [md5_of(innocent)],
                                          "x-amz-content-sha256": [sha]}, innocent)
    assert got.status_code == 200, got.text
    assert not exists(s3, BUCKET, own)
    assert all(exists(s3, BUCKET, k) for k in others)


def test_a_delete_body_hides_no_key_from_floe(gw_signing, gateway):
    """Keys S3 reads but floe would not see: text around an element inside
    Key (an XML reader keeps the text and drops the element), and dot or
    empty segments, refused in a body as in a URI's path and a listing's
    prefix."""
    f = gw_signing
    s3 = gateway
    cli = s3.client()
    sibling = "wh/a/t2/data/keep.parquet"
    delete = obj(s3, "", "delete")
    bodies = {
        "an element inside Key": "<Object><Key>wh/a/t2/data/<i>x</i>keep.parquet</Key></Object>",
        "an empty element inside Key": "<Object><Key>wh/a/t2/<i/>data/keep.parquet</Key></Object>",
        "a '..' segment": "<Object><Key>wh/a/t/../t2/data/keep.parquet</Key></Object>",
        "an empty segment": "<Object><Key>wh/a/t//data/x.parquet</Key></Object>",
        "a '.' segment": "<Object><Key>wh/a/t/./data/x.parquet</Key></Object>",
        "a key spelt otherwise": "<Object><key>wh/a/t2/data/keep.parquet</key></Object>",
    }
    for what, extra in bodies.items():
        cli.put_object(Bucket=BUCKET, Key=sibling, Body=b"x")
        body = ("<Delete><Object><Key>wh/a/t/data/junk.parquet</Key></Object>" + extra
                + "</Delete>").encode()
        r = sign(f, "t", "POST", delete, token=f.writer, ns="a", body=body.decode(),
                 headers={"Content-MD5": [md5_of(body)]})
        if r.status_code == 200:
            send(r.json(), "POST", {"Content-MD5": [md5_of(body)]}, body)
        assert exists(s3, BUCKET, sibling), f"{what}: another table's object was deleted"
        assert_error(r, 400, "BadRequestException")
    r = sign(f, "t", "POST", delete, token=f.writer, ns="a",
             body="<Delete><Object><Key>wh/a/t/../t2/x</Key></Object></Delete>")
    assert_error(r, 400, "BadRequestException", "'..' segment")
    # A listing's prefix likewise (a trailing '/' is a prefix's own).
    for prefix in ("wh/a/t/../t2/", "wh/a/t//", "wh/a/t/./data/"):
        r = sign(f, "t", "GET", obj(s3, "", f"list-type=2&prefix={prefix}"), token=f.writer,
                 ns="a")
        assert_error(r, 403, "ForbiddenException", "prefix")
    assert_ok_json(sign(f, "t", "GET", obj(s3, "", "list-type=2&prefix=wh/a/t/data/"),
                        token=f.writer, ns="a"))
