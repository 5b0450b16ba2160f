"""The decisions of authorization a floe keeps (docs/auth.md "Decisions
kept"): an allowed request is allowed again without asking the database,
and every change that could take that back reaches every floe within
moments through the database's notifications: a grant revoked by hand in
SQL, a revoke through another replica's management API, a membership
taken away, a table dropped and made again under its name. A grant counts
at once (a refusal is never kept). While a floe cannot hear the database
it keeps nothing, and it hears again on its own. floe runs with
FLOE_AUTH=floe."""
import time

import psycopg
import pytest
import requests

from conftest import (Floe, TableHandle, assert_error, assert_ok_json, client_token,
                      database_url, make_client)
from test_metrics import scrape

M = "/management/v1"
# How long a change may take to reach a floe by notification: generous
# for a sanitizer build on a loaded machine; the tests assert the first
# refused answer comes within it.
REACH_S = 5.0


@pytest.fixture()
def authed(postgres):
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe"})
    try:
        f.wait_ready(30)
        f.authenticate()
        yield f
    finally:
        f.cleanup()


def sql(f, statement, args=()):
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


def as_token(f, token, method, path, **kw):
    kw.setdefault("timeout", 30)
    return requests.request(method, f.url + path,
                            headers={"Authorization": f"Bearer {token}"}, **kw)


def reader(f, ns, table="t"):
    """A client holding a role with TABLE_READ on ns.table (through the
    management API); returns its token."""
    assert_ok_json(f.post(f"{M}/roles", json={"name": "readers"}), 201)
    grant = {"privilege": "TABLE_READ",
             "on": {"kind": "table", "namespace": ns, "table": table}}
    assert_ok_json(f.post(f"{M}/roles/readers/grants", json=grant), 201)
    return client_token(f, make_client(f, "reader", roles=("readers",))), grant


def read_by_reader(f, ns):
    """A namespace ns with table t that a new client reads once; returns
    its token, the grant (as the management API names it) and the table's
    path."""
    f.create_namespace(ns)
    TableHandle(f, ns, "t").create()
    token, grant = reader(f, ns)
    path = f"/v1/namespaces/{ns[0]}/tables/t"
    assert as_token(f, token, "GET", path).status_code == 200
    return token, grant, path


def until_refused(f, token, path, expect=403):
    """Seconds until a GET of path with token is refused with expect."""
    began = time.monotonic()
    while True:
        r = as_token(f, token, "GET", path)
        if r.status_code == expect:
            return time.monotonic() - began, r
        assert r.status_code == 200, r.text
        assert time.monotonic() - began < REACH_S, \
            f"still allowed {REACH_S} s after the change: {r.status_code}"
        time.sleep(0.02)


def test_an_allowed_request_is_allowed_again_without_a_query(authed):
    f = authed
    token, _, path = read_by_reader(f, ["k0"])
    before = scrape(f)
    for _ in range(20):
        assert as_token(f, token, "GET", path).status_code == 200
    after = scrape(f)
    kept = (after.value("floe_authz_decisions_total", answer="kept")
            - before.value("floe_authz_decisions_total", answer="kept"))
    asked = (after.value("floe_authz_decisions_total", answer="asked")
             - before.value("floe_authz_decisions_total", answer="asked"))
    assert kept >= 20 and asked == 0, (kept, asked)
    # A refusal is asked every time.
    for _ in range(3):
        assert as_token(f, token, "DELETE", path).status_code == 403
    again = scrape(f)
    assert (again.value("floe_authz_decisions_total", answer="asked")
            - after.value("floe_authz_decisions_total", answer="asked")) >= 3


def test_a_revoke_in_sql_reaches_a_kept_decision(authed):
    f = authed
    token, _, path = read_by_reader(f, ["k1"])
    for _ in range(3):
        assert as_token(f, token, "GET", path).status_code == 200
    sql(f, "DELETE FROM grants WHERE role_id = (SELECT id FROM roles WHERE name = 'readers')")
    took, r = until_refused(f, token, path)
    assert_error(r, 403, "ForbiddenException", "Principal reader lacks TABLE_READ on table k1.t")
    assert took < REACH_S


