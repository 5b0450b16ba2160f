"""Idempotency-Key on floe's mutation routes: a retry with the same key gets
the first answer and changes nothing; the same key on another request is
refused. Against a real daemon and PostgreSQL."""

from __future__ import annotations

import threading
import uuid

from conftest import TableHandle, assert_error, assert_ok_json, describe, ns_path
from conftest import metadata_file_names as metadata_files
from conftest import table_in_new_namespace as new_table


def key() -> str:
    return str(uuid.uuid4())


def test_config_advertises_the_key_lifetime(floe):
    cfg = assert_ok_json(floe.get("/v1/config"))
    assert cfg["idempotency-key-lifetime"] == "PT30M"


def test_a_retried_commit_gets_the_first_answer_and_commits_once(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    body = {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"run": "1"}}]}
    first = floe.post(t.url, json=body, headers={"Idempotency-Key": k})
    assert first.status_code == 200, first.text
    files = metadata_files(t)
    second = floe.post(t.url, json=body, headers={"Idempotency-Key": k})
    assert second.status_code == 200
    assert second.json() == first.json()
    assert second.headers.get("Idempotency-Replayed") == "true"
    assert metadata_files(t) == files, "the retry wrote a new metadata file"
    assert t.load()["metadata-location"] == first.json()["metadata-location"]
    # Without the key the same body commits again (a new version).
    third = assert_ok_json(floe.post(t.url, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"run": "2"}}]}))
    assert third["metadata-location"] != first.json()["metadata-location"]


def test_the_same_key_on_another_request_is_422(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    assert_ok_json(floe.post(t.url, headers={"Idempotency-Key": k}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "1"}}]}))
    other_body = floe.post(t.url, headers={"Idempotency-Key": k}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "2"}}]})
    assert_error(other_body, 422, "UnprocessableEntityException")
    other_route = floe.post("/v1/namespaces", headers={"Idempotency-Key": k},
                            json={"namespace": [uniq + "_other"]})
    assert_error(other_route, 422, "UnprocessableEntityException")
    assert t.metadata()["properties"]["a"] == "1"
    assert floe.head(f"/v1/namespaces/{uniq}_other").status_code == 404


def test_on_a_long_path_another_body_under_the_key_is_still_422(floe, uniq):
    """The key was claimed for the method, path, body hash and principal
    cut at 1,024 bytes: on a path longer than that the body hash and the
    principal fell off, and another body under the same key got the first
    answer replayed instead of 422."""
    levels = [uniq] + [f"{c}" * 250 for c in "abcde"]
    for n in range(1, len(levels) + 1):
        floe.create_namespace(levels[:n])
    path = f"/v1/namespaces/{ns_path(levels)}/properties"
    assert len(path) > 1300
    k = key()
    first = floe.post(path, headers={"Idempotency-Key": k}, json={"updates": {"a": "1"}})
    assert_ok_json(first)
    again = floe.post(path, headers={"Idempotency-Key": k}, json={"updates": {"a": "1"}})
    assert again.status_code == 200 and again.headers.get("Idempotency-Replayed") == "true"
    assert again.json() == first.json()
    other = floe.post(path, headers={"Idempotency-Key": k}, json={"updates": {"a": "2"}})
    assert_error(other, 422, "UnprocessableEntityException")
    assert "Idempotency-Replayed" not in other.headers
    got = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path(levels)}"))
    assert got["properties"]["a"] == "1"


def test_a_terminal_4xx_is_replayed_too(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    stale = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
             "updates": [{"action": "set-properties", "updates": {"x": "1"}}]}
    first = floe.post(t.url, json=stale, headers={"Idempotency-Key": k})
    assert_error(first, 409, "CommitFailedException")
    again = floe.post(t.url, json=stale, headers={"Idempotency-Key": k})
    assert again.status_code == 409
    assert again.json() == first.json()
    assert "x" not in t.metadata()["properties"]


