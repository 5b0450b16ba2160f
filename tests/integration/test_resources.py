"""Bounded resources: database timeouts, a bounded commit queue, connections
of its own for each kind of work, client connection limits, a budget for
request bodies, and idle clients dropped.

Every fault is real: a row lock held by another PostgreSQL session, a
PostgreSQL whose processes are stopped with SIGSTOP, a thousand idle
sockets, a client that sends half a body.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import requests

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    database_url,
    describe,
    postgres_pids,
    read_raw_response,
    wait_until,
)
from webhook import PASS


def retry_after_ok(r) -> bool:
    return r.headers.get("Retry-After", "").strip().isdigit()


def assert_503(r, message_has=None):
    assert_error(r, 503, "ServiceUnavailableException", message_has)
    assert retry_after_ok(r), f"503 without a Retry-After (seconds): {dict(r.headers)}"


def new_table(f, ns: str, name: str = "t") -> TableHandle:
    f.create_namespace([ns])
    t = TableHandle(f, [ns], name)
    t.create()
    return t


def set_property(t: TableHandle, key: str, value: str, timeout: float = 30):
    return t.floe.post(t.url, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {key: value}}]}, timeout=timeout)


def metadata_files(t: TableHandle) -> list[str]:
    loc = t.metadata()["location"]
    d = Path(urlparse(loc).path) / "metadata"
    return sorted(p.name for p in d.iterdir())


class RowLock:
    """A row of `tables` locked FOR UPDATE by another session, as an
    operator's psql would hold it."""

    def __init__(self, url: str, table: str):
        import psycopg
        self.conn = psycopg.connect(url)
        cur = self.conn.execute("SELECT id FROM tables WHERE name = %s FOR UPDATE", (table,))
        assert cur.fetchone() is not None, f"no row for table {table}"

    def release(self):
        if self.conn is not None:
            self.conn.rollback()
            self.conn.close()
            self.conn = None


@pytest.fixture
def row_locks():
    held = []

    def hold(f, table: str) -> RowLock:
        lock = RowLock(database_url(f), table)
        held.append(lock)
        return lock

    yield hold
    for lock in held:
        lock.release()


# ---------------------------------------------------------------- lock and statement timeouts


@pytest.mark.parametrize("args", [
    ["--db-lock-timeout-ms=1500"],                                     # 55P03 lock_not_available
    ["--db-lock-timeout-ms=60000", "--db-statement-timeout-ms=1500"],  # 57014 query_canceled
], ids=["lock_timeout", "statement_timeout"])
def test_commit_waiting_on_a_row_lock_answers_503_and_changes_nothing(postgres, floe_factory, row_locks, args):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()}, args=args)
    t = new_table(f, "locked")
    assert set_property(t, "k", "before").status_code == 200
    before = t.load()
    files = metadata_files(t)

    lock = row_locks(f, "t")
    t0 = time.monotonic()
    r = set_property(t, "k", "during", timeout=20)
    elapsed = time.monotonic() - t0
    assert_503(r)
    assert 1.0 < elapsed < 6, f"answered after {elapsed:.1f} s; the timeout is 1.5 s"
    # The statement was canceled: nothing landed, no orphan file was left.
    lock.release()
    after = t.load()
    assert after["metadata-location"] == before["metadata-location"]
    assert after["metadata"]["properties"]["k"] == "before"
    assert metadata_files(t) == files
    # and the next commit goes through
    assert_ok_json(set_property(t, "k", "after"))
    assert t.metadata()["properties"]["k"] == "after"




