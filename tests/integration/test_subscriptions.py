"""Event subscriptions: the change feed pushed to receivers.

A subscription is a URL, a filter and a secret; floe POSTs every matching
event of the feed to the URL, one per request, as a signed CloudEvent 1.0
in structured mode. These tests run real receivers (threads of the test
process) against the real daemon and check what a receiver relies on:

- management: create, list, get, delete, resume; every bad body is a 400
  that creates nothing; an unknown id is a 404 naming it;
- the delivery: CloudEvent attributes, headers, the HMAC signature as
  documented, and `data` exactly what POST /v1/events answers;
- the filter: only matching events arrive;
- at least once, in order: a failed delivery is retried (same id) before
  anything after it, under concurrent committers too; nothing is lost;
- dead-letter: after max-attempts failures delivery stops at the held
  event, nothing later is sent, /metrics and the audit log show it;
  resume retries or skips the held event;
- start-after replays from a token of the events endpoint; a restart of
  floe loses nothing committed while it was down.

floe runs with short --subscription-poll-ms and --subscription-retry-ms so
the whole module stays fast.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from datetime import datetime

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    database_url,
    describe,
    wait_until,
)
from webhook import Reply

POLL_MS = 100
RETRY_MS = 50
SUB_ARGS = [f"--subscription-poll-ms={POLL_MS}", f"--subscription-retry-ms={RETRY_MS}"]
SECRET = "a shared secret, long enough"
OK = Reply(200, "ok")
FAIL = Reply(500, "receiver down")
SUBS = "/v1/event-subscriptions"
TOKEN = re.compile(r"^[0-9]+\.[0-9]+$")
# Every field a subscription shows.
FIELDS = {"id", "name", "url", "signed", "filter", "timeout-ms", "max-attempts", "state",
          "created-at-ms", "created-by", "position", "delivered", "last-delivered-at-ms",
          "attempts", "next-attempt-at-ms", "last-error", "held-event"}
# How long a delivery may take to show up: several poll rounds and retries.
SOON = 15


# --------------------------------------------------------------------------
# helpers


@pytest.fixture
def start(postgres, floe_factory, tmp_path):
    """start(env=..., database=..., data_dir=...) -> a floe with short
    subscription poll and retry intervals, on a fresh database unless one
    is given."""
    def go(env=None, database=None, data_dir=None, args=()):
        e = {"FLOE_DATABASE_URL": database or postgres.new_database()}
        if data_dir is not None:
            e["FLOE_DATA_DIR"] = str(data_dir)
        e.update(env or {})
        return floe_factory(args=SUB_ARGS + list(args), env=e)
    return go


@pytest.fixture
def f(start):
    return start()


@pytest.fixture
def receiver(webhooks):
    """receiver(default=OK, ...) -> a webhook.Receiver answering 200 on /floe."""
    def go(default=OK, **kw):
        kw.setdefault("path", "/floe")
        return webhooks(default, **kw)
    return go


def sub_body(url, name="lineage", secret=SECRET, **fields) -> dict:
    """A create body; fields with _ in their names are sent with -."""
    body = {"name": name, "url": url}
    if secret is not None:
        body["secret"] = secret
    for k, v in fields.items():
        body[k.replace("_", "-")] = v
    return body


def create(f, url, **kw) -> dict:
    sub = assert_ok_json(f.post(SUBS, json=sub_body(url, **kw)), 201)
    assert FIELDS <= set(sub), f"missing {sorted(FIELDS - set(sub))}: {sub}"
    return sub


def get(f, sub_id) -> dict:
    return assert_ok_json(f.get(f"{SUBS}/{sub_id}"))


def wait_sub(f, sub_id, pred, timeout=SOON, what="") -> dict:
    last = {}

    def check():
        last["s"] = get(f, sub_id)
        return pred(last["s"])
    assert wait_until(check, timeout, 0.05), f"subscription never {what}: {last.get('s')}"
    return last["s"]


def resume(f, sub_id, **body):
    return f.post(f"{SUBS}/{sub_id}/resume", json=body)


def read_feed(f, **body):
    """Every event of POST /v1/events matching body, page by page, and the
    final token."""
    events, token = [], body.pop("continuation-token", None)
    while True:
        req = dict(body)
        if token:
            req["continuation-token"] = token
        page = assert_ok_json(f.post("/v1/events", json=req))
        events += page["events"]
        if not page["events"]:
            return events, page["next-page-token"]
        token = page["next-page-token"]


def feed_after(f, token, filter_=None):
    events, _ = read_feed(f, **{"continuation-token": token, **(filter_ or {})})
    return events


def cloudevent(req) -> dict:
    return json.loads(req.body)


def ids(requests_) -> list:
    return [r.header("X-Floe-Delivery") for r in requests_]


def collapse(seq) -> list:
    """seq with repeats in a row (retries of one delivery) made one."""
    out = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def quiet(rcv, n, seconds=1.0):
    """No request beyond the n the receiver has, for several poll rounds."""
    time.sleep(seconds)
    got = rcv.requests
    assert len(got) == n, f"expected {n} requests, got {len(got)}: {ids(got)}"


def expect_deliveries(rcv, n, timeout=SOON) -> list:
    got = rcv.wait_for(n, timeout)
    assert len(got) >= n, f"expected {n} deliveries, got {len(got)}: {ids(got)}"
    return got


def table(f, ns, name) -> TableHandle:
    t = TableHandle(f, ns, name)
    t.create()
    return t


def set_prop(t: TableHandle, key: str, value: str):
    return t.commit_ok([{"action": "set-properties", "updates": {key: value}}])


def metrics(f) -> dict:
    r = f.get("/metrics")
    assert r.status_code == 200, describe(r)
    out = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def metric(page, name, **labels) -> float:
    return page.get((name, frozenset(labels.items())), 0.0)


def sub_audit(f, sub_id) -> list:
    """The subscription.* audit events that name sub_id, oldest first."""
    return [e for e in audit_events(f)
            if e["event"].startswith("subscription.") and sub_id in json.dumps(e)]


# --------------------------------------------------------------------------
# management


def test_create_list_get_delete(f, receiver):
    rcv = receiver()
    before = int(time.time() * 1000)
    flt = {"catalog-objects-by-name": [["sales"]], "operation-types": ["update-table"]}
    r = f.post(SUBS, json=sub_body(rcv.url, filter=flt))
    sub = assert_ok_json(r, 201)
    assert FIELDS <= set(sub), f"missing {sorted(FIELDS - set(sub))}: {sub}"
    # The secret is never given back.
    assert "secret" not in sub and SECRET not in r.text, r.text
    uuid.UUID(sub["id"])
    assert sub["name"] == "lineage" and sub["url"] == rcv.url
    assert sub["signed"] is True
    assert sub["filter"] == flt
    assert sub["timeout-ms"] == 10000 and sub["max-attempts"] == 10
    assert sub["state"] == "active"
    assert sub["created-by"] in (None, "anonymous"), sub
    assert before - 1000 <= sub["created-at-ms"] <= int(time.time() * 1000) + 1000, sub
    assert TOKEN.match(sub["position"]), sub
    assert sub["delivered"] == 0 and sub["attempts"] == 0
    assert sub["last-delivered-at-ms"] is None
    assert sub["last-error"] is None and sub["held-event"] is None
    assert isinstance(sub["next-attempt-at-ms"], int)

    other = create(f, rcv.url, name="search", timeout_ms=2500, max_attempts=3)
    assert other["filter"] == {} and other["timeout-ms"] == 2500 and other["max-attempts"] == 3

    listed = assert_ok_json(f.get(SUBS))
    assert set(listed) == {"subscriptions"}, listed
    assert [s["id"] for s in listed["subscriptions"]] == [sub["id"], other["id"]], "oldest first"
    assert all("secret" not in s for s in listed["subscriptions"])
    # Also under the warehouse's prefix.
    assert [s["id"] for s in assert_ok_json(f.get("/v1/warehouse/event-subscriptions"))
            ["subscriptions"]] == [sub["id"], other["id"]]

    got = get(f, sub["id"])
    stable = FIELDS - {"next-attempt-at-ms"}
    assert {k: got[k] for k in stable} == {k: sub[k] for k in stable}
    assert get(f, sub["id"]) == assert_ok_json(f.get(f"/v1/warehouse/event-subscriptions/{sub['id']}"))

    r = f.delete(f"{SUBS}/{sub['id']}")
    assert r.status_code in (200, 204), describe(r)
    err = assert_error(f.get(f"{SUBS}/{sub['id']}"), 404)
    assert sub["id"] in err["message"], err
    assert [s["id"] for s in assert_ok_json(f.get(SUBS))["subscriptions"]] == [other["id"]]
    err = assert_error(f.delete(f"{SUBS}/{sub['id']}"), 404)
    assert sub["id"] in err["message"], err

    events = [e["event"] for e in sub_audit(f, sub["id"])]
    assert events == ["subscription.created", "subscription.deleted"], events


def test_unknown_ids_are_404_naming_the_id(f):
    missing = str(uuid.uuid4())
    for r in (f.get(f"{SUBS}/{missing}"), f.delete(f"{SUBS}/{missing}"),
              resume(f, missing), f.post(f"/v1/warehouse/event-subscriptions/{missing}/resume", json={})):
        err = assert_error(r, 404)
        assert missing in err["message"], err


@pytest.mark.parametrize("change,needle", [
    pytest.param({"secret": None}, "secret", id="missing-secret"),
    pytest.param({"secret": "fifteen bytes.."}, "secret", id="short-secret"),
    pytest.param({"secret": ""}, "secret", id="empty-secret"),
    pytest.param({"secret": 1234567890123456789}, "secret", id="secret-not-a-string"),
    pytest.param({"name": None}, "name", id="missing-name"),
    pytest.param({"name": ""}, "name", id="empty-name"),
    pytest.param({"url": None}, "url", id="missing-url"),
    pytest.param({"url": "ftp://lineage.example.com/floe"}, "url", id="ftp-url"),
    pytest.param({"url": "file:///etc/passwd"}, "url", id="file-url"),
    pytest.param({"url": "not a url"}, "url", id="not-a-url"),
    pytest.param({"filter": []}, "filter", id="filter-not-an-object"),
    pytest.param({"filter": {"operation-types": ["explode-table"]}}, "operation-types",
                 id="unknown-operation-type"),
    pytest.param({"filter": {"operation-types": "update-table"}}, "operation-types",
                 id="operation-types-not-a-list"),
    pytest.param({"filter": {"object-types": ["bucket"]}}, "object-types", id="unknown-object-type"),
    pytest.param({"filter": {"catalog-objects-by-name": [[]]}}, "catalog-objects-by-name",
                 id="empty-name-path"),
    pytest.param({"filter": {"catalog-objects-by-name": ["sales"]}}, "catalog-objects-by-name",
                 id="name-path-not-a-list"),
    pytest.param({"filter": {"catalog-objects-by-id": [{"uuid": "x", "type": "table"}]}},
                 "catalog-objects-by-id", id="bad-uuid"),
    pytest.param({"max-attempts": 0}, "max-attempts", id="max-attempts-0"),
    pytest.param({"max-attempts": 101}, "max-attempts", id="max-attempts-101"),
    pytest.param({"max-attempts": "3"}, "max-attempts", id="max-attempts-string"),
    pytest.param({"max-attempts": 2.5}, "max-attempts", id="max-attempts-fraction"),
    pytest.param({"timeout-ms": 0}, "timeout-ms", id="timeout-0"),
    pytest.param({"timeout-ms": 60001}, "timeout-ms", id="timeout-60001"),
    pytest.param({"timeout-ms": -5}, "timeout-ms", id="timeout-negative"),
    pytest.param({"start-after": "nope"}, "start-after", id="bad-token"),
    pytest.param({"start-after": 17}, "start-after", id="token-not-a-string"),
])
def test_a_bad_body_is_400_and_creates_nothing(f, receiver, change, needle):
    body = sub_body(receiver().url)
    for k, v in change.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    r = f.post(SUBS, json=body)
    err = assert_error(r, 400, "BadRequestException", message_has=needle)
    assert SECRET not in err["message"]
    assert assert_ok_json(f.get(SUBS))["subscriptions"] == []


@pytest.mark.parametrize("body", [[], "x", None])
def test_a_body_that_is_no_object_is_400(f, body):
    assert_error(f.post(SUBS, json=body), 400, "BadRequestException")
    assert assert_ok_json(f.get(SUBS))["subscriptions"] == []


def test_limits_are_accepted_at_the_edges(f, receiver):
    url = receiver().url
    low = create(f, url, secret="x" * 16, timeout_ms=1, max_attempts=1)
    high = create(f, url, timeout_ms=60000, max_attempts=100)
    assert (low["timeout-ms"], low["max-attempts"]) == (1, 1)
    assert (high["timeout-ms"], high["max-attempts"]) == (60000, 100)


def test_internal_urls_need_the_allowlist(start, receiver):
    """The audit hooks' address rules: loopback is refused at registration
    without --hook-allow, and a name resolving to loopback is refused where
    floe connects, so the receiver never hears from it."""
    f = start(env={"FLOE_HOOK_ALLOW": ""})
    rcv = receiver()
    for url in (rcv.url, "http://10.1.2.3/floe", "http://169.254.169.254/latest"):
        err = assert_error(f.post(SUBS, json=sub_body(url)), 400, "BadRequestException")
        assert "--hook-allow" in err["message"], err
    assert "loopback" in assert_error(f.post(SUBS, json=sub_body(rcv.url)), 400)["message"]
    assert assert_ok_json(f.get(SUBS))["subscriptions"] == []

    sub = create(f, f"http://localhost:{rcv.port}/floe", max_attempts=100)
    f.create_namespace(["probe"])
    got = wait_sub(f, sub["id"], lambda s: s["last-error"] is not None, what="failed")
    assert got["last-error"]["reason"] == "address not allowed", got
    assert got["delivered"] == 0 and got["state"] == "active"
    assert rcv.count() == 0, "floe connected to a loopback address"


# --------------------------------------------------------------------------
# what is delivered


def test_each_event_is_a_signed_cloudevent_carrying_the_feed_event(f, receiver):
    rcv = receiver()
    ns = ["sales", "eu"]
    flt = {"catalog-objects-by-name": [["sales"]]}
    f.create_namespace(["sales"])
    sub = create(f, rcv.url, filter=flt)
    start_pos = sub["position"]

    f.create_namespace(ns)
    t = table(f, ns, "orders")
    set_prop(t, "owner", "etl")
    t.add_snapshot()
    t.stage()  # the staging branch's commit, then a custom operation
    r = f.post("/v1/namespaces/sales/properties", json={"updates": {"team": "ops"}})
    assert r.status_code == 200, describe(r)

    feed = feed_after(f, start_pos, flt)
    assert [e["operation"]["operation-type"] for e in feed] == [
        "create-namespace", "create-table", "update-table", "update-table", "update-table",
        "custom", "update-namespace-properties"], feed
    got = expect_deliveries(rcv, len(feed))
    quiet(rcv, len(feed), 0.5)

    now = time.time()
    events = []
    for req, fe in zip(got, feed):
        assert req.method == "POST" and req.path == "/floe", (req.method, req.path)
        assert req.header("Content-Type").split(";")[0].strip() == "application/cloudevents+json"
        ce = cloudevent(req)
        events.append(ce)
        # The feed's event, exactly as the events endpoint answers it.
        assert ce["data"] == fe, (ce["data"], fe)
        assert ce["specversion"] == "1.0"
        assert ce["id"] == fe["event-id"]
        assert ce["source"] == "/v1/warehouse"
        op = fe["operation"]
        name = op.get("custom-type") or op["operation-type"]
        assert ce["type"] == f"floe.catalog.{name}"
        assert ce["datacontenttype"] == "application/json"
        assert ce["floesubscription"] == sub["id"]
        assert TOKEN.match(ce["sequence"]) and ce["sequence"].endswith("." + ce["id"]), ce["sequence"]
        when = datetime.fromisoformat(ce["time"].replace("Z", "+00:00"))
        assert when.tzinfo is not None, ce["time"]
        assert abs(when.timestamp() * 1000 - fe["timestamp-ms"]) < 1000, (ce["time"], fe["timestamp-ms"])
        # The headers.
        assert req.header("X-Floe-Event") == ce["type"]
        assert req.header("X-Floe-Delivery") == ce["id"]
        assert req.header("X-Floe-Subscription") == sub["id"]
        ts = req.header("X-Floe-Timestamp")
        assert ts and ts.isdigit() and abs(int(ts) - now) < 120, ts
        expected = "sha256=" + hmac.new(SECRET.encode(), ts.encode() + b"." + req.body,
                                        hashlib.sha256).hexdigest()
        assert hmac.compare_digest(req.header("X-Floe-Signature-256") or "", expected), (
            req.header("X-Floe-Signature-256"), expected)

    assert [e["type"] for e in events] == [
        "floe.catalog.create-namespace", "floe.catalog.create-table", "floe.catalog.update-table",
        "floe.catalog.update-table", "floe.catalog.update-table", "floe.catalog.x-floe-wap-staged",
        "floe.catalog.update-namespace-properties"]
    assert [e["subject"] for e in events] == [
        "sales.eu", "sales.eu.orders", "sales.eu.orders", "sales.eu.orders", "sales.eu.orders",
        "sales.eu.orders", "sales"]
    # sequence is a token of the events endpoint: it resumes right after
    # its event.
    for ce, nxt in zip(events, events[1:]):
        assert feed_after(f, ce["sequence"], flt)[0]["event-id"] == nxt["id"]
    assert feed_after(f, events[-1]["sequence"], flt) == []

    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == len(feed), what="counted")
    assert s["position"] == events[-1]["sequence"], s
    assert s["attempts"] == 0 and s["last-error"] is None and s["state"] == "active"
    assert isinstance(s["last-delivered-at-ms"], int) and s["last-delivered-at-ms"] >= s["created-at-ms"]


def test_only_events_the_filter_names_arrive(f, receiver):
    f.create_namespace(["keep"])
    f.create_namespace(["drop"])
    t1 = table(f, ["keep"], "t1")
    t2 = table(f, ["keep"], "t2")
    other = table(f, ["drop"], "t1")
    uuid2 = t2.load()["metadata"]["table-uuid"]
    filters = {
        "t1-commits": {"catalog-objects-by-name": [["keep", "t1"]], "operation-types": ["update-table"]},
        "namespaces": {"object-types": ["namespace"]},
        "by-id": {"catalog-objects-by-id": [{"uuid": uuid2, "type": "table"}]},
        "everything": {},
    }
    rcvs, subs = {}, {}
    for name, flt in filters.items():
        rcvs[name] = receiver()
        subs[name] = create(f, rcvs[name].url, name=name, filter=flt)

    set_prop(t1, "a", "1")
    set_prop(t2, "a", "1")
    set_prop(other, "a", "1")
    set_prop(t1, "a", "2")
    assert f.post("/v1/namespaces/keep/properties", json={"updates": {"x": "y"}}).status_code == 200
    f.create_namespace(["keep", "sub"])
    assert f.delete(t2.url).status_code == 204

    expected = {name: [e["event-id"] for e in feed_after(f, subs[name]["position"], flt)]
                for name, flt in filters.items()}
    assert len(expected["t1-commits"]) == 2
    assert len(expected["namespaces"]) == 2
    assert len(expected["by-id"]) == 2  # the commit and the drop
    assert len(expected["everything"]) == 7
    for name in filters:
        expect_deliveries(rcvs[name], len(expected[name]))
    time.sleep(0.5)
    for name in filters:
        got = [cloudevent(r) for r in rcvs[name].requests]
        assert [c["id"] for c in got] == expected[name], name
    ops = [c["data"]["operation"] for c in map(cloudevent, rcvs["t1-commits"].requests)]
    assert all(o["operation-type"] == "update-table" and o["identifier"] == {"namespace": ["keep"], "name": "t1"}
               for o in ops), ops
    assert [o["version"] for o in ops] == [2, 3]


# --------------------------------------------------------------------------
# at least once, in order


def test_a_failed_delivery_is_retried_with_the_same_id_until_acknowledged(f, receiver):
    rcv = receiver(default=FAIL)
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["retry"]]})
    f.create_namespace(["retry"])
    first = expect_deliveries(rcv, 2)
    s = get(f, sub["id"])
    event_id = first[0].header("X-Floe-Delivery")
    assert s["state"] == "active" and s["attempts"] >= 1, s
    assert s["position"] == sub["position"] and s["delivered"] == 0, "a failed delivery moved the position"
    err = s["last-error"]
    assert err["event-id"] == event_id and err["http-status"] == 500, err
    assert isinstance(err["reason"], str) and err["reason"], err
    assert "receiver down" not in json.dumps(s), "the receiver's own answer is not kept"
    assert isinstance(err["at-ms"], int)
    assert s["next-attempt-at-ms"] >= err["at-ms"], s

    # Meanwhile a later event waits behind the failing one.
    f.create_namespace(["retry", "later"])
    rcv.set(default=OK)
    got = rcv.wait_for(len(rcv.requests) + 2, SOON)
    got = wait_until(lambda: rcv.requests if len(collapse(ids(rcv.requests))) == 2 else None, SOON) or got
    seq = ids(got)
    assert collapse(seq) == [event_id, collapse(seq)[1]] and len(collapse(seq)) == 2, seq
    assert seq.count(event_id) >= 3
    # Each attempt is the same CloudEvent, stamped and signed anew.
    tries = [r for r in got if r.header("X-Floe-Delivery") == event_id]
    assert len({json.dumps(cloudevent(r)["data"], sort_keys=True) for r in tries}) == 1
    assert len({cloudevent(r)["id"] for r in tries}) == 1
    for r in got:
        ts = r.header("X-Floe-Timestamp")
        assert r.header("X-Floe-Signature-256") == "sha256=" + hmac.new(
            SECRET.encode(), ts.encode() + b"." + r.body, hashlib.sha256).hexdigest()
    # Retries wait: not a burst.
    assert tries[1].received_at - tries[0].received_at >= RETRY_MS / 2000, "retried without waiting"
    later = cloudevent(got[-1])
    assert later["data"]["operation"]["namespace"] == ["retry", "later"]

    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == 2, what="delivered both")
    assert s["attempts"] == 0 and s["state"] == "active" and s["position"] == later["sequence"], s


def test_a_receiver_that_fails_twice_then_answers_loses_nothing(f, receiver):
    rcv = receiver(script=[FAIL, FAIL], default=Reply(204))
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["twice"]]})
    f.create_namespace(["twice"])
    for i in range(3):
        f.create_namespace(["twice", f"n{i}"])
    feed = [e["event-id"] for e in feed_after(f, sub["position"], sub["filter"])]
    assert len(feed) == 4
    got = expect_deliveries(rcv, 6)
    quiet(rcv, 6, 0.5)
    seq = ids(got)
    assert seq[:3] == [feed[0]] * 3, seq
    assert collapse(seq) == feed, seq
    wait_sub(f, sub["id"], lambda s: s["delivered"] == 4, what="delivered 4")


def test_in_order_per_table_under_concurrent_committers(f, receiver):
    """Two threads per table commit property updates at once; a receiver
    that fails every fifth request still sees each table's versions rising
    with none missing, in the feed's order, each event until acknowledged."""
    f.create_namespace(["busy"])
    tables = [table(f, ["busy"], f"t{i}") for i in range(4)]
    counter = {"n": 0}
    lock = threading.Lock()
    acked = []

    def answer(req):
        with lock:
            counter["n"] += 1
            if counter["n"] % 5 == 0:
                return FAIL
            acked.append(req)
            return OK

    rcv = receiver(on_request=answer)
    flt = {"catalog-objects-by-name": [["busy"]], "operation-types": ["update-table"]}
    sub = create(f, rcv.url, filter=flt)
    errors = []

    def commit(t, who):
        try:
            for i in range(3):
                set_prop(t, f"{who}-{i}", "v")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=commit, args=(t, w)) for t in tables for w in ("a", "b")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    feed = feed_after(f, sub["position"], flt)
    assert len(feed) == 24
    assert wait_until(lambda: len({r.header("X-Floe-Delivery") for r in acked}) >= 24, 30), (
        f"{len(acked)} acknowledged of 24")
    time.sleep(0.3)
    assert not rcv.errors, rcv.errors
    # One at a time, in the feed's order; a failed one again before the next.
    assert collapse(ids(rcv.requests)) == [e["event-id"] for e in feed]
    per_table = {}
    for r in acked:
        op = cloudevent(r)["data"]["operation"]
        per_table.setdefault(op["identifier"]["name"], []).append(op)
    for t in tables:
        ops = per_table[t.name]
        assert [o["version"] for o in ops] == list(range(2, 8)), (t.name, [o["version"] for o in ops])
        for prev, cur in zip(ops, ops[1:]):
            assert cur["previous-metadata-location"] == prev["metadata-location"]
    assert ops[-1]["metadata-location"] == tables[-1].load()["metadata-location"]