def test_namespace_create_and_drop_retries(floe, uniq):
    k = key()
    body = {"namespace": [uniq], "properties": {"owner": "a"}}
    first = assert_ok_json(floe.post("/v1/namespaces", json=body, headers={"Idempotency-Key": k}))
    # A plain retry would be 409 AlreadyExists; with the key it is the first answer.
    second = floe.post("/v1/namespaces", json=body, headers={"Idempotency-Key": k})
    assert second.status_code == 200 and second.json() == first
    kd = key()
    assert floe.delete(f"/v1/namespaces/{ns_path([uniq])}", headers={"Idempotency-Key": kd}).status_code == 204
    again = floe.delete(f"/v1/namespaces/{ns_path([uniq])}", headers={"Idempotency-Key": kd})
    assert again.status_code == 204, again.text
    plain = floe.delete(f"/v1/namespaces/{ns_path([uniq])}")
    assert_error(plain, 404, "NoSuchNamespaceException")


def test_a_malformed_key_is_400(floe, uniq):
    for bad in ("not-a-uuid", "0190a3a0-0000-7000-8000-00000000000", "x" * 36):
        r = floe.post("/v1/namespaces", json={"namespace": [uniq]}, headers={"Idempotency-Key": bad})
        assert_error(r, 400, "BadRequestException")
    assert floe.head(f"/v1/namespaces/{ns_path([uniq])}").status_code == 404


