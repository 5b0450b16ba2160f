"""The iceberg-js client (npm's ``iceberg-js``, its IcebergRestCatalog, the
version tests/icebergjs/package-lock.json pins; installed by
scripts/node-deps.sh) against floe with authentication on, each call made
by tests/icebergjs/driver.mjs through the client's own API.

With a bearer token iceberg-js creates, loads, lists, changes and drops
namespaces and tables, and what it reports agrees with floe's own REST
answers. Without a token, or with a bad one, every call is floe's 401
``NotAuthorizedException`` as iceberg-js reports it. A reader's token lists
and loads, and each change it tries is a 403 ``ForbiddenException`` naming
the missing privilege, with nothing changed. The principal who acted is the
one commit_log and the access log name. iceberg-js has no OAuth2 flow of its
own; its ``custom`` authentication, given a function that asks floe's
``/v1/oauth/tokens`` by client credentials, is tested too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (
    REPO,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_ok_json,
    clean_env,
    database_url,
    make_client,
    ns_path,
    user_properties,
    wait_until,
)
from test_auth import good_claims, mint, signing_key
from test_authorization import principal, sql

TIMEOUT = 60

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "at", "type": "timestamptz", "required": True},
        {"id": 3, "name": "amount", "type": "decimal(12, 2)", "required": False},
        {"id": 4, "name": "customer", "type": "string", "required": False, "doc": "who ordered"},
    ],
}
SPEC = {"spec-id": 0, "fields": [
    {"source-id": 2, "field-id": 1000, "name": "at_day", "transform": "day"}]}


def field_summary(fields):
    return [(x["name"], x["type"], x["required"]) for x in fields]


@pytest.fixture(scope="module")
def driver() -> Path:
    """The driver, beside the iceberg-js modules scripts/node-deps.sh
    installed (cached). A missing client fails the tests: it is not skipped."""
    try:
        r = subprocess.run([str(REPO / "scripts" / "node-deps.sh"), "tests/icebergjs", "driver.mjs"],
                           capture_output=True, text=True, timeout=600)
    except OSError as e:
        pytest.fail(f"scripts/node-deps.sh could not run: {e}")
    if r.returncode != 0:
        pytest.fail(f"scripts/node-deps.sh tests/icebergjs failed: {r.stderr}")
    path = Path(r.stdout.strip().splitlines()[-1])
    if not (path.parent / "node_modules" / "iceberg-js" / "package.json").is_file():
        pytest.fail(f"iceberg-js is not installed beside {path}")
    return path


@pytest.fixture(scope="module")
def authed(postgres):
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe"})
    f.authenticate()
    yield f
    _stop_and_check(f)


def icebergjs(driver: Path, f, steps, token=None, client=None, warehouse=None, url=None):
    """Runs steps ((method, *args) each) with iceberg-js against f: token a
    bearer token, client CLIENT_ID:SECRET for the client-credentials
    function, neither no authentication. Returns (results, token requests)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("ICEBERG_")}
    if token is not None:
        env["ICEBERG_TOKEN"] = token
    if client is not None:
        env["ICEBERG_CLIENT"] = client
    args = ["node", str(driver), "--url", url or f.url]
    if warehouse is not None:
        args += ["--warehouse", warehouse]
    body = json.dumps([{"op": s[0], "args": list(s[1:])} for s in steps])
    r = subprocess.run(args, input=body, env=env, capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=driver.parent)
    assert r.returncode == 0, f"driver exited with {r.returncode}: {r.stderr}"
    out = json.loads(r.stdout)
    assert len(out["results"]) == len(steps), out
    return out["results"], out["tokenRequests"]


def run(driver, f, steps, **kw):
    return icebergjs(driver, f, steps, **kw)[0]


def ok(result):
    assert result["ok"], f"iceberg-js reported an error: {result['error']}"
    return result["value"]


def failed(result, status, type_):
    assert not result["ok"], f"iceberg-js reported success: {result['value']}"
    e = result["error"]
    assert e["name"] == "IcebergError", e
    assert (e["status"], e["type"]) == (status, type_), e
    return e


def ns_id(levels):
    return {"namespace": list(levels)}


def table_id(levels, name):
    return {"namespace": list(levels), "name": name}


def create_request(name, **extra):
    return {"name": name, "schema": SCHEMA, "partition-spec": SPEC,
            "write-order": {"order-id": 0, "fields": []}, **extra}


