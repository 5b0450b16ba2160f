"""Audit hook secrets sealed at rest, against the real daemon and database.

- the database holds a hook's secret sealed (AES-256-GCM, v1:<key id>:...),
  never the plain text nor its base64, and deliveries are still signed with
  the plain secret;
- a floe with another key, or a sealed value copied to another hook's row,
  fails the audit closed with the reason and sends nothing;
- the key file: made 0600 on the first start; refused at start (exit
  status 2, its reason) when others may read it, it is not 32 bytes, it is
  a symbolic link, or a configured one does not exist;
- two floes with separate data directories sharing one key file both sign;
- the plain-text secrets an older floe stored are sealed at start, once,
  by however many floes start at once.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

import psycopg
import pytest

from conftest import TableHandle, assert_error, assert_ok_json, run_floe
from test_hook_delivery import new_table, scope
from webhook import PASS, signature

SEALED = re.compile(r"^v1:([0-9a-f]{16}):([A-Za-z0-9_-]+)$")


def staged(t: TableHandle) -> dict:
    run = t.stage()
    t.add_snapshot(run["branch"])
    return run


def sql(url: str, query: str, params=()):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else None


def stored(url: str, hook_id: str):
    (row,) = sql(url, "SELECT secret, secret_sealed FROM audit_hooks WHERE id = %s", (hook_id,))
    return row


def key_id(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def default_key(f) -> Path:
    return f.workdir / "data" / "auth" / "hook-secrets.key"


def assert_no_plain_text(value: str, plain: str):
    raw = plain.encode()
    for form in (plain, base64.b64encode(raw).decode().rstrip("="),
                 base64.urlsafe_b64encode(raw).decode().rstrip("="), raw.hex()):
        assert form not in value, f"the stored secret shows {form!r}: {value!r}"


def shared_key(tmp: Path) -> Path:
    path = tmp / "hook-secrets.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, secrets.token_bytes(32))
    os.close(fd)
    return path


@pytest.fixture
def db(postgres):
    return postgres.new_database()


def test_the_database_holds_the_secret_sealed_and_deliveries_are_signed(floe_factory, db, webhooks):
    f = floe_factory(env={"FLOE_DATABASE_URL": db})
    plain = "s3cr3t-" + secrets.token_hex(16)
    t = new_table(f, "sealed")
    rcv = webhooks(PASS, secret=plain)
    hook = assert_ok_json(f.post("/v1/audit-hooks", json={
        "name": "signed", "url": rcv.url, "scope": scope(t), "secret": plain}), 201)
    assert hook["has-secret"] is True and "secret" not in hook, hook

    value, is_sealed = stored(db, hook["id"])
    assert is_sealed is True
    assert_no_plain_text(value, plain)
    m = SEALED.match(value)
    assert m, value
    key = default_key(f)
    assert m.group(1) == key_id(key), "the value names the key that opens it"
    # nonce (12) + ciphertext (as long as the secret) + tag (16)
    assert len(base64.urlsafe_b64decode(m.group(2) + "==")) == 12 + len(plain) + 16
    # The key file, beside floe's other keys: 32 bytes, 0600, in a 0700 directory.
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert plain not in f.log(), "the secret is never logged"

    run = staged(t)
    assert_ok_json(f.post(t.run_url(run["id"]) + "/publish", json={}, timeout=60))
    (req,) = rcv.requests
    assert req.signature_valid is True
    ts = req.header("X-Floe-Timestamp")
    assert req.header("X-Floe-Signature-256") == signature(plain, ts, req.body)

    # A second hook with its own secret: each sealing has its own nonce.
    other = assert_ok_json(f.post("/v1/audit-hooks", json={
        "name": "same-secret", "url": rcv.url, "scope": {"namespace": ["elsewhere"]},
        "secret": plain}), 201)
    assert stored(db, other["id"])[0] != value


def test_a_sealed_secret_copied_to_another_hook_does_not_open(floe_factory, db, webhooks):
    f = floe_factory(env={"FLOE_DATABASE_URL": db})
    t = new_table(f, "copied")
    rcv = webhooks(PASS, secret="the-right-secret")
    donor = assert_ok_json(f.post("/v1/audit-hooks", json={
        "name": "donor", "url": rcv.url, "scope": {"namespace": ["nowhere"]},
        "secret": "the-right-secret"}), 201)
    target = assert_ok_json(f.post("/v1/audit-hooks", json={
        "name": "target", "url": rcv.url, "scope": scope(t), "secret": "another-secret"}), 201)
    sql(db, "UPDATE audit_hooks SET secret = (SELECT secret FROM audit_hooks WHERE id = %s) "
            "WHERE id = %s", (donor["id"], target["id"]))
    run = staged(t)
    r = f.post(t.run_url(run["id"]) + "/publish", json={}, timeout=60)
    err = assert_error(r, 503, "AuditUnavailableException")
    assert "changed or copied from another hook" in err["message"], err
    assert rcv.count() == 0, "a call was sent without its secret"
    assert t.head("main") == t.s1


def test_a_floe_with_another_key_fails_closed_and_sends_nothing(floe_factory, db, webhooks):
    first = floe_factory(env={"FLOE_DATABASE_URL": db})
    t = new_table(first, "otherkey")
    rcv = webhooks(PASS, secret="kept-secret")
    assert_ok_json(first.post("/v1/audit-hooks", json={
        "name": "signed", "url": rcv.url, "scope": scope(t), "secret": "kept-secret"}), 201)
    sealed_with = key_id(default_key(first))
    run = staged(t)
    first.stop()

    # Another data directory, so another key (made on its first start).
    other = floe_factory(env={"FLOE_DATABASE_URL": db})
    has = key_id(default_key(other))
    assert has != sealed_with
    t.floe = other
    r = other.post(t.run_url(run["id"]) + "/publish", json={}, timeout=60)
    err = assert_error(r, 503, "AuditUnavailableException")
    reason = (f"the hook's secret was sealed with key {sealed_with}; "
              f"this floe has key {has} (--hook-secrets-key)")
    assert reason in err["message"], err
    assert rcv.count() == 0, "an unsigned call was sent"
    got = assert_ok_json(other.get(t.run_url(run["id"])))
    assert got["state"] == "audit-failed", got
    assert [(a["verdict"], a["reason"]) for a in got["audits"]] == [("error", reason)], got
    assert t.head("main") == t.s1
    assert reason in other.log(), "the operator is told which keys disagree"


def test_floes_sharing_one_key_file_both_sign(floe_factory, db, webhooks, tmp_path):
    key = shared_key(tmp_path)
    env = {"FLOE_DATABASE_URL": db, "FLOE_HOOK_SECRETS_KEY": str(key)}
    a = floe_factory(env=env)
    b = floe_factory(env=env)
    assert a.workdir != b.workdir
    assert not default_key(a).exists() and not default_key(b).exists(), \
        "a configured key is used, no default one is made"
    t = new_table(a, "shared")
    rcv = webhooks(PASS, secret="one-secret")
    hook = assert_ok_json(a.post("/v1/audit-hooks", json={
        "name": "shared", "url": rcv.url, "scope": scope(t), "secret": "one-secret"}), 201)
    assert SEALED.match(stored(db, hook["id"])[0]).group(1) == key_id(key)
    for f in (b, a):
        t.floe = f
        run = staged(t)
        assert_ok_json(f.post(t.run_url(run["id"]) + "/publish", json={}, timeout=60))
    assert [r.signature_valid for r in rcv.requests] == [True, True]


def write_key(path: Path, data: bytes, mode: int):
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    os.chmod(path, mode)


@pytest.mark.parametrize("case,says", [
    ("world-readable", "it is group- or world-accessible (chmod 0600)"),
    ("group-readable", "it is group- or world-accessible (chmod 0600)"),
    ("short", "it does not hold exactly 32 bytes"),
    ("long", "it does not hold exactly 32 bytes"),
    ("empty", "it does not hold exactly 32 bytes"),
    ("symlink", "it is a symbolic link"),
    ("missing", "it does not exist"),
    ("directory", "it is not a regular file"),
])
def test_a_bad_key_file_stops_the_start(tmp_path, case, says):
    data_dir = tmp_path / "data"
    key = tmp_path / "keys" / "hook-secrets.key"
    if case == "world-readable":
        write_key(key, secrets.token_bytes(32), 0o644)
    elif case == "group-readable":
        write_key(key, secrets.token_bytes(32), 0o640)
    elif case == "short":
        write_key(key, secrets.token_bytes(31), 0o600)
    elif case == "long":
        write_key(key, secrets.token_bytes(33), 0o600)
    elif case == "empty":
        write_key(key, b"", 0o600)
    elif case == "symlink":
        real = tmp_path / "keys" / "real.key"
        write_key(real, secrets.token_bytes(32), 0o600)
        key.symlink_to(real)
    elif case == "directory":
        key.mkdir(parents=True)
    r = run_floe([f"--hook-secrets-key={key}"], env={"FLOE_DATA_DIR": str(data_dir)})
    assert r.returncode == 2, r
    assert f"Hook secrets key '{key}' refused: {says}" in r.stderr, r.stderr
    assert not (data_dir / "pg").exists(), "nothing was started"


def test_a_bad_default_key_file_stops_the_start_too(tmp_path):
    key = tmp_path / "data" / "auth" / "hook-secrets.key"
    write_key(key, secrets.token_bytes(32), 0o604)
    r = run_floe([], env={"FLOE_DATA_DIR": str(tmp_path / "data"), "FLOE_AUTH": "none"})
    assert r.returncode == 2, r
    assert "group- or world-accessible" in r.stderr and str(key) in r.stderr, r.stderr


def insert_plain_hook(db: str, name: str, url: str, secret: str, t: TableHandle) -> str:
    """A hook as a floe from before sealing stored it: its secret in plain
    text (the row says nothing about sealing)."""
    (row,) = sql(db, "INSERT INTO audit_hooks (id, name, url, secret, scope_namespace, scope_table) "
                     "VALUES (gen_random_uuid(), %s, %s, %s, %s, %s) RETURNING id::text",
                 (name, url, secret, t.namespace, t.name))
    return row[0]


def test_plain_text_secrets_of_an_older_floe_are_sealed_at_start(floe_factory, db, webhooks):
    first = floe_factory(env={"FLOE_DATABASE_URL": db})
    t = new_table(first, "legacy")
    plain = "legacy-" + secrets.token_hex(12)
    rcv = webhooks(PASS, secret=plain)
    hook_id = insert_plain_hook(db, "legacy", rcv.url, plain, t)
    assert stored(db, hook_id) == (plain, False)
    first.stop()

    again = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=first.workdir)
    assert "sealed 1 audit hook secrets stored in plain text" in again.log()
    value, is_sealed = stored(db, hook_id)
    assert is_sealed is True
    assert_no_plain_text(value, plain)
    assert SEALED.match(value).group(1) == key_id(default_key(again))
    assert not sql(db, "SELECT id FROM audit_hooks WHERE secret LIKE %s", (f"%{plain}%",))

    t.floe = again
    run = staged(t)
    assert_ok_json(again.post(t.run_url(run["id"]) + "/publish", json={}, timeout=60))
    (req,) = rcv.requests
    assert req.signature_valid is True, "the sealed secret still signs as the plain one did"

    # Sealing is done once: the next start changes nothing.
    again.stop()
    third = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=first.workdir)
    assert "stored in plain text" not in third.log()
    assert stored(db, hook_id) == (value, True)


def test_floes_starting_at_once_seal_each_plain_secret_once(floe_factory, db, webhooks, tmp_path):
    key = shared_key(tmp_path)
    env = {"FLOE_DATABASE_URL": db, "FLOE_HOOK_SECRETS_KEY": str(key)}
    first = floe_factory(env=env)
    t = new_table(first, "racing")
    rcv = webhooks(PASS, secret="plain-0")
    ids = [insert_plain_hook(db, f"old-{i}", rcv.url, f"plain-{i}", t) for i in range(30)]
    first.stop()

    floes = [floe_factory(env=env, ready=False) for _ in range(3)]
    for f in floes:
        f.wait_ready(60)
    counts = [int(m) for f in floes
              for m in re.findall(r"sealed (\d+) audit hook secrets stored in plain text", f.log())]
    assert sum(counts) == 30, counts
    rows = sql(db, "SELECT id::text, secret, secret_sealed FROM audit_hooks")
    assert sorted(r[0] for r in rows) == sorted(ids)
    for hook_id, value, is_sealed in rows:
        assert is_sealed and SEALED.match(value), (hook_id, value)
        assert "plain-" not in value
