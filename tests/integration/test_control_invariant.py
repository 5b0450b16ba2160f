"""One invariant for main and for the controls, held against an insider.

A principal that holds some privileges and not CONTROLS_MANAGE tries to
take a table out of its audited-publish control (floe.wap.required and the
other control properties, and the audit hooks in scope of a protected
table) by a route other than POST /v1/controls/{action}: dropping and
recreating a namespace around an undrop, swapping the auditor for a hook
that always passes, registering over a table, renaming it. Each attempt
is refused with 403 ForbiddenException naming the control route; each
route that moves main asks TABLE_WRITE_MAIN; the namespace's own create
and drop are audit events. The other side is tested too: what does not
weaken a control stays open to its ordinary privilege.
"""

from __future__ import annotations

import pytest

from conftest import (
    TableHandle,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    audit_events,
    control,
    register_hook,
    set_ns_props,
)
from test_authorization import As, forbidden, grant, principal, sql
from webhook import PASS, Reply

WAP = "floe.wap.required"
SOD = "floe.wap.separation-of-duties"
REJECT = Reply(200, {"passed": False, "reason": "totals do not reconcile"})


@pytest.fixture(scope="module")
def authed(postgres):
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe",
                                               "FLOE_HOOK_ALLOW": "127.0.0.1"})
    f.authenticate()
    yield f
    _stop_and_check(f)


# --------------------------------------------------------------------------
# helpers


def events(f, kind, **filters):
    return [e for e in audit_events(f, **filters) if e["event"] == kind]


def table_with_main(f, ns, name="orders", snapshots=1) -> TableHandle:
    t = TableHandle(f, ns, name)
    t.create()
    for _ in range(snapshots):
        t.s1 = t.add_snapshot("main")
    return t


def older_metadata(t: TableHandle) -> str:
    log = t.metadata()["metadata-log"]
    assert log, "no metadata-log"
    return log[0]["metadata-file"]


def rename(f, src_ns, src, dst_ns, dst):
    return f.post("/v1/tables/rename", json={"source": {"namespace": src_ns, "name": src},
                                             "destination": {"namespace": dst_ns, "name": dst}})


# --------------------------------------------------------------------------
# drop the namespace, create it again, undrop the table


def test_recreating_the_namespace_around_an_undrop_keeps_the_control(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns)
    assert_ok_json(set_ns_props(f, ns, {WAP: "true"}))
    who = f"insider_{uniq}"
    tok = principal(f, who, [("TABLE_DROP",), ("NAMESPACE_DROP",), ("NAMESPACE_CREATE",),
                             ("TABLE_CREATE",), ("TABLE_WRITE_MAIN",)])
    with As(f, tok):
        assert f.delete(t.url).status_code == 204
        dropped = f.delete(f"/v1/namespaces/{uniq}")
        assert dropped.status_code == 204, dropped.text
        created = f.post("/v1/namespaces", json={"namespace": ns})
        assert created.status_code == 200, created.text
        forbidden(f.post(t.url + "/undrop"),
                  f"Undropping table {uniq}.orders weakens its audited-publish control: "
                  f"{WAP}=true (set by namespace {uniq}) would no longer apply; "
                  "only POST /v1/controls/undrop with a reason may")
        assert_error(f.get(t.url), 404, "NoSuchTableException")
        _, updates = t.snapshot_updates("main", parent=t.s1, meta={"location": "file:///x",
                                                                    "last-sequence-number": 1})
        assert_error(t.commit(updates), 404, "NoSuchTableException")

    # The namespace's drop and create are audit events of who made them,
    # hash-chained like every event.
    for kind, resp, controls in (("namespace.dropped", dropped, {WAP: "true"}),
                                 ("namespace.created", created, {})):
        ev = [e for e in events(f, kind, namespace=uniq) if e["principal"] == who]
        assert len(ev) == 1, ev
        assert ev[0]["namespace"] == ns and ev[0]["table"] is None, ev
        assert ev[0]["request-id"] == resp.headers["X-Request-Id"], ev
        assert ev[0]["details"]["controls"] == controls, ev
        assert ev[0]["chain-position"] is not None, ev
    drop_ev = events(f, "table.dropped", namespace=uniq, table="orders")
    assert drop_ev[0]["details"]["controls"] == {WAP: "namespace " + uniq, "hooks": []}, drop_ev

    # The control route may, with a reason, and says what was weakened.
    out = assert_ok_json(control(f, "undrop", namespace=ns, name="orders", reason="INC-9: restore"))
    assert out["result"]["metadata"]["current-snapshot-id"] == t.s1, out
    ev = events(f, "table.undropped", namespace=uniq, table="orders")
    assert len(ev) == 1 and ev[0]["details"]["reason"] == "INC-9: restore", ev
    assert ev[0]["details"]["controls-when-dropped"] == {WAP: "namespace " + uniq, "hooks": []}, ev
    assert ev[0]["details"]["controls"] == {"hooks": []}, ev


