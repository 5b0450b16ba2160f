"""The audited-publish control has no holes (floe.wap.required).

Every path that can move main runs the same policy check; weakening the
control is refused through the ordinary routes and done only through
POST /v1/controls/{action} with a reason; every change an auditor cares
about writes its audit event in the same transaction (proved by making the
event insert fail with a trigger and checking that the change did not
happen); floe's runtime database role cannot change the audit log; the
audit lease is fenced; the audit-log cursor never skips a late commit; and
a table's first load can go through write-audit-publish.
"""

from __future__ import annotations

import subprocess
import threading

import pytest

from conftest import (
    Floe,
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    control,
    database_url,
    describe,
    register_hook,
    run_floe,
    set_ns_props,
)
from webhook import PASS, Reply

WAP = "floe.wap.required"


# --------------------------------------------------------------------------
# helpers


def kinds(events) -> list:
    return [e["event"] for e in events]


def new_table(f, ns, name="orders", snapshots=1) -> TableHandle:
    t = TableHandle(f, ns, name)
    t.create()
    for _ in range(snapshots):
        t.s1 = t.add_snapshot("main")
    return t


def assert_forbidden(resp, *words):
    err = assert_error(resp, 403, "ForbiddenException")
    for w in words:
        assert w in err["message"], err
    return err


def psql(psql_bin, url, sql, user_url=None):
    return subprocess.run([str(psql_bin), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", user_url or url,
                           "-c", sql], capture_output=True, text=True, timeout=60)


def psql_ok(psql_bin, url, sql):
    r = psql(psql_bin, url, sql)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


@pytest.fixture
def protected(floe, ns):
    """A namespace under floe.wap.required=true (set through the ordinary route)."""
    assert_ok_json(set_ns_props(floe, ns, {WAP: "true"}))
    return ns


@pytest.fixture
def free_ns(floe, uniq):
    levels = [uniq + "_free"]
    floe.create_namespace(levels)
    return levels


# --------------------------------------------------------------------------
# 1. one policy check on every path that moves main


def test_rename_out_of_a_protected_namespace_is_refused(floe, ns, free_ns, psql_bin):
    t = new_table(floe, ns)
    assert_ok_json(set_ns_props(floe, ns, {WAP: "true"}))
    before = t.load()

    # rename out, move main, rename back: the first step is refused
    body = {"source": {"namespace": ns, "name": t.name}, "destination": {"namespace": free_ns, "name": t.name}}
    assert_forbidden(floe.post("/v1/tables/rename", json=body), WAP, "/v1/controls/rename")
    assert t.load()["metadata-location"] == before["metadata-location"]
    assert_error(floe.get(TableHandle(floe, free_ns, t.name).url), 404, "NoSuchTableException")
    _, updates = t.snapshot_updates("main")
    assert_forbidden(t.commit(updates), WAP)
    assert t.head("main") == t.s1

    # inside the protected namespace a rename stays allowed (and is audited)
    r = floe.post("/v1/tables/rename", json={"source": {"namespace": ns, "name": t.name},
                                             "destination": {"namespace": ns, "name": "orders2"}})
    assert r.status_code == 204, describe(r)
    moved = TableHandle(floe, ns, "orders2")
    ev = [e for e in audit_events(floe, namespace=ns[0]) if e["event"] == "table.renamed"]
    assert len(ev) == 1 and ev[0]["table"] == t.name, ev
    assert ev[0]["details"]["to"] == {"namespace": ns, "name": "orders2"}, ev

    # the control route may, with a reason, and records it
    body = {"source": {"namespace": ns, "name": "orders2"}, "destination": {"namespace": free_ns, "name": "orders2"}}
    assert_error(control(floe, "rename", **body), 400, "BadRequestException")
    out = assert_ok_json(control(floe, "rename", reason="CHG-1: archive the mart", **body))
    assert out["action"] == "rename" and out["reason"] == "CHG-1: archive the mart", out
    ev = [e for e in audit_events(floe, namespace=ns[0]) if e["event"] == "table.renamed"]
    assert len(ev) == 2 and ev[1]["details"]["reason"] == "CHG-1: archive the mart", ev
    assert TableHandle(floe, free_ns, "orders2").head("main") == t.s1
    assert_error(floe.get(moved.url), 404, "NoSuchTableException")


