"""HTTP details clients and browsers rely on: the ETag of create and commit
answers, Retry-After on 503, HEAD wherever GET is served, the metrics
report's 204, CORS for browser clients, and /v1/config's warehouse."""

from __future__ import annotations

import socket
import uuid

import pytest

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    ns_path,
)


@pytest.fixture
def table(floe, uniq):
    ns = f"hd_{uniq}"
    floe.create_namespace([ns])
    t = TableHandle(floe, [ns], "t")
    t.create()
    return t


# --- ETag ---

# A gzip answer's tag ends in ";gzip" (another representation of the same
# metadata); the create and commit answers are plain, so loads compared
# with them ask for the plain answer. If-None-Match matches either form.
PLAIN = {"Accept-Encoding": "identity"}

def test_create_answers_the_etag_a_load_gives(floe, uniq):
    ns = f"hd_{uniq}"
    floe.create_namespace([ns])
    r = floe.post(f"/v1/namespaces/{ns_path([ns])}/tables",
                  json={"name": "t", "schema": TableHandle.SCHEMA})
    assert_ok_json(r)
    etag = r.headers.get("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"'), r.headers
    load = floe.get(f"/v1/namespaces/{ns_path([ns])}/tables/t", headers=PLAIN)
    assert load.headers.get("ETag") == etag
    # The client can ask "changed since the create?" and is told no.
    again = floe.get(f"/v1/namespaces/{ns_path([ns])}/tables/t", headers={"If-None-Match": etag})
    assert again.status_code == 304, again.text


def test_commit_answers_the_etag_of_the_new_metadata(floe, table):
    before = floe.get(table.url, headers=PLAIN).headers["ETag"]
    r = table.commit([{"action": "set-properties", "updates": {"owner": "alice"}}])
    assert_ok_json(r)
    etag = r.headers.get("ETag")
    assert etag and etag != before
    assert floe.get(table.url, headers=PLAIN).headers.get("ETag") == etag
    # A load with the old tag gets the new metadata, with the new tag no body.
    assert floe.get(table.url, headers={"If-None-Match": before}).status_code == 200
    assert floe.get(table.url, headers={"If-None-Match": etag}).status_code == 304


def test_register_answers_an_etag_and_a_staged_create_none(floe, table, uniq):
    loc = table.load()["metadata-location"]
    assert floe.delete(table.url).status_code == 204
    r = floe.post(f"{table.ns_url}/register", json={"name": "again", "metadata-location": loc})
    assert_ok_json(r)
    assert r.headers.get("ETag") == floe.get(f"{table.ns_url}/tables/again",
                                                  headers=PLAIN).headers["ETag"]
    staged = floe.post(f"{table.ns_url}/tables",
                       json={"name": "staged", "schema": TableHandle.SCHEMA, "stage-create": True})
    assert_ok_json(staged)
    assert "ETag" not in staged.headers, "a staged table has no metadata file to tag"


def test_a_replayed_commit_carries_the_same_etag(floe, table):
    key = str(uuid.uuid4())
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    first = floe.post(table.url, json=body, headers={"Idempotency-Key": key})
    assert_ok_json(first)
    again = floe.post(table.url, json=body, headers={"Idempotency-Key": key})
    assert_ok_json(again)
    assert again.headers.get("Idempotency-Replayed") == "true"
    assert again.headers.get("ETag") == first.headers["ETag"] == floe.get(table.url, headers=PLAIN).headers["ETag"]


# --- Retry-After ---

def test_a_503_before_the_body_is_read_has_retry_after(floe_factory, postgres):
    """The request-body budget answers before reading the body, on a path of
    its own; it too carries Retry-After (the other 503s: test_resources.py,
    test_daemon.py, test_idempotency.py, test_outcomes.py)."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--max-pending-body-bytes=1048576"])
    sock = socket.create_connection(("127.0.0.1", f.port), timeout=10)
    try:
        sock.sendall(b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2000000\r\n\r\n")
        head = sock.recv(65536).decode("latin-1")
    finally:
        sock.close()
    assert head.split(" ", 2)[1] == "503", head
    assert "\r\nRetry-After: 1\r\n" in head, head


# --- HEAD ---

@pytest.mark.parametrize("path", [
    "/v1/config",
    "/v1/namespaces",
    "{ns}/tables",
    "{t}/refs",
    "{t}/refs/main",
    "{t}/wap",
    "{t}/credentials",
    "/v1/audit-hooks",
    "/v1/audit-log",
    "/v1/purges",
    "/health",
    "/ready",
])
def test_head_answers_the_get_status_and_headers_without_a_body(floe, table, path):
    url = path.format(ns=table.ns_url, t=table.url)
    get = floe.get(url)
    head = floe.head(url)
    assert head.status_code == get.status_code, (url, head.status_code, get.status_code)
    assert head.content == b""
    for h in ("Content-Type", "ETag", "Content-Length"):
        assert head.headers.get(h) == get.headers.get(h), (url, h, head.headers, get.headers)


def test_head_sends_no_body_on_the_wire(floe, table):
    """Two HEADs and a GET on one connection: a body sent after a HEAD
    answer would be read as the start of the next answer."""
    sock = socket.create_connection(("127.0.0.1", floe.port), timeout=10)
    try:
        req = f"HEAD {table.url}/refs HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        sock.sendall(req + req + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    answers = data.split(b"HTTP/1.1 ")
    assert [a[:3] for a in answers[1:]] == [b"200", b"200", b"200"], data
    first = answers[1].decode("latin-1")
    assert int(first.split("Content-Length: ")[1].split("\r\n")[0]) > 0, first
    assert first.endswith("\r\n\r\n"), f"a HEAD answer carried a body: {first!r}"


def test_head_of_a_table_or_namespace_is_iceberg_exists_check(floe, table):
    """Iceberg's own HEAD routes (tableExists, namespaceExists) keep 204."""
    assert floe.head(table.url).status_code == 204
    assert floe.head(table.ns_url).status_code == 204
    assert floe.head(f"{table.ns_url}/tables/none").status_code == 404


def test_head_of_a_post_route_is_405(floe):
    r = floe.head("/v1/tables/rename")
    assert r.status_code == 405
    assert "POST" in r.headers["Allow"]


def test_allow_lists_head_wherever_get_is(floe, table):
    r = floe.request("PUT", f"{table.url}/refs")
    assert r.status_code == 405
    methods = {m.strip() for m in r.headers["Allow"].split(",")}
    assert {"GET", "HEAD", "POST"} <= methods, r.headers["Allow"]


# --- metrics ---

def test_a_metrics_report_answers_204(floe, table):
    report = {
        "report-type": "commit-report", "table-name": f"{table.namespace[0]}.t",
        "snapshot-id": 1, "sequence-number": 1, "operation": "append",
        "metrics": {},
    }
    r = floe.post(f"{table.url}/metrics", json=report)
    assert r.status_code == 204, r.text
    assert r.content == b""


# --- CORS ---

ORIGIN = "https://app.example.com"


def preflight(f, url, origin=ORIGIN):
    return f.request("OPTIONS", url, headers={
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, authorization, x-iceberg-access-delegation",
    })


def assert_no_cors(r):
    leaked = [h for h in r.headers if h.lower().startswith("access-control-")]
    assert not leaked, r.headers


def test_cors_is_off_by_default(floe, table):
    assert_no_cors(floe.get(table.url, headers={"Origin": ORIGIN}))
    r = preflight(floe, table.url)
    assert_no_cors(r)
    assert_error(r, 405, "MethodNotAllowedException")


@pytest.fixture(scope="module")
def cors_floe(postgres, tmp_path_factory):
    from conftest import Floe
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(),
                  "FLOE_CORS_ORIGINS": f"{ORIGIN}, http://localhost:5173"})
    try:
        f.wait_ready(30)
        yield f
    finally:
        f.cleanup()