def test_a_grant_counts_at_the_next_request(authed):
    f = authed
    token, _, path = read_by_reader(f, ["k2"])
    # Dropping needs TABLE_DROP, which the kept set lacks: the store is
    # asked, and a grant made in SQL just before counts.
    r = as_token(f, token, "DELETE", path)
    assert_error(r, 403, "ForbiddenException", "lacks TABLE_DROP")
    sql(f, "INSERT INTO grants (role_id, privilege, object_kind, table_id) "
        "SELECT r.id, 'TABLE_DROP', 'table', t.id FROM roles r, tables t "
        "WHERE r.name = 'readers' AND t.name = 't'")
    r = as_token(f, token, "DELETE", path)
    assert r.status_code == 204, r.text


def test_a_revoke_through_one_replica_reaches_the_other(authed):
    a = authed
    # The second replica reads the first one's data directory: the same
    # signing keys, so one token is good at both.
    b = Floe(env={"FLOE_DATABASE_URL": database_url(a), "FLOE_AUTH": "floe",
                  "FLOE_DATA_DIR": str(a.workdir / "data")})
    try:
        b.wait_ready(30)
        token, grant, path = read_by_reader(a, ["k3"])
        for _ in range(3):
            assert as_token(b, token, "GET", path).status_code == 200
        assert_ok_json(a.post(f"{M}/roles/readers/grants/revoke", json=grant), 200)
        # At once on the replica that made the change, within moments on
        # the other.
        assert as_token(a, token, "GET", path).status_code == 403
        took, _ = until_refused(b, token, path)
        assert took < REACH_S
    finally:
        b.cleanup()


def test_a_membership_taken_away_in_sql_reaches_a_kept_token(authed):
    f = authed
    token, _, path = read_by_reader(f, ["k4"])
    sql(f, "DELETE FROM role_members WHERE principal_id = "
        "(SELECT id FROM principals WHERE name = 'reader')")
    took, r = until_refused(f, token, path)
    assert_error(r, 403, "ForbiddenException", "lacks TABLE_READ")


def test_a_table_made_again_under_its_name_has_none_of_the_old_grants(authed):
    f = authed
    token, _, path = read_by_reader(f, ["k5"])
    assert f.delete(path + "?purgeRequested=false").status_code == 204
    TableHandle(f, ["k5"], "t").create()
    # The grant was on the dropped table (by id): the new one is not the
    # reader's.
    took, r = until_refused(f, token, path)
    assert_error(r, 403, "ForbiddenException", "Principal reader lacks TABLE_READ on table k5.t")


def test_a_floe_that_cannot_hear_keeps_nothing_and_hears_again(authed):
    f = authed
    token, grant, path = read_by_reader(f, ["k6"])
    # End floe's listening session from the database side.
    ended = sql(f, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query = 'LISTEN floe_authz'")
    assert ended == [(True,)], ended
    deadline = time.monotonic() + REACH_S
    while "lost the session that hears changes of authorization" not in f.log():
        assert time.monotonic() < deadline, f.log_tail()
        time.sleep(0.05)
    # Deaf or hearing again, a revoke counts at the next request.
    sql(f, "DELETE FROM grants WHERE role_id = (SELECT id FROM roles WHERE name = 'readers')")
    took, _ = until_refused(f, token, path)
    assert took < REACH_S
    # It listens again, and what it keeps from then on is forgotten on a
    # change as before.
    deadline = time.monotonic() + REACH_S
    while not sql(f, "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                  "AND query = 'LISTEN floe_authz'"):
        assert time.monotonic() < deadline, "floe did not listen again"
        time.sleep(0.05)
    assert_ok_json(f.post(f"{M}/roles/readers/grants", json=grant), 201)
    assert as_token(f, token, "GET", path).status_code == 200
    sql(f, "DELETE FROM grants WHERE role_id = (SELECT id FROM roles WHERE name = 'readers')")
    took, _ = until_refused(f, token, path)
    assert took < REACH_S
