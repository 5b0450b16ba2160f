"""Principals, roles and grants on a real PostgreSQL: the migration's
relations and rules, grants following their object (a drop through the
REST API removes them, a rename keeps them, a new table of an old name
starts with none), the store functions and the authorization decision
over the real store (through tests' store_auth_probe), the first start's
administrator made once when floes start together, and the runtime role's
privileges on the new relations when migrations run as a separate owner.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest

from conftest import assert_ok_json, floe_binary, ns_path

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}


def probe_binary() -> Path:
    path = floe_binary().parent.parent / "tests" / "store_auth_probe"
    if not path.is_file():
        pytest.fail(f"{path} not built")
    return path


def probe(url, *args):
    """One store call through the probe: its JSON answer."""
    r = subprocess.run([str(probe_binary()), url, *[str(a) for a in args]],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"probe {args}: {r.returncode} {r.stderr}"
    return json.loads(r.stdout)


def dbname(url: str) -> str:
    return urlparse(url).path.lstrip("/")


@pytest.fixture(scope="module")
def auth_db(postgres):
    from conftest import Floe
    url = postgres.new_database()
    f = Floe(env={"FLOE_DATABASE_URL": url})
    conn = None
    try:
        f.wait_ready(30)
        conn = postgres.connect(dbname(url))
        yield f, url, conn
    finally:
        if conn is not None:
            conn.close()
        f.cleanup()


def create_table(f, levels, name):
    assert_ok_json(f.post(f"/v1/namespaces/{ns_path(levels)}/tables",
                          json={"name": name, "schema": SCHEMA}))


def sql_one(conn, query, *params):
    return conn.execute(query, params).fetchone()


def grants_on(conn, role):
    """(privilege, object_kind, namespace levels or table name) of role."""
    return sorted(conn.execute(
        "SELECT g.privilege, g.object_kind, coalesce(array_to_string(n.levels, '.'), "
        "  array_to_string(tn.levels, '.') || '.' || t.name, '') "
        "FROM grants g JOIN roles r ON r.id = g.role_id "
        "LEFT JOIN namespaces n ON n.id = g.namespace_id "
        "LEFT JOIN tables t ON t.id = g.table_id "
        "LEFT JOIN namespaces tn ON tn.id = t.namespace_id WHERE r.name = %s", (role,)).fetchall())


def test_the_migration_makes_the_relations_and_their_rules(auth_db):
    _, _, conn = auth_db
    assert sql_one(conn, "SELECT name FROM floe_schema_version WHERE version = 8") == ("0008_auth",)
    (role,) = sql_one(conn, "INSERT INTO roles (name) VALUES ('rules') RETURNING id")
    conn.execute("INSERT INTO namespaces (levels) VALUES (ARRAY['rules_ns'])")
    (ns,) = sql_one(conn, "SELECT id FROM namespaces WHERE levels = ARRAY['rules_ns']")

    def refused(query, params, sqlstate):
        with pytest.raises(psycopg.Error) as e:
            conn.execute(query, params)
        assert e.value.sqlstate == sqlstate, (query, params, e.value)

    ins = ("INSERT INTO grants (role_id, privilege, object_kind, namespace_id, table_id) "
           "VALUES (%s, %s, %s, %s, %s)")
    refused(ins, (role, "TABLE_READS", "catalog", None, None), "23514")
    refused(ins, (role, "ADMIN", "namespace", ns, None), "23514")
    refused(ins, (role, "TABLE_READ", "namespace", None, None), "23514")
    refused(ins, (role, "TABLE_READ", "catalog", ns, None), "23514")
    refused(ins, (role, "TABLE_READ", "schema", None, None), "23514")
    refused(ins, (role, "TABLE_READ", "namespace", 999999, None), "23503")
    conn.execute(ins, (role, "ADMIN", "catalog", None, None))
    conn.execute(ins, (role, "TABLE_READ", "namespace", ns, None))
    # the same grant twice is one row, on the catalog (NULL ids) too
    refused(ins, (role, "ADMIN", "catalog", None, None), "23505")
    refused(ins, (role, "TABLE_READ", "namespace", ns, None), "23505")
    refused("INSERT INTO principals (name, kind) VALUES ('p', 'robot')", (), "23514")
    refused("INSERT INTO principals (name, kind, source) VALUES ('p', 'user', 'ldap')", (),
            "23514")
    conn.execute("INSERT INTO principals (name, kind, client_id) VALUES ('p', 'user', 'c1')")
    refused("INSERT INTO principals (name, kind) VALUES ('p', 'client')", (), "23505")
    refused("INSERT INTO principals (name, kind, client_id) VALUES ('q', 'client', 'c1')", (),
            "23505")
    (pid,) = sql_one(conn, "SELECT id FROM principals WHERE name = 'p'")
    conn.execute("INSERT INTO role_members VALUES (%s, %s)", (role, pid))
    # a role goes with its memberships and grants; a principal with its memberships
    conn.execute("DELETE FROM principals WHERE id = %s", (pid,))
    assert sql_one(conn, "SELECT count(*) FROM role_members WHERE role_id = %s", role) == (0,)
    conn.execute("DELETE FROM roles WHERE id = %s", (role,))
    assert sql_one(conn, "SELECT count(*) FROM grants WHERE role_id = %s", role) == (0,)
    conn.execute("DELETE FROM namespaces WHERE id = %s", (ns,))


def test_a_drop_removes_the_grants_on_its_object_and_a_rename_keeps_them(auth_db):
    f, url, conn = auth_db
    f.create_namespace(["g1"])
    f.create_namespace(["g1", "inner"])
    f.create_namespace(["g2"])
    create_table(f, ["g1", "inner"], "t")
    create_table(f, ["g1", "inner"], "other")
    assert probe(url, "role-insert", "owners")["id"] > 0
    for args in (("TABLE_DROP", "namespace", "g1.inner", "-"),
                 ("TABLE_WRITE", "table", "g1.inner", "t"),
                 ("TABLE_READ", "table", "g1.inner", "other"),
                 ("NAMESPACE_READ", "namespace", "g2", "-")):
        assert probe(url, "grant-insert", "owners", *args) == {"inserted": True}
    assert grants_on(conn, "owners") == [
        ("NAMESPACE_READ", "namespace", "g2"), ("TABLE_DROP", "namespace", "g1.inner"),
        ("TABLE_READ", "table", "g1.inner.other"), ("TABLE_WRITE", "table", "g1.inner.t")]

    # a rename, within the namespace and into another, keeps the grant
    r = f.post("/v1/tables/rename", json={"source": {"namespace": ["g1", "inner"], "name": "t"},
                                          "destination": {"namespace": ["g2"], "name": "moved"}})
    assert r.status_code == 204, r.text
    assert ("TABLE_WRITE", "table", "g2.moved") in grants_on(conn, "owners")

    # a drop removes it, and a new table of the old name starts with none
    assert f.delete(f"/v1/namespaces/g2/tables/moved").status_code == 204
    create_table(f, ["g2"], "moved")
    assert [g for g in grants_on(conn, "owners") if g[1] == "table"] == [
        ("TABLE_READ", "table", "g1.inner.other")]
    assert f.delete(f"/v1/namespaces/{ns_path(['g1', 'inner'])}/tables/other?purgeRequested=true"
                    ).status_code == 204
    assert [g for g in grants_on(conn, "owners") if g[1] == "table"] == []

    # a dropped namespace takes its grants; made again, it has none
    assert f.delete(f"/v1/namespaces/{ns_path(['g1', 'inner'])}").status_code == 204
    assert grants_on(conn, "owners") == [("NAMESPACE_READ", "namespace", "g2")]
    f.create_namespace(["g1", "inner"])
    assert grants_on(conn, "owners") == [("NAMESPACE_READ", "namespace", "g2")]


def test_principals_and_roles(auth_db):
    _, url, _ = auth_db
    a = probe(url, "principal-insert", "pr_alice", "user", "-", "-", "floe")
    b = probe(url, "principal-insert", "pr_bob", "client", "bob-id", "scrypt$1", "floe")
    assert a["id"] > 0 and b["id"] > a["id"]
    assert probe(url, "principal-insert", "pr_alice", "client", "x", "-", "floe")["error"] == \
        "AlreadyExistsException"
    assert probe(url, "principal-insert", "pr_carl", "client", "bob-id", "-", "oidc")["error"] == \
        "AlreadyExistsException"
    assert probe(url, "principal-insert", "pr_dan", "robot", "-", "-", "floe")["error"] == \
        "BadRequestException"

    got = probe(url, "principal-by-client", "bob-id")
    assert {k: got[k] for k in ("id", "name", "kind", "client_id", "secret_hash", "source",
                                "disabled")} == {
        "id": b["id"], "name": "pr_bob", "kind": "client", "client_id": "bob-id",
        "secret_hash": "scrypt$1", "source": "floe", "disabled": False}
    assert got["created_at"].endswith("Z")
    assert probe(url, "principal-get", "pr_alice")["client_id"] is None
    assert probe(url, "principal-get", "nobody") is None
    assert probe(url, "principal-by-client", "nobody") is None

    assert probe(url, "principal-disable", "pr_bob", "true") == {"found": True}
    assert probe(url, "principal-get", "pr_bob")["disabled"] is True
    assert probe(url, "principal-disable", "nobody", "true") == {"found": False}
    assert probe(url, "principal-secret", "pr_bob", "scrypt$2") == {"found": True}
    assert probe(url, "principal-get", "pr_bob")["secret_hash"] == "scrypt$2"
    assert probe(url, "principal-secret", "pr_bob", "-") == {"found": True}
    assert probe(url, "principal-get", "pr_bob")["secret_hash"] is None

    names = probe(url, "principal-list", "pr_", 1)
    assert names == {"names": ["pr_alice"], "more": True}
    assert probe(url, "principal-list", "pr_alice", 5)["names"][0] == "pr_bob"
    assert probe(url, "principal-count")["count"] >= 2

    assert probe(url, "role-insert", "pr_readers")["id"] > 0
    assert probe(url, "role-insert", "pr_writers")["id"] > 0
    assert probe(url, "role-insert", "pr_readers")["error"] == "AlreadyExistsException"
    assert probe(url, "role-list", "pr_", 1) == {"names": ["pr_readers"], "more": True}
    assert probe(url, "member-add", "pr_readers", "pr_alice") == {"found": True}
    assert probe(url, "member-add", "pr_readers", "pr_alice") == {"found": True}
    assert probe(url, "member-add", "pr_writers", "pr_alice") == {"found": True}
    assert probe(url, "member-add", "pr_readers", "nobody") == {"found": False}
    assert probe(url, "member-add", "nothing", "pr_alice") == {"found": False}
    roles = probe(url, "principal-roles", a["id"])
    assert roles["names"] == ["pr_readers", "pr_writers"] and len(roles["ids"]) == 2
    assert probe(url, "member-remove", "pr_writers", "pr_alice") == {"found": True}
    assert probe(url, "member-remove", "pr_writers", "pr_alice") == {"found": False}
    assert probe(url, "principal-roles", a["id"])["names"] == ["pr_readers"]
    assert probe(url, "role-delete", "pr_readers") == {"found": True}
    assert probe(url, "role-delete", "pr_readers") == {"found": False}
    assert probe(url, "principal-roles", a["id"]) == {"ids": [], "names": []}


def test_grants_privileges_and_the_decision_over_the_real_store(auth_db):
    f, url, _ = auth_db
    f.create_namespace(["p1"])
    f.create_namespace(["p1", "b"])
    f.create_namespace(["p1", "b", "c"])
    f.create_namespace(["p2"])
    f.create_namespace(["p3"])
    create_table(f, ["p1", "b"], "t")
    create_table(f, ["p1", "b"], "u")
    create_table(f, ["p2"], "t")
    rid = probe(url, "role-insert", "analysts")["id"]
    other = probe(url, "role-insert", "admins")["id"]

    assert probe(url, "grant-insert", "analysts", "TABLE_WRITE_MAIN", "table", "p1.b", "t") == \
        {"inserted": True}
    assert probe(url, "grant-insert", "analysts", "TABLE_WRITE_MAIN", "table", "p1.b", "t") == \
        {"inserted": False}
    assert probe(url, "grant-insert", "analysts", "NAMESPACE_CREATE", "namespace", "p1", "-") == \
        {"inserted": True}
    assert probe(url, "grant-insert", "analysts", "TABLE_READ", "namespace", "p2", "-") == \
        {"inserted": True}
    assert probe(url, "grant-insert", "admins", "ADMIN", "catalog", "-", "-") == {"inserted": True}
    # refused: a missing role, namespace or table; a privilege not granted there
    assert probe(url, "grant-insert", "nobody", "TABLE_READ", "catalog", "-", "-")["error"] == \
        "NotFoundException"
    assert probe(url, "grant-insert", "analysts", "TABLE_READ", "namespace", "p9", "-")[
        "error"] == "NoSuchNamespaceException"
    assert probe(url, "grant-insert", "analysts", "TABLE_READ", "table", "p1.b", "zz")[
        "error"] == "NoSuchTableException"
    assert probe(url, "grant-insert", "analysts", "TABLE_READ", "table", "p9", "t")[
        "error"] == "NoSuchNamespaceException"
    bad = probe(url, "grant-insert", "analysts", "ADMIN", "table", "p1.b", "t")
    assert bad == {"error": "BadRequestException", "message": "ADMIN is not granted on a table"}
    assert probe(url, "grant-insert", "analysts", "TABLE_CREATE", "table", "p1.b", "t")[
        "error"] == "BadRequestException"

    listed = probe(url, "grant-list", "analysts", 0, -1)
    assert [(g["privilege"], g["on"], g["namespace"], g["table"]) for g in listed["grants"]] == [
        ("TABLE_WRITE_MAIN", "table", "p1.b", "t"), ("NAMESPACE_CREATE", "namespace", "p1", None),
        ("TABLE_READ", "namespace", "p2", None)]
    page = probe(url, "grant-list", "analysts", listed["grants"][0]["id"], 1)
    assert page["more"] is True and page["grants"][0]["privilege"] == "NAMESPACE_CREATE"
    assert probe(url, "grant-list", "nobody", 0, -1)["error"] == "NotFoundException"
    assert probe(url, "grant-list", "admins", 0, -1)["grants"][0]["namespace"] == ""

    # what the roles hold on an object and above it, without implications
    assert probe(url, "privileges", rid, "p1.b", "t") == ["NAMESPACE_CREATE", "TABLE_WRITE_MAIN"]
    assert probe(url, "privileges", rid, "p1.b.c", "-") == ["NAMESPACE_CREATE"]
    assert probe(url, "privileges", rid, "p1.b", "u") == ["NAMESPACE_CREATE"]
    assert probe(url, "privileges", rid, "p2", "t") == ["TABLE_READ"]
    assert probe(url, "privileges", rid, "p3", "-") == []
    assert probe(url, "privileges", rid, "-", "-") == []
    assert probe(url, "privileges", f"{rid},{other}", "p3", "x") == ["ADMIN"]
    assert probe(url, "privileges", "", "p1.b", "t") == []

    # the decision and the effective privileges
    c = probe(url, "check", rid, "alice", "TABLE_WRITE", "table", "p1.b", "t")
    assert c["allowed"] is True
    assert c["effective"] == ["TABLE_READ", "TABLE_WRITE", "TABLE_WRITE_MAIN"]
    c = probe(url, "check", rid, "alice", "TABLE_DROP", "table", "p1.b", "t")
    assert c["allowed"] is False
    assert c["message"] == "Principal alice lacks TABLE_DROP on table p1.b.t"
    c = probe(url, "check", rid, "alice", "NAMESPACE_READ", "namespace", "p1.b.c", "-")
    assert c["allowed"] is True
    c = probe(url, "check", rid, "alice", "NAMESPACE_DROP", "namespace", "p1.b", "-")
    assert c["message"] == "Principal alice lacks NAMESPACE_DROP on namespace p1.b"
    c = probe(url, "check", rid, "alice", "NAMESPACE_CREATE", "catalog", "-", "-")
    assert c["message"] == "Principal alice lacks NAMESPACE_CREATE on the catalog"
    c = probe(url, "check", other, "root", "AUDIT_READ", "table", "p3", "nothing")
    assert c["allowed"] is True and len(c["effective"]) == 10
    assert len(probe(url, "check", other, "root", "ADMIN", "catalog", "-", "-")["effective"]) == 16

    # visible listings: the path down to a grant, everything below one
    assert probe(url, "ns-list-visible", rid, "-", "-", -1)["names"] == ["p1", "p2"]
    assert probe(url, "ns-list-visible", rid, "-", "-", 1) == {"names": ["p1"], "more": True}
    assert probe(url, "ns-list-visible", rid, "-", "p1", 5)["names"] == ["p2"]
    assert probe(url, "ns-list-visible", rid, "p1", "-", -1)["names"] == ["p1.b"]
    assert probe(url, "ns-list-visible", rid, "p9", "-", -1)["error"] == \
        "NoSuchNamespaceException"
    assert probe(url, "table-list-visible", rid, "p1.b", "-", -1)["names"] == ["t", "u"]
    assert probe(url, "table-list-visible", rid, "p2", "-", -1)["names"] == ["t"]
    assert probe(url, "table-list-visible", rid, "p2", "t", -1)["names"] == []
    assert probe(url, "table-list-visible", rid, "p9", "-", -1)["error"] == \
        "NoSuchNamespaceException"
    assert probe(url, "ns-visible", rid, "p1.b.c") is True
    assert probe(url, "ns-visible", rid, "p3") is False
    assert probe(url, "ns-visible", other, "p3") is True
    assert probe(url, "ns-visible", rid, "p9") is False
    assert probe(url, "check-listing", rid, "alice", "p1.b.c") == {"allowed": True, "message": ""}
    assert probe(url, "check-listing", rid, "alice", "-")["allowed"] is True
    assert probe(url, "check-listing", rid, "alice", "p3") == {
        "allowed": False, "message": "Principal alice lacks NAMESPACE_READ on namespace p3"}

    # a grant held only on a table shows the path to it, and only it
    rid2 = probe(url, "role-insert", "one-table")["id"]
    assert probe(url, "grant-insert", "one-table", "TABLE_READ", "table", "p1.b", "u")[
        "inserted"] is True
    assert probe(url, "ns-list-visible", rid2, "-", "-", -1)["names"] == ["p1"]
    assert probe(url, "ns-list-visible", rid2, "p1", "-", -1)["names"] == ["p1.b"]
    assert probe(url, "ns-list-visible", rid2, "p1.b", "-", -1)["names"] == []
    assert probe(url, "table-list-visible", rid2, "p1.b", "-", -1)["names"] == ["u"]

    assert probe(url, "grant-delete", "analysts", "TABLE_READ", "namespace", "p2", "-") == \
        {"found": True}
    assert probe(url, "grant-delete", "analysts", "TABLE_READ", "namespace", "p2", "-") == \
        {"found": False}
    assert probe(url, "privileges", rid, "p2", "t") == []


def test_the_first_admin_is_made_once_when_floes_start_together(postgres):
    url = postgres.new_database()
    # a floe start migrates the database
    from conftest import Floe
    f = Floe(env={"FLOE_DATABASE_URL": url})
    try:
        f.wait_ready(30)
    finally:
        f.cleanup()
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(
            lambda i: probe(url, "bootstrap", f"admin{i}", f"client{i}", f"scrypt${i}"),
            range(6)))
    assert sorted(a["created"] for a in answers) == [False] * 5 + [True], answers
    assert probe(url, "principal-count") == {"count": 1}
    with postgres.connect(dbname(url)) as conn:
        (name, kind, source) = sql_one(conn, "SELECT name, kind, source FROM principals")
        assert (kind, source) == ("client", "floe")
        pid = probe(url, "principal-get", name)["id"]
        roles = probe(url, "principal-roles", pid)
        assert roles["names"] == ["admin"]
        assert grants_on(conn, "admin") == [("ADMIN", "catalog", "")]
    c = probe(url, "check", roles["ids"][0], name, "CONTROLS_MANAGE", "table", "any", "t")
    assert c["allowed"] is True


def test_the_runtime_role_may_use_the_new_relations(postgres, floe_factory):
    runtime_url, owner_url = postgres.new_database_with_roles()
    f = floe_factory(env={"FLOE_DATABASE_URL": runtime_url, "FLOE_OWNER_DATABASE_URL": owner_url})
    f.create_namespace(["rt"])
    create_table(f, ["rt"], "t")
    # every write of the new store files as floe's runtime role
    assert probe(runtime_url, "bootstrap", "admin", "admin-id", "scrypt$x") == {"created": True}
    assert probe(runtime_url, "principal-insert", "rt_user", "user", "-", "-", "oidc")["id"] > 0
    assert probe(runtime_url, "role-insert", "rt_role")["id"] > 0
    assert probe(runtime_url, "member-add", "rt_role", "rt_user") == {"found": True}
    assert probe(runtime_url, "grant-insert", "rt_role", "TABLE_READ", "table", "rt", "t") == \
        {"inserted": True}
    assert probe(runtime_url, "principal-disable", "rt_user", "true") == {"found": True}
    assert probe(runtime_url, "member-remove", "rt_role", "rt_user") == {"found": True}
    assert probe(runtime_url, "grant-delete", "rt_role", "TABLE_READ", "table", "rt", "t") == \
        {"found": True}
    assert probe(runtime_url, "role-delete", "rt_role") == {"found": True}
    # and a drop's cascade runs as floe's role too
    assert probe(runtime_url, "grant-insert", "admin", "TABLE_READ", "table", "rt", "t") == \
        {"inserted": True}
    assert f.delete("/v1/namespaces/rt/tables/t").status_code == 204
    left = probe(runtime_url, "grant-list", "admin", 0, -1)["grants"]
    assert [(g["privilege"], g["on"], g["namespace"], g["table"]) for g in left] == [
        ("ADMIN", "catalog", "", None)]
    owner = psycopg.connect(owner_url, autocommit=True)
    try:
        (who,) = owner.execute(
            "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'grants'").fetchone()
        assert who != urlparse(runtime_url).username
    finally:
        owner.close()