def test_cors_preflight_from_an_allowed_origin(cors_floe):
    r = preflight(cors_floe, "/v1/namespaces")
    assert r.status_code == 204, r.text
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    methods = {m.strip() for m in r.headers["Access-Control-Allow-Methods"].split(",")}
    # Every method a route uses (the management API's PUT and PATCH too).
    assert methods == {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
    assert r.headers["Access-Control-Allow-Headers"] == \
        "content-type, authorization, x-iceberg-access-delegation"
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    assert "Origin" in r.headers.get("Vary", "")
    second = preflight(cors_floe, "/v1/namespaces", origin="http://localhost:5173")
    assert second.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"


def test_cors_answers_carry_the_origin_and_expose_the_etag(cors_floe, uniq):
    ns = f"cors_{uniq}"
    r = cors_floe.post("/v1/namespaces", json={"namespace": [ns]}, headers={"Origin": ORIGIN})
    assert_ok_json(r)
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    t = TableHandle(cors_floe, [ns], "t")
    t.create()
    load = cors_floe.get(t.url, headers={"Origin": ORIGIN})
    assert load.headers["Access-Control-Allow-Origin"] == ORIGIN
    exposed = {h.strip().lower() for h in load.headers["Access-Control-Expose-Headers"].split(",")}
    assert "etag" in exposed
    # An error answer too: the page must be able to read why.
    missing = cors_floe.get(f"{t.ns_url}/tables/none", headers={"Origin": ORIGIN})
    assert_error(missing, 404, "NoSuchTableException")
    assert missing.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_cors_gives_a_disallowed_origin_nothing(cors_floe):
    r = preflight(cors_floe, "/v1/namespaces", origin="https://evil.example.com")
    assert_no_cors(r)
    assert r.status_code == 405
    assert_no_cors(cors_floe.get("/v1/namespaces", headers={"Origin": "https://evil.example.com"}))
    assert_no_cors(cors_floe.get("/v1/namespaces"))


def test_cors_any_origin(floe_factory, postgres):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_CORS_ORIGINS": "*"})
    r = preflight(f, "/v1/namespaces", origin="https://anything.example")
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert f.get("/v1/config", headers={"Origin": "null"}).headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("value", ["app.example.com", "https://app.example.com/", "ftp://x",
                                   "https://", "*, https://a.example", "https://a.example/path"])
def test_cors_origins_are_checked_at_start(value, tmp_path):
    from conftest import run_floe
    res = run_floe([f"--cors-origins={value}", f"--data-dir={tmp_path}/d"], cwd=tmp_path, timeout=20)
    assert res.returncode != 0
    assert "--cors-origins" in res.stderr and "FLOE_CORS_ORIGINS" in res.stderr, res.stderr


# --- /v1/config?warehouse= ---

def test_config_accepts_the_warehouse_name_and_url(floe_factory, postgres, tmp_path):
    wh = tmp_path / "wh"
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=[f"--warehouse=file://{wh}", "--warehouse-name=lake"])
    for name in ("lake", f"file://{wh}", f"file://{wh}/", f"file:{wh}", ""):
        r = f.get("/v1/config", params={"warehouse": name})
        assert_ok_json(r)
    assert_ok_json(f.get("/v1/config"))
    r = f.get("/v1/config", params={"warehouse": "warehouse"})
    err = assert_error(r, 404, "NoSuchWarehouseException")
    assert err["message"] == "Warehouse does not exist: warehouse"


def test_config_default_warehouse_name(floe):
    assert_ok_json(floe.get("/v1/config", params={"warehouse": "warehouse"}))
    err = assert_error(floe.get("/v1/config", params={"warehouse": "other"}), 404,
                       "NoSuchWarehouseException")
    assert err["message"] == "Warehouse does not exist: other"
