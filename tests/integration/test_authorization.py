"""Privileges on every route, with floe's authentication on.

Principals are made in the catalog's database (make_client) with roles
of their own; a role's grants are rows of ``grants`` naming the object
by id, as the store keeps them. Every refusal is 403
ForbiddenException naming the privilege and the object, decided before
the object is looked at; a caller who may read the namespace gets the
404s it gets today. Listings show only what the caller may see.
"""

from __future__ import annotations

import pytest
import requests

from conftest import (
    TableHandle,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    client_token,
    control,
    database_url,
    make_client,
    ns_path,
    register_hook,
    set_ns_props,
)
from webhook import PASS


@pytest.fixture(scope="module")
def authed(postgres):
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe",
                                               "FLOE_HOOK_ALLOW": "127.0.0.1"})
    f.authenticate()
    yield f
    _stop_and_check(f)


# --------------------------------------------------------------------------
# helpers


def sql(f, statement, args=()):
    import psycopg
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


def grant(f, role, privilege, ns=None, table=None):
    """Grants privilege to role (made when missing) on the catalog, the
    namespace ns or the table ns.table."""
    sql(f, "INSERT INTO roles (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (role,))
    (rid,) = sql(f, "SELECT id FROM roles WHERE name = %s", (role,))[0]
    if ns is None:
        sql(f, "INSERT INTO grants (role_id, privilege, object_kind) VALUES (%s, %s, 'catalog')",
            (rid, privilege))
        return
    (nsid,) = sql(f, "SELECT id FROM namespaces WHERE levels = %s::text[]", (list(ns),))[0]
    if table is None:
        sql(f, "INSERT INTO grants (role_id, privilege, object_kind, namespace_id) "
            "VALUES (%s, %s, 'namespace', %s)", (rid, privilege, nsid))
        return
    (tid,) = sql(f, "SELECT id FROM tables WHERE namespace_id = %s AND name = %s",
                 (nsid, table))[0]
    sql(f, "INSERT INTO grants (role_id, privilege, object_kind, table_id) "
        "VALUES (%s, %s, 'table', %s)", (rid, privilege, tid))


def principal(f, name, grants=()):
    """A client principal with a role of its own holding grants (each
    (privilege, ns, table) or (privilege,)); returns its token."""
    role = f"r_{name}"
    sql(f, "INSERT INTO roles (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (role,))
    for g in grants:
        grant(f, role, *g)
    return client_token(f, make_client(f, name, roles=(role,)))


class As:
    """Requests of f made with another principal's token."""

    def __init__(self, f, token):
        self.f = f
        self.token = token

    def __enter__(self):
        self.saved = self.f.session.headers["Authorization"]
        self.f.session.headers["Authorization"] = f"Bearer {self.token}"
        return self.f

    def __exit__(self, *exc):
        self.f.session.headers["Authorization"] = self.saved


def forbidden(r, message):
    err = assert_error(r, 403, "ForbiddenException")
    assert err["message"] == message, err
    return err


@pytest.fixture
def ns(authed, uniq):
    authed.create_namespace([uniq])
    return [uniq]


@pytest.fixture
def table(authed, ns):
    t = TableHandle(authed, ns, "orders")
    t.create()
    t.s1 = t.add_snapshot("main")
    return t


def names(r):
    return [i["name"] for i in assert_ok_json(r)["identifiers"]]


# --------------------------------------------------------------------------


def test_a_reader_loads_and_lists_but_changes_nothing(authed, ns, table, uniq):
    f = authed
    tok = principal(f, f"reader_{uniq}", [("NAMESPACE_READ", ns), ("TABLE_READ", ns)])
    other = f"{uniq}_other"
    f.create_namespace([other])
    where = f"{ns[0]}.orders"
    with As(f, tok):
        assert table.load()["metadata"]["current-snapshot-id"] == table.s1
        assert f.head(table.url).status_code == 204
        assert f.get(f"{table.ns_url}").status_code == 200
        assert names(f.get(f"{table.ns_url}/tables")) == ["orders"]
        assert [ns] == [n for n in f.list_namespaces() if n[0].startswith(uniq)]
        assert table.refs()[0]["name"] == "main"
        # The namespace is readable: a missing table is today's 404.
        assert_error(f.get(f"{table.ns_url}/tables/nope"), 404, "NoSuchTableException")
        sid, updates = table.snapshot_updates("main")
        forbidden(table.commit(updates),
                  f"Principal reader_{uniq} lacks TABLE_WRITE_MAIN on table {where}")
        forbidden(table.commit([{"action": "set-properties", "updates": {"k": "v"}}]),
                  f"Principal reader_{uniq} lacks TABLE_UPDATE_PROPERTIES on table {where}")
        forbidden(f.delete(table.url),
                  f"Principal reader_{uniq} lacks TABLE_DROP on table {where}")
        forbidden(f.post(f"{table.ns_url}/tables", json={"name": "t2", "schema": TableHandle.SCHEMA}),
                  f"Principal reader_{uniq} lacks TABLE_CREATE on namespace {ns[0]}")
        forbidden(set_ns_props(f, ns, {"k": "v"}),
                  f"Principal reader_{uniq} lacks NAMESPACE_UPDATE_PROPERTIES on namespace {ns[0]}")
        forbidden(f.delete(f"/v1/namespaces/{ns[0]}"),
                  f"Principal reader_{uniq} lacks NAMESPACE_DROP on namespace {ns[0]}")
        forbidden(f.post("/v1/namespaces", json={"namespace": [f"{uniq}_new"]}),
                  f"Principal reader_{uniq} lacks NAMESPACE_CREATE on the catalog")
        forbidden(f.post("/v1/tables/rename", json={
            "source": {"namespace": ns, "name": "orders"},
            "destination": {"namespace": ns, "name": "renamed"}}),
                  f"Principal reader_{uniq} lacks TABLE_DROP on table {where}")
        # Elsewhere: 403 whether or not the object exists.
        for name in ("exists_not", "orders"):
            forbidden(f.get(f"/v1/namespaces/{other}/tables/{name}"),
                      f"Principal reader_{uniq} lacks TABLE_READ on table {other}.{name}")
        forbidden(f.get(f"/v1/namespaces/{other}/tables"),
                  f"Principal reader_{uniq} lacks NAMESPACE_READ on namespace {other}")
    assert table.head() == table.s1
    assert "k" not in table.metadata().get("properties", {})


def test_a_writer_commits_to_a_branch_but_not_to_main(authed, ns, table, uniq):
    f = authed
    tok = principal(f, f"writer_{uniq}", [("TABLE_WRITE", ns)])
    with As(f, tok):
        assert table.load()  # any privilege on it implies reading it
        sid = table.add_snapshot("dev", parent=table.s1)
        assert table.head("dev") == sid
        _, updates = table.snapshot_updates("main")
        forbidden(table.commit(updates),
                  f"Principal writer_{uniq} lacks TABLE_WRITE_MAIN on table {ns[0]}.orders")
        forbidden(table.commit([{"action": "set-properties",
                                 "updates": {"floe.wap.required": "true"}}]),
                  f"Principal writer_{uniq} lacks CONTROLS_MANAGE on table {ns[0]}.orders")
        r = f.post(table.refs_url, json={"name": "tag1", "type": "tag", "snapshot-id": sid})
        assert r.status_code == 201, r.text
        forbidden(f.delete(table.ref_url("main")),
                  f"Principal writer_{uniq} lacks TABLE_WRITE_MAIN on table {ns[0]}.orders")
    assert table.head() == table.s1


def test_under_wap_required_write_main_is_not_enough_and_publish_needs_wap_publish(
        authed, ns, table, uniq, webhooks, hooks):
    f = authed
    rcv = webhooks(PASS)
    hooks(f, f"h_{uniq}", rcv.url, scope={"namespace": ns, "table": "orders"})
    assert_ok_json(set_ns_props(f, ns, {"floe.wap.required": "true"}))
    who = f"wm_{uniq}"
    tok = principal(f, who, [("TABLE_WRITE_MAIN", ns), ("WAP_STAGE", ns)])
    with As(f, tok):
        _, updates = table.snapshot_updates("main")
        r = table.commit(updates)
        err = assert_error(r, 403, "ForbiddenException")
        assert "lacks" not in err["message"], err  # the control's own refusal
        run = table.stage()
        table.add_snapshot(run["branch"])
        forbidden(table.publish(run["id"]),
                  f"Principal {who} lacks WAP_PUBLISH on table {ns[0]}.orders")
    grant(f, f"r_{who}", "WAP_PUBLISH", ns)
    with As(f, tok):
        assert_ok_json(table.publish(run["id"]))
    assert table.head() != table.s1


def test_an_auditor_reads_the_audit_log_and_changes_nothing(authed, ns, table, uniq):
    f = authed
    who = f"auditor_{uniq}"
    tok = principal(f, who, [("AUDIT_READ",)])
    with As(f, tok):
        events = assert_ok_json(f.get("/v1/audit-log"))["events"]
        assert events
        assert_ok_json(f.get("/v1/audit-hooks"))
        forbidden(f.post("/v1/namespaces", json={"namespace": [f"{uniq}_a"]}),
                  f"Principal {who} lacks NAMESPACE_CREATE on the catalog")
        _, updates = table.snapshot_updates("main")
        forbidden(table.commit(updates),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {ns[0]}.orders")
        forbidden(f.get("/v1/purges"), f"Principal {who} lacks ADMIN on the catalog")
    reader = principal(f, f"noaudit_{uniq}", [("TABLE_READ", ns)])
    with As(f, reader):
        forbidden(f.get("/v1/audit-log"),
                  f"Principal noaudit_{uniq} lacks AUDIT_READ on the catalog")


def test_no_role_sees_empty_listings_and_403s(authed, ns, table, uniq):
    f = authed
    who = f"nobody_{uniq}"
    tok = client_token(f, make_client(f, who, roles=()))
    with As(f, tok):
        assert f.list_namespaces() == []
        forbidden(f.get(f"{table.ns_url}/tables"),
                  f"Principal {who} lacks NAMESPACE_READ on namespace {ns[0]}")
        forbidden(f.get(table.ns_url), f"Principal {who} lacks NAMESPACE_READ on namespace {ns[0]}")
        forbidden(f.get(table.url), f"Principal {who} lacks TABLE_READ on table {ns[0]}.orders")
        forbidden(f.get(f"/v1/namespaces/{uniq}_none"),
                  f"Principal {who} lacks NAMESPACE_READ on namespace {uniq}_none")
        assert f.get("/v1/config").status_code == 200


def test_grants_on_a_namespace_are_inherited_below(authed, uniq):
    f = authed
    f.create_namespace([uniq])
    f.create_namespace([uniq, "inner"])
    t = TableHandle(f, [uniq, "inner"], "deep")
    t.create()
    tok = principal(f, f"inh_{uniq}", [("TABLE_READ", [uniq]), ("NAMESPACE_READ", [uniq])])
    with As(f, tok):
        assert t.load()["metadata"]["format-version"] >= 1
        assert f.list_namespaces([uniq]) == [[uniq, "inner"]]
        assert names(f.get(f"{t.ns_url}/tables")) == ["deep"]


def test_listings_are_filtered_and_paged(authed, uniq):
    f = authed
    f.create_namespace([uniq])
    for n in ("a", "b", "c", "d", "e"):
        TableHandle(f, [uniq], n).create()
    f.create_namespace([f"{uniq}_hidden"])
    role_grants = [("TABLE_READ", [uniq], n) for n in ("a", "c", "e")]
    tok = principal(f, f"pager_{uniq}", role_grants)
    with As(f, tok):
        # A grant on a table shows the namespace on the way to it.
        assert [n for n in f.list_namespaces() if n[0].startswith(uniq)] == [[uniq]]
        url = f"/v1/namespaces/{uniq}/tables"
        first = assert_ok_json(f.get(url, params={"pageSize": 2, "pageToken": ""}))
        assert [i["name"] for i in first["identifiers"]] == ["a", "c"]
        assert first["next-page-token"]
        second = assert_ok_json(f.get(url, params={"pageSize": 2,
                                                   "pageToken": first["next-page-token"]}))
        assert [i["name"] for i in second["identifiers"]] == ["e"]
        assert second["next-page-token"] is None
        forbidden(f.get(f"/v1/namespaces/{uniq}/tables/b"),
                  f"Principal pager_{uniq} lacks TABLE_READ on table {uniq}.b")


def test_controls_and_hooks_need_their_privileges(authed, ns, table, uniq, webhooks):
    f = authed
    who = f"ctl_{uniq}"
    tok = principal(f, who, [("TABLE_WRITE_MAIN", ns), ("NAMESPACE_UPDATE_PROPERTIES", ns)])
    rcv = webhooks(PASS)
    with As(f, tok):
        forbidden(control(f, "wap-required", namespace=ns, value=False, reason="test"),
                  f"Principal {who} lacks CONTROLS_MANAGE on the catalog")
        forbidden(set_ns_props(f, ns, {"floe.wap.required": "true"}),
                  f"Principal {who} lacks CONTROLS_MANAGE on namespace {ns[0]}")
        assert_ok_json(set_ns_props(f, ns, {"owner": "me"}))
        r = f.post("/v1/audit-hooks", json={"name": "h", "url": rcv.url,
                                            "scope": {"namespace": ns}})
        forbidden(r, f"Principal {who} lacks HOOKS_MANAGE on namespace {ns[0]}")
        forbidden(f.get("/v1/audit-hooks"), f"Principal {who} lacks HOOKS_MANAGE on the catalog")
    hook = register_hook(f, f"h_{uniq}", rcv.url, scope={"namespace": ns})
    with As(f, tok):
        forbidden(f.delete(f"/v1/audit-hooks/{hook['id']}"),
                  f"Principal {who} lacks HOOKS_MANAGE on namespace {ns[0]}")
    grant(f, f"r_{who}", "HOOKS_MANAGE", ns)
    with As(f, tok):
        assert assert_ok_json(f.get(f"/v1/audit-hooks/{hook['id']}"))["id"] == hook["id"]
        assert f.delete(f"/v1/audit-hooks/{hook['id']}").status_code == 204


def test_pyiceberg_as_a_reader_loads_but_cannot_append(authed, uniq):
    pa = pytest.importorskip("pyarrow")
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    f = authed
    admin = RestCatalog("floe_admin", uri=f.url, token=f.token)
    admin.create_namespace(uniq)
    admin.create_table(f"{uniq}.t", Schema(NestedField(1, "x", LongType(), required=False)))
    tok = principal(f, f"py_{uniq}", [("TABLE_READ", [uniq]), ("NAMESPACE_READ", [uniq])])
    reader = RestCatalog("floe_reader", uri=f.url, token=tok)
    table = reader.load_table(f"{uniq}.t")
    assert reader.list_tables(uniq) == [(uniq, "t")]
    with pytest.raises(ForbiddenError, match="lacks TABLE_WRITE_MAIN"):
        table.append(pa.table({"x": pa.array([1], pa.int64())}))


def test_a_transaction_is_refused_whole_when_one_table_is_not_allowed(authed, uniq):
    f = authed
    f.create_namespace([uniq])
    mine, theirs = TableHandle(f, [uniq], "mine"), TableHandle(f, [uniq], "theirs")
    for t in (mine, theirs):
        t.create()
    who = f"tx_{uniq}"
    tok = principal(f, who, [("TABLE_WRITE_MAIN", [uniq], "mine"), ("TABLE_READ", [uniq], "theirs")])
    changes = []
    for t in (mine, theirs):
        _, updates = t.snapshot_updates("main")
        changes.append({"identifier": {"namespace": [uniq], "name": t.name},
                        "requirements": [], "updates": updates})
    with As(f, tok):
        forbidden(f.post("/v1/transactions/commit", json={"table-changes": changes}),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {uniq}.theirs")
    assert mine.head() is None and theirs.head() is None
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", [uniq], "theirs")
    with As(f, tok):
        r = f.post("/v1/transactions/commit", json={"table-changes": changes})
        assert r.status_code == 204, r.text


def test_register_needs_write_main_and_with_overwrite_table_drop(authed, ns, table, uniq):
    f = authed
    who = f"reg_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns)])
    loc = table.load()["metadata-location"]
    overwrite = {"name": "orders", "metadata-location": loc, "overwrite": True}
    with As(f, tok):
        # A register puts main in place at its name: TABLE_WRITE_MAIN there;
        # one that overwrites drops the table there first: TABLE_DROP.
        forbidden(f.post(f"{table.ns_url}/register",
                         json={"name": "orders", "metadata-location": loc}),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {ns[0]}.orders")
        forbidden(f.post(f"{table.ns_url}/register", json=overwrite),
                  f"Principal {who} lacks TABLE_DROP on table {ns[0]}.orders")
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns)
    with As(f, tok):
        forbidden(f.post(f"{table.ns_url}/register", json=overwrite),
                  f"Principal {who} lacks TABLE_DROP on table {ns[0]}.orders")
        # Without overwrite, a caller who may create gets today's 409.
        assert_error(f.post(f"{table.ns_url}/register",
                            json={"name": "orders", "metadata-location": loc}),
                     409, "AlreadyExistsException")


def test_register_with_overwrite_needs_table_write_main(authed, ns, table, uniq):
    """A register that overwrites moves the replaced table's main: with
    TABLE_CREATE and TABLE_DROP but not TABLE_WRITE_MAIN it is refused, and
    main stays where it was."""
    f = authed
    who = f"regmain_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns), ("TABLE_DROP", ns)])
    before = table.load()
    first = before["metadata"]["metadata-log"][0]["metadata-file"]
    with As(f, tok):
        forbidden(f.post(f"{table.ns_url}/register",
                         json={"name": "orders", "metadata-location": first, "overwrite": True}),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {ns[0]}.orders")
    assert table.load()["metadata-location"] == before["metadata-location"]
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns, "orders")
    with As(f, tok):
        moved = assert_ok_json(f.post(f"{table.ns_url}/register", json={
            "name": "orders", "metadata-location": first, "overwrite": True}))
        assert moved["metadata-location"] == first


def test_a_staged_create_that_sets_main_needs_write_main(authed, ns, uniq):
    """A staged create's commit (assert-create) is a create: TABLE_CREATE on
    the namespace. One that brings data sets main from nothing to a
    snapshot, as a register does: TABLE_WRITE_MAIN on the table too."""
    f = authed
    who = f"ctas_{uniq}"
    tok = principal(f, who, [("TABLE_CREATE", ns)])
    url = f"/v1/namespaces/{ns[0]}/tables"

    def create_commit(name, with_data):
        staged = assert_ok_json(f.post(url, json={"name": name, "schema": TableHandle.SCHEMA,
                                                  "stage-create": True}))["metadata"]
        sid = 4242
        data = [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": sid, "sequence-number": 1, "timestamp-ms": 1767229100000,
                "manifest-list": f"{staged['location']}/metadata/snap-{sid}.avro",
                "summary": {"operation": "append"}, "schema-id": 0}},
            {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": sid,
             "type": "branch"},
        ] if with_data else []
        return f.post(f"{url}/{name}", json={
            "requirements": [{"type": "assert-create"}],
            "updates": [{"action": "assign-uuid", "uuid": staged["table-uuid"]},
                        {"action": "upgrade-format-version", "format-version": 2},
                        {"action": "add-schema", "schema": staged["schemas"][0]},
                        {"action": "set-current-schema", "schema-id": -1},
                        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                        {"action": "set-default-spec", "spec-id": 0},
                        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                        {"action": "set-default-sort-order", "sort-order-id": 0},
                        {"action": "set-location", "location": staged["location"]},
                        *data]})

    with As(f, tok):
        forbidden(create_commit("ctas", True),
                  f"Principal {who} lacks TABLE_WRITE_MAIN on table {ns[0]}.ctas")
        assert_error(f.get(f"{url}/ctas"), 404, "NoSuchTableException")
        assert assert_ok_json(create_commit("empty", False))["metadata"].get(
            "current-snapshot-id", -1) in (None, -1)
    grant(f, f"r_{who}", "TABLE_WRITE_MAIN", ns)
    with As(f, tok):
        assert assert_ok_json(create_commit("ctas", True))["metadata"]["current-snapshot-id"] == 4242


def test_history_and_undrop_need_their_privileges(authed, ns, table, uniq):
    f = authed
    where = f"{ns[0]}.orders"
    reader = principal(f, f"hist_reader_{uniq}", [("TABLE_READ", ns)])
    nobody = principal(f, f"hist_nobody_{uniq}")
    creator = principal(f, f"hist_creator_{uniq}", [("TABLE_CREATE", ns)])
    restorer = principal(f, f"hist_restorer_{uniq}",
                         [("TABLE_CREATE", ns), ("TABLE_WRITE_MAIN", ns)])
    with As(f, nobody):
        forbidden(f.get(table.url + "/commits"),
                  f"Principal hist_nobody_{uniq} lacks TABLE_READ on table {where}")
        forbidden(f.get(table.url, params={"as-of-version": 1}),
                  f"Principal hist_nobody_{uniq} lacks TABLE_READ on table {where}")
    with As(f, reader):
        body = assert_ok_json(f.get(table.url + "/commits"))
        assert [c["version"] for c in body["commits"]] == [2, 1]
        assert body["commits"][0]["principal"] == f.credential.split(":", 1)[0]
        old = assert_ok_json(f.get(table.url, params={"as-of-version": 1}))
        assert old["metadata-location"] == body["commits"][1]["metadata-location"]
    uuid = table.metadata()["table-uuid"]
    assert f.delete(table.url).status_code == 204
    with As(f, reader):
        forbidden(f.post(table.url + "/undrop"),
                  f"Principal hist_reader_{uniq} lacks TABLE_CREATE on namespace {ns[0]}")
        forbidden(f.get(f"/v1/namespaces/{ns[0]}/dropped-tables"),
                  f"Principal hist_reader_{uniq} lacks TABLE_CREATE on namespace {ns[0]}")
    with As(f, creator):
        kept = assert_ok_json(f.get(f"/v1/namespaces/{ns[0]}/dropped-tables"))["dropped-tables"]
        assert [(d["name"], d["dropped-by"]) for d in kept] == [
            ("orders", f.credential.split(":", 1)[0])]
        # An undrop puts main back where it was: it moves main.
        forbidden(f.post(table.url + "/undrop"),
                  f"Principal hist_creator_{uniq} lacks TABLE_WRITE_MAIN on table {where}")
    with As(f, restorer):
        back = assert_ok_json(f.post(table.url + "/undrop"))
        assert back["metadata"]["table-uuid"] == uuid
    assert table.metadata()["current-snapshot-id"] == table.s1
