"""Commit outcomes: a failed commit says truthfully whether it took effect.

Iceberg clients read 500/502/504 on a commit as "state unknown" (keep the
files) and every other failure as "not committed" (delete the files). So a
deadlock, a serialization failure or a connection lost before COMMIT must
not be answered 500, and a commit that landed must never be reported as
refused. These tests break the database connection at chosen moments with
pg_terminate_backend, holding floe's statement inside a trigger that sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import (TableHandle, assert_error, assert_ok_json, database_url, describe, ns_path,
                      wait_until)


def psql(psql_bin, url: str, sql: str) -> str:
    out = subprocess.run([str(psql_bin), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                          "-d", url, "-c", sql],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def local_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


SLOW_TRIGGER = """
CREATE OR REPLACE FUNCTION floe_test_slow_commit() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NEW; END $$;
DROP TRIGGER IF EXISTS floe_test_slow ON commit_log;
CREATE TRIGGER floe_test_slow AFTER INSERT ON commit_log FOR EACH ROW
  WHEN (NEW.table_uuid = '{uuid}' AND NEW.version > 1)
  EXECUTE FUNCTION floe_test_slow_commit();
"""

# The same sleep at COMMIT: a deferred constraint trigger runs when the
# transaction commits, so the backend is killed while the COMMIT is in
# flight.
SLOW_COMMIT_TRIGGER = """
CREATE OR REPLACE FUNCTION floe_test_slow_commit() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NEW; END $$;
DROP TRIGGER IF EXISTS floe_test_slow ON commit_log;
CREATE CONSTRAINT TRIGGER floe_test_slow AFTER INSERT ON commit_log
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.table_uuid = '{uuid}' AND NEW.version > 1)
  EXECUTE FUNCTION floe_test_slow_commit();
"""

TERMINATE_SLEEPER = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = 'floe' AND wait_event = 'PgSleep'
"""


def metadata_files(table: TableHandle) -> set:
    loc = local_path(table.metadata()["location"])
    return {p.name for p in (loc / "metadata").glob("*.metadata.json")}


