"""Releases: write-audit-publish over many tables at once.

A release stages one branch name on every member table; its publish calls
every hook in scope of any member once, with every member in the payload,
and then one PostgreSQL transaction moves every member's main to exactly
its audited snapshot, or nothing moves.
"""
from __future__ import annotations

import shutil
import threading
import time

import psycopg
import pytest
import requests

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    database_url,
    describe,
    make_shared_tmpdir,
    register_hook,
    wait_until,
)
from webhook import PASS, Reply

RELEASE_KEYS = {"id", "branch", "state", "created-at", "updated-at", "staged-by", "audits", "tables",
                "published-by", "abandoned-by"}


class Client:
    """A separate HTTP session to floe, for use from another thread."""

    def __init__(self, f):
        self.url = f.url
        self.session = requests.Session()

    def request(self, method, path, **kw):
        kw.setdefault("timeout", 60)
        return self.session.request(method, self.url + path, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)


def ident(t: TableHandle) -> dict:
    return {"namespace": t.namespace, "name": t.name}


def new_table(f, ns, name, snapshot=True) -> TableHandle:
    t = TableHandle(f, ns, name)
    t.create()
    t.s1 = t.add_snapshot("main") if snapshot else None
    return t


def create(f, tables=(), namespaces=(), **extra):
    body = {"tables": [ident(t) for t in tables], **extra}
    if namespaces:
        body["namespaces"] = list(namespaces)
    return f.post("/v1/releases", json=body)


def publish(f, rid, **body):
    return f.post(f"/v1/releases/{rid}/publish", json=body, timeout=60)


def members(rel) -> dict:
    return {(tuple(m["table"]["namespace"]), m["table"]["name"]): m for m in rel["tables"]}


def release_events(f, rid) -> list:
    return [e["event"] for e in audit_events(f, run=rid)]


@pytest.fixture
def three(floe, uniq):
    """orders, order_lines and an empty fx_rates in one namespace."""
    ns = [uniq]
    floe.create_namespace(ns)
    return ns, [new_table(floe, ns, "orders"), new_table(floe, ns, "order_lines"),
                new_table(floe, ns, "fx_rates", snapshot=False)]


def test_a_release_publishes_every_member_in_one_audit(floe, three, hooks, webhooks):
    ns, tables = three
    rcv = webhooks(PASS)
    hook = hooks(floe, "batch", rcv.url, scope={"namespace": ns})
    made = create(floe, tables, name="nightly")
    rel = assert_ok_json(made, 201)
    assert set(rel) <= RELEASE_KEYS and rel["state"] == "staged" and rel["branch"] == "nightly", rel
    assert len(rel["tables"]) == 3
    for t in tables:
        m = members(rel)[(tuple(ns), t.name)]
        assert m["release-id"] == rel["id"] and m["branch"] == "nightly" and m["state"] == "staged"
        assert m["base-snapshot-id"] == t.s1
        assert "nightly" in t.load()["metadata"]["refs"], "no branch on a member"
    # The empty table's branch starts from an empty snapshot; main has none.
    fx = tables[2]
    assert fx.head("main") is None and fx.head("nightly") is not None

    heads = {t.name: t.add_snapshot("nightly") for t in tables}
    r = publish(floe, rel["id"])
    done = assert_ok_json(r)
    assert done["state"] == "published", done
    assert [a["verdict"] for a in done["audits"]] == ["pass"] and done["audits"][0]["hook-id"] == hook["id"]
    for t in tables:
        assert t.head("main") == heads[t.name], t.name
        assert "nightly" not in t.load()["metadata"]["refs"], "the branch was not dropped"
        m = members(done)[(tuple(ns), t.name)]
        assert m["state"] == "published" and m["published-snapshot-id"] == heads[t.name]

    # One call, listing every member with its audited snapshot and main.
    assert rcv.count() == 1
    payload = rcv.requests[0].json()
    assert payload["event"] == "release.audit" and payload["release-id"] == rel["id"]
    assert rcv.requests[0].header("X-Floe-Event") == "release.audit"
    assert payload["branch"] == "nightly"
    listed = {m["table"]["name"]: m for m in payload["tables"]}
    assert set(listed) == {"orders", "order_lines", "fx_rates"}
    for t in tables:
        m = listed[t.name]
        assert m["snapshot-id"] == heads[t.name] and m["snapshot"]["snapshot-id"] == heads[t.name]
        assert m["main-snapshot-id"] == t.s1
        assert m["parent-snapshot-id"] is not None
        assert m["schema"]["type"] == "struct" and m["metadata-location"]
    assert release_events(floe, rel["id"]) == [
        "release.staged", "release.audit-started", "release.hook-calling", "release.hook-called", "release.published"]
    for t in tables:
        runs = audit_events(floe, namespace=".".join(ns), table=t.name)
        assert [e["event"] for e in runs if e["run-id"] == members(done)[(tuple(ns), t.name)]["id"]] == [
            "wap.staged", "wap.published"]
    assert_error(publish(floe, rel["id"]), 409, "WapRunStateException")
    # The change feed has each member's moves, naming the release.
    feed = assert_ok_json(floe.post("/v1/events", json={
        "catalog-objects-by-name": [ns + ["orders"]], "page-size": 100}))["events"]
    custom = [e["operation"] for e in feed if e["operation"]["operation-type"] == "custom"]
    assert [c["custom-type"] for c in custom] == ["x-floe-wap-staged", "x-floe-wap-published"]
    assert all(c["details"]["release-id"] == rel["id"] for c in custom), custom


