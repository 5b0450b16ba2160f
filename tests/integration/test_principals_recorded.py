"""Who acted is recorded with what was done, and separation of duties.

With authentication off (no principal on the request) every commit_log
row, audit event and write-audit-publish run records ``anonymous`` and no
client id, the run shows ``staged-by``/``published-by``/``written-by``, a
hook is told ``requested-by: anonymous``, and the access log names the
principal.  commit_log names the refs each commit set, which is how a
run's ``written-by`` is read.  ``floe.wap.separation-of-duties=true`` is a
control property: it can be set through the ordinary routes, weakened only
through ``POST /v1/controls/separation-of-duties``, and while it is in
force a publish without an authenticated principal fails closed (403).

The test with real principals (alice stages, bob writes, carol publishes)
runs with floe's authentication on, at the end.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import (
    TableHandle,
    client_token,
    make_client,
    assert_error,
    assert_ok_json,
    audit_events,
    control,
    database_url,
    describe,
    ns_path,
    set_ns_props,
)
from webhook import PASS

SOD = "floe.wap.separation-of-duties"
FAIL_CLOSED = ("Separation of duties ({rule}): publishing run {run} needs an authenticated "
               "principal, and authentication is required for it")
TABLE_RULE = "the table sets floe.wap.separation-of-duties=true"


# --------------------------------------------------------------------------
# helpers


def psql(psql_bin, url, sql) -> list[list[str]]:
    """Rows of sql, each a list of its columns (\\x1f-separated by psql)."""
    r = subprocess.run([str(psql_bin), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\x1f",
                        "-d", url, "-c", sql], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line.split("\x1f") for line in r.stdout.splitlines()]


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


@pytest.fixture
def table(floe, ns):
    t = TableHandle(floe, ns, "orders")
    t.create()
    t.s1 = t.add_snapshot("main")
    return t


def table_scope(t):
    return {"namespace": t.namespace, "table": t.name}


def commit_rows(psql_bin, f, t) -> list[list[str]]:
    """(version, principal, client_id or '', refs or '') of the table's commits, in order."""
    uuid = t.metadata()["table-uuid"]
    return psql(psql_bin, database_url(f),
                "SELECT version, principal, coalesce(client_id, ''), coalesce(array_to_string(refs, ','), '<null>') "
                f"FROM commit_log WHERE table_uuid = '{uuid}' ORDER BY id")


def assert_fail_closed(r, t, run_id, rule=None):
    """r is the fail-closed 403; rule: what sets the property (default: t's namespace)."""
    assert_error(r, 403, "ForbiddenException")
    msg = r.json()["error"]["message"]
    rule = rule or f"namespace {'.'.join(t.namespace)} sets floe.wap.separation-of-duties=true"
    assert msg == FAIL_CLOSED.format(rule=rule, run=run_id), msg


# --------------------------------------------------------------------------
# recorded as anonymous without authentication


def test_commit_log_records_anonymous_and_the_refs_each_commit_set(floe, table, psql_bin):
    t = table
    t.add_snapshot("dev")
    t.commit_ok([{"action": "set-properties", "updates": {"owner": "sales"}}])
    rows = commit_rows(psql_bin, floe, t)
    assert [r[0] for r in rows] == ["1", "2", "3", "4"], rows
    assert all(r[1] == "anonymous" and r[2] == "" for r in rows), rows
    # create (no ref yet), main moved, dev created, a property change
    assert [r[3] for r in rows] == ["", "main", "dev", ""], rows


def test_audit_events_record_anonymous_without_a_client_id(floe, table, psql_bin):
    t = table
    run = t.stage()
    events = audit_events(floe, run=run["id"])
    assert [e["event"] for e in events] == ["wap.staged"], events
    for e in events:
        assert e["principal"] == "anonymous" and e["client-id"] is None, e
    rows = psql(psql_bin, database_url(floe),
                "SELECT principal, coalesce(client_id, '<null>') FROM audit_events "
                f"WHERE run_id = '{run['id']}'")
    assert rows == [["anonymous", "<null>"]], rows