# --------------------------------------------------------------------------
# dead-letter and resume


def test_dead_letter_holds_the_event_until_resumed(f, receiver):
    rcv = receiver(default=FAIL)
    flt = {"catalog-objects-by-name": [["dl"]]}
    sub = create(f, rcv.url, filter=flt, max_attempts=2)
    m0 = metrics(f)
    f.create_namespace(["dl"])
    held = expect_deliveries(rcv, 2)
    e1 = held[0].header("X-Floe-Delivery")
    s = wait_sub(f, sub["id"], lambda s: s["state"] == "dead-letter", what="dead-lettered")
    h = s["held-event"]
    assert h["event-id"] == e1 and h["attempts"] == 2 and h["http-status"] == 500, h
    assert isinstance(h["reason"], str) and h["reason"] and isinstance(h["since-ms"], int), h
    assert s["position"] == sub["position"] and s["delivered"] == 0, s
    assert s["last-error"]["event-id"] == e1, s

    # Later events are not delivered while it is dead, and none is skipped.
    f.create_namespace(["dl", "e2"])
    f.create_namespace(["dl", "e3"])
    quiet(rcv, 2, 1.0)
    assert ids(rcv.requests) == [e1, e1]
    assert get(f, sub["id"])["state"] == "dead-letter"

    page = wait_until(lambda: (p := metrics(f)) and metric(p, "floe_event_subscriptions",
                                                            state="dead-letter") == 1 and p, 10)
    assert page, "floe_event_subscriptions{state=\"dead-letter\"} never 1"
    assert metric(page, "floe_event_subscriptions", state="active") == 0
    d = lambda p, outcome: (metric(p, "floe_event_deliveries_total", outcome=outcome)
                            - metric(m0, "floe_event_deliveries_total", outcome=outcome))
    assert d(page, "dead-lettered") == 1
    assert d(page, "failed") == 1
    assert d(page, "delivered") == 0

    dead = [e for e in sub_audit(f, sub["id"]) if e["event"] == "subscription.dead-lettered"]
    assert len(dead) == 1 and e1 in json.dumps(dead[0]), dead

    # Resume: the held event first, then the rest in order.
    rcv.set(default=OK)
    r = resume(f, sub["id"])
    s = assert_ok_json(r)
    assert s["state"] == "active" and s["held-event"] is None, s
    feed = [e["event-id"] for e in feed_after(f, sub["position"], flt)]
    got = expect_deliveries(rcv, 5)
    quiet(rcv, 5, 0.5)
    assert ids(got) == [e1, e1, e1] + feed[1:], ids(got)
    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == 3, what="delivered 3")
    assert s["state"] == "active" and s["attempts"] == 0, s
    page = wait_until(lambda: (p := metrics(f)) and metric(p, "floe_event_subscriptions",
                                                            state="active") == 1 and p, 10)
    assert page and metric(page, "floe_event_subscriptions", state="dead-letter") == 0
    assert d(page, "delivered") == 3
    assert [e["event"] for e in sub_audit(f, sub["id"])] == [
        "subscription.created", "subscription.dead-lettered", "subscription.resumed"]

    # Resuming an active subscription is a conflict.
    assert_error(resume(f, sub["id"]), 409)
    assert get(f, sub["id"])["state"] == "active"


