"""The tamper-evident audit trail: every audit event is linked into a
SHA-256 chain in the transaction that writes it, floe signs checkpoints of
the chain's head with an Ed25519 key kept out of the database, and
`GET /v1/audit-log/verify`, `floe audit verify` and an offline export find
any event edited, deleted, moved or inserted, even by a PostgreSQL
superuser with the triggers turned off, and say where."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from conftest import (Floe, TableHandle, assert_error, assert_ok_json, audit_events,
                      database_url, floe_binary, clean_env)


def make_key(path: Path) -> Path:
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(path)],
                   check=True, capture_output=True)
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def trail_floe(postgres, tmp_path):
    """A floe with a signing key, checkpoints on demand only, and a few
    real audit events (runs staged and abandoned on two tables)."""
    key = make_key(tmp_path / "audit.key")
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(),
                  "FLOE_AUDIT_SIGNING_KEY": str(key),
                  "FLOE_AUDIT_CHECKPOINT_INTERVAL_SECONDS": "0"})
    try:
        f.wait_ready(30)
        f.create_namespace(["trail"])
        for name in ("orders", "lines"):
            t = TableHandle(f, ["trail"], name)
            t.create()
            t.add_snapshot()
            for _ in range(3):
                run = t.stage()
                assert_ok_json(f.delete(t.run_url(run["id"])))
        f.key_path = key
        yield f
    finally:
        f.stop()
        f.cleanup()


def superuser(postgres, f):
    """A superuser connection to f's database, as an attacker with full
    access to PostgreSQL would have."""
    return postgres.connect(urlparse(database_url(f)).path.lstrip("/"))


def tamper(postgres, f, *statements):
    """Runs statements as superuser with every trigger off."""
    with superuser(postgres, f) as conn:
        conn.execute("SET session_replication_role = replica")
        for st in statements:
            conn.execute(st)


def verify(f) -> dict:
    return assert_ok_json(f.get("/v1/audit-log/verify"))


def positions(f) -> dict:
    """event id -> chain position, read as the attacker would."""
    return {e["id"]: e["chain-position"] for e in audit_events(f)}


def run_cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(floe_binary()), "audit", *args], capture_output=True, text=True,
                          env=clean_env(**(env or {})), timeout=60)


def test_an_untouched_chain_verifies_and_every_event_has_its_link(trail_floe):
    f = trail_floe
    events = audit_events(f)
    assert len(events) >= 12
    report = verify(f)
    assert report["valid"] is True, report
    assert report["problems"] == []
    assert report["links"] == len(events)
    assert report["head"]["position"] == len(events)
    # Each event shows its place in the chain and its link's hash.
    assert sorted(e["chain-position"] for e in events) == list(range(1, len(events) + 1))
    assert all(len(e["chain-hash"]) == 64 for e in events)
    assert events[-1]["chain-hash"] == report["head"]["hash"] or any(
        e["chain-hash"] == report["head"]["hash"] for e in events)


def test_a_checkpoint_is_signed_over_the_head_and_verifies_with_the_public_key(trail_floe):
    f = trail_floe
    r = f.post("/v1/audit-log/checkpoints")
    assert r.status_code == 201, r.text
    cp = r.json()
    head = verify(f)["head"]
    assert cp["position"] == head["position"] and cp["hash"] == head["hash"]
    # The same head again: no second checkpoint.
    again = f.post("/v1/audit-log/checkpoints")
    assert again.status_code == 200 and again.json()["created"] is False
    listing = assert_ok_json(f.get("/v1/audit-log/checkpoints"))
    assert [c["position"] for c in listing["checkpoints"]] == [cp["position"]]
    assert listing["key-id"] == cp["key-id"]
    # An outside party checks the signature with nothing but the public
    # key and the documented message.
    pub = load_pem_public_key(listing["public-key"].encode())
    msg = (f"floe-audit-checkpoint/1\n{cp['position']}\n{cp['hash']}\n"
           f"{cp['signed-at']}\n{cp['key-id']}\n").encode()
    pub.verify(bytes.fromhex(cp["signature"]), msg)
    assert verify(f)["checkpoints"]["checked"] == 1


def test_an_event_edited_by_a_superuser_is_reported_at_its_position(postgres, trail_floe):
    f = trail_floe
    victim = audit_events(f)[4]
    tamper(postgres, f, f"UPDATE audit_events SET details = '{{\"state\": \"published\"}}' "
                        f"WHERE id = {victim['id']}")
    report = verify(f)
    assert report["valid"] is False
    assert [(p["position"], p["event-id"]) for p in report["problems"]] == [
        (victim["chain-position"], victim["id"])], report
    assert "changed" in report["problems"][0]["problem"]


def test_a_deleted_event_is_reported_at_its_position(postgres, trail_floe):
    f = trail_floe
    victim = audit_events(f)[2]
    tamper(postgres, f, f"DELETE FROM audit_events WHERE id = {victim['id']}")
    report = verify(f)
    assert report["valid"] is False
    assert [(p["position"], p["event-id"]) for p in report["problems"]] == [
        (victim["chain-position"], victim["id"])], report
    assert "deleted" in report["problems"][0]["problem"]


def test_an_event_inserted_around_the_trigger_is_reported(postgres, trail_floe):
    f = trail_floe
    tamper(postgres, f, "INSERT INTO audit_events (id, event, principal, details) "
                        "VALUES (900001, 'wap.published', 'mallory', '{}')")
    report = verify(f)
    assert report["valid"] is False
    assert [p.get("event-id") for p in report["problems"]] == [900001], report
    assert "not in the chain" in report["problems"][0]["problem"]


def test_two_events_swapped_are_both_reported(postgres, trail_floe):
    f = trail_floe
    a, b = audit_events(f)[1], audit_events(f)[6]
    assert a["event"] != b["event"]
    tamper(postgres, f,
           f"UPDATE audit_events SET event = '{b['event']}' WHERE id = {a['id']}",
           f"UPDATE audit_events SET event = '{a['event']}' WHERE id = {b['id']}")
    report = verify(f)
    assert sorted(p["position"] for p in report["problems"]) == sorted(
        [a["chain-position"], b["chain-position"]]), report


def test_an_edit_hidden_by_rewriting_the_chain_is_caught_by_the_checkpoint(postgres, trail_floe):
    f = trail_floe
    cp = f.post("/v1/audit-log/checkpoints").json()
    victim = audit_events(f)[3]
    # The attacker edits an event and recomputes every link after it with
    # floe's own function, so each link matches its event again.
    tamper(postgres, f,
           f"UPDATE audit_events SET principal = 'someone-else' WHERE id = {victim['id']}",
           """DO $$
           DECLARE c record; h bytea := decode(repeat('00', 32), 'hex');
           BEGIN
             FOR c IN SELECT position, event_id FROM audit_chain ORDER BY position LOOP
               h := sha256(h || audit_canonical(c.position,
                      (SELECT e FROM audit_events e WHERE e.id = c.event_id)));
               UPDATE audit_chain SET hash = h WHERE position = c.position;
             END LOOP;
             UPDATE audit_chain_head SET hash = h;
           END $$""")
    report = verify(f)
    assert report["valid"] is False
    probs = report["problems"]
    assert [p["position"] for p in probs] == [cp["position"]], report
    assert "checkpoint" in probs[0]["problem"]


def test_events_cut_from_the_end_are_caught_by_a_later_checkpoint(postgres, trail_floe):
    f = trail_floe
    cp = f.post("/v1/audit-log/checkpoints").json()
    last = cp["position"]
    tamper(postgres, f,
           f"DELETE FROM audit_events WHERE id IN (SELECT event_id FROM audit_chain "
           f"WHERE position > {last - 2})",
           f"DELETE FROM audit_chain WHERE position > {last - 2}",
           f"UPDATE audit_chain_head SET position = {last - 2}, hash = "
           f"(SELECT hash FROM audit_chain WHERE position = {last - 2})")
    report = verify(f)
    assert report["valid"] is False
    assert any(p["position"] == last and "past the chain's end" in p["problem"]
               for p in report["problems"]), report


def test_a_forged_checkpoint_is_reported(postgres, trail_floe):
    f = trail_floe
    f.post("/v1/audit-log/checkpoints")
    tamper(postgres, f, "UPDATE audit_checkpoints SET position = position - 1")
    report = verify(f)
    assert report["valid"] is False
    assert any("signature does not verify" in p["problem"] for p in report["problems"]), report


def test_floe_audit_verify_and_the_offline_export(postgres, trail_floe, tmp_path):
    f = trail_floe
    f.post("/v1/audit-log/checkpoints")
    url = database_url(f)
    ok = run_cli("verify", f"--database={url}", f"--public-key={f.key_path}")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True

    export = tmp_path / "audit.jsonl"
    with open(export, "w") as out:
        r = subprocess.run([str(floe_binary()), "audit", "export", f"--database={url}"],
                           stdout=out, stderr=subprocess.PIPE, text=True, env=clean_env(),
                           timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in export.read_text().splitlines()]
    assert lines[0]["kind"] == "floe-audit-export" and lines[0]["version"] == 1
    assert sum(1 for x in lines if x["kind"] == "checkpoint") == 1
    links = [x for x in lines if x["kind"] == "link"]
    assert len(links) == len(audit_events(f))

    offline = run_cli("verify", f"--file={export}", f"--public-key={f.key_path}")
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert json.loads(offline.stdout)["checkpoints"]["checked"] == 1

    # One event's details changed in the copy: found, at its position.
    victim = links[5]
    victim["event"]["details"] = '{"verdict": "pass"}'
    export.write_text("".join(json.dumps(x) + "\n" for x in lines))
    bad = run_cli("verify", f"--file={export}", f"--public-key={f.key_path}")
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert [p["position"] for p in report["problems"]] == [victim["position"]]

    # Another key than floe's does not vouch for the checkpoints.
    other = make_key(tmp_path / "other.key")
    wrong = run_cli("verify", f"--database={url}", f"--public-key={other}")
    assert wrong.returncode == 1
    assert "another key" in wrong.stdout

    # The database edited: the command finds it too.
    tamper(postgres, f, f"UPDATE audit_events SET table_name = 'x' WHERE id = "
                        f"{victim['event-id']}")
    db_bad = run_cli("verify", f"--database={url}", f"--public-key={f.key_path}")
    assert db_bad.returncode == 1
    assert [p["position"] for p in json.loads(db_bad.stdout)["problems"]] == [victim["position"]]


def test_floe_audit_usage_errors():
    assert run_cli().returncode == 2
    assert run_cli("rewrite").returncode == 2
    r = run_cli("verify", "--bogus")
    assert r.returncode == 2 and "--bogus is not an option" in r.stderr
    r = run_cli("export", "--file=/dev/null")
    assert r.returncode == 2


def test_floe_refuses_a_signing_key_others_can_read(postgres, tmp_path):
    key = make_key(tmp_path / "audit.key")
    os.chmod(key, 0o644)
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(),
                  "FLOE_AUDIT_SIGNING_KEY": str(key)})
    try:
        code = f.proc.wait(timeout=30)
        assert code != 0
        assert "group- or world-accessible" in f.log()
    finally:
        f.cleanup()


def test_floe_refuses_a_key_that_is_not_ed25519(postgres, tmp_path):
    key = tmp_path / "rsa.key"
    subprocess.run(["openssl", "genpkey", "-algorithm", "rsa", "-out", str(key)], check=True,
                   capture_output=True)
    os.chmod(key, 0o600)
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(),
                  "FLOE_AUDIT_SIGNING_KEY": str(key)})
    try:
        assert f.proc.wait(timeout=30) != 0
        assert "not an Ed25519 key" in f.log()
    finally:
        f.cleanup()


def test_without_a_key_checkpoints_are_refused_and_the_chain_still_verifies(floe):
    r = floe.post("/v1/audit-log/checkpoints")
    assert_error(r, 406, "UnsupportedOperationException")
    assert "--audit-signing-key" in r.json()["error"]["message"]
    report = verify(floe)
    assert report["valid"] is True and report["checkpoints"]["key-id"] is None


def test_the_janitor_signs_checkpoints_on_its_own(postgres, tmp_path):
    key = make_key(tmp_path / "audit.key")
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(),
                  "FLOE_AUDIT_SIGNING_KEY": str(key),
                  "FLOE_AUDIT_CHECKPOINT_INTERVAL_SECONDS": "1",
                  "FLOE_JANITOR_INTERVAL_SECONDS": "1"})
    try:
        f.wait_ready(30)
        f.create_namespace(["auto"])
        t = TableHandle(f, ["auto"], "t")
        t.create()
        t.add_snapshot()
        t.stage()
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            cps = assert_ok_json(f.get("/v1/audit-log/checkpoints"))["checkpoints"]
            head = verify(f)["head"]["position"]
            if cps and cps[-1]["position"] == head:
                break
            time.sleep(0.3)
        assert cps and cps[-1]["position"] == head
        assert verify(f)["valid"] is True
    finally:
        f.stop()
        f.cleanup()


def test_floes_own_role_cannot_rewrite_the_chain(postgres):
    runtime_url, owner_url = postgres.new_database_with_roles()
    f = Floe(env={"FLOE_DATABASE_URL": runtime_url, "FLOE_OWNER_DATABASE_URL": owner_url})
    try:
        f.wait_ready(30)
        f.create_namespace(["roles"])
        t = TableHandle(f, ["roles"], "t")
        t.create()
        t.add_snapshot()
        t.stage()
        assert verify(f)["links"] >= 1
        import psycopg
        with psycopg.connect(runtime_url, autocommit=True) as conn:
            for st in ("UPDATE audit_chain SET hash = hash",
                       "UPDATE audit_chain_head SET position = 0",
                       "DELETE FROM audit_chain",
                       "INSERT INTO audit_chain VALUES (999, 999, sha256(''::bytea))"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(st)
        assert verify(f)["valid"] is True
    finally:
        f.stop()
        f.cleanup()


def test_floe_audit_verify_refuses_what_is_no_export(tmp_path):
    cases = {
        "empty.jsonl": ("", "the export is empty"),
        "other.jsonl": ('{"kind": "something-else"}\n', "no floe audit export"),
        "garbled.jsonl": ('{"kind": "floe-audit-export", "version": 1, "head": {"position": 0, '
                          '"hash": ""}}\nnot json\n', "line 2 is no JSON"),
        "unknown.jsonl": ('{"kind": "floe-audit-export", "version": 1, "head": {"position": 0, '
                          '"hash": ""}}\n{"kind": "mystery"}\n', "line 2 is no line"),
    }
    for name, (text, says) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        r = run_cli("verify", f"--file={p}")
        assert r.returncode == 1, (name, r.stdout, r.stderr)
        assert says.lower() in r.stderr.lower(), (name, r.stderr)
    r = run_cli("verify", f"--file={tmp_path / 'missing.jsonl'}")
    assert r.returncode == 1 and "no such file" in r.stderr