def test_an_undrop_that_keeps_the_control_stays_open(authed, uniq, webhooks):
    f = authed
    ns = [uniq]
    f.create_namespace(ns, {WAP: "true"})
    rcv = webhooks(PASS)
    hook = register_hook(f, f"a_{uniq}", rcv.url, scope={"namespace": ns})
    t = TableHandle(f, ns, "orders")
    t.create()
    who = f"undropper_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns)])
    assert f.delete(t.url).status_code == 204
    with As(f, tok):
        # An undrop puts main back: TABLE_WRITE_MAIN on the table too.
        forbidden(f.post(t.url + "/undrop"),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {uniq}.orders")
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns)
    with As(f, tok):
        assert_ok_json(f.post(t.url + "/undrop"))
    ev = events(f, "table.undropped", namespace=uniq, table="orders")
    want = {WAP: "namespace " + uniq, "hooks": [{"id": hook["id"], "name": f"a_{uniq}"}]}
    assert ev[0]["details"]["controls"] == want, ev
    assert ev[0]["details"]["controls-when-dropped"] == want, ev


def test_an_undrop_into_a_protected_scope_is_a_main_move(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns)
    assert f.delete(t.url).status_code == 204
    assert_ok_json(set_ns_props(f, ns, {WAP: "true"}))
    forbidden(f.post(t.url + "/undrop"),
              f"Branch main of table orders can only move through a write-audit-publish run: "
              f"namespace {uniq} sets {WAP}=true; only POST /v1/controls/undrop with a reason may")
    assert_error(f.get(t.url), 404, "NoSuchTableException")
    assert_ok_json(control(f, "undrop", namespace=ns, name="orders", reason="CHG-10"))
    assert t.head("main") == t.s1


def test_an_undrop_whose_control_was_not_recorded_fails_closed(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns)
    assert f.delete(t.url).status_code == 204
    # As a drop by a floe from before the control was recorded left it.
    sql(f, "UPDATE dropped_tables SET controls = NULL WHERE namespace = %s::text[] "
        "AND table_name = 'orders'", (ns,))
    forbidden(f.post(t.url + "/undrop"),
              f"Undropping table {uniq}.orders: the audited-publish control it had when dropped "
              "is not recorded, so whether this weakens it cannot be decided; only "
              "POST /v1/controls/undrop with a reason may")
    assert_ok_json(control(f, "undrop", namespace=ns, name="orders", reason="INC-14: upgrade"))
    assert t.head("main") == t.s1


# --------------------------------------------------------------------------
# swap the auditor


def test_a_rubber_stamp_hook_does_not_let_the_real_auditor_go(authed, uniq, webhooks):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns)
    assert_ok_json(set_ns_props(f, ns, {WAP: "true"}))
    auditor = webhooks(REJECT)
    real = register_hook(f, f"auditor_{uniq}", auditor.url, scope={"namespace": ns})
    who = f"hooker_{uniq}"
    tok = principal(f, who, [("HOOKS_MANAGE", ns)])
    stamp_rcv = webhooks(PASS)
    with As(f, tok):
        # Adding a hook strengthens the control: open to HOOKS_MANAGE.
        stamp = assert_ok_json(f.post("/v1/audit-hooks", json={
            "name": "stamp", "url": stamp_rcv.url, "scope": {"namespace": ns}}), 201)
        for h in (real, stamp):
            forbidden(f.delete(f"/v1/audit-hooks/{h['id']}"),
                      f"Audit hook {h['id']} covers {uniq}, protected by {WAP}=true: deleting "
                      "it weakens the audited-publish control (every hook in scope of a "
                      "protected table must pass); only POST /v1/controls/delete-hook with a "
                      "reason may")
    assert_ok_json(f.get(f"/v1/audit-hooks/{real['id']}"))

    run = t.stage()
    t.add_snapshot(run["branch"])
    err = assert_error(t.publish(run["id"]), 422, "AuditRejectedException")
    assert "totals do not reconcile" in err["message"], err
    assert t.head("main") == t.s1
    assert auditor.count() == 1

    # The auditor is replaced through the control route, with a reason.
    out = assert_ok_json(control(f, "delete-hook", reason="CHG-11: auditor v2", **{"hook-id": real["id"]}))
    assert out["result"] == {"hook-id": real["id"]}, out
    ev = [e for e in events(f, "hook.deleted") if e["details"]["hook-id"] == real["id"]]
    assert len(ev) == 1 and ev[0]["details"]["reason"] == "CHG-11: auditor v2", ev