def break_connection_during(psql_bin, url, fn):
    """Runs fn() in a thread; terminates floe's backend once it sleeps in
    the trigger; returns fn's answer."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn()))
    t.start()
    killed = wait_until(lambda: psql(psql_bin, url, TERMINATE_SLEEPER) != "0", 15, 0.1)
    t.join(60)
    assert killed, "floe's commit never reached the sleeping trigger"
    assert "r" in out, "the commit did not answer"
    return out["r"]


@pytest.fixture
def table(fresh_floe, uniq):
    fresh_floe.create_namespace([uniq])
    t = TableHandle(fresh_floe, [uniq], "t")
    t.create()
    t.add_snapshot()
    return t


def test_connection_lost_during_single_commit_is_settled_not_unknown(fresh_floe, table, psql_bin):
    """The connection breaks while the COMMIT of the swap's transaction is
    in flight: floe asks PostgreSQL, once it answers, whether that
    transaction (by its xid) committed, and tells the truth."""
    url = database_url(fresh_floe)
    meta = table.metadata()
    uuid = meta["table-uuid"]
    before_files = metadata_files(table)
    before_head = table.head()
    psql(psql_bin, url, SLOW_COMMIT_TRIGGER.format(uuid=uuid))
    try:
        sid, updates = table.snapshot_updates()
        r = break_connection_during(psql_bin, url, lambda: table.commit(updates))
    finally:
        psql(psql_bin, url, "DROP TRIGGER IF EXISTS floe_test_slow ON commit_log")
    # The transaction was aborted with its backend: nothing landed, floe
    # knows it, and says so with 503 (not 500 "unknown", not 409 "refused").
    assert_error(r, 503, "ServiceUnavailableException")
    assert r.headers.get("Retry-After"), describe(r)
    assert table.head() == before_head
    # The file written for the commit that did not land is gone.
    assert metadata_files(table) == before_files
    assert "did not land" in fresh_floe.log()
    # And the same commit goes through now.
    body = table.commit_ok(updates)
    assert body["metadata"]["refs"]["main"]["snapshot-id"] == sid


def test_connection_lost_inside_transaction_is_a_known_failure(fresh_floe, uniq, psql_bin):
    url = database_url(fresh_floe)
    fresh_floe.create_namespace([uniq])
    a = TableHandle(fresh_floe, [uniq], "a")
    b = TableHandle(fresh_floe, [uniq], "b")
    a.create()
    b.create()
    files_a, files_b = metadata_files(a), metadata_files(b)
    psql(psql_bin, url, SLOW_TRIGGER.format(uuid=b.metadata()["table-uuid"]).replace(
        "NEW.version > 1", "NEW.version > 0"))
    try:
        _, ua = a.snapshot_updates()
        _, ub = b.snapshot_updates()
        body = {"table-changes": [
            {"identifier": {"namespace": [uniq], "name": "a"}, "requirements": [], "updates": ua},
            {"identifier": {"namespace": [uniq], "name": "b"}, "requirements": [], "updates": ub},
        ]}
        r = break_connection_during(
            psql_bin, url, lambda: fresh_floe.post("/v1/transactions/commit", json=body, timeout=60))
    finally:
        psql(psql_bin, url, "DROP TRIGGER IF EXISTS floe_test_slow ON commit_log")
    assert_error(r, 503, "ServiceUnavailableException")
    assert a.head() is None and b.head() is None
    assert metadata_files(a) == files_a and metadata_files(b) == files_b


def test_transactions_in_both_orders_from_two_replicas_never_answer_500(
        postgres, floe_factory, uniq):
    """Two replicas, transactions over the same two tables in opposite
    orders: without one lock order they deadlock in PostgreSQL, which must
    never reach the client as 500 "state unknown"."""
    db = postgres.new_database()
    f1 = floe_factory(env={"FLOE_DATABASE_URL": db})
    f2 = floe_factory(env={"FLOE_DATABASE_URL": db})
    f1.create_namespace([uniq])
    names = ["x", "y"]
    for n in names:
        TableHandle(f1, [uniq], n).create()

    statuses = []
    lock = threading.Lock()

    def worker(f, order, count):
        for i in range(count):
            changes = [{"identifier": {"namespace": [uniq], "name": n},
                        "requirements": [],
                        "updates": [{"action": "set-properties",
                                     "updates": {f"k{threading.get_ident()}": str(i)}}]}
                       for n in order]
            r = f.post("/v1/transactions/commit", json={"table-changes": changes}, timeout=60)
            with lock:
                statuses.append((r.status_code, r.text[:200]))

    threads = []
    for k in range(6):
        f = f1 if k % 2 == 0 else f2
        order = names if k % 3 else list(reversed(names))
        threads.append(threading.Thread(target=worker, args=(f, order, 25)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    bad = [s for s in statuses if s[0] >= 500 and s[0] != 503]
    assert not bad, f"{len(bad)} of {len(statuses)} transactions answered 5xx: {bad[:3]}"
    ok = sum(1 for s in statuses if s[0] == 204)
    assert ok >= len(statuses) * 0.9, statuses[:5]
    # Every acknowledged transaction is in both tables.
    for n in names:
        props = TableHandle(f1, [uniq], n).metadata()["properties"]
        assert sum(1 for k in props if k.startswith("k")) == 6


def test_failed_metadata_write_is_a_known_failure(fresh_floe, table):
    """A commit whose metadata file cannot be written did not happen: 503,
    never 500 (which would tell the client to keep files it should not)."""
    loc = local_path(table.metadata()["location"])
    head = table.head()
    moved = loc / "metadata.moved"
    (loc / "metadata").rename(moved)
    (loc / "metadata").write_text("not a directory")
    try:
        _, updates = table.snapshot_updates()
        r = table.commit(updates)
        assert_error(r, 503, "ServiceUnavailableException")
        assert r.headers.get("Retry-After")
        # A transaction and a create in the same broken place say the same.
        body = {"table-changes": [{"identifier": {"namespace": table.namespace, "name": "t"},
                                   "requirements": [], "updates": updates}]}
        assert_error(fresh_floe.post("/v1/transactions/commit", json=body), 503,
                     "ServiceUnavailableException")
    finally:
        (loc / "metadata").unlink()
        moved.rename(loc / "metadata")
    assert table.head() == head
    table.commit_ok(updates)


def test_unreadable_stored_metadata_is_a_known_failure(fresh_floe, table, psql_bin):
    url = database_url(fresh_floe)
    uuid = table.metadata()["table-uuid"]
    psql(psql_bin, url, f"UPDATE tables SET metadata = '{{not json' WHERE table_uuid = '{uuid}'")
    _, updates = table.snapshot_updates(parent=None, meta={"location": "/x", "last-sequence-number": 5})
    r = table.commit(updates)
    assert_error(r, 503, "ServiceUnavailableException")


def test_failed_non_commit_mutation_is_503_not_500(fresh_floe, uniq, psql_bin):
    """The rule holds beyond commits: a namespace create the database
    refuses for a reason of its own did not happen, so it is 503."""
    url = database_url(fresh_floe)
    psql(psql_bin, url, """
        CREATE FUNCTION floe_test_refuse() RETURNS trigger LANGUAGE plpgsql AS
          $$ BEGIN RAISE EXCEPTION 'refused by a test'; END $$;
        CREATE TRIGGER floe_test_refuse BEFORE INSERT ON namespaces
          FOR EACH ROW EXECUTE FUNCTION floe_test_refuse();""")
    try:
        r = fresh_floe.post("/v1/namespaces", json={"namespace": [uniq]})
        assert_error(r, 503, "ServiceUnavailableException")
        assert r.headers.get("Retry-After")
        # A read that fails the same way stays a 500.
    finally:
        psql(psql_bin, url, "DROP TRIGGER floe_test_refuse ON namespaces")
    assert fresh_floe.head(f"/v1/namespaces/{ns_path([uniq])}").status_code == 404


@pytest.fixture
def small_warehouse(tmp_path):
    """A warehouse on a file system of its own, 256 KiB, that tests can
    fill up or make read-only."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    mnt = tmp_path / "wh"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0777", "tmpfs", str(mnt)],
                   check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_and_read_only_warehouse_are_known_failures(postgres, floe_factory, uniq,
                                                         small_warehouse):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(),
                          "FLOE_WAREHOUSE": f"file://{small_warehouse}"})
    f.create_namespace([uniq])
    t = TableHandle(f, [uniq], "t")
    t.create()
    head = t.head()
    meta_dir = local_path(t.metadata()["location"]) / "metadata"
    before = set(os.listdir(meta_dir))
    # Full: fill what is left of the file system.
    filler = small_warehouse / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError:
        pass
    finally:
        os.close(fd)
    _, updates = t.snapshot_updates()
    r = t.commit(updates)
    assert_error(r, 503, "ServiceUnavailableException")
    assert set(os.listdir(meta_dir)) == before, "a partial or temporary file was left behind"
    filler.unlink()
    # Read-only.
    subprocess.run(["mount", "-o", "remount,ro", str(small_warehouse)], check=True)
    try:
        assert_error(t.commit(updates), 503, "ServiceUnavailableException")
        r = f.post(f"/v1/namespaces/{ns_path([uniq])}/tables",
                   json={"name": "u", "schema": TableHandle.SCHEMA})
        assert_error(r, 503, "ServiceUnavailableException")
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_warehouse)], check=True)
    assert t.head() == head
    assert f.head(f"/v1/namespaces/{ns_path([uniq])}/tables/u").status_code == 404
    t.commit_ok(updates)