def test_a_tables_own_protection_travels_with_it(floe, ns, free_ns):
    t = new_table(floe, ns)
    t.commit_ok([{"action": "set-properties", "updates": {WAP: "true"}}])
    r = floe.post("/v1/tables/rename", json={"source": {"namespace": ns, "name": t.name},
                                             "destination": {"namespace": free_ns, "name": "moved"}})
    assert r.status_code == 204, describe(r)
    moved = TableHandle(floe, free_ns, "moved")
    _, updates = moved.snapshot_updates("main")
    assert_forbidden(moved.commit(updates), WAP)
    assert moved.head("main") == t.s1


def test_rename_between_protected_namespaces_is_allowed(floe, protected, uniq):
    other = [uniq + "_other"]
    floe.create_namespace(other, {WAP: "true"})
    t = TableHandle(floe, protected, "orders")
    t.create()
    r = floe.post("/v1/tables/rename", json={"source": {"namespace": protected, "name": "orders"},
                                             "destination": {"namespace": other, "name": "orders"}})
    assert r.status_code == 204, describe(r)


def _older_metadata(t: TableHandle) -> str:
    log = t.metadata()["metadata-log"]
    assert log, "no metadata-log"
    return log[0]["metadata-file"]


def test_register_over_a_protected_table_is_refused(floe, ns):
    t = new_table(floe, ns, snapshots=2)
    older = _older_metadata(t)
    assert_ok_json(set_ns_props(floe, ns, {WAP: "true"}))
    head = t.head("main")
    url = f"/v1/namespaces/{ns[0]}/register"
    body = {"name": t.name, "metadata-location": older, "overwrite": True}
    assert_forbidden(floe.post(url, json=body), WAP, "/v1/controls/register")
    assert t.head("main") == head
    assert "table.register-overwrite" not in kinds(audit_events(floe, namespace=ns[0]))

    out = assert_ok_json(control(floe, "register", namespace=ns, name=t.name, reason="INC-7: restore",
                                 **{"metadata-location": older}))
    assert out["result"]["metadata-location"] == older, out
    assert t.load()["metadata-location"] == older
    ev = [e for e in audit_events(floe, namespace=ns[0]) if e["event"] == "table.register-overwrite"]
    assert len(ev) == 1 and ev[0]["details"]["reason"] == "INC-7: restore", ev
    assert ev[0]["details"]["metadata-location"] == older, ev


def test_register_over_an_unprotected_table_is_allowed_and_audited(floe, ns):
    t = new_table(floe, ns, snapshots=2)
    older = _older_metadata(t)
    r = floe.post(f"/v1/namespaces/{ns[0]}/register",
                  json={"name": t.name, "metadata-location": older, "overwrite": True})
    assert_ok_json(r)
    ev = [e for e in audit_events(floe, namespace=ns[0]) if e["event"] == "table.register-overwrite"]
    assert len(ev) == 1 and "reason" not in ev[0]["details"], ev


def test_registering_a_table_with_a_main_snapshot_into_a_protected_scope_is_refused(floe, protected, free_ns):
    # drop then register is an overwrite in two steps: the same rule holds
    t = new_table(floe, free_ns)
    loc = t.load()["metadata-location"]
    r = floe.delete(t.url)
    assert r.status_code == 204, describe(r)
    url = f"/v1/namespaces/{protected[0]}/register"
    assert_forbidden(floe.post(url, json={"name": "landed", "metadata-location": loc}), WAP, "/v1/controls/register")
    assert_error(floe.get(TableHandle(floe, protected, "landed").url), 404, "NoSuchTableException")
    assert_ok_json(control(floe, "register", namespace=protected, name="landed", reason="INC-8: move in",
                           **{"metadata-location": loc}))
    assert TableHandle(floe, protected, "landed").head("main") == t.s1
    ev = [e for e in audit_events(floe, namespace=protected[0]) if e["event"] == "table.registered"]
    assert len(ev) == 1 and ev[0]["details"]["reason"] == "INC-8: move in", ev
    dropped = [e for e in audit_events(floe, namespace=free_ns[0]) if e["event"] == "table.dropped"]
    assert len(dropped) == 1 and dropped[0]["table"] == t.name, dropped