def test_a_run_shows_and_records_who_staged_wrote_and_published(floe, table, hooks, webhooks, psql_bin):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "who", rcv.url, scope=table_scope(t))
    run = t.stage()
    assert run["staged-by"] == "anonymous", run
    assert run["written-by"] == [], "the staging commit is not a write to the run"
    assert "published-by" not in run and "abandoned-by" not in run, run

    t.add_snapshot("other")          # another branch: not the run's
    assert t.run(run["id"])["written-by"] == []
    t.add_snapshot(run["branch"])    # the run's branch
    got = t.run(run["id"])
    assert got["written-by"] == ["anonymous"], got
    listed = assert_ok_json(floe.get(t.wap_url))["runs"]
    assert [r["written-by"] for r in listed if r["id"] == run["id"]] == [["anonymous"]], listed

    r = t.publish(run["id"])
    out = assert_ok_json(r)
    assert out["state"] == "published" and out["published-by"] == "anonymous", out
    assert out["staged-by"] == "anonymous" and out["written-by"] == ["anonymous"], out

    sent = rcv.wait_for(1)[0].json()
    assert sent["requested-by"] == "anonymous", sent
    assert "requested-by-client" not in sent, sent

    rows = psql(psql_bin, database_url(floe),
                "SELECT staged_by, coalesce(staged_client_id, '<null>'), published_by, "
                "coalesce(published_client_id, '<null>'), coalesce(abandoned_by, '<null>') "
                f"FROM wap_runs WHERE id = '{run['id']}'")
    assert rows == [["anonymous", "<null>", "anonymous", "<null>", "<null>"]], rows
    for e in audit_events(floe, run=run["id"]):
        assert e["principal"] == "anonymous" and e["client-id"] is None, e


def test_writes_after_the_publish_are_not_the_run_s(floe, table, hooks, webhooks):
    t = table
    hooks(floe, "kept", webhooks(PASS).url, scope=table_scope(t))
    run = t.stage()
    out = assert_ok_json(t.publish(run["id"], **{"keep-branch": True}))
    assert out["written-by"] == [], out
    t.add_snapshot(run["branch"])     # the kept branch written on afterwards
    assert t.run(run["id"])["written-by"] == []


def test_an_adopted_branch_counts_its_earlier_writes(floe, table):
    t = table
    t.add_snapshot("audit")
    run = t.stage(branch="audit", adopt=True)
    assert run["written-by"] == ["anonymous"], run


def test_an_abandoned_run_records_who_abandoned_it(floe, table, psql_bin):
    t = table
    run = t.stage()
    out = assert_ok_json(floe.delete(t.run_url(run["id"])))
    assert out["state"] == "abandoned" and out["abandoned-by"] == "anonymous", out
    assert "published-by" not in out, out
    rows = psql(psql_bin, database_url(floe),
                f"SELECT abandoned_by, coalesce(published_by, '<null>') FROM wap_runs WHERE id = '{run['id']}'")
    assert rows == [["anonymous", "<null>"]], rows


def test_the_access_log_names_the_principal(floe, ns):
    r = floe.get(f"/v1/namespaces/{ns_path(ns)}")
    assert r.status_code == 200, describe(r)
    lines = floe.access_log_lines(r.headers["X-Request-Id"])
    assert len(lines) == 1, lines
    assert " principal=anonymous rid=" in lines[0], lines[0]


# --------------------------------------------------------------------------
# separation of duties without authentication: it fails closed


def test_separation_of_duties_refuses_every_publish_without_a_principal(floe, ns, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "sod", rcv.url, scope=table_scope(t))
    assert_ok_json(set_ns_props(floe, ns, {SOD: "true"}))   # strengthening: an ordinary change
    run = t.stage()
    t.add_snapshot(run["branch"])

    assert_fail_closed(t.publish(run["id"]), t, run["id"])
    assert rcv.count() == 0, "no hook is called for a refused publish"
    assert t.head("main") == t.s1
    assert t.run(run["id"])["state"] == "staged"
    refused = [e for e in audit_events(floe, run=run["id"]) if e["event"] == "wap.publish-refused"]
    assert len(refused) == 1, refused
    assert refused[0]["principal"] == "anonymous", refused
    assert refused[0]["details"]["reason"] == "no authenticated principal", refused
    assert refused[0]["details"]["principal"] == "anonymous", refused
    changes = [e for e in audit_events(floe, namespace="\x1f".join(ns)) if e["event"] == "control.separation-of-duties"]
    assert [e["details"]["required"] for e in changes] == [True], changes