def test_unknown_outcome_is_settled_later_once_the_database_is_back(
        dedicated_postgres, floe_factory, uniq, psql_bin):
    """The COMMIT's backend dies and the database then stays away past the
    commit's own wait: the client is told 500 "unknown", and floe's janitor
    settles the commit once PostgreSQL is back, logs the truth and removes
    the file of the commit that did not land."""
    url = dedicated_postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": url, "FLOE_JANITOR_INTERVAL_SECONDS": "1"})
    f.create_namespace([uniq])
    t = TableHandle(f, [uniq], "t")
    t.create()
    head_files = metadata_files(t)
    psql(psql_bin, url, SLOW_COMMIT_TRIGGER.format(uuid=t.metadata()["table-uuid"]).replace(
        "NEW.version > 1", "NEW.version > 0"))
    postmaster = int((dedicated_postgres.data_dir / "postmaster.pid").read_text().split()[0])
    _, updates = t.snapshot_updates()
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", f.post(t.url, json={"requirements": [], "updates": updates}, timeout=60)), daemon=True)
    stopped = False
    try:
        th.start()
        pid = wait_until(lambda: psql(psql_bin, url, "SELECT pid FROM pg_stat_activity "
                                      "WHERE application_name = 'floe' AND wait_event = 'PgSleep'"),
                         15, 0.1)
        assert pid, "the commit never reached the sleeping trigger"
        os.kill(postmaster, signal.SIGSTOP)
        stopped = True
        os.kill(int(pid), signal.SIGKILL)
        th.join(60)
        assert "r" in out, "the commit did not answer"
        assert_error(out["r"], 500, "CommitStateUnknownException")
    finally:
        if stopped:
            os.kill(postmaster, signal.SIGCONT)
    assert wait_until(lambda: "settled: version" in f.log(), 60, 0.5), f.log_tail()
    assert "did not land" in f.log()
    psql(psql_bin, url, "DROP TRIGGER IF EXISTS floe_test_slow ON commit_log")
    # PostgreSQL restarted its backends after the kill: a connection floe
    # held then is answered 503 once and replaced.
    assert wait_until(lambda: t.floe.get(t.url).status_code == 200, 15, 0.5)
    assert t.head() is None
    assert metadata_files(t) == head_files


