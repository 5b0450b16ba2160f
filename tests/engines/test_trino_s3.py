"""Trino on an s3:// warehouse with credentials vended by floe and none of
its own.

Two runs, both with floe's ``--s3-vended-credentials=sts`` (moto's STS):

* moto's server mode checking nothing: Trino creates, inserts and
  selects. That Trino had nothing but what floe vended shows in the
  control catalog ``bare``, which does not ask floe for credentials: its
  insert finds none anywhere (AWS's default chain).
* moto with its IAM checks on (the set-up of
  tests/integration/test_vended_credentials.py: every request signed by a
  key moto knows and allowed by its policies; a role that may do anything
  in S3 for writers, one whose own policy only reads for readers): Trino
  inserts and selects with the STS credentials, and a reader's insert is
  refused by S3. Trino's CREATE TABLE cannot be run against this server:
  Trino first lists the new table's location (ListObjectsV2 with a prefix
  holding '/'), and moto, checking signatures, refuses every such listing
  with "The request signature we calculated does not match" (boto3's own
  too; docs/storage.md). The test pins that refusal and creates the table
  through floe's REST API instead.

Static vended credentials (``--s3-vended-credentials=static``) do not
reach Trino 476: it takes vended S3 credentials only with a session token,
which floe's own long-term key pair does not have (tested below too).

One Trino server of this module's own (tests/engines/trino_server.py: no
``AWS_*`` variable, an empty home) has these catalogs, each Trino's
Iceberg connector on a floe's REST endpoint with Trino's native S3 file
system:

* all: ``iceberg.catalog.type=rest``, ``iceberg.rest-catalog.uri``,
  ``iceberg.rest-catalog.security=OAUTH2`` with ``oauth2.credential`` and
  ``oauth2.server-uri`` floe's token endpoint; ``fs.native-s3.enabled=true``,
  ``s3.endpoint`` (the server's), ``s3.region=us-east-1``,
  ``s3.path-style-access=true``, and no key;
* ``floe`` (moto checking nothing), ``sts`` and ``sts_reader`` (moto
  checking; the admin client and a client with TABLE_READ):
  ``iceberg.rest-catalog.vended-credentials-enabled=true``, so Trino sends
  ``X-Iceberg-Access-Delegation: vended-credentials`` and uses the keys of
  each table's answer;
* ``static`` (moto checking nothing): the same, on a floe with
  ``--s3-vended-credentials=static``;
* ``bare`` (moto checking nothing), the control: vended credentials not enabled, so
  Trino has no credentials and its write must fail.

Trino 476 reads only the keys and the session token of floe's answer: the
endpoint, region and path-style addressing are the catalog's settings.
"""

from __future__ import annotations

import pytest

from conftest import cache_dir, it

vc = it.integration_module("test_vended_credentials")

M = "/management/v1"
BUCKET = "lake"


@pytest.fixture(scope="module")
def open_floe(postgres):
    """moto without its IAM checks and a floe vending STS credentials."""
    s3s = it.integration_module("s3_servers")
    server = s3s.S3Server()
    server.key = (s3s.KEY_ID, s3s.SECRET)
    f = None
    try:
        server.client().create_bucket(Bucket=BUCKET)
        f = vc.start(postgres, server, "sts", FLOE_AUTH="floe")
        f.authenticate()
        f.create_namespace(["trino_s3"])
        f.s3 = server
        # The same bucket from a floe vending its own key pair (static).
        f.static = vc.start(postgres, server, "static", FLOE_AUTH="floe")
        f.static.authenticate()
        f.static.create_namespace(["trino_static"])
        yield f
    finally:
        if f is not None:
            if getattr(f, "static", None) is not None:
                it._stop_and_check(f.static)
            it._stop_and_check(f)
        server.stop()


