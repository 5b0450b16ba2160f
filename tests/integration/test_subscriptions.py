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
  floe loses nothing committed while it was down; two floes on one
  database share a subscription without breaking its order;
- each warehouse has its own subscriptions and feed; managing needs
  HOOKS_MANAGE and AUDIT_READ, reading either;
- every answer and every CloudEvent is what api-spec/openapi.yaml says.

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

import jsonschema
import psycopg
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from conftest import (
    REPO,
    TableHandle,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    audit_events,
    database_identity,
    describe,
    far_xid,
    timeline_first_xid,
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
# A position: "<xid>.<id>.<timeline>.<system identifier>", as the feed's tokens.
TOKEN = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$")
# Every field a subscription shows.
FIELDS = {"id", "name", "url", "signed", "filter", "timeout-ms", "max-attempts", "state",
          "created-at-ms", "created-by", "position", "delivered", "last-delivered-at-ms",
          "attempts", "next-attempt-at-ms", "last-error", "held-event"}
# How long a delivery may take to show up: several poll rounds and retries.
SOON = 15


# --------------------------------------------------------------------------
# helpers

SPEC = yaml.safe_load((REPO / "api-spec" / "openapi.yaml").read_text(encoding="utf-8"))


def documented(value, schema: str):
    """value is what api-spec/openapi.yaml says components/schemas/<schema> is."""
    root = {k: v for k, v in SPEC.items() if k == "components"}
    root["$ref"] = f"#/components/schemas/{schema}"
    errors = sorted(jsonschema.Draft202012Validator(root).iter_errors(value), key=str)
    assert not errors, f"{schema}: {[e.message for e in errors][:5]}: {value}"
    return value


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


@pytest.fixture(scope="module")
def refusing(postgres):
    """One floe for the tests of bodies it refuses (they make nothing)."""
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_SUBSCRIPTION_POLL_MS": str(POLL_MS),
                                               "FLOE_SUBSCRIPTION_RETRY_MS": str(RETRY_MS)})
    yield f
    _stop_and_check(f)


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
    return documented(sub, "EventSubscription")


def get(f, sub_id) -> dict:
    return documented(assert_ok_json(f.get(f"{SUBS}/{sub_id}")), "EventSubscription")


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
    return documented(json.loads(req.body), "EventCloudEvent")


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

    listed = documented(assert_ok_json(f.get(SUBS)), "ListEventSubscriptionsResponse")
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
    assert r.status_code == 204 and r.content == b"", describe(r)
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
    pytest.param({"filter": {"operation-type": ["update-table"]}}, "operation-type",
                 id="misspelt-filter-field"),
    pytest.param({"filter": {"custom-filters": {"k": "v"}}}, "custom-filters", id="custom-filters"),
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
    # past what PostgreSQL's columns hold (xid8, bigint, int)
    pytest.param({"start-after": "18446744073709551616.1"}, "start-after", id="xid-too-big"),
    pytest.param({"start-after": "1.9223372036854775808"}, "start-after", id="id-too-big"),
    pytest.param({"start-after": "1.1.2147483648.1"}, "start-after", id="timeline-too-big"),
    pytest.param({"secrets": SECRET}, "secrets", id="unknown-field"),
])
def test_a_bad_body_is_400_and_creates_nothing(refusing, change, needle):
    f = refusing
    body = sub_body("http://127.0.0.1:9/floe")
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
def test_a_body_that_is_no_object_is_400(refusing, body):
    f = refusing
    assert_error(f.post(SUBS, json=body), 400, "BadRequestException")
    assert assert_ok_json(f.get(SUBS))["subscriptions"] == []