def test_resume_can_skip_the_held_event(f, receiver):
    rcv = receiver(default=FAIL)
    flt = {"catalog-objects-by-name": [["skip"]]}
    sub = create(f, rcv.url, filter=flt, max_attempts=1)
    f.create_namespace(["skip"])
    s = wait_sub(f, sub["id"], lambda s: s["state"] == "dead-letter", what="dead-lettered")
    held = s["held-event"]["event-id"]
    assert s["held-event"]["attempts"] == 1
    f.create_namespace(["skip", "next"])
    quiet(rcv, 1, 0.6)
    rcv.set(default=OK)
    s = assert_ok_json(resume(f, sub["id"], **{"skip-held-event": True}))
    assert s["state"] == "active" and s["held-event"] is None, s
    got = expect_deliveries(rcv, 2)
    quiet(rcv, 2, 0.5)
    nxt = cloudevent(got[1])
    assert nxt["id"] != held and nxt["data"]["operation"]["namespace"] == ["skip", "next"]
    s = wait_sub(f, sub["id"], lambda s: s["position"] == nxt["sequence"], what="past the next event")
    assert s["state"] == "active"
    resumed = [e for e in sub_audit(f, sub["id"]) if e["event"] == "subscription.resumed"]
    assert len(resumed) == 1, resumed
    assert_error(resume(f, sub["id"], **{"skip-held-event": True}), 409)