@pytest.fixture(scope="module")
def sts_floe(postgres):
    """moto (IAM checks on) and a floe vending STS credentials; the client
    ``trino-reader`` with TABLE_READ on the namespace ``trino_s3``."""
    server = vc.iam_server()
    f = None
    try:
        f = vc.start(postgres, server, "sts", FLOE_AUTH="floe")
        f.authenticate()
        f.create_namespace(["trino_s3"])
        assert f.post(f"{M}/roles", json={"name": "readers"}).status_code == 201
        grant = {"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["trino_s3"]}}
        assert f.post(f"{M}/roles/readers/grants", json=grant).status_code == 201
        f.reader = it.make_client(f, "trino-reader", roles=("readers",))
        f.s3 = server
        yield f
    finally:
        if f is not None:
            it._stop_and_check(f)
        server.stop()


@pytest.fixture(scope="module")
def trino_s3(open_floe, sts_floe, tmp_path_factory):
    from trino_server import TrinoServer

    v, m = open_floe, sts_floe
    vended = {"iceberg.rest-catalog.vended-credentials-enabled": "true"}
    fs = {"fs.native-s3.enabled": "true", "s3.endpoint": v.s3.url, "s3.region": vc.REGION,
          "s3.path-style-access": "true"}
    on_moto = {**vended, "s3.endpoint": m.s3.url}
    server = TrinoServer(cache_dir(), tmp_path_factory.mktemp("trino-s3"), v.url, it.free_port(),
                         credential=v.credential, fs=fs,
                         catalogs={
                             "sts": (m.url, oauth2(m, m.credential), on_moto),
                             "sts_reader": (m.url, oauth2(m, m.reader), on_moto),
                             "bare": (v.url, oauth2(v, v.credential)),
                             "static": (v.static.url, oauth2(v.static, v.static.credential), vended),
                         })
    # The catalog floe asks for credentials too.
    catalog = server.workdir / "etc" / "catalog" / "floe.properties"
    catalog.write_text(catalog.read_text() + "iceberg.rest-catalog.vended-credentials-enabled=true\n")
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


def oauth2(f, credential: str) -> dict:
    return {"credential": credential, "server-uri": f.url + "/v1/oauth/tokens"}


def keys_of(f) -> list[str]:
    """The table trino_s3.orders's data and metadata objects; every object
    of the bucket lies in floe's warehouse."""
    wh = f.warehouse.removeprefix(f"s3://{BUCKET}/")
    keys = objects(f)
    assert all(k.startswith(f"{wh}/") for k in keys), sorted(keys)
    return sorted(k for k in keys if k.startswith(f"{wh}/trino_s3/orders"))


def objects(f) -> set[str]:
    key_id, secret = f.s3.key
    cli = f.s3.client(key=key_id, secret=secret)
    out = set()
    for page in cli.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        out.update(o["Key"] for o in page.get("Contents", []))
    return out


def test_trino_creates_inserts_and_selects_with_vended_credentials(trino_s3, open_floe):
    from trino_server import TrinoError

    t, f = trino_s3, open_floe
    mark = len(f.log())
    t.query("CREATE TABLE floe.trino_s3.orders (id bigint, city varchar)")
    assert t.query("INSERT INTO floe.trino_s3.orders VALUES (1, 'Oslo'), (2, 'Lima')") == [[2]]
    assert t.query("INSERT INTO floe.trino_s3.orders VALUES (3, 'Pune')") == [[1]]
    assert t.query("SELECT id, city FROM floe.trino_s3.orders ORDER BY id") == [
        [1, "Oslo"], [2, "Lima"], [3, "Pune"]]
    log = f.log()[mark:]
    assert "[access] GET /v1/namespaces/trino_s3/tables/orders 200 " in log, log[-4000:]

    # The table's objects are in the bucket, under its prefix (Trino picks
    # orders-<uuid> below the namespace's location).
    keys = keys_of(f)
    data = [k for k in keys if "/data/" in k and k.endswith(".parquet")]
    meta = [k for k in keys if k.endswith(".metadata.json")]
    assert len(data) >= 2 and len(meta) >= 3, keys
    location = f.get("/v1/namespaces/trino_s3/tables/orders").json()["metadata"]["location"]
    assert all(k.startswith(location.removeprefix(f"s3://{BUCKET}/") + "/") for k in keys), keys

    # Asking floe for nothing, Trino has no credentials at all.
    with pytest.raises(TrinoError) as e:
        t.query("INSERT INTO bare.trino_s3.orders VALUES (8, 'None')")
    assert "Unable to load credentials from any of the providers" in str(e.value), e.value
    assert t.query("SELECT count(*) FROM floe.trino_s3.orders") == [[3]]


def test_trino_does_not_take_static_credentials_without_a_session_token(trino_s3, open_floe):
    from trino_server import TrinoError

    t, f = trino_s3, open_floe.static
    # floe answers its key pair (no session token) ...
    body = {"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}
    r = f.post("/v1/namespaces/trino_static/tables", json=body,
               headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert r.status_code == 200, r.text
    cfg = r.json()["config"]
    assert cfg["s3.access-key-id"] and "s3.session-token" not in cfg, sorted(cfg)
    # ... which Trino leaves unused: it has no credentials for the write.
    with pytest.raises(TrinoError) as e:
        t.query("INSERT INTO static.trino_static.t VALUES (1)")
    assert "Unable to load credentials from any of the providers" in str(e.value), e.value


def test_trino_inserts_and_selects_with_sts_credentials_and_a_reader_cannot_write(trino_s3,
                                                                                  sts_floe):
    from trino_server import TrinoError

    t, f = trino_s3, sts_floe
    # moto refuses the listing Trino's CREATE TABLE makes first.
    with pytest.raises(TrinoError) as e:
        t.query("CREATE TABLE sts.trino_s3.nope (id bigint)")
    assert "Failed checking new table's location" in str(e.value), e.value
    assert "The request signature we calculated does not match" in str(e.value), e.value

    body = {"name": "orders", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "city", "type": "string", "required": False}]}}
    assert f.post("/v1/namespaces/trino_s3/tables", json=body).status_code == 200
    assert t.query("INSERT INTO sts.trino_s3.orders VALUES (1, 'Oslo'), (2, 'Lima')") == [[2]]
    assert t.query("INSERT INTO sts.trino_s3.orders VALUES (3, 'Pune')") == [[1]]
    assert t.query("SELECT id, city FROM sts.trino_s3.orders ORDER BY id") == [
        [1, "Oslo"], [2, "Lima"], [3, "Pune"]]
    keys = keys_of(f)
    assert len([k for k in keys if "/data/" in k and k.endswith(".parquet")]) >= 2, keys

    # The reader reads with read-only credentials; S3 refuses its write.
    assert t.query("SELECT count(*) FROM sts_reader.trino_s3.orders") == [[3]]
    with pytest.raises(TrinoError) as e:
        t.query("INSERT INTO sts_reader.trino_s3.orders VALUES (9, 'Evil')")
    text = str(e.value)
    assert "Access Denied" in text and "Status Code: 403" in text, text
    assert t.query("SELECT count(*) FROM sts.trino_s3.orders") == [[3]]