def test_a_create_retried_with_its_idempotency_key_makes_one_subscription(f, receiver):
    """A client that lost the answer and retries must not end up with two
    subscriptions, each delivering every event."""
    rcv = receiver()
    key = str(uuid.uuid4())
    body = sub_body(rcv.url, filter={"catalog-objects-by-name": [["idem"]]})
    first = assert_ok_json(f.post(SUBS, json=body, headers={"Idempotency-Key": key}), 201)
    again = f.post(SUBS, json=body, headers={"Idempotency-Key": key})
    assert assert_ok_json(again, 201)["id"] == first["id"]
    assert again.headers.get("Idempotency-Replayed") == "true"
    assert [s["id"] for s in assert_ok_json(f.get(SUBS))["subscriptions"]] == [first["id"]]
    f.create_namespace(["idem"])
    expect_deliveries(rcv, 1)
    quiet(rcv, 1, 0.5)


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
        assert TOKEN.match(ce["sequence"]) and ce["sequence"].split(".")[1] == ce["id"], ce["sequence"]
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
    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == 2, what="delivered both")
    got = rcv.requests
    seq = collapse(ids(got))
    assert len(seq) == 2 and seq[0] == event_id, ids(got)
    assert ids(got).count(event_id) >= 3
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


def test_retries_back_off_doubling(f, receiver):
    """A receiver that is down is not hammered: the wait before each retry
    is --subscription-retry-ms, doubled per failure, with jitter (here at
    least half of it), and not much more."""
    rcv = receiver(default=FAIL)
    create(f, rcv.url, max_attempts=7, filter={"catalog-objects-by-name": [["backoff"]]})
    f.create_namespace(["backoff"])
    got = expect_deliveries(rcv, 7, 30)
    t = [r.received_at for r in got]
    gaps = [b - a for a, b in zip(t, t[1:])]
    for k, gap in enumerate(gaps):
        wait = RETRY_MS * 2 ** k / 1000
        assert wait / 2 - 0.01 <= gap <= wait + POLL_MS / 1000 + 0.5, (k, [round(g, 3) for g in gaps])
    assert gaps[-1] >= 4 * gaps[0], [round(g, 3) for g in gaps]
    assert len(set(ids(got))) == 1


@pytest.mark.parametrize("reply", [
    pytest.param(Reply(404, "no such path"), id="404"),
    pytest.param(Reply(400, "bad"), id="400"),
    pytest.param(Reply(429, "slow down", headers={"Retry-After": "1"}), id="429"),
    pytest.param(Reply(302, b"", headers={"Location": "OTHER"}), id="redirect"),
    pytest.param(Reply(200, "x", delay=3), id="no-answer-in-timeout-ms"),
])
def test_anything_but_a_2xx_in_time_is_a_failure_and_retried(f, receiver, reply):
    other = receiver()
    if reply.headers.get("Location") == "OTHER":
        reply.headers["Location"] = other.url
    rcv = receiver(script=[reply])
    sub = create(f, rcv.url, timeout_ms=500, filter={"catalog-objects-by-name": [["nack"]]})
    f.create_namespace(["nack"])
    got = expect_deliveries(rcv, 2)
    assert ids(got[:2]) == [ids(got)[0]] * 2, "the failed event is sent again"
    # A hung receiver is given up on after timeout-ms, not waited for.
    assert got[1].received_at - got[0].received_at < 2.5
    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == 1, what="delivered")
    err = s["last-error"]
    assert err["event-id"] == ids(got)[0], s
    if reply.delay:
        assert err["reason"] == "timeout" and err["http-status"] is None, err
    else:
        assert err["http-status"] == reply.status, err
        assert str(reply.status) in err["reason"], err
    assert other.count() == 0, "a redirect was followed"


@pytest.mark.parametrize("reply", [
    pytest.param(Reply(201, "<html><body>welcome</body></html>", headers={"Content-Type": "text/html"}),
                 id="201-html"),
    pytest.param(Reply(204), id="204"),
    pytest.param(Reply(202, {"passed": False}), id="202-json"),
])
def test_any_2xx_acknowledges(f, receiver, reply):
    rcv = receiver(default=reply)
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["ack"]]})
    f.create_namespace(["ack"])
    f.create_namespace(["ack", "two"])
    expect_deliveries(rcv, 2)
    quiet(rcv, 2, 0.5)
    assert len(set(ids(rcv.requests))) == 2
    s = wait_sub(f, sub["id"], lambda s: s["delivered"] == 2, what="delivered 2")
    assert s["last-error"] is None and s["attempts"] == 0


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
        assert ops[-1]["metadata-location"] == t.load()["metadata-location"]


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
    s = documented(assert_ok_json(r), "EventSubscription")
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