def test_stopped_database_gives_503_in_bounded_time_and_floe_recovers(dedicated_postgres, floe_factory):
    pg = dedicated_postgres
    f = floe_factory(env={"FLOE_DATABASE_URL": pg.new_database()},
                     args=["--threads=2", "--commit-threads=1", "--db-statement-timeout-ms=1000"])
    t = new_table(f, "frozen")
    assert_ok_json(set_property(t, "k", "before"))  # the commit thread has its connection
    pids = postgres_pids(pg)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        for what, call in (("loadTable", lambda: t.floe.get(t.url, timeout=30)),
                           ("commit", lambda: set_property(t, "k", "during", timeout=30)),
                           ("loadTable again", lambda: t.floe.get(t.url, timeout=30)),
                           ("ready", lambda: t.floe.get("/ready", timeout=30))):
            t0 = time.monotonic()
            try:
                r = call()
            except requests.Timeout:
                pytest.fail(f"{what} not answered within 30 s while PostgreSQL is stopped")
            elapsed = time.monotonic() - t0
            assert_503(r)
            assert elapsed < 15, f"{what} answered after {elapsed:.1f} s"
        assert f.get("/health", timeout=5).status_code == 200
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def recovered():
        try:
            return f.get(t.url, timeout=10).status_code == 200 and \
                f.get("/ready", timeout=10).status_code == 200
        except requests.RequestException:
            return False
    assert wait_until(recovered, 30, 0.5), f"not recovered 30 s after SIGCONT:\n{f.log_tail()}"
    assert t.metadata()["properties"]["k"] == "before", "the commit answered 503 landed"
    assert_ok_json(set_property(t, "k", "after"))
    assert t.metadata()["properties"]["k"] == "after"


def test_stalled_database_leaves_health_and_ready_answering(dedicated_postgres, floe_factory):
    """Every process of the cluster stopped while loadTables hold every HTTP
    worker: /health still answers at once, /ready says why it is not ready
    within its deadline, a new loadTable gets 503 with Retry-After instead of
    waiting out the 30 s statement timeout, and all recovers on SIGCONT."""
    pg = dedicated_postgres
    f = floe_factory(env={"FLOE_DATABASE_URL": pg.new_database()},
                     args=["--threads=2", "--commit-threads=1", "--db-probe-timeout-ms=400"])
    t = new_table(f, "stalled")
    assert_ok_json(f.get(t.url))
    headers = dict(f.session.headers)

    def load(timeout=40):
        return requests.get(f.url + t.url, headers=headers, timeout=timeout)

    pids = postgres_pids(pg)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=6)
    try:
        # More requests than request workers, each on a connection of its own.
        held = [pool.submit(load) for _ in range(6)]
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            r = requests.get(f.url + "/health", timeout=1)
        except requests.Timeout:
            pytest.fail("/health not answered within 1 s while the database is stopped")
        assert r.status_code == 200 and r.json() == {"status": "ok"}, describe(r)
        assert time.monotonic() - t0 < 0.25

        # /ready answers at once every time, and is 503 once the database
        # has been silent past the watch's deadline (400 ms, checked every
        # 250 ms).
        while True:
            t0 = time.monotonic()
            r = requests.get(f.url + "/ready", timeout=2)
            assert time.monotonic() - t0 < 0.25, "/ready did not answer at once"
            if r.status_code != 200:
                break
            assert time.monotonic() - stopped < 1.5, "/ready still 200 past its deadline"
            time.sleep(0.05)
        assert_503(r, "did not answer within 400 ms")

        t0 = time.monotonic()
        r = load(timeout=5)
        elapsed = time.monotonic() - t0
        assert_503(r, "did not answer within 400 ms")
        assert elapsed < 1.0, f"a new loadTable answered after {elapsed:.1f} s"

        # The requests that were waiting on the database got their 503 too,
        # within the watch's deadline, not the statement timeout.
        for fut in held:
            r = fut.result(timeout=5)
            assert_503(r)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        pool.shutdown(wait=True)

    def recovered():
        try:
            return f.get(t.url, timeout=10).status_code == 200 and \
                f.get("/ready", timeout=10).status_code == 200
        except requests.RequestException:
            return False
    assert wait_until(recovered, 15, 0.2), f"not recovered 15 s after SIGCONT:\n{f.log_tail()}"
    assert_ok_json(set_property(t, "k", "after"))
    assert "statements waiting on the stalled database" in f.log(), f.log_tail()


