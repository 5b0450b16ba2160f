"""Every route that changes the catalog records its Idempotency-Key answer
in the change's own transaction: when the answer cannot be recorded, the
change is undone and the client is told 503 (nothing changed, retry); the
retry then runs the change once, and a second retry replays its answer.

The record is made to fail for real: a trigger the test installs on
idempotency_keys in floe's PostgreSQL raises when the answer to one key is
written."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from conftest import TableHandle, assert_error, assert_ok_json, database_url, ns_path


def key() -> str:
    return str(uuid.uuid4())


class FailingRecord:
    """While installed, writing the answer to Idempotency-Key k raises."""

    def __init__(self, f, k: str):
        self.url = database_url(f)
        self.k = k
        self.name = "fail_answer_" + k.replace("-", "")

    def __enter__(self):
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION {self.name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'the answer is not kept'; END $$")
            conn.execute(
                f"CREATE TRIGGER {self.name} BEFORE UPDATE ON idempotency_keys FOR EACH ROW "
                f"WHEN (NEW.key = '{self.k}' AND NEW.status <> 0) EXECUTE FUNCTION {self.name}()")
        return self

    def __exit__(self, *exc):
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP TRIGGER {self.name} ON idempotency_keys")
            conn.execute(f"DROP FUNCTION {self.name}()")


def keyed_retry(f, method: str, path: str, status: int, unchanged, changed, body=None):
    """The change at (method, path, body) with a key whose answer cannot be
    recorded: 503 and unchanged(); with the record possible again, the
    same key runs it once (status, changed()), and again replays it."""
    k = key()
    kw = {"headers": {"Idempotency-Key": k}}
    if body is not None:
        kw["json"] = body
    with FailingRecord(f, k):
        first = f.request(method, path, **kw)
        assert_error(first, 503, "ServiceUnavailableException")
        assert first.json()["error"]["message"] == (
            f"The answer to Idempotency-Key {k} could not be recorded; nothing changed; retry")
        assert first.headers.get("Retry-After") == "1"
        unchanged()
    second = f.request(method, path, **kw)
    assert second.status_code == status, second.text
    assert "Idempotency-Replayed" not in second.headers
    changed()
    third = f.request(method, path, **kw)
    assert third.status_code == status, third.text
    assert third.headers.get("Idempotency-Replayed") == "true"
    assert third.content == second.content
    changed()
    return second


def audit_events(f, **query) -> list:
    return assert_ok_json(f.get("/v1/audit-log", params=query))["events"]


def count_events(f, event: str, **query) -> int:
    return sum(1 for e in audit_events(f, **query) if e["event"] == event)


# --- namespaces ---


def test_namespace_create(floe, uniq):
    exists = lambda: floe.head(f"/v1/namespaces/{uniq}").status_code
    r = keyed_retry(floe, "POST", "/v1/namespaces", 200,
                    lambda: (exists() == 404) or pytest.fail("the namespace was kept"),
                    lambda: exists() == 204 or pytest.fail("no namespace"),
                    body={"namespace": [uniq]})
    assert r.json()["namespace"] == [uniq]
    assert count_events(floe, "namespace.created", namespace=uniq) == 1


def test_namespace_drop(floe, uniq):
    floe.create_namespace([uniq])
    exists = lambda: floe.head(f"/v1/namespaces/{uniq}").status_code
    keyed_retry(floe, "DELETE", f"/v1/namespaces/{uniq}", 204,
                lambda: exists() == 204 or pytest.fail("the namespace was dropped"),
                lambda: exists() == 404 or pytest.fail("the namespace is there"))
    assert count_events(floe, "namespace.dropped", namespace=uniq) == 1


# --- audit hooks ---


def hooks_named(f, name: str) -> list:
    return [h for h in assert_ok_json(f.get("/v1/audit-hooks"))["hooks"] if h["name"] == name]


def test_hook_register_and_delete(floe, uniq):
    floe.create_namespace([uniq])
    body = {"name": uniq, "url": "http://127.0.0.1:9/audit", "scope": {"namespace": [uniq]}}
    r = keyed_retry(floe, "POST", "/v1/audit-hooks", 201,
                    lambda: hooks_named(floe, uniq) == [] or pytest.fail("the hook was kept"),
                    lambda: len(hooks_named(floe, uniq)) == 1 or pytest.fail("no single hook"),
                    body=body)
    hook = r.json()
    assert hooks_named(floe, uniq) == [hook]
    keyed_retry(floe, "DELETE", f"/v1/audit-hooks/{hook['id']}", 204,
                lambda: hooks_named(floe, uniq) == [hook] or pytest.fail("the hook went"),
                lambda: hooks_named(floe, uniq) == [] or pytest.fail("the hook is there"))
    assert count_events(floe, "hook.registered", namespace=uniq) == 1
    assert count_events(floe, "hook.deleted", namespace=uniq) == 1


# --- tables: refs, write-audit-publish, views ---


def new_table(f, ns: str) -> TableHandle:
    f.create_namespace([ns])
    t = TableHandle(f, [ns], "t")
    t.create()
    t.s1 = t.add_snapshot("main")
    return t


def refs(t: TableHandle) -> dict:
    return t.load()["metadata"]["refs"]


def test_ref_create_and_drop(floe, uniq):
    t = new_table(floe, uniq)
    at = lambda: refs(t)
    r = keyed_retry(floe, "POST", f"{t.url}/refs", 201,
                    lambda: "b" not in at() or pytest.fail("the ref was kept"),
                    lambda: at()["b"]["snapshot-id"] == t.s1 or pytest.fail("no ref b"),
                    body={"name": "b", "type": "branch"})
    assert r.json() == {"name": "b", "type": "branch", "snapshot-id": t.s1}
    keyed_retry(floe, "DELETE", f"{t.url}/refs/b", 204,
                lambda: "b" in at() or pytest.fail("the ref was dropped"),
                lambda: "b" not in at() or pytest.fail("the ref is there"))
    # Every change a commit of its own: create, drop (and the snapshot).
    commits = assert_ok_json(floe.get(f"{t.url}/commits"))["commits"]
    assert len(commits) == 4, commits


def test_wap_stage(floe, uniq):
    t = new_table(floe, uniq)
    runs = lambda: assert_ok_json(floe.get(f"{t.url}/wap"))["runs"]
    r = keyed_retry(floe, "POST", f"{t.url}/wap", 201,
                    lambda: (runs() == [] and "s" not in refs(t)) or pytest.fail("run kept"),
                    lambda: len(runs()) == 1 or pytest.fail("not one run"),
                    body={"branch": "s"})
    run = r.json()
    assert run["state"] == "staged" and run["branch"] == "s"
    assert [x["id"] for x in runs()] == [run["id"]]
    assert refs(t)["s"]["snapshot-id"] == t.s1
    assert count_events(floe, "wap.staged", namespace=uniq) == 1


def test_view_commit(floe, uniq):
    floe.create_namespace([uniq])
    sql = {"version-id": 1, "timestamp-ms": 1700000000000, "schema-id": 0,
           "summary": {"engine-name": "spark"}, "default-namespace": [uniq],
           "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    schema = {"type": "struct", "schema-id": 0,
              "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
    assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/views",
                             json={"name": "v", "schema": schema, "view-version": sql}))
    view = lambda: assert_ok_json(floe.get(f"/v1/namespaces/{uniq}/views/v"))
    before = view()
    body = {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"owner": "ana"}}]}
    r = keyed_retry(floe, "POST", f"/v1/namespaces/{uniq}/views/v", 200,
                    lambda: view() == before or pytest.fail("the view changed"),
                    lambda: view()["metadata"]["properties"] == {"owner": "ana"}
                    or pytest.fail("no owner"),
                    body=body)
    assert r.json() == view()
    assert "/00001-" in r.json()["metadata-location"]


# --- releases, subscriptions, management ---


def test_release_create(floe, uniq):
    t = new_table(floe, uniq)
    releases = lambda: [x for x in assert_ok_json(floe.get("/v1/releases"))["releases"]
                        if x["branch"] == uniq]
    r = keyed_retry(floe, "POST", "/v1/releases", 201,
                    lambda: releases() == [] or pytest.fail("the release was kept"),
                    lambda: len(releases()) == 1 or pytest.fail("not one release"),
                    body={"name": uniq, "tables": [{"namespace": [uniq], "name": "t"}]})
    assert r.json()["branch"] == uniq and r.json()["state"] == "staged"
    assert refs(t)[uniq]["snapshot-id"] == t.s1


def test_subscription_create_and_delete(floe, uniq):
    subs = lambda: [x for x in assert_ok_json(floe.get("/v1/event-subscriptions"))
                    ["subscriptions"] if x["name"] == uniq]
    r = keyed_retry(floe, "POST", "/v1/event-subscriptions", 201,
                    lambda: subs() == [] or pytest.fail("the subscription was kept"),
                    lambda: len(subs()) == 1 or pytest.fail("not one subscription"),
                    body={"name": uniq, "url": "http://127.0.0.1:9/feed",
                          "secret": "a shared secret, long enough"})
    sub = r.json()
    keyed_retry(floe, "DELETE", f"/v1/event-subscriptions/{sub['id']}", 204,
                lambda: len(subs()) == 1 or pytest.fail("the subscription went"),
                lambda: subs() == [] or pytest.fail("the subscription is there"))


def test_management_role_create(floe, uniq):
    roles = lambda: [x["name"] for x in assert_ok_json(
        floe.get("/management/v1/roles", params={"pageSize": 1000}))["roles"] if x["name"] == uniq]
    r = keyed_retry(floe, "POST", "/management/v1/roles", 201,
                    lambda: roles() == [] or pytest.fail("the role was kept"),
                    lambda: roles() == [uniq] or pytest.fail("no role"),
                    body={"name": uniq})
    assert r.json() == {"name": uniq, "issuer-grantable": False}


def test_namespace_properties(floe, uniq):
    floe.create_namespace([uniq])
    props = lambda: assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"]
    r = keyed_retry(floe, "POST", f"/v1/namespaces/{uniq}/properties", 200,
                    lambda: "owner" not in props() or pytest.fail("the property was kept"),
                    lambda: props()["owner"] == "ana" or pytest.fail("no owner"),
                    body={"updates": {"owner": "ana"}, "removals": ["gone"]})
    assert r.json() == {"updated": ["owner"], "removed": [], "missing": ["gone"]}


def test_table_drop_and_rename(floe, uniq):
    t = new_table(floe, uniq)
    exists = lambda name: floe.head(f"/v1/namespaces/{uniq}/tables/{name}").status_code
    keyed_retry(floe, "POST", "/v1/tables/rename", 204,
                lambda: exists("t") == 204 or pytest.fail("the table moved"),
                lambda: (exists("t"), exists("u")) == (404, 204) or pytest.fail("not moved"),
                body={"source": {"namespace": [uniq], "name": "t"},
                      "destination": {"namespace": [uniq], "name": "u"}})
    keyed_retry(floe, "DELETE", f"/v1/namespaces/{uniq}/tables/u", 204,
                lambda: exists("u") == 204 or pytest.fail("the table was dropped"),
                lambda: exists("u") == 404 or pytest.fail("the table is there"))
    assert count_events(floe, "table.dropped", namespace=uniq) == 1
    assert count_events(floe, "table.renamed", namespace=uniq) == 1


def test_management_grant_and_role_delete(floe, uniq):
    floe.create_namespace([uniq])
    assert_ok_json(floe.post("/management/v1/roles", json={"name": uniq}), 201)
    grants = lambda: assert_ok_json(floe.get(f"/management/v1/roles/{uniq}/grants"))["grants"]
    grant = {"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": [uniq]}}
    r = keyed_retry(floe, "POST", f"/management/v1/roles/{uniq}/grants", 201,
                    lambda: grants() == [] or pytest.fail("the grant was kept"),
                    lambda: len(grants()) == 1 or pytest.fail("not one grant"),
                    body=grant)
    assert r.json()["privilege"] == "TABLE_READ"
    # A user principal (no secret, so it takes a key) and its membership.
    users = lambda: [x["name"] for x in assert_ok_json(floe.get(
        "/management/v1/principals", params={"pageSize": 1000}))["principals"]
        if x["name"] == uniq]
    keyed_retry(floe, "POST", "/management/v1/principals", 201,
                lambda: users() == [] or pytest.fail("the principal was kept"),
                lambda: users() == [uniq] or pytest.fail("no principal"),
                body={"name": uniq, "kind": "user"})
    member = lambda: uniq in assert_ok_json(
        floe.get(f"/management/v1/principals/{uniq}"))["roles"]
    keyed_retry(floe, "PUT", f"/management/v1/roles/{uniq}/members/{uniq}", 204,
                lambda: not member() or pytest.fail("the membership was kept"),
                lambda: member() or pytest.fail("not a member"))


# --- publishes: the decisive change is the one that moves main ---


def head(t: TableHandle) -> int:
    return t.load()["metadata"]["refs"]["main"]["snapshot-id"]


def test_wap_publish(floe, uniq, webhooks):
    from webhook import PASS
    t = new_table(floe, uniq)
    rcv = webhooks(PASS)
    assert_ok_json(floe.post("/v1/audit-hooks", json={
        "name": uniq, "url": rcv.url, "scope": {"namespace": [uniq], "table": "t"}}), 201)
    run = assert_ok_json(floe.post(f"{t.url}/wap", json={}), 201)
    sid = t.add_snapshot(run["branch"])
    r = keyed_retry(floe, "POST", f"{t.url}/wap/{run['id']}/publish", 200,
                    lambda: head(t) == t.s1 or pytest.fail("main moved"),
                    lambda: head(t) == sid or pytest.fail("main did not move"),
                    body={})
    assert r.json()["state"] == "published" and r.json()["published-snapshot-id"] == sid
    # The first attempt's audit ended audit-failed; the retry audited again.
    assert len(rcv.requests) == 2
    assert count_events(floe, "wap.published", namespace=uniq) == 1


def test_release_publish(floe, uniq, webhooks):
    from webhook import PASS
    t = new_table(floe, uniq)
    rcv = webhooks(PASS)
    assert_ok_json(floe.post("/v1/audit-hooks", json={
        "name": uniq, "url": rcv.url, "scope": {"namespace": [uniq]}}), 201)
    rel = assert_ok_json(floe.post("/v1/releases", json={
        "tables": [{"namespace": [uniq], "name": "t"}]}), 201)
    sid = t.add_snapshot(rel["branch"])
    r = keyed_retry(floe, "POST", f"/v1/releases/{rel['id']}/publish", 200,
                    lambda: head(t) == t.s1 or pytest.fail("main moved"),
                    lambda: head(t) == sid or pytest.fail("main did not move"),
                    body={})
    assert r.json()["state"] == "published"
    assert len(rcv.requests) == 2


def test_view_create_and_undrop(floe, uniq):
    floe.create_namespace([uniq])
    sql = {"version-id": 1, "timestamp-ms": 1700000000000, "schema-id": 0,
           "summary": {"engine-name": "spark"}, "default-namespace": [uniq],
           "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    schema = {"type": "struct", "schema-id": 0,
              "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
    exists = lambda: floe.head(f"/v1/namespaces/{uniq}/views/v").status_code
    r = keyed_retry(floe, "POST", f"/v1/namespaces/{uniq}/views", 200,
                    lambda: exists() == 404 or pytest.fail("the view was kept"),
                    lambda: exists() == 204 or pytest.fail("no view"),
                    body={"name": "v", "schema": schema, "view-version": sql})
    assert r.json() == assert_ok_json(floe.get(f"/v1/namespaces/{uniq}/views/v"))

    t = TableHandle(floe, [uniq], "t")
    t.create()
    assert floe.delete(f"/v1/namespaces/{uniq}/tables/t").status_code == 204
    there = lambda: floe.head(f"/v1/namespaces/{uniq}/tables/t").status_code
    r = keyed_retry(floe, "POST", f"/v1/namespaces/{uniq}/tables/t/undrop", 200,
                    lambda: there() == 404 or pytest.fail("the table came back"),
                    lambda: there() == 204 or pytest.fail("no table"))
    assert r.json()["metadata-location"] == t.load()["metadata-location"]


def test_table_metrics_report(floe, uniq):
    t = new_table(floe, uniq)
    report = {"report-type": "scan-report", "table-name": f"{uniq}.t", "snapshot-id": t.s1,
              "filter": True, "schema-id": 0, "projected-field-ids": [1],
              "projected-field-names": ["id"], "metrics": {}}
    with psycopg.connect(database_url(floe), autocommit=True) as conn:
        count = lambda: conn.execute(
            "SELECT count(*) FROM metrics_reports WHERE namespace = %s AND table_name = 't'",
            ([uniq],)).fetchone()[0]
        keyed_retry(floe, "POST", f"{t.url}/metrics", 204,
                    lambda: count() == 0 or pytest.fail("the report was kept"),
                    lambda: count() == 1 or pytest.fail("not one report"),
                    body=report)


def test_control_action(floe, uniq):
    floe.create_namespace([uniq])
    props = lambda: assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"]
    r = keyed_retry(floe, "POST", "/v1/controls/wap-required", 200,
                    lambda: "floe.wap.required" not in props() or pytest.fail("control kept"),
                    lambda: props()["floe.wap.required"] == "true" or pytest.fail("no control"),
                    body={"namespace": [uniq], "required": True, "reason": "CHG-1"})
    assert r.json() == {"action": "wap-required", "reason": "CHG-1",
                        "result": {"namespace": [uniq], "required": True}}
    assert count_events(floe, "control.wap-required", namespace=uniq) == 1