def test_a_rejected_release_moves_no_table_and_may_be_published_again(floe, three, hooks, webhooks):
    ns, tables = three
    rcv = webhooks(Reply(200, {"passed": False, "reason": "order line 7 has no order"}))
    hooks(floe, "integrity", rcv.url, scope={"namespace": ns})
    rel = assert_ok_json(create(floe, tables), 201)
    assert rel["branch"] == f"release-{rel['id']}"
    for t in tables:
        t.add_snapshot(rel["branch"])
    r = publish(floe, rel["id"])
    assert_error(r, 422, "AuditRejectedException")
    assert "order line 7 has no order" in r.json()["error"]["message"]
    for t in tables:
        assert t.head("main") == t.s1, f"{t.name} moved under a rejected release"
    got = assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))
    assert got["state"] == "rejected" and got["audits"][0]["verdict"] == "reject"
    assert {m["state"] for m in got["tables"]} == {"rejected"}
    assert "release.rejected" in release_events(floe, rel["id"])

    rcv.set(default=PASS)
    assert assert_ok_json(publish(floe, rel["id"]))["state"] == "published"
    assert all(t.head("main") != t.s1 for t in tables)


@pytest.mark.parametrize("reply", [Reply(500, "down"), Reply(200, "not json")])
def test_an_audit_without_a_verdict_fails_closed(floe, three, hooks, webhooks, reply):
    ns, tables = three
    hooks(floe, "flaky", webhooks(reply).url, scope={"namespace": ns}, timeout_ms=2000)
    rel = assert_ok_json(create(floe, tables), 201)
    for t in tables:
        t.add_snapshot(rel["branch"])
    assert_error(publish(floe, rel["id"]), 503, "AuditUnavailableException")
    for t in tables:
        assert t.head("main") == t.s1
    assert assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))["state"] == "audit-failed"


def test_one_member_moving_during_the_audit_moves_nothing_and_names_it(floe, three, hooks, webhooks):
    ns, tables = three
    lines = tables[1]
    other = TableHandle(Client(floe), lines.namespace, lines.name)
    moved = {}

    def move_main_then_pass(req):
        moved["main"] = other.add_snapshot("main")
        return PASS

    hooks(floe, "slow", webhooks(PASS, on_request=move_main_then_pass).url, scope={"namespace": ns})
    rel = assert_ok_json(create(floe, tables), 201)
    for t in tables:
        t.add_snapshot(rel["branch"])
    r = publish(floe, rel["id"])
    assert_error(r, 409, "NotFastForwardException")
    assert "order_lines" in r.json()["error"]["message"], describe(r)
    assert tables[0].head("main") == tables[0].s1 and tables[2].head("main") is None
    assert lines.head("main") == moved["main"]
    got = assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))
    assert got["state"] == "staged"
    conflict = [e for e in audit_events(floe, run=rel["id"]) if e["event"] == "release.conflict"]
    assert conflict and conflict[0]["details"]["table"]["name"] == "order_lines", conflict