def test_hooks_that_guard_no_protected_table_stay_hooks_manage_business(authed, uniq, webhooks):
    f = authed
    free = [uniq]
    f.create_namespace(free)
    table_with_main(f, free)
    who = f"keeper_{uniq}"
    tok = principal(f, who, [("HOOKS_MANAGE", free)])
    rcv = webhooks(PASS)
    with As(f, tok):
        made = [assert_ok_json(f.post("/v1/audit-hooks", json={
            "name": n, "url": rcv.url, "scope": {"namespace": free}}), 201) for n in ("a", "b")]
        for h in made:   # the last one too
            r = f.delete(f"/v1/audit-hooks/{h['id']}")
            assert r.status_code == 204, r.text
        h = assert_ok_json(f.post("/v1/audit-hooks", json={
            "name": "c", "url": rcv.url, "scope": {"namespace": free}}), 201)
    # Once the namespace is protected, its hooks are part of the control ...
    assert_ok_json(set_ns_props(f, free, {WAP: "true"}))
    with As(f, tok):
        assert_error(f.delete(f"/v1/audit-hooks/{h['id']}"), 403, "ForbiddenException")
    # ... until the protection itself is lifted through the control route.
    assert_ok_json(control(f, "wap-required", namespace=free, required=False, reason="CHG-12"))
    with As(f, tok):
        r = f.delete(f"/v1/audit-hooks/{h['id']}")
        assert r.status_code == 204, r.text


# --------------------------------------------------------------------------
# register with overwrite


def test_register_with_overwrite_needs_table_write_main(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns, snapshots=2)
    head = t.head("main")
    older = older_metadata(t)
    who = f"reg_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns), ("TABLE_DROP", ns)])
    body = {"name": "orders", "metadata-location": older, "overwrite": True}
    with As(f, tok):
        forbidden(f.post(f"{t.ns_url}/register", json=body),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {uniq}.orders")
    assert t.head("main") == head
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns)
    with As(f, tok):
        assert_ok_json(f.post(f"{t.ns_url}/register", json=body))
    assert t.load()["metadata-location"] == older


def test_register_over_a_protected_table_is_a_main_move(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns, snapshots=2)
    older = older_metadata(t)
    assert_ok_json(set_ns_props(f, ns, {WAP: "true"}))
    head = t.head("main")
    who = f"regp_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns), ("TABLE_DROP", ns), ("TABLE_WRITE_MAIN", ns)])
    with As(f, tok):
        forbidden(f.post(f"{t.ns_url}/register",
                         json={"name": "orders", "metadata-location": older, "overwrite": True}),
                  f"Branch main of table orders can only move through a write-audit-publish run: "
                  f"namespace {uniq} sets {WAP}=true; only POST /v1/controls/register with a "
                  "reason may")
    assert t.head("main") == head


def test_register_over_a_table_cannot_drop_its_own_control(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns, snapshots=2)
    older = older_metadata(t)   # written before the table set the property
    t.commit_ok([{"action": "set-properties", "updates": {SOD: "true"}}])
    forbidden(f.post(f"{t.ns_url}/register",
                     json={"name": "orders", "metadata-location": older, "overwrite": True}),
              f"Registering over table {uniq}.orders weakens its audited-publish control: "
              f"{SOD}=true (set by the table) would no longer apply; "
              "only POST /v1/controls/register with a reason may")
    assert t.metadata()["properties"][SOD] == "true"


