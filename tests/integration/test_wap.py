"""Write-audit-publish through floe, with real webhook receivers as audit hooks.

Each test stages a run (a branch), commits fake snapshots to the branch with
raw commits, registers hooks that point at webhook.Receiver instances, and
publishes.  What main points at afterwards, what the receivers got, the run
and the audit log are all checked against expectations computed here.

Hooks are catalog-wide objects, and the module shares one floe: every hook
here is scoped to the test's own namespace or table (catalog-wide hooks are
only registered on a floe of the test's own).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

import pytest
import requests

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    database_url,
    describe,
    make_shared_tmpdir,
    next_snapshot_id,
    ns_path,
    register_hook,
)
from webhook import PASS, Reply, refused_url, signature

RUN_KEYS = {"id", "table", "branch", "state", "base-snapshot-id", "audited-snapshot-id",
            "published-snapshot-id", "created-at", "updated-at", "audits", "staged-by",
            "published-by", "abandoned-by", "written-by"}
RUN_REQUIRED = {"id", "table", "branch", "state", "base-snapshot-id", "created-at", "updated-at", "audits",
                "staged-by", "written-by"}
AUDIT_KEYS = {"hook-id", "hook-name", "http-status", "verdict", "reason", "latency-ms", "at"}
EVENT_KEYS = {"id", "at", "event", "principal", "client-id", "request-id", "namespace", "table", "run-id",
              "details", "chain-position", "chain-hash"}
STATES = {"staged", "auditing", "published", "rejected", "audit-failed", "abandoned"}
PAYLOAD_KEYS = {"event", "run-id", "delivery-id", "table", "table-uuid", "branch", "snapshot-id",
                "parent-snapshot-id", "main-snapshot-id", "snapshot", "schema", "metadata-location",
                "requested-at", "requested-by"}

# How much longer than a hook's timeout a failed publish may take.
MARGIN = 1.5


# --------------------------------------------------------------------------
# helpers


class Client:
    """A separate HTTP session to floe, for use from another thread."""

    def __init__(self, f):
        self.url = f.url
        self.session = requests.Session()

    def request(self, method, path, **kw):
        kw.setdefault("timeout", 60)
        return self.session.request(method, self.url + path, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


def parse_rfc3339(s: str) -> datetime:
    assert isinstance(s, str) and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", s), f"not RFC 3339: {s!r}"
    d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    assert d.tzinfo is not None, f"{s!r} has no offset"
    return d


def rfc3339(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_uuid(s) -> bool:
    try:
        return isinstance(s, str) and str(uuid.UUID(s)) == s.lower()
    except ValueError:
        return False


def check_run(run: dict, t: TableHandle, state: str | None = None, **expected):
    assert RUN_REQUIRED <= set(run) <= RUN_KEYS, f"run keys {sorted(run)}: {run}"
    assert is_uuid(run["id"]), run
    assert run["table"] == {"namespace": t.namespace, "name": t.name}, run
    assert run["state"] in STATES, run
    if state is not None:
        assert run["state"] == state, f"state {run['state']!r} != {state!r}: {run}"
    parse_rfc3339(run["created-at"])
    assert parse_rfc3339(run["updated-at"]) >= parse_rfc3339(run["created-at"]), run
    assert isinstance(run["audits"], list), run
    for a in run["audits"]:
        assert {"hook-id", "hook-name", "verdict", "latency-ms", "at"} <= set(a) <= AUDIT_KEYS, a
        assert a["verdict"] in ("pass", "reject", "error"), a
        assert isinstance(a["latency-ms"], int) and a["latency-ms"] >= 0, a
        parse_rfc3339(a["at"])
    for k, v in expected.items():
        key = k.replace("_", "-")
        assert run.get(key) == v, f"run[{key!r}] = {run.get(key)!r}, expected {v!r}: {run}"
    return run


def check_event(e: dict):
    assert set(e) == EVENT_KEYS, f"event keys {sorted(e)}: {e}"
    assert isinstance(e["id"], int) and not isinstance(e["id"], bool), e
    parse_rfc3339(e["at"])
    assert e["principal"] == "anonymous", e
    assert e["namespace"] is None or (isinstance(e["namespace"], list)
                                      and all(isinstance(x, str) for x in e["namespace"])), e
    assert e["table"] is None or isinstance(e["table"], str), e
    assert e["run-id"] is None or is_uuid(e["run-id"]), e
    assert isinstance(e["details"], dict), e
    # Its link in the audit chain (docs/audit-trail.md): committed events
    # are always linked.
    assert isinstance(e["chain-position"], int) and e["chain-position"] >= 1, e
    assert isinstance(e["chain-hash"], str) and len(e["chain-hash"]) == 64, e


def run_events(f, run_id: str) -> list:
    events = audit_events(f, run=run_id)
    for e in events:
        check_event(e)
        assert e["run-id"] == run_id, e
    return events


def kinds(events) -> list:
    return [e["event"] for e in events]


def retry_after_ok(value) -> bool:
    if value is None:
        return False
    if re.fullmatch(r"\d+", value.strip()):
        return True
    try:
        parsedate_to_datetime(value)
        return True
    except (TypeError, ValueError):
        return False


def assert_main_unchanged(t: TableHandle, before: dict):
    after = t.load()
    assert after["metadata"]["refs"]["main"] == before["metadata"]["refs"]["main"], (
        f"main moved: {before['metadata']['refs']['main']} -> {after['metadata']['refs']['main']}")
    assert after["metadata"].get("current-snapshot-id") == before["metadata"].get("current-snapshot-id")


def table_scope(t: TableHandle) -> dict:
    return {"namespace": t.namespace, "table": t.name}


def set_ns_props(f, levels, updates=None, removals=None):
    r = f.post(f"/v1/namespaces/{ns_path(levels)}/properties",
               json={"updates": updates or {}, "removals": removals or []})
    return assert_ok_json(r)


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


def new_table(f, ns, name="orders") -> TableHandle:
    """A table whose main has one snapshot (t.s1)."""
    t = TableHandle(f, ns, name)
    t.create()
    t.s1 = t.add_snapshot("main")
    return t


@pytest.fixture
def table(floe, ns):
    return new_table(floe, ns)


@pytest.fixture
def passing(webhooks):
    return webhooks(PASS)


# --------------------------------------------------------------------------
# staging and the run resource


def test_stage_creates_a_branch_at_main(floe, table):
    t = table
    r = floe.post(t.wap_url, json={})
    run = check_run(assert_ok_json(r, 201), t, "staged", base_snapshot_id=t.s1)
    assert run["branch"] == f"wap-{run['id']}", run
    assert run["audits"] == []
    assert "published-snapshot-id" not in run or run["published-snapshot-id"] is None
    assert t.head(run["branch"]) == t.s1
    assert t.head("main") == t.s1
    assert assert_ok_json(floe.get(t.run_url(run["id"]))) == run
    # The routes are served with a prefix too.
    prefixed = TableHandle(floe, t.namespace, t.name, base="/v1/warehouse")
    assert assert_ok_json(floe.get(prefixed.run_url(run["id"]))) == run
    via_prefix = prefixed.stage()
    assert assert_ok_json(floe.get(t.run_url(via_prefix["id"])))["branch"] == via_prefix["branch"]

    named = t.stage(branch="nightly")
    check_run(named, t, "staged", branch="nightly", base_snapshot_id=t.s1)
    assert t.head("nightly") == t.s1


def test_stage_adopts_an_existing_branch_as_it_stands(floe, table):
    t = table
    b1 = t.add_snapshot("spark-etl")   # as Spark's ALTER TABLE ... CREATE BRANCH + INSERT would
    meta_before = t.load()
    run = t.stage(branch="spark-etl", adopt=True)
    check_run(run, t, "staged", branch="spark-etl", base_snapshot_id=t.s1)
    assert t.head("spark-etl") == b1, "adopt moved the branch"
    assert t.head("main") == t.s1
    assert t.load()["metadata"]["refs"] == meta_before["metadata"]["refs"]


def test_stage_errors(floe, ns):
    t = new_table(floe, ns)
    t.add_snapshot("taken")
    assert_error(floe.post(t.wap_url, json={"branch": "taken"}), 409, "AlreadyExistsException")
    assert_error(floe.post(t.wap_url, json={"branch": "missing", "adopt": True}), 404, "NoSuchReferenceException")
    for body in ({"branch": 5}, {"adopt": "yes"}, {"branch": ""}):
        assert_error(floe.post(t.wap_url, json=body), 400)
    assert_error(floe.post(t.wap_url, data=b"{x", headers={"Content-Type": "application/json"}), 400)
    assert_error(floe.post(TableHandle(floe, ns, "ghost").wap_url, json={}), 404, "NoSuchTableException")
    bare = TableHandle(floe, ns, "bare")
    bare.create()
    # A table without a snapshot can be staged (the first load through
    # write-audit-publish): the run has no base, its branch starts at an
    # empty snapshot and main stays without one.
    first = assert_ok_json(floe.post(bare.wap_url, json={}), 201)
    assert first["base-snapshot-id"] is None, first
    assert [r["name"] for r in bare.refs()] == [first["branch"]]
    assert bare.head("main") is None
    assert assert_ok_json(floe.get(t.wap_url))["runs"] == []


def test_unknown_run_is_404(floe, table):
    t = table
    ghost = str(uuid.uuid4())
    assert_error(floe.get(t.run_url(ghost)), 404, "NoSuchWapRunException")
    assert_error(t.publish(ghost), 404, "NoSuchWapRunException")
    assert_error(floe.delete(t.run_url(ghost)), 404, "NoSuchWapRunException")
    # A run of another table is not a run of this one.
    other = new_table(floe, t.namespace, "other")
    run = other.stage()
    assert_error(floe.get(t.run_url(run["id"])), 404, "NoSuchWapRunException")


def test_list_runs_newest_first_with_pagination(floe, table):
    t = table
    ids = [t.stage()["id"] for _ in range(5)]
    body = assert_ok_json(floe.get(t.wap_url))
    assert [r["id"] for r in body["runs"]] == ids[::-1]
    assert body.get("next-page-token") is None
    for r in body["runs"]:
        check_run(r, t, "staged")
    for size in (1, 2, 3):
        seen, token, pages = [], "", 0
        while True:
            params = {"pageSize": size, "pageToken": token}
            page = assert_ok_json(floe.get(t.wap_url, params=params))
            assert len(page["runs"]) <= size
            seen += [r["id"] for r in page["runs"]]
            token = page.get("next-page-token")
            pages += 1
            assert pages <= 10
            if not token:
                break
        assert seen == ids[::-1], f"pageSize={size}: {seen}"


def test_abandon_drops_the_branch(floe, table, hooks, passing):
    t = table
    run = t.stage()
    t.add_snapshot(run["branch"])
    r = floe.delete(t.run_url(run["id"]))
    check_run(assert_ok_json(r), t, "abandoned")
    assert t.head(run["branch"]) is None
    assert t.head("main") == t.s1
    hooks(floe, "pass", passing.url, scope=table_scope(t))
    assert_error(t.publish(run["id"]), 409, "WapRunStateException")
    assert passing.count() == 0
    assert kinds(run_events(floe, run["id"])) == ["wap.staged", "wap.abandoned"]


# --------------------------------------------------------------------------
# publish: pass


def test_publish_pass_moves_main_to_the_audited_snapshot(floe, table, hooks, passing):
    t = table
    hook = hooks(floe, "quality", passing.url, scope=table_scope(t))
    stage = floe.post(t.wap_url, json={})
    run = assert_ok_json(stage, 201)
    s2 = t.add_snapshot(run["branch"])
    before = t.load()

    r = t.publish(run["id"])
    done = check_run(assert_ok_json(r), t, "published", audited_snapshot_id=s2, published_snapshot_id=s2,
                     base_snapshot_id=t.s1)
    assert len(done["audits"]) == 1, done
    a = done["audits"][0]
    assert a["hook-id"] == hook["id"] and a["hook-name"] == "quality"
    assert a["verdict"] == "pass" and a["http-status"] == 200, a
    assert passing.count() == 1

    after = t.load()
    meta = after["metadata"]
    assert meta["refs"]["main"]["snapshot-id"] == s2
    assert meta["current-snapshot-id"] == s2
    assert meta["snapshot-log"][-1]["snapshot-id"] == s2
    assert run["branch"] not in meta["refs"], "the branch was not dropped"
    assert [x["name"] for x in t.refs()] == ["main"]
    # One atomic commit: main moved and the branch dropped in one new file.
    n_before = int(re.search(r"/(\d{5})-", before["metadata-location"]).group(1))
    n_after = int(re.search(r"/(\d{5})-", after["metadata-location"]).group(1))
    assert n_after == n_before + 1, (before["metadata-location"], after["metadata-location"])
    assert assert_ok_json(floe.get(t.run_url(run["id"]))) == done

    events = run_events(floe, run["id"])
    assert kinds(events) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.published"], kinds(events)
    assert events[0]["request-id"] == stage.headers["X-Request-Id"]
    assert events[1]["request-id"] == r.headers["X-Request-Id"]
    assert events[2]["request-id"] == r.headers["X-Request-Id"]
    assert events[3]["request-id"] == r.headers["X-Request-Id"]
    assert events[4]["request-id"] == r.headers["X-Request-Id"]
    calling = events[2]["details"]
    assert calling["hook-id"] == hook["id"] and calling["hook-name"] == "quality", calling
    assert calling["delivery-id"] == events[3]["details"]["delivery-id"], (calling, events[3])
    for e in events:
        assert e["namespace"] == t.namespace and e["table"] == t.name, e
    d = events[3]["details"]
    assert d["hook-id"] == hook["id"] and d["hook-name"] == "quality", d
    assert d["verdict"] == "pass" and d["http-status"] == 200 and d["attempts"] == 1, d
    assert isinstance(d["latency-ms"], int), d

    # A published run is done with.
    assert_error(t.publish(run["id"]), 409, "WapRunStateException")
    assert_error(floe.delete(t.run_url(run["id"])), 409, "WapRunStateException")
    assert passing.count() == 1
    assert t.head("main") == s2


def test_publish_keep_branch(floe, table, hooks, passing):
    t = table
    hooks(floe, "quality", passing.url, scope=table_scope(t))
    run = t.stage(branch="keep-me")
    s2 = t.add_snapshot("keep-me")
    s3 = t.add_snapshot("keep-me")
    done = check_run(assert_ok_json(t.publish(run["id"], **{"keep-branch": True})), t, "published",
                     published_snapshot_id=s3)
    assert t.head("main") == s3
    assert t.head("keep-me") == s3
    assert s2 in [s["snapshot-id"] for s in t.metadata()["snapshots"]]
    assert done["audited-snapshot-id"] == s3


def test_publish_a_given_snapshot_of_the_branch(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "quality", rcv.url, scope=table_scope(t))
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    s3 = t.add_snapshot(run["branch"])
    side = t.add_snapshot("side", parent=t.s1)

    for bad in (side, next_snapshot_id()):
        assert_error(t.publish(run["id"], **{"snapshot-id": bad}), 400)
    assert_error(t.publish(run["id"], **{"snapshot-id": "x"}), 400)
    assert rcv.count() == 0
    assert t.head("main") == t.s1

    done = check_run(assert_ok_json(t.publish(run["id"], **{"snapshot-id": s2})), t, "published",
                     audited_snapshot_id=s2, published_snapshot_id=s2)
    assert rcv.count() == 1
    assert rcv.requests[0].json()["snapshot-id"] == s2
    assert t.head("main") == s2
    assert done["published-snapshot-id"] != s3


@pytest.mark.parametrize("reply", [
    pytest.param(Reply(200, b""), id="empty-200"),
    pytest.param(Reply(204), id="204"),
    pytest.param(Reply(202, {"passed": True, "checks": 3}), id="202-passed"),
    pytest.param(Reply(200, {"status": "ok"}), id="json-without-passed"),
])
def test_any_2xx_without_passed_false_passes(floe, table, hooks, webhooks, reply):
    t = table
    rcv = webhooks(reply)
    hooks(floe, "lenient", rcv.url, scope=table_scope(t))
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    assert done["audits"][0]["verdict"] == "pass"
    assert done["audits"][0]["http-status"] == reply.status
    assert t.head("main") == s2


# --------------------------------------------------------------------------
# publish: rejected


@pytest.mark.parametrize("reply,reason", [
    pytest.param(Reply(200, {"passed": False, "reason": "row count dropped by 40%"}),
                 "row count dropped by 40%", id="passed-false"),
    pytest.param(Reply(403, {"reason": "amount_eur must be positive"}), "amount_eur must be positive", id="403"),
    pytest.param(Reply(422, {"passed": False, "reason": "currency USD is not allowed"}),
                 "currency USD is not allowed", id="422"),
])
def test_publish_rejected(floe, table, hooks, webhooks, reply, reason):
    t = table
    rcv = webhooks(reply)
    hook = hooks(floe, "gatekeeper", rcv.url, scope=table_scope(t))
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    before = t.load()

    r = t.publish(run["id"])
    err = assert_error(r, 422, "AuditRejectedException")
    assert "gatekeeper" in err["message"] and reason in err["message"], err
    assert rcv.count() == 1, "a rejection is not retried"
    assert_main_unchanged(t, before)
    assert t.head(run["branch"]) == s2, "the branch of a rejected run is kept"

    got = check_run(assert_ok_json(floe.get(t.run_url(run["id"]))), t, "rejected", audited_snapshot_id=s2)
    assert got.get("published-snapshot-id") is None
    assert len(got["audits"]) == 1
    a = got["audits"][0]
    assert a["hook-id"] == hook["id"] and a["verdict"] == "reject" and a["http-status"] == reply.status, a
    assert reason in a["reason"], a

    events = run_events(floe, run["id"])
    assert kinds(events) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.rejected"], kinds(events)
    d = events[3]["details"]
    assert d["verdict"] == "reject" and reason in d["reason"] and d["http-status"] == reply.status, d
    assert events[3]["request-id"] == r.headers["X-Request-Id"]

    # Fixed data, audit passes: the same run may be published again.
    s3 = t.add_snapshot(run["branch"])
    rcv.set(default=PASS)
    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", audited_snapshot_id=s3,
                     published_snapshot_id=s3)
    assert [a["verdict"] for a in done["audits"]] == ["pass"], "audits are those of the latest attempt"
    assert t.head("main") == s3
    assert kinds(run_events(floe, run["id"]))[-2:] == ["wap.hook-called", "wap.published"]


def test_long_reason_is_truncated_not_lost(floe, table, hooks, webhooks):
    t = table
    reason = "bad rows: " + "x" * 50_000  # under the 64 KiB answer cap
    rcv = webhooks(Reply(422, {"reason": reason}))
    hooks(floe, "verbose", rcv.url, scope=table_scope(t))
    run = t.stage()
    t.add_snapshot(run["branch"])
    err = assert_error(t.publish(run["id"]), 422, "AuditRejectedException")
    assert "bad rows: xxxx" in err["message"]
    assert len(err["message"]) < 1000, "the reason is not truncated"
    got = assert_ok_json(floe.get(t.run_url(run["id"])))
    assert got["audits"][0]["reason"].startswith("bad rows: xxxx")
    assert len(got["audits"][0]["reason"].encode()) <= 256, "a reason is at most 256 bytes"
    assert t.head("main") == t.s1


# --------------------------------------------------------------------------
# publish: the hook cannot give a verdict


ERROR_CASES = {
    "500": dict(reply=Reply(500, {"error": "database down"}), timeout_ms=2000, min_calls=1, max_calls=3),
    "garbage-400": dict(reply=Reply(400, b"\x00\xff<html>}}{{not json"), timeout_ms=2000, min_calls=1, max_calls=1),
    "401": dict(reply=Reply(401, {"passed": True}), timeout_ms=2000, min_calls=1, max_calls=1),
    "redirect": dict(reply=None, timeout_ms=2000, min_calls=1, max_calls=1),
    "not-http": dict(reply=Reply(raw=b"SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n"), timeout_ms=2000,
                     min_calls=1, max_calls=3),
    "hang": dict(reply=Reply(200, {"passed": True}, delay=10), timeout_ms=500, min_calls=1, max_calls=3),
    "refused": dict(reply=None, timeout_ms=2000, min_calls=0, max_calls=0),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_publish_audit_unavailable_fails_closed(floe, table, hooks, webhooks, case):
    spec = ERROR_CASES[case]
    t = table
    decoy = webhooks(PASS)   # the target of the redirect: must never be reached
    if case == "refused":
        rcv, url = None, refused_url()
    elif case == "redirect":
        rcv = webhooks(Reply(302, b"", headers={"Location": decoy.url}))
        url = rcv.url
    else:
        rcv = webhooks(spec["reply"])
        url = rcv.url
    hook = hooks(floe, f"flaky-{case}", url, scope=table_scope(t), timeout_ms=spec["timeout_ms"])
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    before = t.load()

    started = time.monotonic()
    r = t.publish(run["id"])
    elapsed = time.monotonic() - started
    err = assert_error(r, 503, "AuditUnavailableException")
    assert f"flaky-{case}" in err["message"], err
    assert retry_after_ok(r.headers.get("Retry-After")), f"Retry-After: {r.headers.get('Retry-After')!r}"
    budget = spec["timeout_ms"] / 1000 + MARGIN
    assert elapsed < budget, f"publish took {elapsed:.2f}s, the hook's budget is {spec['timeout_ms']} ms"
    calls = rcv.count() if rcv else 0
    assert spec["min_calls"] <= calls <= spec["max_calls"], f"{calls} calls"
    assert decoy.count() == 0, "floe followed a redirect"
    assert_main_unchanged(t, before)
    assert t.head(run["branch"]) == s2

    got = check_run(assert_ok_json(floe.get(t.run_url(run["id"]))), t, "audit-failed")
    assert got.get("published-snapshot-id") is None
    assert [a["verdict"] for a in got["audits"]] == ["error"], got
    assert got["audits"][0]["hook-id"] == hook["id"]
    events = run_events(floe, run["id"])
    assert kinds(events) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.audit-failed"], kinds(events)
    d = events[3]["details"]
    assert d["verdict"] == "error" and d["hook-id"] == hook["id"], d
    if rcv is not None:
        assert d["attempts"] == calls or (case == "hang" and d["attempts"] >= 1), (d, calls)

    # Fix the hook; the same run is published on the next try.
    if case in ("refused", "redirect"):
        fixed = webhooks(PASS)
        assert floe.delete(f"/v1/audit-hooks/{hook['id']}").status_code == 204
        hooks(floe, f"fixed-{case}", fixed.url, scope=table_scope(t))
    else:
        rcv.set(default=PASS)
    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    assert [a["verdict"] for a in done["audits"]] == ["pass"]
    assert t.head("main") == s2
    assert kinds(run_events(floe, run["id"]))[-1] == "wap.published"


def test_5xx_is_retried_then_passes(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS, script=[Reply(500, "try later"), Reply(503, "try later")])
    hook = hooks(floe, "warming-up", rcv.url, scope=table_scope(t), timeout_ms=10000)
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    assert rcv.count() == 3, f"{rcv.count()} requests"
    assert done["audits"][0]["verdict"] == "pass" and done["audits"][0]["http-status"] == 200
    called = [e for e in run_events(floe, run["id"]) if e["event"] == "wap.hook-called"]
    assert len(called) == 1, called
    assert called[0]["details"]["attempts"] == 3 and called[0]["details"]["hook-id"] == hook["id"]
    assert t.head("main") == s2


def test_5xx_is_retried_at_most_twice(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(Reply(502, "bad gateway"))
    hooks(floe, "down", rcv.url, scope=table_scope(t), timeout_ms=10000)
    run = t.stage()
    t.add_snapshot(run["branch"])
    r = t.publish(run["id"])
    assert_error(r, 503, "AuditUnavailableException")
    time.sleep(0.5)
    assert rcv.count() == 3, f"{rcv.count()} requests: one call and at most two retries"
    assert t.head("main") == t.s1


# --------------------------------------------------------------------------
# the call: headers, signature, payload


def test_signature_headers_and_payload(floe, table, hooks, webhooks):
    t = table
    secret = "wap-shared-secret-\u00e9"
    signed = webhooks(PASS, secret=secret)
    unsigned = webhooks(PASS)
    h1 = hooks(floe, "signed", signed.url, scope=table_scope(t), secret=secret)
    h2 = hooks(floe, "unsigned", unsigned.url, scope={"namespace": t.namespace})
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    s3 = t.add_snapshot(run["branch"])
    before = t.load()
    sent_at = datetime.now(timezone.utc)

    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s3)
    assert sorted(a["hook-name"] for a in done["audits"]) == ["signed", "unsigned"]
    assert signed.count() == 1 and unsigned.count() == 1

    sreq, ureq = signed.requests[0], unsigned.requests[0]
    for req in (sreq, ureq):
        assert req.method == "POST"
        assert req.path == "/audit"
        assert req.header("Content-Type", ).startswith("application/json"), req.headers
        assert req.header("X-Floe-Event") == "wap.audit", req.headers
        assert is_uuid(req.header("X-Floe-Delivery")), req.headers

    # The receiver recomputed the HMAC-SHA256 of "<timestamp>.<raw body>"
    # with the secret; the timestamp is now, in Unix seconds.
    ts = sreq.header("X-Floe-Timestamp")
    assert ts is not None and re.fullmatch(r"\d+", ts), sreq.headers
    assert abs(int(ts) - sent_at.timestamp()) < 30, (ts, sent_at)
    assert sreq.signature_valid is True, (sreq.header("X-Floe-Signature-256"), signature(secret, ts, sreq.body))
    assert sreq.header("X-Floe-Signature-256") == signature(secret, ts, sreq.body)
    assert sreq.header("X-Floe-Signature-256") != signature("another secret", ts, sreq.body)
    assert sreq.header("X-Floe-Signature-256") != signature(secret, int(ts) - 1, sreq.body), \
        "the timestamp is not part of the signed string"
    assert ureq.header("X-Floe-Signature-256") is None, "a hook without a secret gets no signature"
    assert sreq.header("X-Floe-Delivery") != ureq.header("X-Floe-Delivery")

    meta = before["metadata"]
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == s3)
    for req, hook in ((sreq, h1), (ureq, h2)):
        p = req.json()
        assert set(p) == PAYLOAD_KEYS, f"payload keys {sorted(p)}"
        assert p["event"] == "wap.audit"
        assert p["run-id"] == run["id"]
        assert p["delivery-id"] == req.header("X-Floe-Delivery")
        assert p["table"] == {"namespace": t.namespace, "name": t.name}
        assert p["table-uuid"] == meta["table-uuid"]
        assert p["branch"] == run["branch"]
        assert p["snapshot-id"] == s3, "snapshot-id must be the branch head"
        assert p["parent-snapshot-id"] == s2
        assert p["main-snapshot-id"] == t.s1, "main-snapshot-id must be main's snapshot"
        assert p["snapshot"] == snap
        assert p["schema"]["schema-id"] == 0 and p["schema"]["fields"] == meta["schemas"][0]["fields"]
        assert p["metadata-location"] == before["metadata-location"]
        at = parse_rfc3339(p["requested-at"])
        assert sent_at - timedelta(seconds=5) <= at <= datetime.now(timezone.utc) + timedelta(seconds=5), at
        assert p["requested-by"] == "anonymous"


def test_signature_covers_the_exact_body_for_every_attempt(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS, script=[Reply(500, "again")], secret="retry-secret")
    hooks(floe, "retry-signed", rcv.url, scope=table_scope(t), secret="retry-secret", timeout_ms=10000)
    run = t.stage()
    t.add_snapshot(run["branch"])
    assert_ok_json(t.publish(run["id"]))
    assert rcv.count() == 2
    assert all(r.signature_valid for r in rcv.requests), [r.headers for r in rcv.requests]


def test_hooks_are_called_in_parallel_and_all_must_pass(floe, table, hooks, webhooks):
    t = table
    slow = [webhooks(Reply(200, {"passed": True}, delay=1.2)) for _ in range(3)]
    for i, rcv in enumerate(slow):
        hooks(floe, f"slow-{i}", rcv.url, scope=table_scope(t), timeout_ms=10000)
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    started = time.monotonic()
    done = check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    elapsed = time.monotonic() - started
    assert len(done["audits"]) == 3
    assert elapsed < 3.0, f"three 1.2 s hooks took {elapsed:.2f}s: not called in parallel"


def test_one_reject_among_passes_rejects_and_reject_wins_over_error(floe, table, hooks, webhooks):
    t = table
    ok = webhooks(PASS)
    no = webhooks(Reply(200, {"passed": False, "reason": "nulls in id"}))
    broken = webhooks(Reply(500, "oops"))
    hooks(floe, "ok", ok.url, scope=table_scope(t))
    hooks(floe, "no", no.url, scope={"namespace": t.namespace})
    hooks(floe, "broken", broken.url, scope=table_scope(t), timeout_ms=2000)
    run = t.stage()
    t.add_snapshot(run["branch"])
    err = assert_error(t.publish(run["id"]), 422, "AuditRejectedException")
    assert "no" in err["message"] and "nulls in id" in err["message"], err
    got = check_run(assert_ok_json(floe.get(t.run_url(run["id"]))), t, "rejected")
    assert sorted((a["hook-name"], a["verdict"]) for a in got["audits"]) == [
        ("broken", "error"), ("no", "reject"), ("ok", "pass")]
    assert t.head("main") == t.s1


def test_error_and_pass_is_audit_failed(floe, table, hooks, webhooks):
    t = table
    ok = webhooks(PASS)
    hooks(floe, "ok", ok.url, scope=table_scope(t))
    hooks(floe, "gone", refused_url(), scope=table_scope(t), timeout_ms=1000)
    run = t.stage()
    t.add_snapshot(run["branch"])
    r = t.publish(run["id"])
    assert_error(r, 503, "AuditUnavailableException")
    assert retry_after_ok(r.headers.get("Retry-After"))
    check_run(assert_ok_json(floe.get(t.run_url(run["id"]))), t, "audit-failed")
    assert t.head("main") == t.s1


# --------------------------------------------------------------------------
# the table moves during the audit


def test_branch_advanced_during_audit_publishes_the_audited_snapshot(floe, table, hooks, webhooks):
    t = table
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    other = TableHandle(Client(floe), t.namespace, t.name)
    moved = {}

    def commit_to_branch_then_pass(req):
        moved["s3"] = other.add_snapshot(run["branch"])
        return PASS

    rcv = webhooks(PASS, on_request=commit_to_branch_then_pass)
    hooks(floe, "slowpoke", rcv.url, scope=table_scope(t))
    r = t.publish(run["id"])
    assert not rcv.errors, rcv.errors
    done = check_run(assert_ok_json(r), t, "published", audited_snapshot_id=s2, published_snapshot_id=s2)
    assert rcv.requests[0].json()["snapshot-id"] == s2
    assert t.head("main") == s2, "the new branch head was published instead of the audited snapshot"
    # The branch moved on: it is kept, with the new snapshot.
    assert t.head(run["branch"]) == moved["s3"]
    assert done["published-snapshot-id"] != moved["s3"]


def test_main_advanced_during_audit_is_409_and_nothing_is_published(floe, table, hooks, webhooks):
    t = table
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    other = TableHandle(Client(floe), t.namespace, t.name)
    moved = {}

    def commit_to_main_then_pass(req):
        moved["m2"] = other.add_snapshot("main")
        return PASS

    rcv = webhooks(PASS, on_request=commit_to_main_then_pass)
    hooks(floe, "slowpoke", rcv.url, scope=table_scope(t))
    r = t.publish(run["id"])
    assert not rcv.errors, rcv.errors
    assert_error(r, 409, "NotFastForwardException")
    assert t.head("main") == moved["m2"], "main is not the concurrent writer's snapshot"
    assert t.head(run["branch"]) == s2
    got = check_run(assert_ok_json(floe.get(t.run_url(run["id"]))), t, "staged")
    assert got.get("published-snapshot-id") is None
    ev = kinds(run_events(floe, run["id"]))
    assert "wap.conflict" in ev and "wap.published" not in ev, ev


def test_main_moved_before_publish_is_409(floe, table, hooks, passing):
    t = table
    hooks(floe, "quality", passing.url, scope=table_scope(t))
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    m2 = t.add_snapshot("main")
    before = t.load()
    assert_error(t.publish(run["id"]), 409, "NotFastForwardException")
    assert_main_unchanged(t, before)
    assert t.head("main") == m2 and t.head(run["branch"]) == s2
    assert assert_ok_json(floe.get(t.run_url(run["id"])))["state"] != "published"


# --------------------------------------------------------------------------
# which hooks are in scope


def test_no_hook_in_scope_is_412(floe, ns, hooks, webhooks):
    t = new_table(floe, ns)
    name = ns[0]
    not_covering = [
        {"namespace": [name + "_elsewhere"]},
        {"namespace": [name[:-1]]},                     # a string prefix of the namespace
        {"namespace": [name, "child"]},                 # below the table's namespace
        {"namespace": [name], "table": "other"},        # another table here
        {"namespace": [name + "_elsewhere"], "table": t.name},  # same name elsewhere
    ]
    receivers = []
    for i, scope in enumerate(not_covering):
        rcv = webhooks(PASS)
        receivers.append(rcv)
        hooks(floe, f"out-of-scope-{i}", rcv.url, scope=scope)
    run = t.stage()
    t.add_snapshot(run["branch"])
    assert_error(t.publish(run["id"]), 412, "NoAuditHookException")
    assert all(r.count() == 0 for r in receivers), [r.count() for r in receivers]
    assert t.head("main") == t.s1
    assert assert_ok_json(floe.get(t.run_url(run["id"])))["state"] == "staged"

    # A hook that was in scope and is deleted no longer counts.
    gone = webhooks(PASS)
    h = hooks(floe, "deleted", gone.url, scope=table_scope(t))
    assert floe.delete(f"/v1/audit-hooks/{h['id']}").status_code == 204
    assert_error(t.publish(run["id"]), 412, "NoAuditHookException")
    assert gone.count() == 0

    # A hook on the table's namespace covers it.
    here = webhooks(PASS)
    hooks(floe, "namespace-hook", here.url, scope={"namespace": [name]})
    s_head = t.head(run["branch"])
    check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s_head)
    assert here.count() == 1
    assert all(r.count() == 0 for r in receivers)


def test_hook_on_an_ancestor_namespace_covers_tables_below(floe, ns, hooks, webhooks):
    deep = ns + ["eu", "de"]
    floe.create_namespace(ns + ["eu"])
    floe.create_namespace(deep)
    t = new_table(floe, deep, "invoices")
    rcv = webhooks(PASS)
    hooks(floe, "top", rcv.url, scope={"namespace": ns})
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    assert rcv.count() == 1
    assert rcv.requests[0].json()["table"] == {"namespace": deep, "name": "invoices"}


def test_catalog_wide_hook_covers_every_table(fresh_floe, hooks, webhooks):
    f = fresh_floe
    rcv = webhooks(PASS)
    hooks(f, "everything", rcv.url)
    for levels in (["a"], ["b"], ["b", "c"]):
        f.create_namespace(levels)
    for levels in (["a"], ["b", "c"]):
        t = new_table(f, levels, "t")
        run = t.stage()
        s2 = t.add_snapshot(run["branch"])
        check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=s2)
    assert rcv.count() == 2


# --------------------------------------------------------------------------
# concurrent publishes


def test_two_runs_racing_on_one_table_one_wins(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(Reply(200, {"passed": True}, delay=1.0))
    hooks(floe, "slow", rcv.url, scope=table_scope(t), timeout_ms=10000)
    runs = [t.stage(), t.stage()]
    heads = [t.add_snapshot(r["branch"]) for r in runs]
    barrier = threading.Barrier(2)
    results = [None, None]

    def go(i):
        c = TableHandle(Client(floe), t.namespace, t.name)
        barrier.wait()
        results[i] = c.publish(runs[i]["id"])

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 409], [describe(r) for r in results]
    win = 0 if results[0].status_code == 200 else 1
    lose = 1 - win
    assert_error(results[lose], 409)
    assert results[win].json()["published-snapshot-id"] == heads[win]
    assert t.head("main") == heads[win]
    assert assert_ok_json(floe.get(t.run_url(runs[lose]["id"])))["state"] != "published"
    assert t.head(runs[lose]["branch"]) == heads[lose]


def test_the_same_run_published_twice_at_once(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(Reply(200, {"passed": True}, delay=1.0))
    hooks(floe, "slow", rcv.url, scope=table_scope(t), timeout_ms=10000)
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])
    results = [None, None]

    def go(i):
        c = TableHandle(Client(floe), t.namespace, t.name)
        if i:
            time.sleep(0.3)   # the first is being audited by now
        results[i] = c.publish(run["id"])

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert results[0].status_code == 200, describe(results[0])
    assert_error(results[1], 409, "WapRunStateException")
    assert rcv.count() == 1
    assert t.head("main") == s2


# --------------------------------------------------------------------------
# enforced publish


def test_enforced_publish_on_a_namespace(floe, ns, hooks, webhooks):
    t = new_table(floe, ns)
    peer = new_table(floe, ns, "peer")
    set_ns_props(floe, ns, {"floe.wap.required": "true"})
    s1 = t.s1

    # Moving main by a raw commit: refused, whatever the form.
    before = t.load()
    _, updates = t.snapshot_updates("main")
    err = assert_error(t.commit(updates), 403, "ForbiddenException")
    assert "floe.wap.required" in err["message"], err
    b1 = t.add_snapshot("dev")
    r = t.commit([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": b1}])
    assert_error(r, 403, "ForbiddenException")
    # ... through the refs API
    assert_error(floe.post(t.ref_url("main") + "/fast-forward", json={"to": "dev"}), 403, "ForbiddenException")
    assert_error(floe.post(t.refs_url, json={"name": "main", "type": "branch", "snapshot-id": b1,
                                             "replace": True}), 403, "ForbiddenException")
    # ... and through a multi-table transaction: nothing of it lands.
    peer_before = peer.load()
    _, updates = t.snapshot_updates("main")
    r = floe.post("/v1/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": peer.namespace, "name": peer.name}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"touched": "yes"}}]},
        {"identifier": {"namespace": t.namespace, "name": t.name}, "requirements": [], "updates": updates},
    ]})
    assert_error(r, 403, "ForbiddenException")
    assert peer.load()["metadata-location"] == peer_before["metadata-location"]
    assert t.head("main") == s1
    assert t.load()["metadata"]["refs"]["main"] == before["metadata"]["refs"]["main"]

    # Everything else stays allowed.
    b2 = t.add_snapshot("dev")
    t.commit_ok([{"action": "set-properties", "updates": {"owner": "finance"}}])
    new_schema = {"type": "struct", "schema-id": 1, "fields": TableHandle.SCHEMA["fields"] + [
        {"id": 3, "name": "note", "required": False, "type": "string"}]}
    t.commit_ok([{"action": "add-schema", "schema": new_schema, "last-column-id": 3},
                 {"action": "set-current-schema", "schema-id": -1}])
    TableHandle(floe, ns, "brand_new").create()
    assert_ok_json(floe.post(t.refs_url, json={"name": "tagged", "type": "tag", "snapshot-id": b2}), 201)
    assert t.head("main") == s1

    # /wap publish is the way.
    rcv = webhooks(PASS)
    hooks(floe, "sox", rcv.url, scope={"namespace": ns})
    run = t.stage()
    w1 = t.add_snapshot(run["branch"])
    check_run(assert_ok_json(t.publish(run["id"])), t, "published", published_snapshot_id=w1)
    assert t.head("main") == w1
    assert t.metadata()["current-snapshot-id"] == w1
    # ... and only the way: main is still protected afterwards.
    _, updates = t.snapshot_updates("main")
    assert_error(t.commit(updates), 403, "ForbiddenException")


def test_enforced_publish_on_an_ancestor_namespace_and_on_a_table(floe, ns):
    child = ns + ["mart"]
    floe.create_namespace(child)
    below = new_table(floe, child, "facts")
    sibling_ns = [ns[0] + "_free"]
    floe.create_namespace(sibling_ns)
    free = new_table(floe, sibling_ns, "facts")
    own = new_table(floe, sibling_ns, "guarded")

    set_ns_props(floe, ns, {"floe.wap.required": "true"})
    own.commit_ok([{"action": "set-properties", "updates": {"floe.wap.required": "true"}}])

    for t in (below, own):
        _, updates = t.snapshot_updates("main")
        assert_error(t.commit(updates), 403, "ForbiddenException")
        assert t.head("main") == t.s1
    # A table outside the protected namespace, without the property: free.
    m2 = free.add_snapshot("main")
    assert free.head("main") == m2


def test_wap_required_false_does_not_protect(floe, ns):
    set_ns_props(floe, ns, {"floe.wap.required": "false"})
    t = new_table(floe, ns)
    m2 = t.add_snapshot("main")
    assert t.head("main") == m2


# --------------------------------------------------------------------------
# the audit log


def psql(psql_bin, url, sql):
    return subprocess.run([str(psql_bin), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", url, "-c", sql],
                          capture_output=True, text=True, timeout=60)


def test_audit_events_cannot_be_changed_or_deleted(floe, table, hooks, passing, psql_bin):
    t = table
    hooks(floe, "quality", passing.url, scope=table_scope(t))
    run = t.stage()
    t.add_snapshot(run["branch"])
    assert_ok_json(t.publish(run["id"]))
    url = database_url(floe)
    snapshot_sql = ("SELECT count(*) || ':' || md5(coalesce(string_agg(id || '|' || event || '|' || "
                    "coalesce(run_id::text, '') || '|' || details::text, ',' ORDER BY id), '')) FROM audit_events")
    before = psql(psql_bin, url, snapshot_sql)
    assert before.returncode == 0, before.stderr
    assert int(before.stdout.split(":")[0]) >= 3, before.stdout
    api_before = audit_events(floe, run=run["id"])

    for sql in (
        "UPDATE audit_events SET event = 'tampered'",
        f"UPDATE audit_events SET details = '{{}}'::jsonb WHERE run_id = '{run['id']}'",
        "DELETE FROM audit_events",
        f"DELETE FROM audit_events WHERE run_id = '{run['id']}'",
        "TRUNCATE audit_events",
    ):
        res = psql(psql_bin, url, sql)
        assert res.returncode != 0, f"{sql!r} succeeded: {res.stdout} {res.stderr}"
        assert "ERROR" in res.stderr, res.stderr

    after = psql(psql_bin, url, snapshot_sql)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout, "audit_events changed"
    assert audit_events(floe, run=run["id"]) == api_before


def test_audit_log_filters_pagination_and_order(fresh_floe, uniq, hooks, webhooks):
    # A floe of its own: the module's floe still writes the events of
    # earlier tests' audits (hooks that hang, leases that expire) while
    # this one reads the whole log.
    floe = fresh_floe
    ns_a, ns_b = [uniq], [uniq + "_b"]
    floe.create_namespace(ns_a)
    floe.create_namespace(ns_b)
    a1 = new_table(floe, ns_a, "orders")
    a2 = new_table(floe, ns_a, "refunds")
    b1 = new_table(floe, ns_b, "orders")     # same name, other namespace
    rcv = webhooks(PASS)
    hooks(floe, "a", rcv.url, scope={"namespace": ns_a})
    hooks(floe, "b", rcv.url, scope={"namespace": ns_b})

    # batch one
    stage = floe.post(a1.wap_url, json={})
    r_a1 = assert_ok_json(stage, 201)
    a1.add_snapshot(r_a1["branch"])
    pub = a1.publish(r_a1["id"])
    assert_ok_json(pub)
    r_a2 = a2.stage()
    assert_ok_json(floe.delete(a2.run_url(r_a2["id"])))

    # a gap of more than a second on both sides of `since`
    since = datetime.fromtimestamp(int(time.time()) + 2, timezone.utc)
    while datetime.now(timezone.utc) < since + timedelta(milliseconds=300):
        time.sleep(0.05)

    # batch two
    r_b1 = b1.stage()
    b1.add_snapshot(r_b1["branch"])
    assert_ok_json(b1.publish(r_b1["id"]))
    r_a1b = a1.stage()

    everything = audit_events(floe)
    for e in everything:
        check_event(e)
    ids = [e["id"] for e in everything]
    assert len(set(ids)) == len(ids), "an event served twice"
    # The log is served in the order of the transactions that wrote it
    # (their xid), so events of concurrent transactions, as earlier tests
    # of this module make, need not come in id order; this test's own,
    # made one after the other, must.
    mine = [e for e in everything if e["namespace"] in (ns_a, ns_b)]
    assert len(mine) >= 9, mine
    assert [e["id"] for e in mine] == sorted(e["id"] for e in mine), "not oldest first"
    ats = [parse_rfc3339(e["at"]) for e in mine]
    assert ats == sorted(ats), "not oldest first"

    def of_runs(events, *runs):
        return [e for e in events if e["run-id"] in {r["id"] for r in runs}]

    # run
    got = audit_events(floe, run=r_a1["id"])
    assert kinds(got) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.published"]
    assert got == of_runs(everything, r_a1)
    assert got[0]["request-id"] == stage.headers["X-Request-Id"]
    assert got[2]["request-id"] == pub.headers["X-Request-Id"]
    assert kinds(audit_events(floe, run=r_a2["id"])) == ["wap.staged", "wap.abandoned"]
    assert audit_events(floe, run=str(uuid.uuid4())) == []

    # namespace
    got = audit_events(floe, namespace="\x1f".join(ns_a))
    assert got == [e for e in everything if e["namespace"] == ns_a]
    assert of_runs(got, r_a1, r_a2, r_a1b, r_b1) == of_runs(everything, r_a1, r_a2, r_a1b)
    assert {e["run-id"] for e in got if e["run-id"]} == {r_a1["id"], r_a2["id"], r_a1b["id"]}

    # namespace + table: same table name in another namespace is not included
    got = audit_events(floe, namespace="\x1f".join(ns_a), table="orders")
    assert got == [e for e in everything if e["namespace"] == ns_a and e["table"] == "orders"]
    assert {e["run-id"] for e in got} == {r_a1["id"], r_a1b["id"]}
    got = audit_events(floe, namespace="\x1f".join(ns_b), table="orders")
    assert {e["run-id"] for e in got} == {r_b1["id"]}

    # since
    got = audit_events(floe, since=rfc3339(since))
    assert got == [e for e in everything if parse_rfc3339(e["at"]) >= since]
    assert {e["run-id"] for e in got if e["run-id"]} == {r_b1["id"], r_a1b["id"]}
    got = audit_events(floe, since=rfc3339(since), namespace="\x1f".join(ns_a))
    assert kinds(got) == ["wap.staged"] and got[0]["run-id"] == r_a1b["id"]
    assert audit_events(floe, since=rfc3339(datetime.now(timezone.utc) + timedelta(hours=1))) == []

    # pagination: every page size walks to the same list
    for size in (1, 2, 3):
        assert audit_events(floe, page_size=size, namespace="\x1f".join(ns_a)) == \
            [e for e in everything if e["namespace"] == ns_a], f"pageSize={size}"
    assert audit_events(floe, page_size=4) == everything
    page = assert_ok_json(floe.get("/v1/audit-log", params={"pageSize": 2, "pageToken": "",
                                                           "namespace": "\x1f".join(ns_a)}))
    assert len(page["events"]) == 2 and page["next-page-token"], page


@pytest.mark.parametrize("since", [
    "yesterday", "now", "epoch", "infinity", "-infinity", "today",
    "2026-12-05T10:00:00",           # no zone: the session's would be taken
    "2026-12-05 10:00:00Z",          # a space for the T
    "2026-02-30T10:00:00Z",          # no such day
    "2027-02-29T10:00:00Z",          # not a leap year
    "0000-01-01T00:00:00Z",
    "2026-12-05T10:00:00+2:00",
    "",
])
def test_audit_log_since_is_rfc3339_or_400(floe, since):
    """PostgreSQL's timestamptz input takes special words (yesterday, now,
    epoch, infinity) and zone-less times; 'since' is RFC 3339, checked
    before it reaches SQL."""
    r = floe.get("/v1/audit-log", params={"since": since})
    assert_error(r, 400, "BadRequestException")
    assert r.json()["error"]["message"] == (
        "Query parameter 'since' must be an RFC 3339 time with a zone "
        f"(2026-12-05T10:00:00Z), not '{since}'")


@pytest.mark.parametrize("since", ["2024-02-29T10:00:00Z", "2026-12-05t10:00:00.123456+05:30",
                                   "2026-12-05T10:00:00z", "1970-01-01T00:00:00-00:00"])
def test_audit_log_since_takes_rfc3339(floe, since):
    assert_ok_json(floe.get("/v1/audit-log", params={"since": since}))


def test_audit_log_through_a_prefix(floe, table):
    run = table.stage()
    got = assert_ok_json(floe.get("/v1/warehouse/audit-log", params={"run": run["id"]}))["events"]
    assert kinds(got) == ["wap.staged"]
    assert got == audit_events(floe, run=run["id"])


# --------------------------------------------------------------------------
# the payload's schema, a vanished branch


def test_payload_schema_is_the_schema_of_the_audited_snapshot(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "schema-check", rcv.url, scope=table_scope(t))
    run = t.stage()
    s2 = t.add_snapshot(run["branch"])          # written with schema 0
    wider = {"type": "struct", "schema-id": 1, "fields": TableHandle.SCHEMA["fields"] + [
        {"id": 3, "name": "added_later", "required": False, "type": "string"}]}
    t.commit_ok([{"action": "add-schema", "schema": wider, "last-column-id": 3},
                 {"action": "set-current-schema", "schema-id": -1}])
    assert t.metadata()["current-schema-id"] == 1
    assert_ok_json(t.publish(run["id"]))
    p = rcv.requests[0].json()
    assert p["snapshot-id"] == s2
    assert p["schema"]["schema-id"] == 0, p["schema"]
    assert [f["name"] for f in p["schema"]["fields"]] == ["id", "data"], p["schema"]


def test_a_run_whose_branch_was_dropped_is_not_published(floe, table, hooks, webhooks):
    t = table
    rcv = webhooks(PASS)
    hooks(floe, "h", rcv.url, scope=table_scope(t))
    run = t.stage()
    t.add_snapshot(run["branch"])
    r = floe.delete(t.ref_url(run["branch"]))
    assert r.status_code == 204, describe(r)
    r = t.publish(run["id"])
    assert 400 <= r.status_code < 500, describe(r)
    assert_error(r, r.status_code)
    assert rcv.count() == 0
    assert t.head("main") == t.s1


# --------------------------------------------------------------------------
# operating floe: worker pool, crashes, replicas


def test_reads_and_commits_are_served_while_audits_wait(postgres, floe_factory, hooks, webhooks):
    """Audits may wait on a hook for up to a minute; meanwhile the catalog
    must keep answering engines, even with a small worker pool."""
    f = floe_factory(args=["--threads=2"], env={"FLOE_DATABASE_URL": postgres.new_database()})
    f.create_namespace(["slow"])
    rcv = webhooks(Reply(200, {"passed": True}, delay=4))
    hooks(f, "slow", rcv.url, scope={"namespace": ["slow"]}, timeout_ms=20000)
    tables = []
    for i in range(3):
        t = new_table(f, ["slow"], f"t{i}")
        run = t.stage()
        t.add_snapshot(run["branch"])
        tables.append((t, run))
    results = {}

    def publish(i):
        t, run = tables[i]
        results[i] = TableHandle(Client(f), t.namespace, t.name).publish(run["id"])

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(3)]
    for th in threads:
        th.start()
    rcv.wait_for(2, 5)
    time.sleep(0.3)
    probe = Client(f)
    timings = {}
    for label, call in (
        ("config", lambda: probe.get("/v1/config", timeout=30)),
        ("loadTable", lambda: probe.get(tables[0][0].url, timeout=30)),
        ("commit", lambda: probe.post(tables[1][0].url, timeout=30, json={"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"touched": "during-audit"}}]})),
    ):
        started = time.monotonic()
        r = call()
        timings[label] = round(time.monotonic() - started, 2)
        assert r.status_code == 200, describe(r)
    for th in threads:
        th.join(60)
    assert sorted(r.status_code for r in results.values()) == [200, 200, 200], \
        [describe(r) for r in results.values()]
    slow_calls = {k: v for k, v in timings.items() if v > 1.0}
    assert not slow_calls, f"requests waited for audits to finish: {timings} (seconds)"


def test_a_run_interrupted_by_a_crash_can_be_published_after_restart(postgres, floe_factory, hooks, webhooks):
    db = postgres.new_database()
    workdir = make_shared_tmpdir("floe-it-wapcrash-")
    daemons = []
    try:
        f = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(f)
        f.create_namespace(["crash"])
        rcv = webhooks(Reply(200, {"passed": True}, delay=30))
        # The audit's lease is the hook timeout plus floe's margin (10 s).
        hook_id = register_hook(f, "stuck", rcv.url, scope={"namespace": ["crash"]}, timeout_ms=3000)["id"]
        t = new_table(f, ["crash"])
        run = t.stage()
        s2 = t.add_snapshot(run["branch"])

        def publish():
            try:
                TableHandle(Client(f), t.namespace, t.name).publish(run["id"], timeout=60)
            except requests.RequestException:
                pass  # floe dies under it

        th = threading.Thread(target=publish, daemon=True)
        th.start()
        assert rcv.wait_for(1, 10), "the hook was not called"
        f.proc.kill()
        f.proc.wait(10)
        th.join(10)

        rcv.set(default=PASS)
        g = floe_factory(env={"FLOE_DATABASE_URL": db}, workdir=workdir)
        daemons.append(g)
        tg = TableHandle(g, t.namespace, t.name)
        assert tg.head("main") == t.s1
        # While the dead floe's lease lasts the run is still "auditing"
        # (another replica could be auditing it); after it, the run is free.
        deadline = time.monotonic() + 40
        while True:
            r = tg.publish(run["id"])
            if r.status_code != 409 or time.monotonic() > deadline:
                break
            assert_error(r, 409, "WapRunStateException")
            time.sleep(1)
        assert r.status_code == 200, (
            f"a run whose audit was cut short by a crash is stuck: {describe(r)}; "
            f"state {assert_ok_json(g.get(tg.run_url(run['id'])))['state']!r}")
        assert tg.head("main") == s2
        g.delete(f"/v1/audit-hooks/{hook_id}")
    finally:
        for d in daemons:
            d.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def test_two_replicas_racing_on_one_run_publish_once(postgres, floe_factory, hooks, webhooks):
    db = postgres.new_database()
    scratch = make_shared_tmpdir("floe-it-wapreplicas-")
    try:
        wh = scratch / "wh"
        a = floe_factory(args=[f"--warehouse=file://{wh}"], env={"FLOE_DATABASE_URL": db})
        b = floe_factory(args=[f"--warehouse=file://{wh}"], env={"FLOE_DATABASE_URL": db})
        a.create_namespace(["rep"])
        rcv = webhooks(Reply(200, {"passed": True}, delay=1.0))
        hooks(a, "slow", rcv.url, scope={"namespace": ["rep"]}, timeout_ms=10000)
        t = new_table(a, ["rep"])
        run = t.stage()
        s2 = t.add_snapshot(run["branch"])
        other = t.stage()
        o2 = t.add_snapshot(other["branch"])
        results = {}
        barrier = threading.Barrier(3)

        def publish(key, daemon, run_id):
            c = TableHandle(Client(daemon), t.namespace, t.name)
            barrier.wait()
            results[key] = c.publish(run_id)

        threads = [threading.Thread(target=publish, args=("a-run", a, run["id"])),
                   threading.Thread(target=publish, args=("b-run", b, run["id"])),
                   threading.Thread(target=publish, args=("b-other", b, other["id"]))]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        codes = {k: r.status_code for k, r in results.items()}
        assert sum(1 for c in codes.values() if c == 200) == 1, {k: describe(r) for k, r in results.items()}
        assert sorted(codes.values()) == [200, 409, 409], {k: describe(r) for k, r in results.items()}
        winner = next(k for k, c in codes.items() if c == 200)
        expected = o2 if winner == "b-other" else s2
        assert results[winner].json()["published-snapshot-id"] == expected
        for f in (a, b):
            assert TableHandle(f, t.namespace, t.name).head("main") == expected
        published = [r for r in (assert_ok_json(a.get(t.run_url(x["id"]))) for x in (run, other))
                     if r["state"] == "published"]
        assert len(published) == 1, published
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_hook_call_cut_short_by_a_crash_is_on_record(postgres, floe_factory, webhooks):
    """The attempt of every hook call is committed before the call: floe
    killed while the hook holds its call leaves wap.hook-calling (and no
    wap.hook-called), and a floe on the same database shows it."""
    env = {"FLOE_DATABASE_URL": postgres.new_database()}
    f = floe_factory(env=env)
    f.create_namespace(["crash"])
    t = new_table(f, ["crash"])
    rcv = webhooks(Reply(200, {"passed": True}, delay=30.0))
    hook = register_hook(f, "slow", rcv.url, scope=table_scope(t), timeout_ms=20000)
    run = assert_ok_json(f.post(f"{t.url}/wap", json={}), 201)
    audited = t.add_snapshot(run["branch"])
    def publish():
        try:
            Client(f).post(f"{t.url}/wap/{run['id']}/publish", json={}, timeout=60)
        except requests.ConnectionError:
            pass  # floe was killed under it

    publishing = threading.Thread(target=publish, daemon=True)
    publishing.start()
    sent = rcv.wait_for(1, 20)
    f.kill()  # SIGKILL, while the hook holds the call
    publishing.join(30)
    rcv.stop()

    g = floe_factory(env=env)
    events = audit_events(g, run=run["id"])
    kinds = [e["event"] for e in events]
    assert kinds == ["wap.staged", "wap.audit-started", "wap.hook-calling"], kinds
    calling = events[-1]
    assert calling["details"] == {"hook-id": hook["id"], "hook-name": "slow",
                                  "delivery-id": sent[0].header("X-Floe-Delivery"),
                                  "timeout-ms": 20000, "snapshot-id": audited}
    assert calling["namespace"] == ["crash"] and calling["table"] == t.name
    assert assert_ok_json(g.get(f"{t.url}/wap/{run['id']}"))["state"] == "auditing"