def test_two_releases_over_one_table_cannot_both_publish(floe, uniq, hooks, webhooks):
    ns = [uniq]
    floe.create_namespace(ns)
    shared = new_table(floe, ns, "shared")
    a_only = new_table(floe, ns, "a_only")
    b_only = new_table(floe, ns, "b_only")
    hooks(floe, "slow", webhooks(Reply(200, {"passed": True}, delay=0.5)).url, scope={"namespace": ns})
    a = assert_ok_json(create(floe, [shared, a_only], name="a"), 201)
    b = assert_ok_json(create(floe, [shared, b_only], name="b"), 201)
    staged = {}
    for rel, tables in ((a, [shared, a_only]), (b, [shared, b_only])):
        for t in tables:
            staged[(rel["branch"], t.name)] = t.add_snapshot(rel["branch"])
    results = {}

    def go(rel):
        results[rel["branch"]] = publish(Client(floe), rel["id"])

    threads = [threading.Thread(target=go, args=(rel,)) for rel in (a, b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200, 409], [describe(r) for r in results.values()]
    won = "a" if results["a"].status_code == 200 else "b"
    lost_only = b_only if won == "a" else a_only
    won_only = a_only if won == "a" else b_only
    assert lost_only.head("main") == lost_only.s1, "the losing release moved a table"
    assert won_only.head("main") == staged[(won, won_only.name)]
    assert shared.head("main") == staged[(won, "shared")], "shared is not at the winner's snapshot"
    lost = results["b" if won == "a" else "a"]
    assert "shared" in lost.json()["error"]["message"], describe(lost)


def test_members_move_only_with_their_release(floe, three, hooks, webhooks):
    ns, tables = three
    hooks(floe, "ok", webhooks(PASS).url, scope={"namespace": ns})
    rel = assert_ok_json(create(floe, tables), 201)
    t = tables[0]
    run = members(rel)[(tuple(ns), t.name)]
    t.add_snapshot(rel["branch"])
    assert_error(t.publish(run["id"]), 409, "WapRunStateException")
    assert_error(floe.delete(t.run_url(run["id"])), 409, "WapRunStateException")
    assert t.head("main") == t.s1


def test_namespace_subtrees_and_added_tables(floe, uniq, hooks, webhooks):
    ns = [uniq]
    floe.create_namespace(ns)
    floe.create_namespace(ns + ["deep"])
    top = new_table(floe, ns, "top")
    deep = new_table(floe, ns + ["deep"], "deep")
    floe.create_namespace([uniq + "_other"])
    late = new_table(floe, [uniq + "_other"], "late")
    rel = assert_ok_json(create(floe, namespaces=[ns]), 201)
    assert set(members(rel)) == {(tuple(ns), "top"), (tuple(ns + ["deep"]), "deep")}
    added = assert_ok_json(floe.post(f"/v1/releases/{rel['id']}/tables",
                                     json={"tables": [ident(late), ident(top)]}))
    assert len(added["tables"]) == 3, "a member named again was added twice"
    assert rel["branch"] in late.load()["metadata"]["refs"]
    hooks(floe, "all", webhooks(PASS).url, scope={"namespace": ns})
    # late is covered by no hook: an unaudited publish is not a publish.
    r = publish(floe, rel["id"])
    assert_error(r, 412, "NoAuditHookException")
    assert "late" in r.json()["error"]["message"]
    hooks(floe, "other", webhooks(PASS).url, scope={"namespace": [uniq + "_other"]})
    for t in (top, deep, late):
        t.add_snapshot(rel["branch"])
    assert assert_ok_json(publish(floe, rel["id"]))["state"] == "published"
    assert all(t.head("main") != t.s1 for t in (top, deep, late))
    assert_error(floe.post(f"/v1/releases/{rel['id']}/tables", json={"tables": [ident(top)]}),
                 409, "WapRunStateException")


def test_a_namespace_subtree_whose_names_hold_plus_and_percent(floe, uniq):
    """The members found below a namespace are the tables there, whatever
    their names hold: '+' and '%' are characters of a name, not escapes."""
    ns = [uniq + "+q"]
    floe.create_namespace(ns)
    floe.create_namespace(ns + ["50%25 off"])
    a = new_table(floe, ns, "a+b")
    b = new_table(floe, ns + ["50%25 off"], "c%2Fd")
    rel = assert_ok_json(create(floe, namespaces=[ns]), 201)
    assert set(members(rel)) == {(tuple(ns), "a+b"), (tuple(ns + ["50%25 off"]), "c%2Fd")}
    assert rel["branch"] in a.load()["metadata"]["refs"]
    assert rel["branch"] in b.load()["metadata"]["refs"]


def test_abandon_drops_every_branch(floe, three):
    ns, tables = three
    rel = assert_ok_json(create(floe, tables), 201)
    done = assert_ok_json(floe.delete(f"/v1/releases/{rel['id']}"))
    assert done["state"] == "abandoned" and {m["state"] for m in done["tables"]} == {"abandoned"}
    for t in tables:
        assert rel["branch"] not in t.load()["metadata"]["refs"]
    assert_error(floe.delete(f"/v1/releases/{rel['id']}"), 409, "WapRunStateException")
    assert_error(publish(floe, rel["id"]), 409, "WapRunStateException")


def test_release_required_allows_only_a_release_to_move_main(floe, uniq, hooks, webhooks):
    ns = [uniq]
    floe.create_namespace(ns)
    t = new_table(floe, ns, "guarded")
    r = floe.post(f"/v1/namespaces/{uniq}/properties",
                  json={"updates": {"floe.wap.release-required": "true"}, "removals": []})
    assert_ok_json(r)
    hooks(floe, "ok", webhooks(PASS).url, scope={"namespace": ns})
    # An ordinary commit to main is refused; so is a single-table publish.
    assert_error(t.commit(t.snapshot_updates("main")[1]), 403, "ForbiddenException")
    run = t.stage()
    t.add_snapshot(run["branch"])
    r = t.publish(run["id"])
    assert_error(r, 403, "ForbiddenException")
    assert "release" in r.json()["error"]["message"]
    assert t.head("main") == t.s1
    rel = assert_ok_json(create(floe, [t]), 201)
    s2 = t.add_snapshot(rel["branch"])
    assert assert_ok_json(publish(floe, rel["id"]))["state"] == "published"
    assert t.head("main") == s2
    # Weakening the rule takes the control route.
    r = floe.post(f"/v1/namespaces/{uniq}/properties",
                  json={"updates": {}, "removals": ["floe.wap.release-required"]})
    assert_error(r, 403, "ForbiddenException")
    assert "/v1/controls/release-required" in r.json()["error"]["message"]
    r = floe.post("/v1/controls/release-required",
                  json={"namespace": ns, "required": False, "reason": "the batch moved elsewhere"})
    assert_ok_json(r)


def test_wap_required_is_satisfied_by_a_release(floe, uniq, hooks, webhooks):
    ns = [uniq]
    floe.create_namespace(ns)
    t = new_table(floe, ns, "t")
    assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/properties",
                             json={"updates": {"floe.wap.required": "true"}, "removals": []}))
    hooks(floe, "ok", webhooks(PASS).url, scope={"namespace": ns})
    rel = assert_ok_json(create(floe, [t]), 201)
    s2 = t.add_snapshot(rel["branch"])
    assert assert_ok_json(publish(floe, rel["id"]))["state"] == "published"
    assert t.head("main") == s2