def test_a_bad_resume_body_is_400_and_changes_nothing(f, receiver):
    rcv = receiver(default=FAIL)
    sub = create(f, rcv.url, max_attempts=1, filter={"catalog-objects-by-name": [["bad"]]})
    f.create_namespace(["bad"])
    held = wait_sub(f, sub["id"], lambda s: s["state"] == "dead-letter", what="dead-lettered")
    for body in ([], "skip", {"skip-held-event": "yes"}, {"skip-held-event": 1}):
        assert_error(f.post(f"{SUBS}/{sub['id']}/resume", json=body), 400, "BadRequestException")
    now = get(f, sub["id"])
    assert now["state"] == "dead-letter" and now["held-event"] == held["held-event"], now
    assert [e["event"] for e in sub_audit(f, sub["id"])] == ["subscription.created",
                                                             "subscription.dead-lettered"]


# --------------------------------------------------------------------------
# delete, start-after, restart


def test_delete_stops_delivery(f, receiver):
    rcv = receiver()
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["del"]]})
    f.create_namespace(["del"])
    expect_deliveries(rcv, 1)
    r = f.delete(f"{SUBS}/{sub['id']}")
    assert r.status_code == 204, describe(r)
    f.create_namespace(["del", "after"])
    quiet(rcv, 1, 1.0)
    assert [e["event"] for e in sub_audit(f, sub["id"])] == ["subscription.created",
                                                             "subscription.deleted"]


def test_delete_stops_retries_of_a_failing_delivery(f, receiver):
    rcv = receiver(default=FAIL)
    sub = create(f, rcv.url, filter={"catalog-objects-by-name": [["delr"]]})
    f.create_namespace(["delr"])
    expect_deliveries(rcv, 2)
    assert f.delete(f"{SUBS}/{sub['id']}").status_code == 204
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
    # The subscription's position is the token: its (xid, id), the database
    # and the timeline it was issued on (docs/failover.md).
    assert sub["position"] == token
    got = expect_deliveries(rcv, 2)
    f.create_namespace(["d"])
    got = expect_deliveries(rcv, 3)
    quiet(rcv, 3, 0.5)
    assert [cloudevent(r)["data"]["operation"]["namespace"] for r in got] == [["b"], ["c"], ["d"]]
    assert cloudevent(got[0])["data"] == feed_after(f, token)[0]


def test_positions_and_sequences_name_the_database_and_timeline(f, receiver):
    """A subscription's position and a CloudEvent's sequence are tokens of
    the events endpoint in full: a receiver that keeps the last sequence it
    acknowledged can start a new subscription after it, and gets exactly
    the events that follow, none skipped and none twice."""
    sysid, timeline = database_identity(f)
    flt = {"catalog-objects-by-name": [["pos"]]}
    rcv = receiver()
    sub = create(f, rcv.url, filter=flt)
    assert sub["position"].split(".")[2:] == [str(timeline), sysid], sub["position"]
    f.create_namespace(["pos"])
    f.create_namespace(["pos", "a"])
    f.create_namespace(["pos", "b"])
    ces = [cloudevent(r) for r in expect_deliveries(rcv, 3)]
    for ce in ces:
        xid, eid, tl, system = ce["sequence"].split(".")
        assert (eid, tl, system) == (ce["id"], str(timeline), sysid), ce["sequence"]
        assert ce["data"]["request-id"] == f"xact-{xid}"
    assert wait_sub(f, sub["id"], lambda s: s["delivered"] == 3, what="delivered 3")["position"] \
        == ces[-1]["sequence"]
    again = receiver()
    resumed = create(f, again.url, name="resumed", filter=flt, start_after=ces[0]["sequence"])
    assert resumed["position"] == ces[0]["sequence"]
    got = expect_deliveries(again, 2)
    quiet(again, 2, 0.5)
    assert ids(got) == [ce["id"] for ce in ces[1:]]