def access_lines(f, method, path, principal_name, timeout=3.0):
    """floe's access-log lines of method path (exact) naming principal_name."""
    pat = re.compile(rf"{re.escape(method)} {re.escape(path)} \d{{3}} \d+us "
                     rf"principal={re.escape(principal_name)} rid=")

    def lines():
        return [l for l in f.log().splitlines() if pat.search(l)]
    return wait_until(lines, timeout) or []


# --------------------------------------------------------------------------
# with a bearer token


def test_a_token_creates_a_namespace_and_a_table_and_loads_them_back(driver, authed, uniq):
    f = authed
    ns = [uniq]
    res = run(driver, f, [
        ("listNamespaces",),
        ("createNamespace", ns_id(ns), {"properties": {"owner": "sales"}}),
        ("namespaceExists", ns_id(ns)),
        ("loadNamespaceMetadata", ns_id(ns)),
        ("createTable", ns_id(ns), create_request("orders", properties={"write.format.default": "parquet"})),
        ("loadTable", table_id(ns, "orders")),
        ("listTables", ns_id(ns)),
        ("tableExists", table_id(ns, "orders")),
        ("tableExists", table_id(ns, "missing")),
        ("listNamespaces",),
    ], token=f.token)
    assert [uniq] not in [n["namespace"] for n in ok(res[0])["namespaces"]]
    made = ok(res[1])
    assert made["namespace"] == ns and user_properties(made["properties"]) == {"owner": "sales"}, made
    assert ok(res[2]) is True
    assert user_properties(ok(res[3])["properties"]) == {"owner": "sales"}
    created, loaded = ok(res[4]), ok(res[5])
    assert created["table-uuid"] == loaded["table-uuid"]
    current = [s for s in loaded["schemas"] if s["schema-id"] == loaded["current-schema-id"]]
    assert len(current) == 1, loaded["schemas"]
    assert field_summary(current[0]["fields"]) == field_summary(SCHEMA["fields"])
    assert current[0]["identifier-field-ids"] == [1]
    assert current[0]["fields"][3]["doc"] == "who ordered"
    spec = [s for s in loaded["partition-specs"] if s["spec-id"] == loaded["default-spec-id"]][0]
    assert [(p["name"], p["transform"]) for p in spec["fields"]] == [("at_day", "day")]
    assert loaded["properties"]["write.format.default"] == "parquet"
    assert ok(res[6]) == {"identifiers": [table_id(ns, "orders")]}, "one page, no next-page-token"
    assert (ok(res[7]), ok(res[8])) == (True, False)
    assert ns in [n["namespace"] for n in ok(res[9])["namespaces"]]

    # floe's own answer is the one iceberg-js reported
    rest = assert_ok_json(f.get(f"/v1/namespaces/{ns_path(ns)}/tables/orders"))
    assert rest["metadata"] == loaded
    assert rest["metadata"]["location"] == loaded["location"]
    assert assert_ok_json(f.get(f"/v1/namespaces/{ns_path(ns)}"))["properties"] == ok(res[3])["properties"]


def test_a_token_changes_and_drops_what_it_made(driver, authed, uniq):
    f = authed
    ns = [uniq, "child é"]          # a space and a non-ASCII letter in the path
    leaf = ns + ["leaf"]
    t = table_id(ns, "events")
    res = run(driver, f, [
        ("createNamespace", ns_id([uniq])),
        ("createNamespace", ns_id(ns)),
        ("createNamespace", ns_id(leaf)),
        ("listNamespaces", {"parent": ns_id([uniq])}),
        ("listNamespaces", {"parent": ns_id(ns)}),
        ("updateNamespaceProperties", ns_id(ns), {"updates": {"tier": "gold"}, "removals": ["absent"]}),
        ("createTable", ns_id(ns), create_request("events")),
        ("updateTable", t, {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
                            "updates": [{"action": "set-properties", "updates": {"owner": "ops"}}]}),
        ("loadTableResult", t),
        ("renameTable", {"source": t, "destination": table_id(ns, "events2")}),
        ("listTables", ns_id(ns)),
        ("dropTable", table_id(ns, "events2")),
        ("dropNamespace", ns_id(leaf)),
        ("dropNamespace", ns_id(ns)),
        ("namespaceExists", ns_id(ns)),
    ], token=f.token)
    for r in res[:3]:
        ok(r)
    assert ok(res[3])["namespaces"] == [ns_id(ns)]
    assert ok(res[4])["namespaces"] == [ns_id(leaf)], "a parent of two levels, joined by 0x1F"
    assert ok(res[5]) == {"updated": ["tier"], "removed": [], "missing": ["absent"]}
    assert "owner" not in ok(res[6])["properties"]
    commit = ok(res[7])
    assert commit["metadata"]["properties"]["owner"] == "ops"
    assert commit["metadata-location"].endswith(".metadata.json")
    result = ok(res[8])
    assert result["metadata-location"] == commit["metadata-location"]
    assert result["etag"], "floe sends loadTable's ETag"
    assert ok(res[9]) is None
    assert ok(res[10])["identifiers"] == [table_id(ns, "events2")]
    assert (ok(res[11]), ok(res[12]), ok(res[13])) == (None, None, None)
    assert ok(res[14]) is False
    assert f.get(f"/v1/namespaces/{ns_path(ns)}").status_code == 404
    assert f.get(f"/v1/namespaces/{uniq}").status_code == 200