# --------------------------------------------------------------------------
# 2. weakening the control is a controlled change


def test_table_property_cannot_be_weakened_by_a_commit(floe, ns):
    t = new_table(floe, ns)
    t.commit_ok([{"action": "set-properties", "updates": {WAP: "true"}}])
    ev = [e for e in audit_events(floe, namespace=ns[0], table=t.name) if e["event"] == "control.wap-required"]
    assert [e["details"] for e in ev] == [{"required": True}], ev
    for updates in ([{"action": "remove-properties", "removals": [WAP]}],
                    [{"action": "set-properties", "updates": {WAP: "false"}}],
                    [{"action": "set-properties", "updates": {WAP: "no"}}]):
        assert_forbidden(t.commit(updates), WAP, "/v1/controls/wap-required")
        assert t.metadata()["properties"][WAP] == "true"
    # ... nor inside a transaction
    r = floe.post("/v1/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ns, "name": t.name}, "requirements": [],
         "updates": [{"action": "remove-properties", "removals": [WAP]}]}]})
    assert_forbidden(r, WAP)
    # other property changes stay allowed
    t.commit_ok([{"action": "set-properties", "updates": {"owner": "finance"}}])

    assert_error(control(floe, "wap-required", namespace=ns, table=t.name, required=False), 400)
    assert_error(control(floe, "wap-required", namespace=ns, table=t.name, required=False, reason=""), 400)
    out = assert_ok_json(control(floe, "wap-required", namespace=ns, table=t.name, required=False,
                                 reason="CHG-2: table retired from SOX scope"))
    assert out["result"] == {"namespace": ns, "table": t.name, "required": False}, out
    assert WAP not in t.metadata()["properties"]
    ev = [e for e in audit_events(floe, namespace=ns[0], table=t.name) if e["event"] == "control.wap-required"]
    assert [e["details"] for e in ev] == [{"required": True},
                                          {"required": False, "reason": "CHG-2: table retired from SOX scope"}], ev
    # now main may move
    t.add_snapshot("main")


def test_namespace_property_cannot_be_weakened_by_update_properties(floe, ns):
    t = new_table(floe, ns)
    assert_ok_json(set_ns_props(floe, ns, {WAP: "true"}))
    for updates, removals in (({}, [WAP]), ({WAP: "false"}, []), ({WAP: ""}, [])):
        assert_forbidden(set_ns_props(floe, ns, updates, removals), WAP, "/v1/controls/wap-required")
        assert assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}"))["properties"][WAP] == "true"
    assert_ok_json(set_ns_props(floe, ns, {"owner": "finance"}))
    assert_ok_json(set_ns_props(floe, ns, {WAP: "TRUE"}))   # still true

    out = assert_ok_json(control(floe, "wap-required", namespace=ns, required=False, reason="CHG-3"))
    assert out["result"]["required"] is False and "table" not in out["result"], out
    assert WAP not in assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}"))["properties"]
    ev = [e for e in audit_events(floe, namespace=ns[0]) if e["event"] == "control.wap-required"]
    assert [(e["details"]["required"], e["details"].get("reason")) for e in ev] == [
        (True, None), (False, "CHG-3")], ev
    t.add_snapshot("main")
    # The control route also strengthens.
    assert_ok_json(control(floe, "wap-required", namespace=ns, required=True, reason="CHG-4"))
    _, updates = t.snapshot_updates("main")
    assert_forbidden(t.commit(updates), WAP)


