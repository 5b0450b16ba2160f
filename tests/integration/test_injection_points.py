"""Injection points (lib/inject.h): a test build of floe stops at a named
line and waits for the test, or dies there as kill -9 would, so that a
race or a crash happens at the exact line a test names, not after a margin
of time. Armed by FLOE_INJECTION_POINTS (and FLOE_INJECTION_DIR for a
wait); the container image is built without them."""
import subprocess
import threading
import uuid

import requests

from conftest import (TableHandle, assert_error, assert_ok_json, clean_env, describe,
                      floe_binary, metadata_file_names, table_in_new_namespace, wait_until)


def history_files(t: TableHandle) -> set:
    body = t.load()
    files = {e["metadata-file"] for e in body["metadata"].get("metadata-log", [])}
    files.add(body["metadata-location"])
    return {f.rsplit("/", 1)[1] for f in files}


def test_a_malformed_spec_is_refused_at_start():
    r = subprocess.run([str(floe_binary())], capture_output=True, text=True, timeout=30,
                       env=clean_env(FLOE_INJECTION_POINTS="commit-written:explode"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("floe: FLOE_INJECTION_POINTS: action 'explode' of commit-written is "
                        "not wait or crash\n")
    r = subprocess.run([str(floe_binary())], capture_output=True, text=True, timeout=30,
                       env=clean_env(FLOE_INJECTION_POINTS="commit-written:wait"))
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("floe: FLOE_INJECTION_POINTS has a wait: FLOE_INJECTION_DIR must name "
                        "its directory\n")


def test_a_commit_killed_after_its_commit_replays_its_answer_to_a_keyed_retry(
        postgres, floe_factory, uniq):
    """floe dies right after PostgreSQL committed a keyed commit, before
    it answered: the client sees the connection drop. The answer was
    recorded in the commit's own transaction, so the retry on another
    replica gets it, replayed, and the snapshot is on main once."""
    url = postgres.new_database()
    plain = floe_factory(env={"FLOE_DATABASE_URL": url})
    t = table_in_new_namespace(plain, uniq)
    doomed = floe_factory(env={"FLOE_DATABASE_URL": url,
                               "FLOE_INJECTION_POINTS": "commit-committed:crash"})
    assert "injection point commit-committed armed: crash" in doomed.log()
    sid, updates = t.snapshot_updates()
    body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                              "snapshot-id": None}], "updates": updates}
    key = str(uuid.uuid4())
    try:
        r = doomed.post(t.url, json=body, headers={"Idempotency-Key": key}, timeout=30)
        raise AssertionError(f"the commit was answered: {describe(r)}")
    except requests.ConnectionError:
        pass
    assert doomed.proc.wait(10) == -9
    assert "injection point commit-committed reached: killing floe (SIGKILL)" in doomed.log()
    retry = plain.post(t.url, json=body, headers={"Idempotency-Key": key})
    assert retry.status_code == 200, describe(retry)
    assert retry.headers.get("Idempotency-Replayed") == "true"
    assert retry.json()["metadata"]["refs"]["main"]["snapshot-id"] == sid
    assert [s["snapshot-id"] for s in t.metadata()["snapshots"]] == [sid]


def test_a_commit_held_after_writing_its_file_loses_to_a_faster_one_and_leaves_no_file(
        postgres, floe_factory, uniq, tmp_path):
    """Two replicas commit to one table from the same base. One is held
    at the line after it wrote its metadata file, before its
    compare-and-swap; the other lands meanwhile. Woken, the held commit
    finds its requirement broken: 409 CommitFailedException, and the file
    it wrote is removed."""
    url = postgres.new_database()
    fast = floe_factory(env={"FLOE_DATABASE_URL": url})
    t = table_in_new_namespace(fast, uniq)
    held = floe_factory(env={"FLOE_DATABASE_URL": url, "FLOE_INJECTION_DIR": str(tmp_path),
                             "FLOE_INJECTION_POINTS": "commit-written:wait"})
    base = t.metadata()
    requirement = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}]
    _, slow_updates = t.snapshot_updates(meta=base)
    answers = []
    slow = threading.Thread(target=lambda: answers.append(held.post(
        t.url, json={"requirements": requirement, "updates": slow_updates}, timeout=60)))
    slow.start()
    reached = tmp_path / "commit-written.reached"
    assert wait_until(reached.exists, 30), held.log_tail()
    assert reached.read_text() == "1\n"
    # The held commit's file is there, and no history names it.
    assert len(metadata_file_names(t) - history_files(t)) == 1
    sid, fast_updates = t.snapshot_updates(meta=base)
    assert_ok_json(fast.post(t.url, json={"requirements": requirement, "updates": fast_updates}))
    (tmp_path / "commit-written.wakeup").touch()
    slow.join(60)
    assert answers, "the held commit was not answered"
    assert_error(answers[0], 409, "CommitFailedException")
    assert wait_until(lambda: not (tmp_path / "commit-written.wakeup").exists(), 5)
    assert t.head() == sid
    assert metadata_file_names(t) == history_files(t)