def test_listing_and_reading_releases(floe, uniq):
    ns = [uniq]
    floe.create_namespace(ns)
    t = new_table(floe, ns, "t")
    made = [assert_ok_json(create(floe, [t], name=f"r{i}"), 201) for i in range(3)]
    first = assert_ok_json(floe.get("/v1/releases", params={"pageSize": 2}))
    assert [r["id"] for r in first["releases"]] == [made[2]["id"], made[1]["id"]]
    assert first["next-page-token"]
    rest = assert_ok_json(floe.get("/v1/releases", params={"pageSize": 2,
                                                            "pageToken": first["next-page-token"]}))
    assert made[0]["id"] in [r["id"] for r in rest["releases"]]
    got = assert_ok_json(floe.get(f"/v1/releases/{made[0]['id']}"))
    assert got["id"] == made[0]["id"] and len(got["tables"]) == 1


@pytest.mark.parametrize("body,status,kind", [
    ([], 400, "BadRequestException"),
    ({}, 400, "BadRequestException"),
    ({"tables": []}, 400, "BadRequestException"),
    ({"tables": "x"}, 400, "BadRequestException"),
    ({"tables": [{"namespace": ["nope"], "name": "t"}]}, 404, "NoSuchTableException"),
    ({"namespaces": [["nope"]]}, 404, "NoSuchNamespaceException"),
    ({"namespaces": "nope"}, 400, "BadRequestException"),
    ({"tables": [{"namespace": ["x"], "name": "t"}], "name": "main"}, 400, "BadRequestException"),
    ({"tables": [{"namespace": ["x"], "name": "t"}], "name": 5}, 400, "BadRequestException"),
])
def test_bad_requests(floe, body, status, kind):
    assert_error(floe.post("/v1/releases", json=body), status, kind)