def test_a_hook_covering_a_protected_scope_cannot_be_deleted(floe, protected, uniq, webhooks, free_ns):
    rcv = webhooks(PASS)
    a = register_hook(floe, "a", rcv.url, scope={"namespace": protected})
    unrelated = register_hook(floe, "elsewhere", rcv.url, scope={"namespace": free_ns})
    r = floe.delete(f"/v1/audit-hooks/{unrelated['id']}")
    assert r.status_code == 204, describe(r)

    assert_forbidden(floe.delete(f"/v1/audit-hooks/{a['id']}"), WAP, protected[0], "/v1/controls/delete-hook")
    assert_ok_json(floe.get(f"/v1/audit-hooks/{a['id']}"))
    # Another hook beside it makes it no less part of the control: every
    # hook in scope must pass, so one that always passes would otherwise
    # let the auditor go.
    b = register_hook(floe, "b", rcv.url, scope={"namespace": protected})
    for h in (a, b):
        assert_forbidden(floe.delete(f"/v1/audit-hooks/{h['id']}"), WAP, protected[0])

    # a table that protects itself is guarded the same way
    own_ns = [uniq + "_own"]
    floe.create_namespace(own_ns)
    t = TableHandle(floe, own_ns, "guarded")
    t.create(properties={WAP: "true"})
    th = register_hook(floe, "table", rcv.url, scope={"namespace": own_ns, "table": "guarded"})
    assert_forbidden(floe.delete(f"/v1/audit-hooks/{th['id']}"), own_ns[0] + ".guarded")

    # a hook that covers one table of a protected namespace
    TableHandle(floe, protected, "orders").create()
    one = register_hook(floe, "one", rcv.url, scope={"namespace": protected, "table": "orders"})
    assert_forbidden(floe.delete(f"/v1/audit-hooks/{one['id']}"), protected[0] + ".orders")
    # and one on a namespace below a protected one, with no table yet
    floe.create_namespace(protected + ["eu"])
    child = register_hook(floe, "child", rcv.url, scope={"namespace": protected + ["eu"]})
    assert_forbidden(floe.delete(f"/v1/audit-hooks/{child['id']}"), protected[0] + ".eu")

    assert_error(control(floe, "delete-hook", **{"hook-id": b["id"]}), 400)
    out = assert_ok_json(control(floe, "delete-hook", reason="CHG-5: auditor replaced", **{"hook-id": b["id"]}))
    assert out["result"] == {"hook-id": b["id"]}, out
    assert_error(floe.get(f"/v1/audit-hooks/{b['id']}"), 404, "NoSuchAuditHookException")
    ev = [e for e in audit_events(floe) if e["event"] == "hook.deleted" and e["details"]["hook-id"] == b["id"]]
    assert len(ev) == 1 and ev[0]["details"]["reason"] == "CHG-5: auditor replaced", ev
    assert_error(control(floe, "delete-hook", reason="x", **{"hook-id": b["id"]}), 404, "NoSuchAuditHookException")
    for h in (a, th, one, child):
        assert_ok_json(control(floe, "delete-hook", reason="cleanup", **{"hook-id": h["id"]}))


def test_control_route_errors(floe, ns):
    assert_error(control(floe, "nope", reason="x"), 400, "BadRequestException")
    assert_error(floe.post("/v1/controls/wap-required", data=b"{x", headers={"Content-Type": "application/json"}), 400)
    assert_error(control(floe, "wap-required", namespace=ns, required="no", reason="x"), 400)
    assert_error(control(floe, "wap-required", namespace=ns, required=True, reason="x" * 1001), 400)
    assert_error(control(floe, "wap-required", namespace=ns, table="ghost", required=False, reason="x"), 404,
                 "NoSuchTableException")
    assert_error(control(floe, "wap-required", namespace=["ghost_ns"], required=False, reason="x"), 404,
                 "NoSuchNamespaceException")
    # through a prefix, like every route
    assert_ok_json(floe.post("/v1/warehouse/controls/wap-required",
                             json={"namespace": ns, "required": True, "reason": "prefixed"}))


# --------------------------------------------------------------------------
# 3. every change writes its audit event in the same transaction


@pytest.fixture
def refuse_event(fresh_floe, psql_bin):
    """refuse_event(name): from now on inserting audit event `name` fails
    (a trigger, installed as the database superuser)."""
    url = database_url(fresh_floe)

    def install(name: str):
        psql_ok(psql_bin, url, f"""
            CREATE OR REPLACE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
            DROP TRIGGER IF EXISTS test_refuse ON audit_events;
            CREATE TRIGGER test_refuse BEFORE INSERT ON audit_events FOR EACH ROW
              WHEN (NEW.event = '{name}') EXECUTE FUNCTION test_refuse_event();""")
    yield install


def _audit_unavailable(resp):
    err = assert_error(resp, 503, "ServiceUnavailableException")
    assert "audit log" in err["message"], err