def test_an_unchanged_table_is_not_sent_again(driver, authed, uniq):
    """loadTable with ifNoneMatch: floe's 304 is iceberg-js's null."""
    f = authed
    f.create_namespace([uniq])
    t = table_id([uniq], "orders")
    first = run(driver, f, [("createTable", ns_id([uniq]), create_request("orders")),
                            ("loadTableResult", t)], token=f.token)
    etag = ok(first[1])["etag"]
    res = run(driver, f, [
        ("loadTable", t, {"ifNoneMatch": etag}),
        ("updateTable", t, {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
        ("loadTable", t, {"ifNoneMatch": etag}),
    ], token=f.token)
    assert ok(res[0]) is None
    ok(res[1])
    assert ok(res[2])["properties"]["k"] == "v"


def test_a_warehouse_reads_the_config_with_the_token(driver, authed, uniq):
    """iceberg-js's warehouse option: GET /v1/config?warehouse=NAME (with
    the token) first; floe names no prefix, so iceberg-js puts the name in
    the path itself (/v1/NAME/namespaces), which floe serves as the default
    warehouse, whose name it is."""
    f = authed
    res = run(driver, f, [("loadConfig",), ("createNamespace", ns_id([uniq])),
                          ("listNamespaces",)], token=f.token, warehouse="warehouse")
    got = ok(res[0])
    assert got["overrides"] == {} and "prefix" not in got["defaults"], got
    ok(res[1])
    assert [uniq] in [n["namespace"] for n in ok(res[2])["namespaces"]]
    assert assert_ok_json(f.get(f"/v1/namespaces/{uniq}"))["namespace"] == [uniq]
    assert access_lines(f, "POST", "/v1/warehouse/namespaces", "admin")

    # Another name: floe's 404 reaches loadConfig; iceberg-js's own routes
    # ignore it (they fall back to /v1/NAME), and floe answers those 404
    # too, a prefix naming no warehouse: the namespace of the default
    # warehouse is not found under a name that is not its.
    res = run(driver, f, [("loadConfig",), ("namespaceExists", ns_id([uniq]))],
              token=f.token, warehouse="elsewhere")
    e = failed(res[0], 404, "NoSuchWarehouseException")
    assert "elsewhere" in e["message"], e
    assert ok(res[1]) is False
    assert access_lines(f, "HEAD", f"/v1/elsewhere/namespaces/{uniq}", "admin")


# --------------------------------------------------------------------------
# without a token, with a bad one


def every_kind_of_call(ns):
    return [
        ("listNamespaces",),
        ("createNamespace", ns_id(ns)),
        ("loadNamespaceMetadata", ns_id(ns)),
        ("listTables", ns_id(ns)),
        ("createTable", ns_id(ns), create_request("t")),
        ("loadTable", table_id(ns, "t")),
        ("updateTable", table_id(ns, "t"), {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
        ("dropTable", table_id(ns, "t")),
        ("dropNamespace", ns_id(ns)),
    ]


@pytest.mark.parametrize("token,says", [
    (None, "Authentication required: send a bearer token in Authorization"),
    ("", "Authorization is not a bearer token"),
    ("not-a-token", "Token is malformed"),
    ("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.", "Unsigned tokens (alg none) are not accepted"),
], ids=["none", "empty", "garbage", "alg-none"])
def test_without_a_valid_token_iceberg_js_reports_floe_s_401(driver, authed, uniq, token, says):
    f = authed
    ns = [uniq]
    steps = every_kind_of_call(ns)
    res = run(driver, f, steps, token=token)
    for (op, *_), r in zip(steps, res):
        e = failed(r, 401, "NotAuthorizedException")
        assert e["code"] == 401 and e["message"] == says, (op, e)
    # HEAD has no body: iceberg-js sees the status alone and reports it
    res = run(driver, f, [("namespaceExists", ns_id(ns)), ("tableExists", table_id(ns, "t"))], token=token)
    for r in res:
        e = failed(r, 401, None)
        assert e["message"] == "Request failed with status 401", e
    assert f.get(f"/v1/namespaces/{uniq}").status_code == 404, "nothing was created"


def test_an_expired_token_is_401_and_iceberg_js_does_not_renew_it(driver, authed, uniq):
    """floe answers an expired token 401 (as the Iceberg spec prefers to
    419); iceberg-js's bearer token is fixed, so it reports the 401 and
    does not ask for another: its user makes a new catalog with a new token
    (or gives the custom authentication a function that renews it)."""
    f = authed
    key, kid = signing_key(f)
    now = int(time.time())
    expired = mint(key, kid, good_claims(iat=now - 7200, nbf=now - 7200, exp=now - 3600,
                                         client_id="admin"))
    path = f"/v1/namespaces/{uniq}"
    res = run(driver, f, [("loadNamespaceMetadata", ns_id([uniq]))], token=expired)
    e = failed(res[0], 401, "NotAuthorizedException")
    assert "expired" in e["message"], e
    lines = access_lines(f, "GET", path, "anonymous")
    assert len(lines) == 1 and f"GET {path} 401 " in lines[0], "one request, not retried"


def test_a_tampered_token_is_refused(driver, authed, uniq):
    f = authed
    head, payload, sig = f.token.split(".")
    tampered = f"{head}.{payload}.{sig[:-4]}AAAA" if not sig.endswith("AAAA") else f"{head}.{payload}.{sig[:-4]}BBBB"
    res = run(driver, f, [("createNamespace", ns_id([uniq]))], token=tampered)
    failed(res[0], 401, "NotAuthorizedException")
    assert f.get(f"/v1/namespaces/{uniq}").status_code == 404


def test_a_disabled_principal_s_token_is_refused(driver, authed, uniq):
    f = authed
    tok = principal(f, f"gone_{uniq}", [("NAMESPACE_CREATE",)])
    first = run(driver, f, [("createNamespace", ns_id([uniq]))], token=tok)
    ok(first[0])
    assert_ok_json(f.post(f"/management/v1/principals/gone_{uniq}/disable"))
    res = run(driver, f, [("createNamespace", ns_id([f"{uniq}_2"]))], token=tok)
    e = failed(res[0], 401, "NotAuthorizedException")
    assert e["message"] == "Principal is disabled", e
    assert f.get(f"/v1/namespaces/{uniq}_2").status_code == 404


# --------------------------------------------------------------------------
# a reader


def test_a_reader_lists_and_loads_and_is_refused_every_change(driver, authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns, {"owner": "sales"})
    f.create_namespace([f"{uniq}_hidden"])
    made = run(driver, f, [("createTable", ns_id(ns), create_request("orders"))], token=f.token)
    before = ok(made[0])
    who = f"reader_{uniq}"
    tok = principal(f, who, [("NAMESPACE_READ", ns), ("TABLE_READ", ns)])
    t = table_id(ns, "orders")
    res = run(driver, f, [
        ("listNamespaces",),
        ("loadNamespaceMetadata", ns_id(ns)),
        ("listTables", ns_id(ns)),
        ("loadTable", t),
        ("tableExists", t),
        ("createTable", ns_id(ns), create_request("orders2")),
        ("createNamespace", ns_id([f"{uniq}_new"])),
        ("createNamespace", ns_id(ns + ["child"])),
        ("updateTable", t, {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
        ("updateNamespaceProperties", ns_id(ns), {"updates": {"k": "v"}}),
        ("renameTable", {"source": t, "destination": table_id(ns, "renamed")}),
        ("dropTable", t),
        ("dropNamespace", ns_id(ns)),
        ("loadTable", table_id([f"{uniq}_hidden"], "x")),
    ], token=tok)
    listed = [n["namespace"] for n in ok(res[0])["namespaces"]]
    assert listed == [ns], "a reader lists only what it may see"
    assert user_properties(ok(res[1])["properties"]) == {"owner": "sales"}
    assert ok(res[2])["identifiers"] == [t]
    assert ok(res[3])["table-uuid"] == before["table-uuid"]
    assert ok(res[4]) is True
    lacks = [
        f"TABLE_CREATE on namespace {uniq}",
        "NAMESPACE_CREATE on the catalog",
        f"NAMESPACE_CREATE on namespace {uniq}",
        f"TABLE_UPDATE_PROPERTIES on table {uniq}.orders",
        f"NAMESPACE_UPDATE_PROPERTIES on namespace {uniq}",
        f"TABLE_DROP on table {uniq}.orders",
        f"TABLE_DROP on table {uniq}.orders",
        f"NAMESPACE_DROP on namespace {uniq}",
        f"TABLE_READ on table {uniq}_hidden.x",
    ]
    for r, what in zip(res[5:], lacks):
        e = failed(r, 403, "ForbiddenException")
        assert e["code"] == 403 and e["message"] == f"Principal {who} lacks {what}", e

    # nothing was made, changed or dropped
    tables = assert_ok_json(f.get(f"/v1/namespaces/{uniq}/tables"))["identifiers"]
    assert tables == [t], tables
    meta = assert_ok_json(f.get(f"/v1/namespaces/{uniq}/tables/orders"))["metadata"]
    assert meta["metadata-log"] == before["metadata-log"] and "k" not in meta["properties"], meta
    assert user_properties(assert_ok_json(f.get(f"/v1/namespaces/{uniq}"))["properties"]) == {"owner": "sales"}
    for gone in ([f"{uniq}_new"], ns + ["child"]):
        assert f.get(f"/v1/namespaces/{ns_path(gone)}").status_code == 404, gone
    assert access_lines(f, "POST", f"/v1/namespaces/{uniq}/tables", who), "the refusal is logged with its principal"


# --------------------------------------------------------------------------
# who acted is recorded


def test_the_principal_who_acted_is_recorded(driver, authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    who = f"writer_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns), ("TABLE_UPDATE_PROPERTIES", ns)])
    t = table_id(ns, "orders")
    res = run(driver, f, [
        ("createTable", ns_id(ns), create_request("orders")),
        ("updateTable", t, {"updates": [{"action": "set-properties", "updates": {"owner": "ops"}}]}),
        ("loadTable", t),
    ], token=tok)
    uuid = ok(res[0])["table-uuid"]
    ok(res[1]), ok(res[2])
    rows = sql(f, "SELECT version, principal, client_id FROM commit_log WHERE table_uuid = %s ORDER BY id",
               (uuid,))
    assert rows == [(1, who, who), (2, who, who)], rows
    for method, path in (("POST", f"/v1/namespaces/{uniq}/tables"),
                         ("POST", f"/v1/namespaces/{uniq}/tables/orders"),
                         ("GET", f"/v1/namespaces/{uniq}/tables/orders")):
        lines = access_lines(f, method, path, who)
        assert len(lines) == 1, (method, path, lines)


# --------------------------------------------------------------------------
# client credentials through iceberg-js's custom authentication


def test_client_credentials_through_custom_authentication(driver, authed, uniq):
    f = authed
    who = f"cc_{uniq}"
    credential = make_client(f, who)
    res, token_requests = icebergjs(driver, f, [
        ("createNamespace", ns_id([uniq])),
        ("createTable", ns_id([uniq]), create_request("orders")),
        ("listTables", ns_id([uniq])),
    ], client=credential)
    assert [r["ok"] for r in res] == [True] * 3, res
    assert token_requests == 1, "the token is asked for once and reused"
    assert access_lines(f, "POST", f"/v1/namespaces/{uniq}/tables", who)

    cid = credential.split(":", 1)[0]
    res, _ = icebergjs(driver, f, [("listNamespaces",)], client=f"{cid}:wrong-secret")
    e = res[0]["error"]
    assert (e["status"], e["type"]) == (401, "invalid_client"), e


# --------------------------------------------------------------------------
# the README's example


def test_the_readme_example_runs(driver, authed):
    """README.md's iceberg-js example, run as it is written, with the token
    of a principal that may create and read but not drop (and this floe's
    address for the default one)."""
    f = authed
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("\n## iceberg-js\n"):]
    code = re.search(r"```js\n(.*?)```", section, re.S).group(1)
    assert code.count("'http://127.0.0.1:8181'") == 1, code
    code = code.replace("'http://127.0.0.1:8181'", repr(f.url))
    tok = principal(f, "etl", [("NAMESPACE_CREATE",), ("TABLE_CREATE",), ("TABLE_READ",)])
    script = driver.parent / f"readme-example-{os.getpid()}.mjs"
    script.write_text(code)
    try:
        env = {k: v for k, v in clean_env().items() if not k.startswith("ICEBERG_")}
        env["TOKEN"] = tok
        r = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT, cwd=driver.parent)
    finally:
        script.unlink()
    assert r.returncode == 0, r.stderr
    assert r.stdout == "403 ForbiddenException Principal etl lacks TABLE_DROP on table sales.orders\n", r.stdout
    meta = assert_ok_json(f.get("/v1/namespaces/sales/tables/orders"))["metadata"]
    assert [x["name"] for x in meta["schemas"][0]["fields"]] == ["id", "amount"]
