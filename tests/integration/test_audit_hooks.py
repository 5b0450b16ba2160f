"""floe's audit-hook registry: register, list, get, delete, over raw HTTP.

The hooks registered here are never called (nothing is published in this
module); test_wap.py calls them.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import pytest

from conftest import assert_error, assert_ok_json, assert_request_id, audit_events, describe

HOOK_KEYS = {"id", "name", "url", "scope", "timeout-ms", "has-secret", "created-at"}
BASES = ["/v1", "/v1/warehouse"]
SECRET = "s3cr3t-Sh0uld-N3ver-L3ak"


def parse_rfc3339(s: str) -> datetime:
    assert isinstance(s, str), s
    d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    assert d.tzinfo is not None, f"{s!r} has no offset"
    return d


def check_hook(h: dict, name: str, url: str, scope: dict, timeout_ms: int, has_secret: bool):
    assert set(h) == HOOK_KEYS, f"hook keys {sorted(h)} != {sorted(HOOK_KEYS)}: {h}"
    assert str(uuid.UUID(h["id"])) == h["id"].lower(), h
    assert h["name"] == name
    assert h["url"] == url
    assert h["scope"] == scope
    assert h["timeout-ms"] == timeout_ms
    assert h["has-secret"] is has_secret
    created = parse_rfc3339(h["created-at"])
    now = datetime.now(timezone.utc)
    assert abs((now - created).total_seconds()) < 300, f"created-at {h['created-at']} is not now ({now})"


def post_hook(floe, body, base="/v1"):
    return floe.post(f"{base}/audit-hooks", json=body)


def all_hooks(floe, base="/v1") -> list:
    return assert_ok_json(floe.get(f"{base}/audit-hooks"))["hooks"]


# --------------------------------------------------------------------------


@pytest.mark.parametrize("base", BASES)
def test_register_get_list_delete(floe, uniq, base):
    url = "http://127.0.0.1:9/audit"
    r = post_hook(floe, {"name": f"quality-{uniq}", "url": url, "secret": SECRET,
                         "scope": {"namespace": [uniq]}, "timeout-ms": 2500}, base)
    h = assert_ok_json(r, 201)
    check_hook(h, f"quality-{uniq}", url, {"namespace": [uniq]}, 2500, True)
    assert SECRET not in r.text

    r = floe.get(f"{base}/audit-hooks/{h['id']}")
    assert assert_ok_json(r) == h
    assert SECRET not in r.text
    # The registry is one per catalog: the other path form sees the same hook.
    other = "/v1" if base != "/v1" else "/v1/warehouse"
    assert assert_ok_json(floe.get(f"{other}/audit-hooks/{h['id']}")) == h

    r = floe.get(f"{base}/audit-hooks")
    listed = assert_ok_json(r)
    assert set(listed) == {"hooks"} or set(listed) == {"hooks", "next-page-token"}, listed
    assert [x for x in listed["hooks"] if x["id"] == h["id"]] == [h]
    assert SECRET not in r.text

    r = floe.delete(f"{base}/audit-hooks/{h['id']}")
    assert r.status_code == 204, describe(r)
    assert r.content == b""
    assert_request_id(r)
    assert_error(floe.get(f"{base}/audit-hooks/{h['id']}"), 404, "NoSuchAuditHookException")
    assert_error(floe.delete(f"{base}/audit-hooks/{h['id']}"), 404, "NoSuchAuditHookException")
    assert h["id"] not in [x["id"] for x in all_hooks(floe, base)]


def test_defaults_without_secret_and_scope(floe):
    url = "https://audit.example.com/hooks/wap?x=1"
    h = assert_ok_json(post_hook(floe, {"name": "catalog-wide", "url": url}), 201)
    try:
        check_hook(h, "catalog-wide", url, {}, 10000, False)
        assert assert_ok_json(floe.get(f"/v1/audit-hooks/{h['id']}")) == h
    finally:
        floe.delete(f"/v1/audit-hooks/{h['id']}")


@pytest.mark.parametrize("scope", [
    {},
    {"namespace": ["sales"]},
    {"namespace": ["sales", "eu", "de"]},
    {"namespace": ["sales"], "table": "orders"},
    {"namespace": ["a b", "ünï"], "table": "t-1"},
])
def test_scope_shapes_round_trip(floe, scope):
    h = assert_ok_json(post_hook(floe, {"name": "scoped", "url": "http://127.0.0.1:9/", "scope": scope}), 201)
    try:
        check_hook(h, "scoped", "http://127.0.0.1:9/", scope, 10000, False)
        assert assert_ok_json(floe.get(f"/v1/audit-hooks/{h['id']}"))["scope"] == scope
    finally:
        floe.delete(f"/v1/audit-hooks/{h['id']}")


@pytest.mark.parametrize("timeout_ms", [1, 60000])
def test_timeout_bounds_are_accepted(floe, timeout_ms):
    h = assert_ok_json(post_hook(floe, {"name": "t", "url": "http://127.0.0.1:9/", "timeout-ms": timeout_ms}), 201)
    floe.delete(f"/v1/audit-hooks/{h['id']}")
    assert h["timeout-ms"] == timeout_ms


def test_list_is_oldest_first(fresh_floe):
    ids = []
    for name in ("zulu", "alpha", "mike"):
        ids.append(assert_ok_json(post_hook(fresh_floe, {"name": name, "url": "http://127.0.0.1:9/"}), 201)["id"])
    hooks = all_hooks(fresh_floe)
    assert [h["id"] for h in hooks] == ids, hooks
    assert [h["name"] for h in hooks] == ["zulu", "alpha", "mike"]
    stamps = [parse_rfc3339(h["created-at"]) for h in hooks]
    assert stamps == sorted(stamps)
    r = fresh_floe.delete(f"/v1/audit-hooks/{ids[1]}")
    assert r.status_code == 204, describe(r)
    assert [h["id"] for h in all_hooks(fresh_floe)] == [ids[0], ids[2]]


def test_empty_registry(fresh_floe):
    assert all_hooks(fresh_floe) == []


GOOD = {"name": "h", "url": "http://127.0.0.1:9/audit"}


@pytest.mark.parametrize("body", [
    pytest.param({"name": "h", "url": "ftp://example.com/audit"}, id="ftp-url"),
    pytest.param({"name": "h", "url": "file:///etc/passwd"}, id="file-url"),
    pytest.param({"name": "h", "url": "not a url"}, id="not-a-url"),
    pytest.param({"name": "h", "url": ""}, id="empty-url"),
    pytest.param({"name": "h", "url": "http://169.254.169.254/latest/meta-data/"}, id="metadata-service"),
    pytest.param({"name": "h", "url": "https://169.254.10.20:8443/x"}, id="link-local-v4"),
    pytest.param({"name": "h", "url": "http://[fe80::1]/"}, id="link-local-v6"),
    pytest.param({"name": "h", "url": "http://[FE80::abcd]:8080/audit"}, id="link-local-v6-upper"),
    pytest.param({"name": "h", "url": "http://[febf::1]/"}, id="link-local-v6-end-of-range"),
    pytest.param({"name": "", "url": GOOD["url"]}, id="empty-name"),
    pytest.param({"url": GOOD["url"]}, id="no-name"),
    pytest.param({"name": "h"}, id="no-url"),
    pytest.param({"name": 5, "url": GOOD["url"]}, id="name-not-string"),
    pytest.param({**GOOD, "scope": {"table": "orders"}}, id="table-without-namespace"),
    pytest.param({**GOOD, "scope": {"namespace": "sales"}}, id="namespace-not-array"),
    pytest.param({**GOOD, "timeout-ms": 0}, id="timeout-0"),
    pytest.param({**GOOD, "timeout-ms": 60001}, id="timeout-60001"),
    pytest.param({**GOOD, "timeout-ms": -1}, id="timeout-negative"),
    pytest.param({**GOOD, "timeout-ms": "500"}, id="timeout-string"),
    pytest.param({**GOOD, "secret": 42}, id="secret-not-string"),
])
def test_register_rejects_bad_bodies(floe, body):
    before = all_hooks(floe)
    r = post_hook(floe, body)
    assert_error(r, 400)
    assert all_hooks(floe) == before, "a refused hook was stored"


def test_register_rejects_malformed_json(floe):
    before = all_hooks(floe)
    for raw in (b"{nope", b"[]", b'"x"'):
        assert_error(floe.post("/v1/audit-hooks", data=raw, headers={"Content-Type": "application/json"}), 400)
    assert all_hooks(floe) == before


def test_unknown_hook_is_404(floe):
    ghost = str(uuid.uuid4())
    assert_error(floe.get(f"/v1/audit-hooks/{ghost}"), 404, "NoSuchAuditHookException")
    assert_error(floe.delete(f"/v1/audit-hooks/{ghost}"), 404, "NoSuchAuditHookException")
    # A name that is not a hook id names no hook.
    assert_error(floe.get("/v1/audit-hooks/not-a-uuid"), 404, "NoSuchAuditHookException")


def test_registration_and_deletion_are_in_the_audit_log_without_the_secret(fresh_floe):
    f = fresh_floe
    r = post_hook(f, {"name": "logged", "url": "http://127.0.0.1:9/", "secret": SECRET,
                      "scope": {"namespace": ["sales"]}})
    h = assert_ok_json(r, 201)
    reg_rid = r.headers["X-Request-Id"]
    d = f.delete(f"/v1/audit-hooks/{h['id']}")
    assert d.status_code == 204, describe(d)
    del_rid = d.headers["X-Request-Id"]

    events = audit_events(f)
    raw = json.dumps(events)
    assert SECRET not in raw, "the hook secret leaked into the audit log"
    reg = [e for e in events if e["event"] == "hook.registered"]
    dele = [e for e in events if e["event"] == "hook.deleted"]
    assert len(reg) == 1 and len(dele) == 1, [e["event"] for e in events]
    assert h["id"] in json.dumps(reg[0]) and h["id"] in json.dumps(dele[0]), (reg, dele)
    assert reg[0]["request-id"] == reg_rid and dele[0]["request-id"] == del_rid
    assert reg[0]["principal"] == "anonymous"
    assert reg[0]["run-id"] is None and dele[0]["run-id"] is None
    assert reg[0]["id"] < dele[0]["id"]
    # A failed registration leaves no trace.
    assert_error(post_hook(f, {"name": "", "url": "http://127.0.0.1:9/"}), 400)
    assert len(audit_events(f)) == len(events)


def test_a_namespace_filtered_audit_log_lists_that_namespace_hook_events(fresh_floe, uniq):
    """hook.registered and hook.deleted carry their hook's scope: a filter
    on the scope's namespace (or table) finds them, the override deletion of
    a protected namespace's last hook included; another namespace's filter
    does not. A hook event written before the scope was stored with it is
    found by the scope in its details."""
    import psycopg
    from conftest import database_url
    f = fresh_floe
    a, b = uniq + "_a", uniq + "_b"
    for ns in (a, b):
        f.create_namespace([ns])
    url = "http://127.0.0.1:9/audit"
    ha = assert_ok_json(post_hook(f, {"name": "a", "url": url, "scope": {"namespace": [a]}}), 201)
    ht = assert_ok_json(post_hook(f, {"name": "t", "url": url,
                                      "scope": {"namespace": [a], "table": "t"}}), 201)
    hb = assert_ok_json(post_hook(f, {"name": "b", "url": url, "scope": {"namespace": [b]}}), 201)
    assert f.delete(f"/v1/audit-hooks/{hb['id']}").status_code == 204
    assert f.delete(f"/v1/audit-hooks/{ht['id']}").status_code == 204
    # a's last hook under a's protection goes by the control route alone
    assert_ok_json(f.post(f"/v1/namespaces/{a}/properties",
                          json={"updates": {"floe.wap.required": "true"}}))
    assert_error(f.delete(f"/v1/audit-hooks/{ha['id']}"), 403, "ForbiddenException")
    assert_ok_json(f.post("/v1/controls/delete-hook",
                          json={"hook-id": ha["id"], "reason": "CHG-7"}))

    def hook_events(**query):
        return [(e["event"], e["details"]["hook-id"], e["namespace"], e["table"])
                for e in audit_events(f, **query) if e["event"].startswith("hook.")]

    assert hook_events(namespace=a) == [
        ("hook.registered", ha["id"], [a], None),
        ("hook.registered", ht["id"], [a], "t"),
        ("hook.deleted", ht["id"], [a], "t"),
        ("hook.deleted", ha["id"], [a], None)]
    assert hook_events(namespace=a, table="t") == [
        ("hook.registered", ht["id"], [a], "t"), ("hook.deleted", ht["id"], [a], "t")]
    assert hook_events(namespace=b) == [
        ("hook.registered", hb["id"], [b], None), ("hook.deleted", hb["id"], [b], None)]
    override = [e for e in audit_events(f, namespace=a) if e["event"] == "hook.deleted"][-1]
    assert override["details"]["reason"] == "CHG-7"

    # An event as floe wrote it before: the scope only in its details.
    old = str(uuid.uuid4())
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        conn.execute("INSERT INTO audit_events (event, request_id, details, principal) "
                     "VALUES ('hook.registered', 'old', %s::jsonb, 'anonymous')",
                     (json.dumps({"hook-id": old, "scope": {"namespace": [b], "table": "x"}}),))
    assert hook_events(namespace=b)[-1] == ("hook.registered", old, None, None)
    assert hook_events(namespace=b, table="x") == [("hook.registered", old, None, None)]
    assert old not in [e[1] for e in hook_events(namespace=a)]