def test_a_drop_and_a_register_cannot_shed_the_tables_own_control(authed, uniq):
    """A table that set floe.wap.required itself, dropped, and registered
    again at its name from a metadata file older than the property: the
    drop's record in the audit log keeps it protected. A principal with
    TABLE_DROP, TABLE_CREATE and TABLE_WRITE_MAIN but no CONTROLS_MANAGE is
    refused; the control route with a reason may, and the latest metadata
    comes back as it left."""
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns, snapshots=2)
    older = older_metadata(t)   # written before the table set the property
    t.commit_ok([{"action": "set-properties", "updates": {WAP: "true"}}])
    latest = t.load()["metadata-location"]
    free = [uniq + "_free"]
    f.create_namespace(free)
    who = f"shed_{uniq}"
    tok = principal(f, who, [("TABLE_DROP", ns), ("TABLE_CREATE", ns), ("TABLE_WRITE_MAIN", ns),
                             ("TABLE_CREATE", free), ("TABLE_WRITE_MAIN", free)])
    with As(f, tok):
        assert f.delete(t.url, params={"purgeRequested": "false"}).status_code == 204
        forbidden(f.post(f"{t.ns_url}/register",
                         json={"name": "orders", "metadata-location": older}),
                  f"Registering table {uniq}.orders, dropped before, weakens its "
                  f"audited-publish control: {WAP}=true (set by the table) would no longer "
                  "apply; only POST /v1/controls/register with a reason may")
        # Elsewhere, under another name, the same.
        forbidden(f.post(f"/v1/namespaces/{uniq}_free/register",
                         json={"name": "copy", "metadata-location": older}),
                  f"Registering table {uniq}_free.copy, dropped before, weakens its "
                  f"audited-publish control: {WAP}=true (set by the table) would no longer "
                  "apply; only POST /v1/controls/register with a reason may")
        assert_error(f.get(t.url), 404, "NoSuchTableException")
        # The metadata it left with keeps the control: that is no weakening.
        back = assert_ok_json(f.post(f"{t.ns_url}/register",
                                     json={"name": "orders", "metadata-location": latest}))
        assert back["metadata"]["properties"][WAP] == "true"
    assert [e["details"]["table-uuid"] for e in events(f, "table.registered", table="orders")
            if e["namespace"] == ns] == [t.metadata()["table-uuid"]]


# --------------------------------------------------------------------------
# rename


def test_rename_cannot_weaken_the_control(authed, uniq, webhooks):
    f = authed
    sod, free, guarded = [uniq + "_sod"], [uniq + "_free"], [uniq + "_wap"]
    f.create_namespace(sod, {SOD: "true"})
    f.create_namespace(free)
    f.create_namespace(guarded)
    # Out of a namespace's separation of duties.
    a = table_with_main(f, sod, "a")
    forbidden(rename(f, sod, "a", free, "a"),
              f"Renaming table {sod[0]}.a to {free[0]}.a weakens its audited-publish control: "
              f"{SOD}=true (set by namespace {sod[0]}) would no longer apply; "
              "only POST /v1/controls/rename with a reason may")
    assert a.head("main") == a.s1
    # Away from the auditor that guards its name, inside the same protected namespace.
    b = table_with_main(f, guarded, "b")
    assert_ok_json(set_ns_props(f, guarded, {WAP: "true"}))
    rcv = webhooks(PASS)
    hook = register_hook(f, f"b_{uniq}", rcv.url, scope={"namespace": guarded, "table": "b"})
    forbidden(rename(f, guarded, "b", guarded, "b2"),
              f"Renaming table {guarded[0]}.b to {guarded[0]}.b2 weakens its audited-publish "
              f"control: audit hook b_{uniq} ({hook['id']}) would no longer be in scope; "
              "only POST /v1/controls/rename with a reason may")
    assert b.head("main") == b.s1
    # An unaudited main into a protected namespace is a main move.
    c = table_with_main(f, free, "c")
    forbidden(rename(f, free, "c", guarded, "c"),
              f"Branch main of table c can only move through a write-audit-publish run: "
              f"namespace {guarded[0]} sets {WAP}=true; only POST /v1/controls/rename with a "
              "reason may")
    assert c.head("main") == c.s1
    # The control route may, with a reason.
    assert_ok_json(control(f, "rename", reason="CHG-13",
                           source={"namespace": guarded, "name": "b"},
                           destination={"namespace": guarded, "name": "b2"}))


def test_rename_needs_table_write_main(authed, uniq):
    f = authed
    ns = [uniq]
    f.create_namespace(ns)
    t = table_with_main(f, ns)
    who = f"mover_{uniq}"
    tok = principal(f, who, [("TABLE_DROP", ns), ("TABLE_CREATE", ns)])
    with As(f, tok):
        forbidden(rename(f, ns, "orders", ns, "moved"),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {uniq}.orders")
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns)
    with As(f, tok):
        r = rename(f, ns, "orders", ns, "moved")
        assert r.status_code == 204, r.text
    assert TableHandle(f, ns, "moved").head("main") == t.s1
