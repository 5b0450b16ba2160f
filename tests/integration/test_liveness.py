"""Liveness never waits on the database: /health, /ready and /metrics are
answered by libmicrohttpd's own threads, while every request that may need
the database (authentication included) runs on the request workers
(--threads), which a stalled or locked database may hold.

Every wait is real: rows locked by another PostgreSQL session, a cluster
whose processes are stopped with SIGSTOP.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time

import psycopg
import pytest
import requests

from conftest import (TableHandle, assert_error, database_url, describe, postgres_pids,
                      wait_until)

# Well below a Kubernetes probe's default timeout of 1 s, and far below
# what a request worker waits on the database in these tests.
AT_ONCE = 0.25


def timed_get(f, path: str, timeout: float = 5):
    t0 = time.monotonic()
    try:
        r = requests.get(f.url + path, timeout=timeout)
    except requests.Timeout:
        pytest.fail(f"{path} not answered within {timeout} s")
    return r, time.monotonic() - t0


def assert_live(f):
    """/health, /ready and /metrics each answer 200 at once."""
    for path in ("/health", "/ready", "/metrics"):
        r, elapsed = timed_get(f, path)
        assert r.status_code == 200, describe(r)
        assert elapsed < AT_ONCE, f"{path} answered after {elapsed:.3f} s"
    r, _ = timed_get(f, "/health")
    assert r.json() == {"status": "ok"}


def floe_sessions_waiting_on_locks(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'floe' "
            "AND wait_event_type = 'Lock'").fetchone()[0]




def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def test_liveness_answers_while_every_request_worker_waits_on_a_row_lock(postgres, floe_factory):
    """Drops hold both request workers on rows another session has locked
    (and one more waits in the queue): /health, /ready and /metrics still
    answer at once, and once the rows are let go every drop gets its own
    answer and has happened."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--threads=2", "--db-lock-timeout-ms=60000"])
    f.create_namespace(["held"])
    tables = [TableHandle(f, ["held"], f"t{i}") for i in range(3)]
    for t in tables:
        t.create()
    url = database_url(f)
    locker = psycopg.connect(url)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(tables))
    try:
        locker.execute("SELECT id FROM tables WHERE name = ANY(%s) FOR UPDATE",
                       ([t.name for t in tables],))
        drops = [pool.submit(requests.delete, f.url + t.url, timeout=60) for t in tables]
        assert wait_until(lambda: floe_sessions_waiting_on_locks(url) == 2, 15, 0.05), \
            "the drops never waited on the locked rows"
        for _ in range(3):
            assert_live(f)
        assert not any(d.done() for d in drops), "a drop was answered while its row was locked"
    finally:
        locker.rollback()
        locker.close()
    for t, d in zip(tables, drops):
        r = d.result(timeout=30)
        assert r.status_code == 204, describe(r)
        assert_error(f.get(t.url), 404, "NoSuchTableException")
    pool.shutdown(wait=True)


def test_liveness_answers_while_the_stopped_database_holds_every_request_worker(
        dedicated_postgres, floe_factory):
    """Every process of the cluster stopped, for less than the watch's
    deadline, while loadTables hold every request worker and wait in the
    queue: /health and /metrics answer at once, and so does /ready, still
    ready (the database has not been silent past its deadline yet). On
    SIGCONT every loadTable gets its table."""
    pg = dedicated_postgres
    f = floe_factory(env={"FLOE_DATABASE_URL": pg.new_database()},
                     args=["--threads=2", "--db-probe-timeout-ms=10000"])
    f.create_namespace(["stopped"])
    t = TableHandle(f, ["stopped"], "t")
    t.create()
    want = f.get(t.url).json()["metadata-location"]
    pids = postgres_pids(pg)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    signal_all(pids, signal.SIGSTOP)
    try:
        loads = [pool.submit(requests.get, f.url + t.url, timeout=60) for _ in range(4)]
        time.sleep(0.3)
        for _ in range(3):
            assert_live(f)
        assert not any(load.done() for load in loads), "a loadTable was answered meanwhile"
    finally:
        signal_all(pids, signal.SIGCONT)
    for load in loads:
        r = load.result(timeout=30)
        assert r.status_code == 200, describe(r)
        assert r.json()["metadata-location"] == want
    pool.shutdown(wait=True)


def test_full_request_queue_answers_503_at_once_and_liveness_still_answers(
        postgres, floe_factory):
    """One request worker held on a locked row and one request waiting:
    the next request that needs the database is refused at once with 503
    and Retry-After, and /health is not refused; the held ones then get
    their own answers."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--threads=1", "--queue-max=1", "--db-lock-timeout-ms=60000"])
    f.create_namespace(["full"])
    held = TableHandle(f, ["full"], "held")
    held.create()
    other = TableHandle(f, ["full"], "other")
    other.create()
    url = database_url(f)
    locker = psycopg.connect(url)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    try:
        locker.execute("SELECT id FROM tables WHERE name = 'held' FOR UPDATE")
        drop = pool.submit(requests.delete, f.url + held.url, timeout=60)
        assert wait_until(lambda: floe_sessions_waiting_on_locks(url) == 1, 15, 0.05)
        waiting = pool.submit(requests.get, f.url + other.url, timeout=60)
        time.sleep(0.3)
        r, elapsed = timed_get(f, other.url)
        assert_error(r, 503, "ServiceUnavailableException", "the request queue is full")
        assert r.headers.get("Retry-After") == "1", dict(r.headers)
        assert elapsed < 1.0, f"a full queue answered after {elapsed:.1f} s"
        assert_live(f)
        assert not waiting.done()
    finally:
        locker.rollback()
        locker.close()
    assert drop.result(timeout=30).status_code == 204
    r = waiting.result(timeout=30)
    assert r.status_code == 200, describe(r)
    assert_error(f.get(held.url), 404, "NoSuchTableException")
    pool.shutdown(wait=True)

