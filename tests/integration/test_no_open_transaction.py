"""No database transaction stays open while floe waits on object storage.

A proxy in front of the S3 server holds one chosen request until the test
lets it go, so floe is caught exactly in the middle of its slow part: a
purge deleting a dropped table's objects, a multi-table commit storing a
metadata object. Meanwhile other work must go on at full speed: a commit on
another table reaches the change feed at once (an open transaction would
hold back the horizon the feed reads up to), and another replica's commit
to one of the transaction's tables lands without waiting for a row lock.
"""

from __future__ import annotations

import threading
import time

import pytest

from conftest import Floe, _start_floe_on_fresh_db, _stop_and_check, assert_ok_json, wait_until
from s3_servers import Proxy, S3Server, keys, make_bucket, s3_env
from test_change_feed import read_all
from test_s3_warehouse import commit_property, create_table, load


class HoldingProxy(Proxy):
    """A Proxy that holds the first request whose request line `match`
    accepts until `release` is set; `held` is set once it arrived."""

    def __init__(self, upstream_port: int):
        self.match = None
        self.held = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._taken = False
        super().__init__(upstream_port)

    def _serve(self, c):
        try:
            req = self._read_request(c)
            if not req:
                return
            line = req.split(b"\r\n", 1)[0].decode()
            self.seen.append(line)
            with self._lock:
                hold = not self._taken and self.match is not None and self.match(line)
                self._taken = self._taken or hold
            if hold:
                self.held.set()
                self.release.wait(60)
            c.sendall(self.forward(req))
        except OSError:
            pass
        finally:
            c.close()


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    yield server
    server.stop()


def test_a_purge_waiting_on_storage_holds_back_no_change_feed(postgres, s3):
    """The janitor is caught deleting a dropped table's objects; a commit
    on another table is in the change feed at once, and the purge finishes
    once storage answers."""
    bucket = make_bucket(s3)
    proxy = HoldingProxy(s3.port)
    f = _start_floe_on_fresh_db(postgres, env=s3_env(proxy.url, f"s3://{bucket}/wh"))
    try:
        f.create_namespace(["p"])
        assert create_table(f, "p", "gone").status_code == 200
        assert create_table(f, "p", "live").status_code == 200
        _, token = read_all(f)
        # The purge's DeleteObjects is held.
        proxy.match = lambda line: line.startswith("POST ") and "?delete" in line
        r = f.delete("/v1/namespaces/p/tables/gone", params={"purgeRequested": "true"})
        assert r.status_code == 204, r.text
        assert proxy.held.wait(30), proxy.seen

        assert commit_property(f, "p", "live", "during the purge").status_code == 200

        def after_token():
            events, _ = read_all(f, **{"continuation-token": token})
            return [e["operation"]["operation-type"] for e in events]

        seen = wait_until(lambda: "update-table" in after_token() and after_token(), 3)
        assert seen == ["drop-table", "update-table"], after_token()
        # The purge is still under way meanwhile.
        purges = assert_ok_json(f.get("/v1/purges"))["purges"]
        assert [p["state"] for p in purges] == ["pending"]
    finally:
        proxy.release.set()
    assert wait_until(lambda: assert_ok_json(f.get("/v1/purges"))["purges"] == [], 30)
    assert not keys(s3, bucket, "wh/p/gone/")
    proxy.down()
    _stop_and_check(f)