def test_concurrent_retries_commit_once(floe, uniq):
    t = new_table(floe, uniq)
    before = len(metadata_files(t))
    k = key()
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": 4242, "sequence-number": 1, "timestamp-ms": 1767225600000,
            "manifest-list": t.metadata()["location"] + "/metadata/snap-4242.avro",
            "summary": {"operation": "append"}}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 4242}]}
    answers = []

    def send():
        answers.append(floe.post(t.url, json=body, headers={"Idempotency-Key": k}, timeout=30))

    threads = [threading.Thread(target=send) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # A retry that arrives while the first attempt runs is told to come
    # back (503 with Retry-After), never refused with 409 (a client would
    # delete files the first attempt commits).
    codes = [a.status_code for a in answers]
    assert set(codes) <= {200, 503}, [a.text for a in answers]
    assert all(a.headers.get("Retry-After") for a in answers if a.status_code == 503)
    # Once it has finished, every retry gets its answer.
    for _ in range(3):
        answers.append(floe.post(t.url, json=body, headers={"Idempotency-Key": k}, timeout=30))
    ok = [a for a in answers if a.status_code == 200]
    assert len(ok) >= 4, [a.text for a in answers]
    assert len({a.json()["metadata-location"] for a in ok}) == 1
    assert len(metadata_files(t)) == before + 1
    assert t.head("main") == 4242


# --------------------------------------------------------------------------
# keyed commits across slow, broken and crashed first attempts

import time  # noqa: E402

import requests  # noqa: E402

from conftest import database_url, wait_until  # noqa: E402
from test_outcomes import SLOW_TRIGGER, TERMINATE_SLEEPER, psql  # noqa: E402


def slow_commits(psql_bin, url, t: TableHandle, seconds: int):
    psql(psql_bin, url, SLOW_TRIGGER.format(uuid=t.metadata()["table-uuid"]).replace(
        "pg_sleep(30)", f"pg_sleep({seconds})"))


def fast_commits(psql_bin, url):
    psql(psql_bin, url, "DROP TRIGGER IF EXISTS floe_test_slow ON commit_log")


def expired_claims(psql_bin, url) -> int:
    """Claims still running (status 0) whose lease has run out, by the
    database's clock: the moment a retry may take the key over."""
    return int(psql(psql_bin, url, "SELECT count(*) FROM idempotency_keys "
                    "WHERE status = 0 AND lease_until < now()"))


def sleeping_commits(psql_bin, url) -> int:
    return int(psql(psql_bin, url, "SELECT count(*) FROM pg_stat_activity "
                    "WHERE application_name = 'floe' AND wait_event = 'PgSleep'"))


class KeyedCommit:
    """One snapshot commit to t under a fresh Idempotency-Key, sent from a
    thread so that a test can act while it runs."""

    def __init__(self, f, t: TableHandle):
        self.floe = f
        self.table = t
        self.key = key()
        self.snapshot_id, updates = t.snapshot_updates()
        self.body = {"requirements": [], "updates": updates}
        self.answer = None
        self.thread = threading.Thread(target=self._send, daemon=True)

    def _send(self):
        try:
            self.answer = self.send(timeout=60)
        except requests.RequestException:
            pass  # floe was killed while this waited

    def send(self, timeout=30):
        return self.floe.post(self.table.url, json=self.body,
                              headers={"Idempotency-Key": self.key}, timeout=timeout)

    def start(self):
        self.thread.start()
        return self


def test_retry_while_the_first_attempt_runs_is_told_to_come_back(fresh_floe, uniq, psql_bin):
    url = database_url(fresh_floe)
    t = new_table(fresh_floe, uniq)
    slow_commits(psql_bin, url, t, 3)
    first = KeyedCommit(fresh_floe, t)
    try:
        first.start()
        assert wait_until(lambda: sleeping_commits(psql_bin, url) > 0, 10)
        started = time.monotonic()
        retry = first.send()
        # At once, without waiting on the first attempt.
        assert time.monotonic() - started < 1.5
        assert_error(retry, 503, "ServiceUnavailableException")
        assert retry.headers.get("Retry-After")
        first.thread.join(30)
    finally:
        fast_commits(psql_bin, url)
    assert first.answer.status_code == 200, first.answer.text
    again = first.send()
    assert again.status_code == 200 and again.headers.get("Idempotency-Replayed") == "true"
    assert again.json() == first.answer.json()


def test_retry_after_a_broken_first_attempt_runs_it_once(fresh_floe, uniq, psql_bin):
    """The first attempt's connection breaks inside its transaction: it
    is answered 503 (nothing landed) and a retry with the key commits."""
    url = database_url(fresh_floe)
    t = new_table(fresh_floe, uniq)
    slow_commits(psql_bin, url, t, 30)
    first = KeyedCommit(fresh_floe, t)
    try:
        first.start()
        assert wait_until(lambda: psql(psql_bin, url, TERMINATE_SLEEPER) != "0", 15, 0.1)
        first.thread.join(60)
    finally:
        fast_commits(psql_bin, url)
    assert_error(first.answer, 503, "ServiceUnavailableException")
    assert t.head() is None
    r = first.send()
    assert r.status_code == 200, r.text
    assert r.headers.get("Idempotency-Replayed") is None
    assert t.head() == first.snapshot_id
    assert len(t.metadata()["snapshots"]) == 1


def test_a_retry_that_outlives_the_lease_runs_instead_of_the_first(postgres, floe_factory, uniq,
                                                                   psql_bin):
    """A first attempt still running after its lease loses its claim to a
    retry: exactly one of them commits, and the key answers with it."""
    url = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": url, "FLOE_IDEMPOTENCY_LEASE_SECONDS": "1"})
    t = new_table(f, uniq)
    slow_commits(psql_bin, url, t, 3)
    first = KeyedCommit(f, t)
    try:
        first.start()
        assert wait_until(lambda: sleeping_commits(psql_bin, url) > 0, 10)
        assert wait_until(lambda: expired_claims(psql_bin, url) == 1, 10, 0.02)
        retry = first.send()
        first.thread.join(30)
    finally:
        fast_commits(psql_bin, url)
    codes = sorted([first.answer.status_code, retry.status_code])
    assert codes == [200, 503], (first.answer.text, retry.text)
    assert t.head() == first.snapshot_id and len(t.metadata()["snapshots"]) == 1
    winner = first.answer if first.answer.status_code == 200 else retry
    again = first.send()
    assert again.status_code == 200 and again.json() == winner.json()


def test_keyed_commit_after_a_crash_is_settled_before_it_runs_again(postgres, floe_factory, uniq,
                                                                    psql_bin):
    """floe dies (SIGKILL) in the middle of a keyed commit. The database
    session that claimed the key ended with it, so another floe on the same
    database runs the retry without waiting out the claim's lease: the
    retry waits for the orphaned backend's row lock, whose transaction
    never commits (its client is gone), commits exactly once, and that
    answer is replayed."""
    url = postgres.new_database()
    env = {"FLOE_DATABASE_URL": url}
    f1 = floe_factory(env=env)
    t = new_table(f1, uniq)
    slow_commits(psql_bin, url, t, 2)
    try:
        first = KeyedCommit(f1, t).start()
        assert wait_until(lambda: sleeping_commits(psql_bin, url) > 0, 10)
        f1.kill()
        f2 = floe_factory(env=env)
        retry = KeyedCommit(f2, TableHandle(f2, t.namespace, t.name))
        retry.key, retry.body = first.key, first.body
        r = retry.send()
        assert r.status_code == 200, describe(r)
        assert r.headers.get("Idempotency-Replayed") is None
        assert retry.table.head() == first.snapshot_id
        assert len(retry.table.metadata()["snapshots"]) == 1
        again = retry.send()
        assert again.status_code == 200 and again.json() == r.json()
        assert again.headers.get("Idempotency-Replayed") == "true"
    finally:
        fast_commits(psql_bin, url)

def floe_sessions(psql_bin, url) -> set:
    return set(psql(psql_bin, url, "SELECT pid FROM pg_stat_activity "
                    "WHERE application_name = 'floe'").split())


def test_a_retry_of_a_killed_replicas_commit_runs_at_once(postgres, floe_factory, uniq, psql_bin):
    """A replica claims a key and is killed (SIGKILL) while its commit waits
    on a row lock. Once PostgreSQL has ended that replica's sessions, the
    claim's owner is known dead: a retry on the other replica runs the
    commit at once instead of being told "still running" for the whole
    lease (120 s by default), commits it once, and replays its answer."""
    url = postgres.new_database()
    fa = floe_factory(env={"FLOE_DATABASE_URL": url})
    t = new_table(fa, uniq)
    before_b = floe_sessions(psql_bin, url)
    fb = floe_factory(env={"FLOE_DATABASE_URL": url})
    tb = TableHandle(fb, t.namespace, t.name)
    lock = postgres.connect(url.rsplit("/", 1)[1])
    try:
        lock.execute("BEGIN")
        lock.execute("SELECT 1 FROM tables WHERE name = %s FOR UPDATE", (t.name,))
        first = KeyedCommit(fb, tb).start()
        assert wait_until(lambda: psql(psql_bin, url, (
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'floe' "
            "AND wait_event_type = 'Lock'")) == "1", 10), "the commit never waited on the lock"
        b_sessions = floe_sessions(psql_bin, url) - before_b
        fb.kill()
        # Its blocked session ends as soon as it finds its client gone.
        lock.execute("ROLLBACK")
        assert wait_until(lambda: not (floe_sessions(psql_bin, url) & b_sessions), 10), \
            "the killed replica's sessions stayed"
    finally:
        lock.close()
    retry = KeyedCommit(fa, t)
    retry.key, retry.body = first.key, first.body
    r = retry.send()
    assert r.status_code == 200, describe(r)
    assert r.headers.get("Idempotency-Replayed") is None
    assert t.head() == first.snapshot_id
    assert len(t.metadata()["snapshots"]) == 1
    again = retry.send()
    assert again.status_code == 200 and again.headers.get("Idempotency-Replayed") == "true"
    assert again.json() == r.json()