@pytest.mark.parametrize("body", [[], {"skip-held-event": "yes"}])
def test_a_bad_resume_body_is_400(f, receiver, body):
    sub = create(f, receiver().url)
    assert_error(f.post(f"{SUBS}/{sub['id']}/resume", json=body), 400, "BadRequestException")


# --------------------------------------------------------------------------
# delete, start-after, restart


def test_delete_stops_delivery(f, receiver):
    rcv = receiver()
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["del"]]})
    f.create_namespace(["del"])
    expect_deliveries(rcv, 1)
    r = f.delete(f"{SUBS}/{sub['id']}")
    assert r.status_code in (200, 204), describe(r)
    f.create_namespace(["del", "after"])
    quiet(rcv, 1, 1.0)
    assert [e["event"] for e in sub_audit(f, sub["id"])] == ["subscription.created",
                                                             "subscription.deleted"]


def test_delete_stops_retries_of_a_failing_delivery(f, receiver):
    rcv = receiver(default=FAIL)
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["delr"]]})
    f.create_namespace(["delr"])
    expect_deliveries(rcv, 2)
    assert f.delete(f"{SUBS}/{sub['id']}").status_code in (200, 204)
    time.sleep(0.3)  # an attempt under way may still land
    n = rcv.count()
    quiet(rcv, n, 1.0)