def test_unknown_releases_are_404(floe):
    for rid in ("nope", "00000000-0000-4000-8000-000000000000"):
        assert_error(floe.get(f"/v1/releases/{rid}"), 404, "NoSuchWapRunException")
        assert_error(floe.delete(f"/v1/releases/{rid}"), 404, "NoSuchWapRunException")
        assert_error(publish(floe, rid), 404, "NoSuchWapRunException")
        assert_error(floe.post(f"/v1/releases/{rid}/tables", json={"tables": []}), 404,
                     "NoSuchWapRunException")


def test_a_branch_that_exists_is_not_taken_over(floe, three):
    ns, tables = three
    tables[1].commit_ok([{"action": "set-snapshot-ref", "ref-name": "taken", "type": "branch",
                          "snapshot-id": tables[1].s1}])
    assert_error(create(floe, tables, name="taken"), 409, "AlreadyExistsException")
    # Nothing of it was staged.
    assert "taken" not in tables[0].load()["metadata"]["refs"]
    assert tables[2].head("main") is None and len(tables[2].load()["metadata"].get("snapshots", [])) == 0


def _publish_in_background(f, rid):
    def run():
        try:
            publish(Client(f), rid)
        except requests.RequestException:
            pass  # floe dies under it
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def _wait_publishable(g, rid, deadline_s=40):
    deadline = time.monotonic() + deadline_s
    while True:
        r = publish(g, rid)
        if r.status_code != 409 or time.monotonic() > deadline:
            return r
        assert_error(r, 409, "WapRunStateException")
        time.sleep(1)


def test_a_crash_during_the_audit_moves_no_member(postgres, floe_factory, webhooks):
    db = postgres.new_database()
    workdir = make_shared_tmpdir("floe-it-relcrash-")
    daemons = []
    try:
        f = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(f)
        f.create_namespace(["crash"])
        rcv = webhooks(Reply(200, {"passed": True}, delay=30))
        hook = register_hook(f, "stuck", rcv.url, scope={"namespace": ["crash"]}, timeout_ms=3000)
        tables = [new_table(f, ["crash"], n) for n in ("a", "b", "c")]
        rel = assert_ok_json(create(f, tables), 201)
        heads = [t.add_snapshot(rel["branch"]) for t in tables]
        th = _publish_in_background(f, rel["id"])
        assert rcv.wait_for(1, 10), "the hook was not called"
        f.proc.kill()
        f.proc.wait(10)
        th.join(10)

        rcv.set(default=PASS)
        g = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(g)
        for t in tables:
            assert TableHandle(g, t.namespace, t.name).head("main") == t.s1
        r = _wait_publishable(g, rel["id"])
        assert r.status_code == 200, describe(r)
        for t, h in zip(tables, heads):
            assert TableHandle(g, t.namespace, t.name).head("main") == h
        g.delete(f"/v1/audit-hooks/{hook['id']}")
    finally:
        for d in daemons:
            d.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_crash_inside_the_publish_transaction_moves_every_member_or_none(postgres, floe_factory,
                                                                          webhooks):
    db = postgres.new_database()
    workdir = make_shared_tmpdir("floe-it-reltx-")
    daemons = []
    try:
        f = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(f)
        f.create_namespace(["tx"])
        rcv = webhooks(PASS)
        hook = register_hook(f, "ok", rcv.url, scope={"namespace": ["tx"]}, timeout_ms=3000)
        tables = [new_table(f, ["tx"], n) for n in ("a", "b", "c")]
        rel = assert_ok_json(create(f, tables), 201)
        heads = [t.add_snapshot(rel["branch"]) for t in tables]
        # Every member's swap is in when the release row turns published:
        # hold the transaction there, and kill floe inside it.
        with psycopg.connect(database_url(f), autocommit=True) as conn:
            conn.execute("""
                CREATE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$;
                CREATE TRIGGER test_hold BEFORE UPDATE ON releases FOR EACH ROW
                    WHEN (NEW.state = 'published') EXECUTE FUNCTION test_hold();""")
            th = _publish_in_background(f, rel["id"])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                held = [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity "
                                                        "WHERE wait_event = 'PgSleep'")]
                if held:
                    break
                time.sleep(0.05)
            assert held, "the publish transaction never reached the release's row"
            f.proc.kill()
            f.proc.wait(10)
            th.join(10)
            # The held backend wakes, finds its client gone and leaves
            # without committing: wait for exactly that.
            assert wait_until(lambda: conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)",
                (held,)).fetchone()[0] == 0, 20), "the held backend never left"
            conn.execute("DROP TRIGGER test_hold ON releases")
        g = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(g)
        mains = [TableHandle(g, t.namespace, t.name).head("main") for t in tables]
        assert mains in ([t.s1 for t in tables], heads), f"some members moved and some did not: {mains}"
        assert mains == [t.s1 for t in tables], "a transaction whose floe died before COMMIT landed"
        r = _wait_publishable(g, rel["id"])
        assert r.status_code == 200, describe(r)
        assert [TableHandle(g, t.namespace, t.name).head("main") for t in tables] == heads
        g.delete(f"/v1/audit-hooks/{hook['id']}")
    finally:
        for d in daemons:
            d.kill()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("first", [Reply(200, {"passed": True}, delay=3.0),
                                   Reply(200, {"passed": False, "reason": "late"}, delay=3.0)],
                         ids=["passing", "rejecting"])