def test_a_row_without_a_metadata_location_does_not_crash_floe(fresh_floe, table, psql_bin):
    """Not a state floe leaves behind, but the schema allows it: an edited
    row gets an error answer, and floe keeps serving."""
    url = database_url(fresh_floe)
    uuid = table.metadata()["table-uuid"]
    psql(psql_bin, url, f"UPDATE tables SET metadata_location = NULL WHERE table_uuid = '{uuid}'")
    assert_error(fresh_floe.get(table.url), 500, "InternalServerError")
    assert fresh_floe.get("/health").status_code == 200
    r = table.commit([{"action": "set-properties", "updates": {"a": "b"}}])
    assert r.status_code == 200, describe(r)
    assert fresh_floe.get("/health").status_code == 200


def test_connection_lost_during_a_view_commit_is_settled_not_unknown(fresh_floe, uniq, psql_bin):
    """A view commit is the table's compare-and-swap: its broken connection
    is settled from the commit log the same way, and its file goes."""
    f = fresh_floe
    f.create_namespace([uniq])
    body = {"name": "v", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]},
        "view-version": {"version-id": 1, "timestamp-ms": 0, "schema-id": 0, "summary": {},
                         "default-namespace": [uniq],
                         "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}}
    r = f.post(f"/v1/namespaces/{uniq}/views", json=body)
    assert r.status_code == 200, r.text
    created = r.json()
    view_url = f"/v1/namespaces/{uniq}/views/v"
    mdir = local_path(created["metadata"]["location"]) / "metadata"
    before = {p.name for p in mdir.glob("*.metadata.json")}
    url = database_url(f)
    psql(psql_bin, url, SLOW_TRIGGER.format(uuid=created["metadata"]["view-uuid"]))
    change = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    try:
        r = break_connection_during(psql_bin, url, lambda: f.post(view_url, json=change))
    finally:
        psql(psql_bin, url, "DROP TRIGGER IF EXISTS floe_test_slow ON commit_log")
    assert_error(r, 503, "ServiceUnavailableException")
    loaded = f.get(view_url).json()
    assert loaded["metadata-location"] == created["metadata-location"]
    assert {p.name for p in mdir.glob("*.metadata.json")} == before
    # And the same commit goes through now.
    r = f.post(view_url, json=change)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"]["k"] == "v"


def stall_commits(psql_bin, pg, on: bool):
    """Makes every COMMIT of a synchronous_commit=on session wait for a
    synchronous standby that never comes (on), or lets them through: the
    waiting COMMITs are durable here, invisible to other sessions until
    released."""
    admin = pg.url("postgres")
    if on:
        psql(psql_bin, admin, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
    else:
        psql(psql_bin, admin, "ALTER SYSTEM RESET synchronous_standby_names")
    psql(psql_bin, admin, "SELECT pg_reload_conf()")
    want = "nobody" if on else ""
    assert wait_until(lambda: psql(psql_bin, admin, "SHOW synchronous_standby_names") == want,
                      10, 0.1)


UNKNOWN_BODY_MESSAGE = ("The database connection broke during the commit; "
                        "its outcome is unknown")


def test_a_commit_waiting_on_a_synchronous_standby_is_unknown_and_keeps_its_file(
        dedicated_postgres, floe_factory, uniq, psql_bin):
    """With a synchronous standby that stalls, a COMMIT is durable on the
    primary but invisible until the standby answers. floe's deadline
    passes first: a fresh session finds no commit_log row, yet the commit
    has not failed. A table commit, a createTable and a view commit are
    each answered 500 CommitStateUnknownException and keep their metadata
    file; the janitor leaves the files while the transactions are in
    progress and, once the standby is given up, finds that they landed:
    every change is there and every current metadata file exists."""
    url = dedicated_postgres.new_database()
    dbname = url.rsplit("/", 1)[1]
    # The cluster runs with synchronous_commit=off; floe's database waits.
    psql(psql_bin, dedicated_postgres.url("postgres"),
         f'ALTER DATABASE "{dbname}" SET synchronous_commit = on')
    f = floe_factory(env={"FLOE_DATABASE_URL": url, "FLOE_DB_STATEMENT_TIMEOUT_MS": "1000",
                          "FLOE_JANITOR_INTERVAL_SECONDS": "1"})
    f.create_namespace([uniq])
    t = TableHandle(f, [uniq], "t")
    t.create()
    t.add_snapshot()
    view = {"name": "v", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]},
        "view-version": {"version-id": 1, "timestamp-ms": 0, "schema-id": 0, "summary": {},
                         "default-namespace": [uniq],
                         "representations": [{"type": "sql", "sql": "SELECT 1",
                                              "dialect": "spark"}]}}
    view_url = f"/v1/namespaces/{ns_path([uniq])}/views/v"
    assert f.post(f"/v1/namespaces/{ns_path([uniq])}/views", json=view).status_code == 200
    sid, updates = t.snapshot_updates()
    created = TableHandle(f, [uniq], "c")

    stall_commits(psql_bin, dedicated_postgres, True)
    try:
        answers = [
            t.commit(updates),
            f.post(f"{t.ns_url}/tables", json={"name": "c", "schema": TableHandle.SCHEMA},
                   timeout=60),
            f.post(view_url, json={"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"owner": "ana"}}]}, timeout=60),
        ]
        for r in answers:
            err = assert_error(r, 500, "CommitStateUnknownException")
            assert r.json() == {"error": {"message": UNKNOWN_BODY_MESSAGE,
                                          "type": "CommitStateUnknownException", "code": 500}}
            assert err["message"] == UNKNOWN_BODY_MESSAGE
        # The janitor asks while the commits wait, and deletes nothing.
        assert wait_until(lambda: f.log().count("is still in progress; asking again") >= 3,
                          20, 0.2), f.log_tail()
        assert "did not land" not in f.log()
        assert psql(psql_bin, url, "SELECT count(*) FROM commit_log") == "3"
    finally:
        stall_commits(psql_bin, dedicated_postgres, False)

    assert wait_until(lambda: f.log().count("landed (its client was told the outcome is unknown)")
                      >= 3, 30, 0.2), f.log_tail()
    assert "did not land" not in f.log()
    loaded = t.load()
    assert loaded["metadata"]["refs"]["main"]["snapshot-id"] == sid
    assert local_path(loaded["metadata-location"]).is_file()
    assert "/00002-" in loaded["metadata-location"]
    c = created.load()
    assert local_path(c["metadata-location"]).is_file()
    v = assert_ok_json(f.get(view_url))
    assert v["metadata"]["properties"]["owner"] == "ana"
    assert local_path(v["metadata-location"]).is_file()
    # Committing goes on from the file that landed.
    t.add_snapshot()