def test_events_fail_their_change_hooks(fresh_floe, refuse_event, webhooks):
    f = fresh_floe
    rcv = webhooks(PASS)
    refuse_event("hook.registered")
    _audit_unavailable(f.post("/v1/audit-hooks", json={"name": "a", "url": rcv.url}))
    assert assert_ok_json(f.get("/v1/audit-hooks"))["hooks"] == []
    refuse_event("hook.deleted")
    h = register_hook(f, "a", rcv.url)
    _audit_unavailable(f.delete(f"/v1/audit-hooks/{h['id']}"))
    assert_ok_json(f.get(f"/v1/audit-hooks/{h['id']}"))


def test_events_fail_their_change_tables(fresh_floe, refuse_event):
    f = fresh_floe
    f.create_namespace(["a"])
    f.create_namespace(["b"])
    t = new_table(f, ["a"], snapshots=2)
    refuse_event("table.renamed")
    _audit_unavailable(f.post("/v1/tables/rename", json={"source": {"namespace": ["a"], "name": t.name},
                                                         "destination": {"namespace": ["b"], "name": t.name}}))
    assert_ok_json(f.get(t.url))
    refuse_event("table.register-overwrite")
    older = _older_metadata(t)
    _audit_unavailable(f.post("/v1/namespaces/a/register",
                              json={"name": t.name, "metadata-location": older, "overwrite": True}))
    assert t.load()["metadata-location"] != older
    refuse_event("control.wap-required")
    _audit_unavailable(set_ns_props(f, ["a"], {WAP: "true"}))
    assert WAP not in assert_ok_json(f.get("/v1/namespaces/a"))["properties"]
    _audit_unavailable(control(f, "wap-required", namespace=["a"], table=t.name, required=True, reason="x"))
    assert WAP not in t.metadata()["properties"]
    _audit_unavailable(t.commit([{"action": "set-properties", "updates": {WAP: "true"}}]))
    assert WAP not in t.metadata()["properties"]
    refuse_event("table.dropped")
    _audit_unavailable(f.delete(t.url))
    assert_ok_json(f.get(t.url))


def test_events_fail_their_change_namespaces(fresh_floe, refuse_event):
    f = fresh_floe
    refuse_event("namespace.created")
    _audit_unavailable(f.post("/v1/namespaces", json={"namespace": ["a"], "properties": {WAP: "true"}}))
    assert_error(f.get("/v1/namespaces/a"), 404, "NoSuchNamespaceException")
    refuse_event("namespace.dropped")
    f.create_namespace(["a"], {WAP: "true", "owner": "finance"})
    _audit_unavailable(f.delete("/v1/namespaces/a"))
    assert assert_ok_json(f.get("/v1/namespaces/a"))["properties"][WAP] == "true"
    refuse_event("none")
    r = f.delete("/v1/namespaces/a")
    assert r.status_code == 204, describe(r)
    ev = [(e["event"], e["details"]) for e in audit_events(f, namespace="a")]
    assert ev == [("namespace.created", {"controls": {WAP: "true"}}),
                  ("namespace.dropped", {"controls": {WAP: "true"}})], ev


def test_events_fail_their_change_runs(fresh_floe, refuse_event, webhooks):
    f = fresh_floe
    f.create_namespace(["a"])
    t = new_table(f, ["a"])
    rcv = webhooks(PASS)
    register_hook(f, "a", rcv.url)

    run = t.stage()
    t.add_snapshot(run["branch"])
    refuse_event("wap.abandoned")
    _audit_unavailable(f.delete(t.run_url(run["id"])))
    assert t.run(run["id"])["state"] == "staged"
    assert t.head(run["branch"]) is not None, "the branch went without its event"

    # a publish refused before its audit (main is not an ancestor) still
    # answers only once its wap.conflict is on record
    other = new_table(f, ["a"], "other")
    r_other = other.stage()
    other.add_snapshot(r_other["branch"])
    other.add_snapshot("main")
    refuse_event("wap.conflict")
    _audit_unavailable(other.publish(r_other["id"]))
    refuse_event("none")
    assert_error(other.publish(r_other["id"]), 409, "NotFastForwardException")
    assert "wap.conflict" in kinds(audit_events(f, run=r_other["id"]))

    refuse_event("wap.audit-started")
    _audit_unavailable(t.publish(run["id"]))
    assert t.run(run["id"])["state"] == "staged"
    assert rcv.count() == 0, "a hook was called for an audit that never started"

    refuse_event("wap.hook-calling")
    _audit_unavailable(t.publish(run["id"]))
    assert t.run(run["id"])["state"] == "audit-failed"
    assert rcv.count() == 0, "a hook was called whose attempt is not on record"

    refuse_event("wap.hook-called")
    _audit_unavailable(t.publish(run["id"]))
    assert rcv.count() == 1
    assert t.head("main") == t.s1, "main moved without the record of its audit"
    assert "wap.published" not in kinds(audit_events(f, run=run["id"]))