def test_the_table_property_puts_separation_of_duties_in_force(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "sod-table", rcv.url, scope=table_scope(t))
    t.commit_ok([{"action": "set-properties", "updates": {SOD: "true"}}])
    run = t.stage()
    assert_fail_closed(t.publish(run["id"]), t, run["id"], TABLE_RULE)
    assert rcv.count() == 0


def test_weakening_separation_of_duties_needs_the_control_route(floe, ns, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "sod-weaken", rcv.url, scope=table_scope(t))
    assert_ok_json(set_ns_props(floe, ns, {SOD: "true"}))
    t.commit_ok([{"action": "set-properties", "updates": {SOD: "true"}}])

    for r in (set_ns_props(floe, ns, removals=[SOD]), set_ns_props(floe, ns, {SOD: "false"})):
        assert_error(r, 403, "ForbiddenException")
        msg = r.json()["error"]["message"]
        assert SOD in msg and "POST /v1/controls/separation-of-duties" in msg, msg
    for ups in ([{"action": "remove-properties", "removals": [SOD]}],
                [{"action": "set-properties", "updates": {SOD: "no"}}]):
        r = t.commit(ups)
        assert_error(r, 403, "ForbiddenException")
        assert "POST /v1/controls/separation-of-duties" in r.json()["error"]["message"], describe(r)
    assert t.metadata()["properties"][SOD] == "true"

    run = t.stage()
    assert_fail_closed(t.publish(run["id"]), t, run["id"], TABLE_RULE)

    # without a reason the control route refuses too
    assert_error(control(floe, "separation-of-duties", namespace=ns, required=False), 400, "BadRequestException")
    out = assert_ok_json(control(floe, "separation-of-duties", namespace=ns, table=t.name, required=False,
                                 reason="CHG-1: one-person team"))
    assert out["action"] == "separation-of-duties" and out["result"]["required"] is False, out
    assert SOD not in t.metadata()["properties"]
    r = t.publish(run["id"])
    assert_fail_closed(r, t, run["id"])   # the namespace still sets it
    assert_ok_json(control(floe, "separation-of-duties", namespace=ns, required=False,
                           reason="CHG-2: one-person team"))
    out = assert_ok_json(t.publish(run["id"]))
    assert out["state"] == "published" and out["published-by"] == "anonymous", out

    events = [e for e in audit_events(floe, namespace="\x1f".join(ns)) if e["event"] == "control.separation-of-duties"]
    reasons = [e["details"].get("reason") for e in events]
    assert reasons[-2:] == ["CHG-1: one-person team", "CHG-2: one-person team"], events
    assert all(e["principal"] == "anonymous" for e in events), events


def test_the_control_route_sets_separation_of_duties_too(floe, ns, table):
    t = table
    out = assert_ok_json(control(floe, "separation-of-duties", namespace=ns, required=True, reason="SOX-9"))
    assert out["result"] == {"namespace": ns, "required": True}, out
    props = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path(ns)}"))["properties"]
    assert props[SOD] == "true", props
    run = t.stage()
    assert_fail_closed(t.publish(run["id"]), t, run["id"])


# --------------------------------------------------------------------------
# with real principals: floe's authentication on, three clients


@pytest.fixture
def authed(floe_factory, postgres):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe",
                          "FLOE_HOOK_ALLOW": "127.0.0.1"})
    return f.authenticate()


def acting(f, token):
    """From now on f's requests are made with token (another principal)."""
    f.session.headers["Authorization"] = f"Bearer {token}"