def test_the_default_start_is_the_feed_as_it_stands(f, receiver):
    f.create_namespace(["old"])
    rcv = receiver()
    sub = create(f, rcv.url)
    assert feed_after(f, sub["position"]) == [], "the position is not the end of the feed"
    f.create_namespace(["new"])
    got = expect_deliveries(rcv, 1)
    quiet(rcv, 1, 0.5)
    assert cloudevent(got[0])["data"]["operation"]["namespace"] == ["new"]


def test_start_after_a_token_replays_from_there(f, receiver):
    for n in ("a", "b", "c"):
        f.create_namespace([n])
    first = assert_ok_json(f.post("/v1/events", json={"page-size": 1}))
    assert first["events"][0]["operation"]["namespace"] == ["a"]
    token = first["next-page-token"]
    rcv = receiver()
    sub = create(f, rcv.url, start_after=token)
    assert sub["position"] == token
    got = expect_deliveries(rcv, 2)
    f.create_namespace(["d"])
    got = expect_deliveries(rcv, 3)
    quiet(rcv, 3, 0.5)
    assert [cloudevent(r)["data"]["operation"]["namespace"] for r in got] == [["b"], ["c"], ["d"]]
    assert cloudevent(got[0])["data"] == feed_after(f, token)[0]
    # A token from the start of the feed (none read yet) replays every event.
    rcv2 = receiver()
    everything, _ = read_feed(f)
    zero = assert_ok_json(f.post("/v1/events", json={"page-size": 1}))
    start = create(f, rcv2.url, start_after=zero["next-page-token"])
    assert [c["id"] for c in map(cloudevent, expect_deliveries(rcv2, 3))] == [
        e["event-id"] for e in everything[1:4]]
    assert start["position"] == zero["next-page-token"]