def test_a_purge_left_by_a_stopped_janitor_is_taken_over(postgres, s3):
    """Purges leased to janitors that stopped are purged by the next
    janitor that looks: one whose lease ran out though its session lives
    on, and one whose lease still runs but whose database session is
    gone."""
    import psycopg
    bucket = make_bucket(s3)
    url = postgres.new_database()
    env = {"FLOE_DATABASE_URL": url, **s3_env(s3.url, f"s3://{bucket}/wh")}
    f = Floe(env=env)
    try:
        f.wait_ready(30)
        f.create_namespace(["q"])
        for name in ("t", "u"):
            assert create_table(f, "q", name).status_code == 200
            r = f.delete(f"/v1/namespaces/q/tables/{name}")
            assert r.status_code == 204, r.text
    finally:
        _stop_and_check(f)
    assert keys(s3, bucket, "wh/q/t/") and keys(s3, bucket, "wh/q/u/")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM dropped_tables")
        gone = conn.execute("SELECT max(pid) + 100000 FROM pg_stat_activity").fetchone()[0]
        # This session stands for the first janitor's, still alive.
        conn.execute(
            "INSERT INTO purges (location, table_uuid, namespace, table_name, "
            "lease_owner, lease_until, lease_pid) VALUES "
            "(%s, gen_random_uuid(), '{q}', 't', 'expired', now() - interval '1 second', "
            " pg_backend_pid()), "
            "(%s, gen_random_uuid(), '{q}', 'u', 'session-gone', now() + interval '1 hour', "
            " %s)",
            (f"s3://{bucket}/wh/q/t", f"s3://{bucket}/wh/q/u", gone))
        g = Floe(env=env)
        try:
            g.wait_ready(30)
            assert wait_until(lambda: assert_ok_json(g.get("/v1/purges"))["purges"] == [], 30)
            assert not keys(s3, bucket, "wh/q/")
        finally:
            _stop_and_check(g)


def change(name: str, value: str) -> dict:
    return {"identifier": {"namespace": ["m"], "name": name}, "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"k": value}}]}


def test_a_multi_table_commit_writing_slowly_locks_no_row(postgres, s3):
    """Replica A's transaction over tables a and b is caught storing b's
    metadata object; replica B's commit to a lands at once instead of
    waiting out the lock timeout for a 503. A's transaction then finds a
    changed and goes round again: it lands after B's commit."""
    bucket = make_bucket(s3)
    proxy = HoldingProxy(s3.port)
    url = postgres.new_database()
    a = Floe(env={"FLOE_DATABASE_URL": url, **s3_env(proxy.url, f"s3://{bucket}/wh")})
    b = None
    try:
        a.wait_ready(30)
        b = Floe(env={"FLOE_DATABASE_URL": url, **s3_env(s3.url, f"s3://{bucket}/wh")})
        b.wait_ready(30)
        a.create_namespace(["m"])
        for name in ("a", "b"):
            assert create_table(a, "m", name).status_code == 200
        answer = {}
        proxy.match = lambda line: line.startswith("PUT ") and "/wh/m/b/metadata/" in line
        tx = threading.Thread(target=lambda: answer.update(r=a.post(
            "/v1/transactions/commit",
            json={"table-changes": [change("a", "transaction"), change("b", "transaction")]},
            timeout=60)))
        tx.start()
        try:
            assert proxy.held.wait(30), proxy.seen
            started = time.monotonic()
            r = commit_property(b, "m", "a", "replica B")
            took = time.monotonic() - started
            assert r.status_code == 200, r.text
            assert took < 5, f"replica B's commit waited {took:.1f} s"
        finally:
            proxy.release.set()
            tx.join(60)
        assert answer["r"].status_code == 204, answer["r"].text
        for name in ("a", "b"):
            assert load(b, "m", name)["metadata"]["properties"]["k"] == "transaction"
        # The files of the attempt that lost its swap are gone: every
        # metadata object left is one the tables' logs name.
        named = set()
        for name in ("a", "b"):
            m = load(b, "m", name)
            named.add(m["metadata-location"])
            named.update(e["metadata-file"] for e in m["metadata"]["metadata-log"])
        stored = {f"s3://{bucket}/{k}" for k in keys(s3, bucket, "wh/m/")}
        assert stored == named
    finally:
        proxy.release.set()
        if b is not None:
            _stop_and_check(b)
        _stop_and_check(a)
        proxy.down()