def test_start_after_a_position_of_the_older_form_is_read_as_of_this_timeline(f, receiver):
    """"<xid>.<id>", as positions and sequences were before: taken as of
    the current timeline, and shown in full from then on."""
    for n in ("a", "b", "c"):
        f.create_namespace([n])
    token = assert_ok_json(f.post("/v1/events", json={"page-size": 1}))["next-page-token"]
    rcv = receiver()
    sub = create(f, rcv.url, start_after=".".join(token.split(".")[:2]))
    assert sub["position"] == token
    got = expect_deliveries(rcv, 2)
    quiet(rcv, 2, 0.5)
    assert [cloudevent(r)["data"]["operation"]["namespace"] for r in got] == [["b"], ["c"]]


def test_start_after_a_position_from_a_lost_history_is_refused(f, receiver):
    """A position or sequence from a history this database does not have
    (kept by a receiver across a failover to an asynchronous standby that
    never received it) is refused with the reason, and nothing is made:
    never a subscription that starts past the new primary's events."""
    rcv = receiver()
    sub = create(f, rcv.url)
    f.create_namespace(["lost"])
    ce = cloudevent(expect_deliveries(rcv, 1)[0])
    xid, eid, timeline, sysid = ce["sequence"].split(".")
    far = far_xid(f)
    again = "read the feed again from a timestamp or the start"
    beyond = ("start-after is past the last event this database has (a history lost in a "
              "failover or a restore); " + again)
    cases = {
        f"{xid}.{eid}.{int(timeline) + 1}.{sysid}": beyond,
        f"{far}.{eid}.{timeline}.{sysid}": beyond,
        f"{far}.{eid}": beyond,
        f"{xid}.{eid}.{timeline}.{int(sysid) + 1}":
            "start-after was issued by another catalog database; " + again,
        f"{xid}.{eid}.{int(timeline) - 1}.{sysid}":
            "start-after points into a history this database no longer has (it failed over "
            f"to timeline {timeline} and the events after the switch were lost); " + again,
    }
    for token, message in cases.items():
        r = f.post(SUBS, json=sub_body(rcv.url, name="forged", start_after=token))
        assert (r.status_code, r.json()) == (400, {"error": {
            "message": message, "type": "BadRequestException", "code": 400}}), token
    listed = assert_ok_json(f.get(SUBS))["subscriptions"]
    assert [s["id"] for s in listed] == [sub["id"]]


def test_a_start_from_before_the_switch_to_this_timeline_is_good(f, receiver):
    """A subscription's start names no event (its id is 0): taken from an
    earlier timeline, its transaction alone places it in the history this
    timeline shares (below the first transaction floe ran on this one), or
    past the switch; never refused for want of an event."""
    sysid, timeline = database_identity(f)
    first = timeline_first_xid(f)
    f.create_namespace(["after"])
    rcv = receiver()
    sub = create(f, rcv.url, start_after=f"{first - 1}.0.{timeline - 1}.{sysid}")
    assert sub["position"] == f"{first - 1}.0.{timeline}.{sysid}"
    got = expect_deliveries(rcv, 1)
    quiet(rcv, 1, 0.5)
    assert cloudevent(got[0])["data"]["operation"]["namespace"] == ["after"]
    lost = ("start-after points into a history this database no longer has (it failed over "
            f"to timeline {timeline} and the events after the switch were lost); "
            "read the feed again from a timestamp or the start")
    for token in (f"{first}.0.{timeline - 1}.{sysid}", f"{first - 1}.1.{timeline - 1}.{sysid}"):
        r = f.post(SUBS, json=sub_body(rcv.url, name="forged", start_after=token))
        assert (r.status_code, r.json()) == (400, {"error": {
            "message": lost, "type": "BadRequestException", "code": 400}}), token


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