# --------------------------------------------------------------------------
# 4. the audit log is append-only against floe's own database role

TAMPER = (
    "UPDATE audit_events SET event = 'tampered'",
    "DELETE FROM audit_events",
    "TRUNCATE audit_events",
    "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only",
    "ALTER TABLE audit_events DISABLE TRIGGER ALL",
    "DROP TRIGGER audit_events_append_only ON audit_events",
    "DROP TABLE audit_events",
    "UPDATE floe_schema_version SET version = 0",
    "SELECT floe_grant_runtime(current_user)",
)


def _exercise(f: Floe, webhooks):
    f.create_namespace(["sales"], {WAP: "true"})
    t = TableHandle(f, ["sales"], "orders")
    t.create()
    rcv = webhooks(PASS)
    register_hook(f, "sox", rcv.url, scope={"namespace": ["sales"]})
    run = t.stage()
    sid = t.add_snapshot(run["branch"])
    assert_ok_json(t.publish(run["id"]))
    assert t.head("main") == sid
    return len(audit_events(f))


def _assert_tamper_refused(psql_bin, runtime_url, owner_url, n_events):
    count = "SELECT count(*) FROM audit_events"
    for sql in TAMPER:
        r = psql(psql_bin, runtime_url, sql)
        assert r.returncode != 0, f"floe's runtime role could run: {sql}"
        assert "permission denied" in r.stderr or "must be owner" in r.stderr, (sql, r.stderr)
    assert psql_ok(psql_bin, runtime_url, count) == str(n_events)
    assert psql_ok(psql_bin, runtime_url, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == "f"
    owner_of = psql_ok(psql_bin, runtime_url,
                       "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'audit_events'")
    assert owner_of != psql_ok(psql_bin, runtime_url, "SELECT current_user"), owner_of
    # The owner role still cannot change events: the trigger stays.
    r = psql(psql_bin, owner_url, "DELETE FROM audit_events")
    assert r.returncode != 0 and "append-only" in r.stderr, r.stderr


def test_runtime_role_cannot_change_the_audit_log_external(postgres, floe_factory, psql_bin, webhooks):
    runtime_url, owner_url = postgres.new_database_with_roles()
    f = floe_factory(env={"FLOE_DATABASE_URL": runtime_url, "FLOE_OWNER_DATABASE_URL": owner_url})
    n = _exercise(f, webhooks)
    assert "no --owner-database" not in f.log()
    _assert_tamper_refused(psql_bin, runtime_url, owner_url, n)
    # Restarted, the migrations and grants run again and change nothing.
    f.stop()
    f = floe_factory(env={"FLOE_DATABASE_URL": runtime_url, "FLOE_OWNER_DATABASE_URL": owner_url})
    assert len(audit_events(f)) == n
    _assert_tamper_refused(psql_bin, runtime_url, owner_url, n)


def test_without_an_owner_url_floe_warns(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    assert "FLOE_OWNER_DATABASE_URL" in f.log() and "WARN" in f.log().upper(), f.log_tail()


def test_owner_database_needs_database():
    r = run_floe(["--owner-database", "postgresql://x@127.0.0.1/x"])
    assert r.returncode == 2 and "--owner-database" in r.stderr, r.stderr


def test_runtime_role_cannot_change_the_audit_log_embedded(floe_factory, psql_bin, webhooks, pg_bin_dir):
    f = floe_factory(env={"FLOE_PG_BIN_DIR": str(pg_bin_dir)}, ready_timeout=120)
    n = _exercise(f, webhooks)
    sock = f.workdir / "data" / "run"
    runtime_url = f"host={sock} port=5432 user=floe_runtime dbname=floe"
    owner_url = f"host={sock} port=5432 user=floe_owner dbname=floe"
    assert psql_ok(psql_bin, runtime_url, "SELECT current_user") == "floe_runtime"
    _assert_tamper_refused(psql_bin, runtime_url, owner_url, n)
    f.stop()


# --------------------------------------------------------------------------
# 5. a fenced lease; a cursor that skips nothing


def test_a_publish_whose_lease_was_taken_over_writes_nothing(floe, ns, webhooks, psql_bin):
    t = new_table(floe, ns)
    rcv = webhooks(PASS, script=[Reply(200, {"passed": True}, delay=3.0),
                                 Reply(200, {"passed": True}, delay=7.0)])
    register_hook(floe, "slow", rcv.url, scope={"namespace": ns, "table": t.name}, timeout_ms=20000)
    run = t.stage()
    sid = t.add_snapshot(run["branch"])
    results = {}

    def publish(key):
        results[key] = t.publish(run["id"])

    first = threading.Thread(target=publish, args=("first",))
    first.start()
    assert len(rcv.wait_for(1, 10)) == 1
    # The first floe's lease runs out while its hook still thinks.
    psql_ok(psql_bin, database_url(floe),
            f"UPDATE wap_runs SET lease_until = now() - interval '1 second' WHERE id = '{run['id']}'")
    second = threading.Thread(target=publish, args=("second",))
    second.start()
    assert len(rcv.wait_for(2, 10)) == 2
    first.join(30)
    assert_error(results["first"], 409, "WapRunStateException")
    assert t.head("main") == t.s1, "the publish that lost its lease moved main"
    assert t.run(run["id"])["state"] == "auditing"
    second.join(30)
    done = assert_ok_json(results["second"])
    assert done["state"] == "published" and done["published-snapshot-id"] == sid, done
    assert t.head("main") == sid
    events = kinds(audit_events(floe, run=run["id"]))
    assert events.count("wap.published") == 1, events
    # both publishes' hook calls are on record; the loser's as lease-lost
    assert events.count("wap.hook-called") == 2 and events.count("wap.lease-lost") == 1, events
    assert events.index("wap.lease-lost") < events.index("wap.published"), events


def test_the_audit_log_cursor_never_skips_a_late_commit(fresh_floe, psql_bin):
    f = fresh_floe
    f.create_namespace(["a"])
    t = new_table(f, ["a"])
    for _ in range(2):
        t.stage()

    def tail(cursor, seen):
        """A reader that follows the log with pageSize=1 and keeps its
        cursor at the last token it was given."""
        while True:
            body = assert_ok_json(f.get("/v1/audit-log", params={"pageSize": 1, "pageToken": cursor}))
            for e in body["events"]:
                seen.setdefault(e["id"], e)
            if not body["next-page-token"]:
                return cursor
            cursor = body["next-page-token"]

    # A transaction that drew its event id first and commits last.
    late = subprocess.Popen([str(psql_bin), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", database_url(f)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        late.stdin.write("BEGIN;\nINSERT INTO audit_events (event) VALUES ('test.late') RETURNING id;\n")
        late.stdin.flush()
        late_id = int(late.stdout.readline().strip())
        r1, r2 = t.stage(), t.stage()   # committed after the late id was drawn

        seen: dict = {}
        cursor = tail("", seen)
        visible = {e["run-id"] for e in seen.values()}
        assert r1["id"] not in visible and r2["id"] not in visible, \
            "an event was served while an older transaction could still commit before it"
        late.stdin.write("COMMIT;\n")
        late.stdin.close()
        assert late.wait(30) == 0, late.stderr.read()
    finally:
        if late.poll() is None:
            late.kill()
    tail(cursor, seen)
    assert late_id in seen, f"event {late_id} that committed late was skipped"
    got = {e["run-id"] for e in seen.values()}
    assert r1["id"] in got and r2["id"] in got
    everything = audit_events(f)
    assert [e["id"] for e in everything if e["id"] in seen] == [e["id"] for e in everything], \
        "the tailing reader missed events"


# --------------------------------------------------------------------------
# 6. the first load of a new table through write-audit-publish


def test_first_load_of_an_empty_table_through_wap_raw(floe, protected, webhooks, hooks):
    t = TableHandle(floe, protected, "fresh")
    t.create()
    rcv = webhooks(PASS)
    hooks(floe, "sox", rcv.url, scope={"namespace": protected})
    # main cannot get its first snapshot directly ...
    _, updates = t.snapshot_updates("main")
    assert_forbidden(t.commit(updates), WAP)
    # ... but through a run: no base; the branch starts at an empty
    # snapshot (Iceberg's branch of an empty table), main has none
    run = t.stage()
    assert run["base-snapshot-id"] is None, run
    empty = t.head(run["branch"])
    assert empty is not None and t.head("main") is None
    snap = [s for s in t.metadata()["snapshots"] if s["snapshot-id"] == empty][0]
    assert snap["summary"]["total-data-files"] == "0" and "parent-snapshot-id" not in snap, snap
    path = snap["manifest-list"].removeprefix("file://")
    with open(path, "rb") as fh:
        assert fh.read(4) == b"Obj\x01", "the manifest list is not an Avro file"
    loaded = t.add_snapshot(run["branch"])
    done = assert_ok_json(t.publish(run["id"]))
    assert done["state"] == "published" and done["published-snapshot-id"] == loaded, done
    assert t.head("main") == loaded and t.metadata()["current-snapshot-id"] == loaded
    payload = rcv.requests[0].json()
    assert payload["main-snapshot-id"] is None and payload["snapshot-id"] == loaded, payload
    assert payload["parent-snapshot-id"] == empty, payload


def test_first_load_of_an_empty_table_through_wap_pyiceberg(fresh_floe, webhooks):
    pytest.importorskip("pyiceberg")
    pa = pytest.importorskip("pyarrow")
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    f = fresh_floe
    cat = RestCatalog("floe", uri=f.url)
    cat.create_namespace("sales", properties={WAP: "true"})
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    tbl = cat.create_table(("sales", "customers"), schema=schema)
    rows = [{"id": 1, "name": "ada"}, {"id": 2, "name": "grace"}, {"id": 3, "name": "edsger"}]
    data = pa.Table.from_pylist(rows, schema=pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())]))
    with pytest.raises(ForbiddenError):
        tbl.append(data)
    # creating a table with rows on main in one go moves main too
    with pytest.raises(ForbiddenError):
        with cat.create_table_transaction(("sales", "loaded"), schema=schema) as tx:
            tx.append(data)
    assert not cat.table_exists(("sales", "loaded"))
    rcv = webhooks(PASS)
    register_hook(f, "sox", rcv.url, scope={"namespace": ["sales"]})

    t = TableHandle(f, ["sales"], "customers")
    run = t.stage()
    cat.load_table(("sales", "customers")).append(data, branch=run["branch"])
    staged = cat.load_table(("sales", "customers"))
    assert staged.metadata.current_snapshot_id is None
    head = staged.metadata.refs[run["branch"]].snapshot_id
    assert sorted(staged.scan().use_ref(run["branch"]).to_arrow().to_pylist(), key=lambda r: r["id"]) == rows
    done = assert_ok_json(t.publish(run["id"]))
    assert done["published-snapshot-id"] == head, done
    got = sorted(cat.load_table(("sales", "customers")).scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == rows
    assert cat.load_table(("sales", "customers")).metadata.current_snapshot_id == head


def test_a_migration_this_floe_lacks_is_refused_wherever_its_number_falls(postgres, floe_factory,
                                                                           psql_bin):
    # Migration numbers are handed out to parallel work, so they have gaps:
    # a database with a migration recorded in one of them was migrated by
    # a floe with work this one lacks, and is refused as a newer schema is
    # (nothing applied), however low the number.
    url = postgres.new_database()
    psql_ok(psql_bin, url, "CREATE TABLE floe_schema_version (version integer PRIMARY KEY, name text NOT NULL, "
                           "applied_at timestamptz NOT NULL DEFAULT now()); "
                           "INSERT INTO floe_schema_version VALUES (28, '0028_from_elsewhere')")
    with pytest.raises(AssertionError, match="it has migration 0028_from_elsewhere applied"):
        floe_factory(env={"FLOE_DATABASE_URL": url})
    versions = psql_ok(psql_bin, url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM floe_schema_version")
    assert versions == "28", versions