def test_a_restart_loses_nothing(start, receiver, tmp_path, postgres):
    """Events committed while floe was down are delivered once it is back,
    in order, after the ones delivered before; none is missing."""
    db = postgres.new_database()
    data = tmp_path / "data"
    f1 = start(database=db, data_dir=data)
    rcv = receiver()
    flt = {"object-types": ["namespace"]}
    sub = create(f1, rcv.url, filter=flt, timeout_ms=2000)
    for i in range(3):
        f1.create_namespace([f"up{i}"])
    expect_deliveries(rcv, 3)
    wait_sub(f1, sub["id"], lambda s: s["delivered"] == 3, what="delivered 3")
    assert f1.stop() == 0
    # While floe is down, changes reach the database by another way.
    with psycopg.connect(db, autocommit=True) as conn:
        for i in range(4):
            conn.execute("INSERT INTO namespaces (levels, warehouse) VALUES (%s::text[], '')",
                         ([f"down{i}"],))
    quiet(rcv, 3, 0.3)
    f2 = start(database=db, data_dir=data)
    f2.create_namespace(["back"])
    got = expect_deliveries(rcv, 8, 30)
    quiet(rcv, 8, 0.5)
    names = [cloudevent(r)["data"]["operation"]["namespace"] for r in got]
    assert names == [["up0"], ["up1"], ["up2"], ["down0"], ["down1"], ["down2"], ["down3"], ["back"]], names
    assert ids(got) == [e["event-id"] for e in feed_after(f2, sub["position"], flt)]
    # The secret survived the restart: still signed with it.
    for r in got:
        ts = r.header("X-Floe-Timestamp")
        assert r.header("X-Floe-Signature-256") == "sha256=" + hmac.new(
            SECRET.encode(), ts.encode() + b"." + r.body, hashlib.sha256).hexdigest()
    assert wait_sub(f2, sub["id"], lambda s: s["delivered"] == 8, what="delivered 8")["state"] == "active"