def test_two_floes_on_one_database_deliver_each_event_once_in_order(start, receiver, postgres, tmp_path):
    """Both floes run a dispatcher; the subscription is leased by one at a
    time, so the receiver never has two deliveries at once and sees the
    feed's order, whichever floe the commits went through."""
    db = postgres.new_database()
    f1 = start(database=db, data_dir=tmp_path / "one")
    key = tmp_path / "one" / "auth" / "hook-secrets.key"
    assert key.is_file()
    f2 = start(database=db, data_dir=tmp_path / "two", env={"FLOE_HOOK_SECRETS_KEY": str(key)})
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def answer(req):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return OK

    rcv = receiver(on_request=answer)
    flt = {"catalog-objects-by-name": [["pair"]]}
    sub = create(f1, rcv.url, filter=flt)
    f1.create_namespace(["pair"])
    t1, t2 = table(f1, ["pair"], "a"), table(f2, ["pair"], "b")
    errors = []

    def commit(t):
        try:
            for i in range(5):
                set_prop(t, "i", str(i))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=commit, args=(t,)) for t in (t1, t2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    feed = [e["event-id"] for e in feed_after(f2, sub["position"], flt)]
    assert len(feed) == 13
    expect_deliveries(rcv, 13, 30)
    quiet(rcv, 13, 0.5)
    assert ids(rcv.requests) == feed
    assert state["most"] == 1, "two deliveries of one subscription at once"
    assert get(f2, sub["id"])["delivered"] == 13


def test_each_warehouse_has_its_own_subscriptions_and_events(start, receiver, tmp_path):
    """A subscription reads the feed of the warehouse it was made under:
    another warehouse's events never reach it, and its CloudEvents name
    its warehouse in `source`."""
    (tmp_path / "files").mkdir()
    whf = tmp_path / "warehouses.json"
    whf.write_text(json.dumps({"warehouses": [
        {"name": "files", "location": f"file://{tmp_path}/files"}]}))
    f = start(env={"FLOE_WAREHOUSES": str(whf)})
    main_rcv, files_rcv = receiver(), receiver()
    main_sub = create(f, main_rcv.url, name="main")
    files_sub = assert_ok_json(f.post("/v1/files/event-subscriptions",
                                      json=sub_body(files_rcv.url, name="files")), 201)
    assert [s["id"] for s in assert_ok_json(f.get(SUBS))["subscriptions"]] == [main_sub["id"]]
    assert [s["id"] for s in assert_ok_json(f.get("/v1/files/event-subscriptions"))
            ["subscriptions"]] == [files_sub["id"]]
    assert_error(f.get(f"/v1/files/event-subscriptions/{main_sub['id']}"), 404)
    assert_error(f.delete(f"{SUBS}/{files_sub['id']}"), 404)

    f.create_namespace(["in_main"])
    f.create_namespace(["in_files"], base="/v1/files")
    got_main = [cloudevent(r) for r in expect_deliveries(main_rcv, 1)]
    got_files = [cloudevent(r) for r in expect_deliveries(files_rcv, 1)]
    time.sleep(0.5)
    assert main_rcv.count() == 1 and files_rcv.count() == 1
    assert got_main[0]["data"]["operation"]["namespace"] == ["in_main"]
    assert got_main[0]["source"] == "/v1/warehouse"
    assert got_files[0]["data"]["operation"]["namespace"] == ["in_files"]
    assert got_files[0]["source"] == "/v1/files"
    page = assert_ok_json(f.post("/v1/files/events", json={"continuation-token": files_sub["position"]}))
    assert got_files[0]["data"] == page["events"][0]
    assert got_files[0]["sequence"] == page["next-page-token"]


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
        assert f.delete(f"{SUBS}/{sub['id']}").status_code == 204
    created = [e for e in sub_audit(f, sub["id"]) if e["event"] == "subscription.created"]
    assert created and created[0]["principal"] == "subadmin", created
