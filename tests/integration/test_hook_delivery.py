"""Audit-hook delivery without holes, against the real daemon.

- fail closed: a 2xx answer that is not a JSON object (an HTML page from a
  proxy or a login screen) is an error, and so is a payload floe cannot
  build; main never moves on either;
- deliveries are signed over a timestamp and the body, and the reference
  auditor refuses a captured delivery replayed later;
- hook targets: internal addresses are refused at registration (every
  address class, in every IPv4/IPv6 spelling) and at connect time (a name
  that resolves to loopback), unless the allowlist admits them;
- no environment proxy, no redirect;
- what the run and the audit log keep is a verdict, a status and the
  hook's own bounded reason, never the raw answer or transport detail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    database_url,
    register_hook,
)
from webhook import PASS, Reply, free_port, refused_url, signature

AUDITOR_DIR = Path(__file__).resolve().parents[2] / "examples" / "auditor"


def new_table(f, ns: str) -> TableHandle:
    f.create_namespace([ns])
    t = TableHandle(f, [ns], "orders")
    t.create()
    t.s1 = t.add_snapshot("main")
    return t


def scope(t: TableHandle) -> dict:
    return {"namespace": t.namespace, "table": t.name}


def staged(t: TableHandle):
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    return run, s2


def hook_events(f, run_id: str) -> list:
    return [e for e in audit_events(f, run=run_id) if e["event"] == "wap.hook-called"]


def assert_audit_failed(f, t: TableHandle, run: dict, r, reason: str):
    """503 AuditUnavailable, main unmoved, the run and its events say reason."""
    err = assert_error(r, 503, "AuditUnavailableException")
    assert reason in err["message"], err
    assert t.head("main") == t.s1, "main moved on a failed audit"
    got = assert_ok_json(f.get(t.run_url(run["id"])))
    assert got["state"] == "audit-failed", got
    assert [a["verdict"] for a in got["audits"]] == ["error"], got
    assert got["audits"][0]["reason"] == reason, got
    called = hook_events(f, run["id"])
    assert len(called) == 1 and called[0]["details"]["reason"] == reason, called
    assert [e["event"] for e in audit_events(f, run=run["id"])][-1] == "wap.audit-failed"
    return got


@pytest.fixture
def closed_floe(postgres, floe_factory):
    """A floe without a hook allowlist: the default policy."""
    return floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_HOOK_ALLOW": ""})


# --------------------------------------------------------------------------
# fail closed


HTML = ("<!DOCTYPE html><html><head><title>Sign in - Corporate SSO</title></head>"
        "<body><form>password: <input name=p></form> MARKER-7f3a</body></html>")


@pytest.mark.parametrize("reply,reason", [
    pytest.param(Reply(200, HTML, headers={"Content-Type": "text/html"}), "not JSON", id="html-200"),
    pytest.param(Reply(200, "ok MARKER-7f3a"), "not JSON", id="text-200"),
    pytest.param(Reply(200, [{"passed": True}]), "not JSON", id="json-array"),
    pytest.param(Reply(200, {"passed": "false", "note": "MARKER-7f3a"}), '"passed" is not a boolean',
                 id="passed-string"),
    pytest.param(Reply(200, {"passed": True, "pad": "x" * 70_000}), "answer too large", id="over-64k"),
])
def test_a_2xx_that_is_not_a_verdict_fails_closed(floe, uniq, hooks, webhooks, reply, reason):
    t = new_table(floe, uniq)
    rcv = webhooks(reply)
    hooks(floe, "sso-fronted", rcv.url, scope=scope(t), timeout_ms=3000)
    run, s2 = staged(t)
    r = t.publish(run["id"])
    got = assert_audit_failed(floe, t, run, r, reason)
    assert rcv.count() == 1, "an answer that is no verdict is not retried"
    assert got["audits"][0]["http-status"] == 200
    assert "MARKER" not in r.text and "MARKER" not in json.dumps(got)
    assert "MARKER" not in json.dumps(audit_events(floe, run=run["id"]))
    # The hook is fixed: the same run publishes.
    rcv.set(default=PASS)
    assert assert_ok_json(t.publish(run["id"]))["state"] == "published"
    assert t.head("main") == s2


@pytest.mark.parametrize("reply", [
    pytest.param(Reply(200, b""), id="empty"),
    pytest.param(Reply(200, b" \r\n"), id="blank"),
    pytest.param(Reply(204), id="204"),
    pytest.param(Reply(200, {"passed": True}), id="passed-true"),
])
def test_an_empty_answer_or_a_json_object_passes(floe, uniq, hooks, webhooks, reply):
    t = new_table(floe, uniq)
    rcv = webhooks(reply)
    hooks(floe, "plain", rcv.url, scope=scope(t))
    run, s2 = staged(t)
    assert assert_ok_json(t.publish(run["id"]))["state"] == "published"
    assert t.head("main") == s2


def test_a_payload_that_cannot_be_built_fails_the_audit_and_sends_nothing(floe, uniq, hooks, webhooks):
    """Before, floe sent {} and a lenient hook passed it: main moved unaudited."""
    t = new_table(floe, uniq)
    rcv = webhooks(PASS)
    hooks(floe, "lenient", rcv.url, scope=scope(t))
    run, s2 = staged(t)
    # Fault: the table's metadata location is gone from the catalog row, so
    # the payload (which names the file the auditor reads) cannot be built.
    loaded = t.load()
    sql = "UPDATE tables SET metadata_location = %s WHERE table_uuid = %s"
    with psycopg.connect(database_url(floe), autocommit=True) as conn:
        assert conn.execute(sql, (None, loaded["metadata"]["table-uuid"])).rowcount == 1
        r = t.publish(run["id"])
        # Put it back before anything loads the table again.
        conn.execute(sql, (loaded["metadata-location"], loaded["metadata"]["table-uuid"]))
    assert_audit_failed(floe, t, run, r, "payload not built")
    assert rcv.count() == 0, "a payload that could not be built was sent"
    assert "payload" in floe.log() and "cannot be built" in floe.log()


# --------------------------------------------------------------------------
# signatures over a timestamp


def test_the_signature_covers_the_timestamp_and_a_replay_is_refused(floe, uniq, hooks, webhooks):
    sys.path.insert(0, str(AUDITOR_DIR))
    import auditor as aud

    secret = "replay-secret"
    t = new_table(floe, uniq)
    rcv = webhooks(PASS, secret=secret)
    hooks(floe, "signed", rcv.url, scope=scope(t), secret=secret)
    run, _ = staged(t)
    before = time.time()
    assert_ok_json(t.publish(run["id"]))
    (req,) = rcv.requests
    ts = req.header("X-Floe-Timestamp")
    assert before - 2 <= int(ts) <= time.time() + 2, ts
    assert req.signature_valid is True
    assert req.header("X-Floe-Signature-256") == signature(secret, ts, req.body)

    # The captured delivery, given to the reference auditor.
    clock = [time.time()]

    class Rows:
        def __call__(self, payload):
            return ["id"], iter([{"id": 1}])

    auditor = aud.Auditor(aud.ExpectationSet({"*": {"has_id": "id IS NOT NULL"}}),
                          secret=secret.encode(), read_rows=Rows(), clock=lambda: clock[0])
    status, doc = auditor.handle(req.headers, req.body)
    assert (status, doc["passed"]) == (200, True), doc
    # Replayed six minutes later: refused, nothing read.
    clock[0] += 360
    status, doc = auditor.handle(req.headers, req.body)
    assert status == 401 and "window" in doc["reason"], doc
    # A fresh timestamp on the old body does not verify without the secret.
    forged = dict(req.headers, **{"x-floe-timestamp": str(int(clock[0]))})
    status, doc = auditor.handle(forged, req.body)
    assert status == 401 and "invalid" in doc["reason"], doc


def test_the_reference_auditor_process_refuses_a_replayed_floe_delivery(floe, uniq, hooks, webhooks, tmp_path):
    """floe's signed delivery, captured and sent on to auditor.py as an
    operator runs it: accepted at once, refused once --max-age has passed."""
    secret = "replay-secret-2"
    rules = tmp_path / "expectations.json"
    rules.write_text(json.dumps({"*": {"has_id": "id IS NOT NULL"}}))
    port = free_port()
    env = dict(os.environ, AUDITOR_LISTEN=f"127.0.0.1:{port}", AUDITOR_EXPECTATIONS=str(rules),
               FLOE_AUDIT_SECRET=secret, AUDITOR_MAX_AGE="5")
    proc = subprocess.Popen([sys.executable, str(AUDITOR_DIR / "auditor.py")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"

    def replay(req):
        headers = {k: v for k, v in req.headers.items()
                   if k in ("content-type", "x-floe-event", "x-floe-delivery", "x-floe-timestamp",
                            "x-floe-signature-256")}
        r = urllib.request.Request(url, data=req.body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    try:
        deadline = time.monotonic() + 30
        while True:  # the auditor is up before floe signs anything
            try:
                urllib.request.urlopen(url + "healthz", timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "auditor did not start"
                time.sleep(0.1)
        t = new_table(floe, uniq)
        rcv = webhooks(PASS, secret=secret)
        hooks(floe, "captured", rcv.url, scope=scope(t), secret=secret)
        run, _ = staged(t)
        assert_ok_json(t.publish(run["id"]))
        (req,) = rcv.requests
        status, doc = replay(req)
        # Authenticated: the auditor went on to read the (fake) snapshot.
        assert status != 401, doc
        # The window closes the moment the clock passes the signed
        # timestamp by more than --max-age (5 s): replay just after it.
        stamp = int(req.headers["x-floe-timestamp"])
        time.sleep(max(0.0, stamp + 5 + 1 - time.time()))
        status, doc = replay(req)
        assert status == 401 and "window" in doc["reason"], (status, doc)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


# --------------------------------------------------------------------------
# hook targets


REFUSED = [
    ("http://127.0.0.1:9/", "loopback"),
    ("http://127.8.9.10/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://[64:ff9b::127.0.0.1]/", "loopback"),
    ("http://[64:ff9b::a00:1]/", "private"),
    ("http://[2002:c0a8:0101::1]/", "private"),
    ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.255/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[::ffff:192.168.1.1]/", "private"),
    ("http://[64:ff9b::192.168.1.1]/", "private"),
    ("http://100.64.0.1/", "CGNAT"),
    ("http://100.127.255.254/", "CGNAT"),
    ("http://[::ffff:100.64.0.1]/", "CGNAT"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
    ("http://[64:ff9b::169.254.169.254]/", "cloud metadata"),
    ("http://[fd00:ec2::254]/", "cloud metadata"),
    ("http://169.254.10.20:8443/x", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "link-local"),
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fdab:cdef::1]/", "unique-local"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://240.0.0.1/", "reserved"),
]
ACCEPTED = [
    "http://8.8.8.8/", "http://[2001:4860:4860::8888]/", "http://[::ffff:8.8.8.8]/",
    "http://[64:ff9b::8.8.8.8]/", "https://audit.example.com/hooks", "http://172.32.0.1/",
    "http://100.128.0.1/", "http://localhost.:9/",
]


@pytest.mark.parametrize("url,rule", [pytest.param(u, r, id=u) for u, r in REFUSED])
def test_internal_targets_are_refused_at_registration(closed_floe, url, rule):
    r = closed_floe.post("/v1/audit-hooks", json={"name": "probe", "url": url})
    err = assert_error(r, 400, "BadRequestException")
    assert rule in err["message"] and "--hook-allow" in err["message"], err
    assert assert_ok_json(closed_floe.get("/v1/audit-hooks"))["hooks"] == []


@pytest.mark.parametrize("url", ACCEPTED)
def test_public_targets_and_names_are_accepted(closed_floe, url):
    h = register_hook(closed_floe, "public", url)
    assert h["url"] == url


def test_the_allowlist_admits_hosts_and_networks(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(),
                          "FLOE_HOOK_ALLOW": " auditor , 10.0.0.0/8,fd00::/8,[::1], 192.168.7.7"})
    for url in ("http://10.200.0.5:8282/", "http://[::ffff:10.0.0.1]/", "http://[fd12::5]/",
                "http://[::1]:9/", "http://192.168.7.7/", "http://auditor:8282/", "http://AUDITOR./"):
        register_hook(f, "internal", url)
    for url, rule in (("http://192.168.7.8/", "private"), ("http://11.0.0.1.nip/", None),
                      ("http://127.0.0.1/", "loopback"), ("http://[fc00::1]/", "unique-local")):
        r = f.post("/v1/audit-hooks", json={"name": "x", "url": url})
        if rule is None:
            assert r.status_code == 201, r.text
        else:
            assert rule in assert_error(r, 400, "BadRequestException")["message"]


@pytest.mark.parametrize("bad", ["10.0.0.0/33", "10.0.0.0/", "::1/129", "not a host", "a/b", "1.2.3.4/x"])
def test_a_bad_allowlist_stops_floe_at_start(floe_factory, bad):
    f = floe_factory(env={"FLOE_HOOK_ALLOW": bad, "FLOE_DATABASE_URL": "postgresql://127.0.0.1:1/x"},
                     ready=False)
    assert f.proc.wait(20) == 2
    log = f.log()
    assert "--hook-allow" in log and "FLOE_HOOK_ALLOW" in log, log


def test_a_name_that_resolves_to_loopback_is_refused_at_connect_time(closed_floe, webhooks):
    """localhost passes registration (it is a name) and resolves to 127.0.0.1
    and ::1: each address is checked where libcurl connects."""
    f = closed_floe
    t = new_table(f, "dns")
    rcv = webhooks(PASS)
    url = f"http://localhost:{rcv.port}/audit"
    hook = register_hook(f, "rebound", url, scope=scope(t), timeout_ms=3000)
    run, s2 = staged(t)
    r = t.publish(run["id"])
    got = assert_audit_failed(f, t, run, r, "address not allowed")
    assert rcv.count() == 0, "floe connected to a loopback address"
    assert "http-status" not in got["audits"][0]
    assert hook_events(f, run["id"])[0]["details"]["attempts"] == 1, "a refused address is not retried"
    assert "loopback" in f.log()  # the rule is in the operator's log


@pytest.mark.parametrize("allow", ["127.0.0.1", "localhost", "127.0.0.0/8,::1"])
def test_the_allowlist_admits_a_name_resolving_to_loopback(postgres, floe_factory, webhooks, allow):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_HOOK_ALLOW": allow})
    t = new_table(f, "dns")
    rcv = webhooks(PASS)
    register_hook(f, "internal", f"http://localhost:{rcv.port}/audit", scope=scope(t))
    run, s2 = staged(t)
    assert assert_ok_json(t.publish(run["id"]))["state"] == "published"
    assert rcv.count() == 1 and t.head("main") == s2


def test_the_environment_proxy_is_never_used(postgres, floe_factory, webhooks):
    proxy = webhooks(Reply(200, {"passed": True}))  # records whatever reaches it
    target = webhooks(Reply(200, {"passed": False, "reason": "the real auditor says no"}))
    purl = f"http://127.0.0.1:{proxy.port}"
    env = {"FLOE_DATABASE_URL": postgres.new_database(), "http_proxy": purl, "HTTP_PROXY": purl,
           "https_proxy": purl, "HTTPS_PROXY": purl, "all_proxy": purl, "ALL_PROXY": purl,
           "no_proxy": "", "NO_PROXY": ""}
    f = floe_factory(env=env)
    t = new_table(f, "proxied")
    register_hook(f, "direct", target.url, scope=scope(t))
    run, _ = staged(t)
    err = assert_error(t.publish(run["id"]), 422, "AuditRejectedException")
    assert "the real auditor says no" in err["message"]
    assert target.count() == 1
    assert proxy.count() == 0, f"floe sent the hook through the proxy: {proxy.requests[0].path}"
    assert t.head("main") == t.s1


def test_a_redirect_to_an_internal_address_is_not_followed(floe, uniq, hooks, webhooks):
    t = new_table(floe, uniq)
    decoy = webhooks(PASS)
    rcv = webhooks(Reply(307, b"", headers={"Location": decoy.url}))
    hooks(floe, "redirecting", rcv.url, scope=scope(t), timeout_ms=3000)
    run, _ = staged(t)
    assert_audit_failed(floe, t, run, t.publish(run["id"]), "the hook answered HTTP 307")
    assert decoy.count() == 0


# --------------------------------------------------------------------------
# what is kept of an answer


@pytest.mark.parametrize("reply,verdict,reason", [
    pytest.param(Reply(500, "Traceback MARKER-7f3a at /srv/app.py line 3"), "error",
                 "the hook answered HTTP 500", id="500-text"),
    pytest.param(Reply(403, "<html>MARKER-7f3a Forbidden</html>"), "reject", "no reason given", id="403-html"),
    pytest.param(Reply(422, {"detail": "MARKER-7f3a"}), "reject", "no reason given", id="422-no-reason"),
    pytest.param(Reply(raw=b"SSH-2.0-OpenSSH_9.6 MARKER-7f3a\r\n"), "error", "not HTTP", id="not-http"),
])
def test_raw_answers_are_never_recorded(floe, uniq, hooks, webhooks, reply, verdict, reason):
    t = new_table(floe, uniq)
    rcv = webhooks(reply)
    hooks(floe, "noisy", rcv.url, scope=scope(t), timeout_ms=3000)
    run, _ = staged(t)
    r = t.publish(run["id"])
    assert r.status_code == (422 if verdict == "reject" else 503), r.text
    got = assert_ok_json(floe.get(t.run_url(run["id"])))
    assert got["audits"][0]["verdict"] == verdict and got["audits"][0]["reason"] == reason, got
    for text in (r.text, json.dumps(got), json.dumps(audit_events(floe, run=run["id"]))):
        assert "MARKER" not in text and "/srv/app.py" not in text and "SSH-2.0" not in text, text
    assert t.head("main") == t.s1


def test_transport_failures_are_a_fixed_vocabulary(floe, uniq, hooks, webhooks):
    t = new_table(floe, uniq)
    url = refused_url()
    port = url.rsplit(":", 1)[1].split("/")[0]
    hooks(floe, "gone", url, scope=scope(t), timeout_ms=2000)
    run, _ = staged(t)
    r = t.publish(run["id"])
    got = assert_audit_failed(floe, t, run, r, "connection refused")
    for text in (r.text, json.dumps(got), json.dumps(hook_events(floe, run["id"]))):
        assert port not in text.replace(run["id"], ""), f"the port leaks: {text}"
        assert "Failed to connect" not in text and "Couldn't" not in text, text


def test_timeout_is_recorded_as_timeout(floe, uniq, hooks, webhooks):
    t = new_table(floe, uniq)
    rcv = webhooks(Reply(200, {"passed": True}, delay=5))
    hooks(floe, "slow", rcv.url, scope=scope(t), timeout_ms=400)
    run, _ = staged(t)
    assert_audit_failed(floe, t, run, t.publish(run["id"]), "timeout")


def test_the_hook_reason_is_bounded_and_cleaned(floe, uniq, hooks, webhooks):
    t = new_table(floe, uniq)
    nasty = "bad\x1b[31m rows\r\nline two\u202e\u0085 é" + "ü" * 400
    rcv = webhooks(Reply(200, {"passed": False, "reason": nasty}))
    hooks(floe, "nasty", rcv.url, scope=scope(t))
    run, _ = staged(t)
    err = assert_error(t.publish(run["id"]), 422, "AuditRejectedException")
    got = assert_ok_json(floe.get(t.run_url(run["id"])))
    reason = got["audits"][0]["reason"]
    assert reason.startswith("bad[31m rows line two éüü"), reason
    assert len(reason.encode()) <= 256 and reason.endswith("..."), reason
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c == "\u202e" for c in reason), repr(reason)
    assert reason in err["message"]
    assert hook_events(floe, run["id"])[0]["details"]["reason"] == reason