def test_a_release_whose_lease_was_taken_over_records_the_calls_it_made(floe, uniq, webhooks, first):
    ns = [uniq]
    floe.create_namespace(ns)
    tables = [new_table(floe, ns, "orders"), new_table(floe, ns, "order_lines")]
    rcv = webhooks(PASS, script=[first, Reply(200, {"passed": True}, delay=7.0)])
    register_hook(floe, "slow", rcv.url, scope={"namespace": ns}, timeout_ms=20000)
    rel = assert_ok_json(create(floe, tables), 201)
    heads = [t.add_snapshot(rel["branch"]) for t in tables]
    results = {}

    def go(key):
        results[key] = publish(Client(floe), rel["id"])

    loser = threading.Thread(target=go, args=("first",))
    loser.start()
    assert len(rcv.wait_for(1, 10)) == 1
    # The first publish's lease runs out while its hook still thinks.
    with psycopg.connect(database_url(floe), autocommit=True) as conn:
        conn.execute("UPDATE releases SET lease_until = now() - interval '1 second' "
                     "WHERE id = %s", (rel["id"],))
    winner = threading.Thread(target=go, args=("second",))
    winner.start()
    assert len(rcv.wait_for(2, 10)) == 2
    loser.join(30)
    assert_error(results["first"], 409, "WapRunStateException")
    assert "was taken over" in results["first"].json()["error"]["message"], describe(results["first"])
    assert [t.head("main") for t in tables] == [t.s1 for t in tables], "the loser moved a table"
    winner.join(30)
    done = assert_ok_json(results["second"])
    assert done["state"] == "published", done
    assert [t.head("main") for t in tables] == heads

    events = audit_events(floe, run=rel["id"])
    kinds = [e["event"] for e in events]
    # Both publishes' calls are on record, the loser's with release.lease-lost.
    assert kinds.count("release.hook-called") == 2 and kinds.count("release.lease-lost") == 1, kinds
    assert kinds.index("release.lease-lost") < kinds.index("release.published"), kinds
    assert "release.rejected" not in kinds, "the loser wrote an outcome"
    lost = next(e for e in events if e["event"] == "release.lease-lost")
    assert lost["details"]["hook-calls"] == 1, lost
    called = [e["details"] for e in events if e["event"] == "release.hook-called"]
    sent = [r.header("X-Floe-Delivery") for r in rcv.requests]
    assert sorted(c["delivery-id"] for c in called) == sorted(sent), (called, sent)
    verdict = "pass" if first.body["passed"] else "reject"
    assert called[0]["verdict"] == verdict and called[0]["delivery-id"] == sent[0], called