# ---------------------------------------------------------------- the commit queue and the pools


def test_full_commit_queue_answers_503_at_once(postgres, floe_factory, row_locks):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--commit-threads=1", "--queue-max=1", "--db-lock-timeout-ms=10000"])
    t = new_table(f, "queue")
    lock = row_locks(f, "t")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        running = ex.submit(set_property, t, "a", "1")   # takes the commit thread, waits on the lock
        time.sleep(0.7)
        queued = ex.submit(set_property, t, "b", "2")    # waits in the queue
        time.sleep(0.5)
        t0 = time.monotonic()
        r = requests.post(f.url + t.url, json={"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"c": "3"}}]}, timeout=5)
        assert time.monotonic() - t0 < 2, "a full queue must answer at once"
        assert_503(r, "retry")
        # loadTable is not held up by the commits
        t0 = time.monotonic()
        assert f.get(t.url, timeout=5).status_code == 200
        assert f.get("/ready", timeout=5).status_code == 200
        assert time.monotonic() - t0 < 2
        lock.release()
        assert_ok_json(running.result(20))
        assert_ok_json(queued.result(20))
    props = t.metadata()["properties"]
    assert props.get("a") == "1" and props.get("b") == "2" and "c" not in props, props


def test_publishes_stuck_on_a_lock_do_not_starve_reads(postgres, floe_factory, row_locks, webhooks, hooks):
    """Publishes run on threads and connections of their own: with more of
    them blocked than floe has connections for HTTP, reads still work; and
    their queue is bounded too."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--threads=2", "--commit-threads=1", "--publish-threads=2",
                           "--queue-max=2", "--db-lock-timeout-ms=15000"])
    t = new_table(f, "pub")
    t.add_snapshot()
    passing = webhooks(PASS)
    hooks(f, "ok", passing.url, scope={"namespace": ["pub"], "table": "t"})
    runs = []
    for _ in range(6):
        run = t.stage()
        t.add_snapshot(run["branch"])
        runs.append(run["id"])
    lock = row_locks(f, "t")
    try:
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            pubs = [ex.submit(t.publish, rid, 40) for rid in runs]
            time.sleep(1.5)
            t0 = time.monotonic()
            for _ in range(3):
                r = f.get(t.url, timeout=5)
                assert r.status_code == 200, describe(r)
                r = f.get("/ready", timeout=5)
                assert r.status_code == 200, describe(r)
            assert time.monotonic() - t0 < 3
            lock.release()
            answers = [p.result(40) for p in pubs]
    finally:
        lock.release()
    statuses = sorted(r.status_code for r in answers)
    # two running and two waiting at most: the others were refused at once
    assert 2 <= statuses.count(503) <= 4, statuses
    for r in answers:
        if r.status_code == 503:
            assert_503(r, "queue is full")
    assert statuses.count(200) >= 1 and set(statuses) <= {200, 409, 503}, statuses


# ---------------------------------------------------------------- client connections


def http_get_from(source: str, host: str, port: int, path: str = "/health", timeout: float = 5):
    with socket.create_connection((host, port), timeout=timeout, source_address=(source, 0)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        return read_raw_response(s, timeout)


def test_idle_sockets_of_one_client_do_not_lock_out_another(postgres, floe_factory):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 1400:
        want = 1400 if hard == resource.RLIM_INFINITY else min(1400, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    idle = []
    try:
        for _ in range(1100):
            try:
                idle.append(socket.create_connection((f.host, f.port), timeout=2))
            except OSError:
                break
        time.sleep(0.5)
        t0 = time.monotonic()
        resp = http_get_from("127.0.0.2", f.host, f.port)
        assert resp.status == 200, resp
        assert time.monotonic() - t0 < 3
        # floe closed the sockets past the per-client limit (256 by default)
        open_ = 0
        for s in idle:
            s.setblocking(False)
            try:
                s.recv(1)  # b"": closed by floe
            except BlockingIOError:
                open_ += 1
            except OSError:
                pass
        assert 200 <= open_ <= 300, f"{open_} of {len(idle)} idle sockets kept open"
    finally:
        for s in idle:
            s.close()
    assert f.get("/health").status_code == 200


def test_slow_client_with_half_a_body_is_dropped(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--idle-timeout-seconds=2"])
    body = b'{"namespace": ["slow"]}'
    head = (f"POST /v1/namespaces HTTP/1.1\r\nHost: {f.host}:{f.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection((f.host, f.port), timeout=15) as s:
        s.sendall(head + body[:8])
        t0 = time.monotonic()
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass
        except socket.timeout:
            pytest.fail("a client that stopped sending was not dropped within 15 s")
        elapsed = time.monotonic() - t0
    assert elapsed < 8, f"dropped after {elapsed:.1f} s; the idle timeout is 2 s"
    # nothing was created from half a body, and others are served
    assert ["slow"] not in f.list_namespaces()
    assert f.get("/health").status_code == 200


def test_the_body_budget_counts_what_the_parsed_body_holds(postgres, floe_factory):
    """A 300 KB commit of many short properties fits the 1 MiB budget as
    text, but parsed it holds several times that: refused with 503 and
    Retry-After, and nothing lands. The same 300 KB that is mostly
    whitespace holds little parsed and goes through."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--max-pending-body-bytes=1048576"])
    t = new_table(f, "parsed")
    props = {f"p{i:06d}": "v" * 8 for i in range(300_000 // 24)}
    dense = json.dumps({"requirements": [], "updates": [
        {"action": "set-properties", "updates": props}]}).encode()
    assert 280_000 < len(dense) < 320_000
    r = f.post(t.url, data=dense, headers={"Content-Type": "application/json"}, timeout=30)
    assert_503(r, "too many request bodies are held in memory")
    assert "p000000" not in t.metadata()["properties"]

    sparse = json.dumps({"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"k": "v"}}]}).encode()
    sparse += b" " * (len(dense) - len(sparse))
    r = f.post(t.url, data=sparse, headers={"Content-Type": "application/json"}, timeout=30)
    assert_ok_json(r)
    assert t.metadata()["properties"]["k"] == "v"


def test_request_bodies_held_at_once_are_bounded(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=["--max-pending-body-bytes=1048576"])

    def head(n: int) -> bytes:
        return (f"POST /v1/namespaces HTTP/1.1\r\nHost: {f.host}:{f.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {n}\r\n\r\n").encode()

    big = b'{"namespace": ["budget"]}'
    big += b" " * (800_000 - len(big))
    small = b'{"namespace": ["second"]}'
    small += b" " * (300_000 - len(small))
    with socket.create_connection((f.host, f.port), timeout=10) as a:
        a.sendall(head(len(big)) + big[:1000])
        time.sleep(0.3)
        with socket.create_connection((f.host, f.port), timeout=10) as b:
            b.sendall(head(len(small)))
            resp = read_raw_response(b, timeout=5)
        assert resp.status == 503, resp
        assert resp.headers.get("retry-after", "").isdigit(), resp.headers
        assert resp.json()["error"]["type"] == "ServiceUnavailableException"
        a.sendall(big[1000:])
        resp = read_raw_response(a, timeout=10)
        assert resp.status == 200, resp
    # the budget is free again once the first request is complete

    def post_small():
        r = requests.post(f.url + "/v1/namespaces", data=small,
                          headers={"Content-Type": "application/json"}, timeout=10)
        return r if r.status_code != 503 else None
    r = wait_until(post_small, 5)
    assert r is not None and r.status_code == 200, "the budget was not given back"

    # one body past --max-body-bytes is still 413, not 503
    r = requests.post(f.url + "/v1/namespaces", data=b" " * (9 * 1024 * 1024),
                      headers={"Content-Type": "application/json"}, timeout=10)
    assert_error(r, 413)