def test_principals_are_recorded_and_separation_of_duties_decides(authed, hooks, webhooks, psql_bin):
    f = authed
    admin = f.token
    tokens = {name: client_token(f, make_client(f, name)) for name in ("alice", "bob", "carol")}
    f.create_namespace(["sod"])
    t = TableHandle(f, ["sod"], "orders")
    t.create()
    t.s1 = t.add_snapshot("main")
    rcv = webhooks(PASS)
    hooks(f, "who", rcv.url, scope=table_scope(t))
    assert_ok_json(set_ns_props(f, ["sod"], {SOD: "true"}))

    acting(f, tokens["alice"])
    run = t.stage()
    assert run["staged-by"] == "alice", run
    acting(f, tokens["bob"])
    t.add_snapshot(run["branch"])
    assert t.run(run["id"])["written-by"] == ["bob"]

    acting(f, tokens["alice"])
    r = t.publish(run["id"])
    assert_error(r, 403, "ForbiddenException")
    assert "alice staged run" in r.json()["error"]["message"], describe(r)
    acting(f, tokens["bob"])
    r = t.publish(run["id"])
    assert_error(r, 403, "ForbiddenException")
    assert "bob wrote to branch" in r.json()["error"]["message"], describe(r)
    assert rcv.count() == 0, "no hook is called for a refused publish"

    acting(f, tokens["carol"])
    out = assert_ok_json(t.publish(run["id"]))
    assert out["state"] == "published", out
    assert (out["staged-by"], out["written-by"], out["published-by"]) == ("alice", ["bob"], "carol")
    sent = rcv.wait_for(1)[0].json()
    assert sent["requested-by"] == "carol" and sent["requested-by-client"] == "carol", sent

    acting(f, admin)
    refused = [e for e in audit_events(f, run=run["id"]) if e["event"] == "wap.publish-refused"]
    assert [e["principal"] for e in refused] == ["alice", "bob"], refused
    rows = commit_rows(psql_bin, f, t)
    assert {r[1] for r in rows} >= {"admin", "alice", "bob", "carol"}, rows
    assert all(r[1] == r[2] for r in rows), "each commit names its token's client id"



def test_a_writer_behind_a_hundred_others_still_may_not_publish(authed, hooks, webhooks):
    """written-by shows at most 100 names; the rule reads every writer.

    101 writers whose names sort before hers commit to a run's branch and
    to a release's branch, then she writes to both too: she may publish
    neither, though she is not among the 100 names the run shows."""
    f = authed
    admin = f.token
    f.create_namespace(["sod100"])
    t = TableHandle(f, ["sod100"], "orders")
    t.create()
    t.s1 = t.add_snapshot("main")
    lines = TableHandle(f, ["sod100"], "lines")
    lines.create()
    lines.s1 = lines.add_snapshot("main")
    rcv = webhooks(PASS)
    hooks(f, "auditor", rcv.url, scope={"namespace": ["sod100"]})
    assert_ok_json(set_ns_props(f, ["sod100"], {SOD: "true"}))
    run = t.stage()
    rel = assert_ok_json(f.post("/v1/releases", json={
        "tables": [{"namespace": ["sod100"], "name": "lines"}], "name": "nightly"}), 201)
    member = rel["tables"][0]

    writers = [f"a{i:03d}" for i in range(101)] + ["zoe"]
    tokens = {}
    for name in writers:
        tokens[name] = client_token(f, make_client(f, name))
        acting(f, tokens[name])
        t.add_snapshot(run["branch"])
        lines.add_snapshot("nightly")
    acting(f, admin)
    assert t.run(run["id"])["written-by"] == writers[:100], "the first 100 names, sorted"
    rule = "namespace sod100 sets floe.wap.separation-of-duties=true"

    acting(f, tokens["zoe"])
    r = t.publish(run["id"])
    assert_error(r, 403, "ForbiddenException")
    assert r.json()["error"]["message"] == (
        f"Separation of duties: zoe wrote to branch {run['branch']} of run {run['id']} "
        f"and may not publish it ({rule})"), describe(r)
    r = f.post(f"/v1/releases/{rel['id']}/publish", json={}, timeout=60)
    assert_error(r, 403, "ForbiddenException")
    assert r.json()["error"]["message"] == (
        f"Separation of duties: zoe wrote to branch nightly of run {member['id']} "
        f"and may not publish it ({rule})"), describe(r)
    assert rcv.count() == 0, "no hook is called for a refused publish"
    assert t.head("main") == t.s1 and lines.head("main") == lines.s1

    acting(f, admin)
    refused = [e for e in audit_events(f, namespace="sod100") if e["event"] == "wap.publish-refused"]
    assert [(e["principal"], e["run-id"], e["details"]["reason"]) for e in refused] == [
        ("zoe", run["id"], "wrote to the run's branch"),
        ("zoe", member["id"], "wrote to the run's branch")], refused
    # Who neither staged nor wrote still publishes both.
    acting(f, client_token(f, make_client(f, "carol")))
    assert assert_ok_json(t.publish(run["id"]))["state"] == "published"
    assert assert_ok_json(f.post(f"/v1/releases/{rel['id']}/publish", json={},
                                 timeout=60))["state"] == "published"