# --------------------------------------------------------------------------
# who may manage and read subscriptions


def test_managing_needs_hooks_manage_and_audit_read(start, receiver):
    from test_authorization import As, principal
    f = start(env={"FLOE_AUTH": "floe"})
    f.authenticate()
    url = receiver().url
    both = principal(f, "subadmin", [("HOOKS_MANAGE",), ("AUDIT_READ",)])
    hooks_only = principal(f, "hookadmin", [("HOOKS_MANAGE",)])
    audit_only = principal(f, "auditor", [("AUDIT_READ",)])
    neither = principal(f, "reader", [("TABLE_READ",)])
    with As(f, both):
        sub = create(f, url)
    assert sub["created-by"] == "subadmin", sub
    for tok in (hooks_only, audit_only):
        with As(f, tok):
            assert_error(f.post(SUBS, json=sub_body(url)), 403, "ForbiddenException")
            assert_error(f.delete(f"{SUBS}/{sub['id']}"), 403, "ForbiddenException")
            assert_error(resume(f, sub["id"]), 403, "ForbiddenException")
            assert [s["id"] for s in assert_ok_json(f.get(SUBS))["subscriptions"]] == [sub["id"]]
            assert get(f, sub["id"])["id"] == sub["id"]
    with As(f, neither):
        assert_error(f.get(SUBS), 403, "ForbiddenException")
        assert_error(f.get(f"{SUBS}/{sub['id']}"), 403, "ForbiddenException")
        assert_error(f.post(SUBS, json=sub_body(url)), 403, "ForbiddenException")
    with As(f, both):
        assert f.delete(f"{SUBS}/{sub['id']}").status_code in (200, 204)
    created = [e for e in sub_audit(f, sub["id"]) if e["event"] == "subscription.created"]
    assert created and created[0]["principal"] == "subadmin", created
