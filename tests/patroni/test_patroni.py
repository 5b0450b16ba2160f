"""floe on a PostgreSQL cluster that Patroni runs (docs/failover.md):
two floe replicas reach the database through libpq's multi-host URL with
target_session_attrs=read-write; six clients commit steadily; the
leader's machine dies (Patroni, the postmaster and every backend killed
at once) and Patroni promotes the synchronous standby once the leader's
key expires.

What a user relies on, asserted:
- no acknowledged commit is lost (synchronous_commit=on with a
  synchronous standby: every 200 is on the standby before it is sent);
- every answer during the switch is a 200, a 503 with Retry-After, or a
  500 CommitStateUnknown (whose outcome the test then reads); nothing
  else;
- floe commits again after the promotion without a restart, on both
  replicas;
- the change feed read across the switch has every acknowledged commit
  once, with no gap and no duplicate;
- the audit trail still verifies.
The figures (writes acknowledged and lost, answers by kind, the time to
the first commit after the crash and after the promotion) are printed.
"""
from __future__ import annotations

import collections
import itertools
import threading
import time

import requests

from floe_integration_fixtures import assert_ok_json, wait_until

NS = ["ha"]
TABLES = ["t0", "t1", "t2"]
WRITERS = 6
SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}


class Load:
    """Writers committing set-properties, each key once; every answer kept."""

    def __init__(self, floes):
        self.floes = floes
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers = collections.Counter()
        self.acked = collections.defaultdict(set)    # table -> keys answered 200
        self.unknown = collections.defaultdict(set)  # table -> keys answered 500
        self.bad = []
        self.ok_times = []                           # monotonic time of each 200
        self.threads = [threading.Thread(target=self.run, args=(w,), daemon=True)
                        for w in range(WRITERS)]

    def run(self, w):
        f = self.floes[w % len(self.floes)]
        s = requests.Session()
        for n in itertools.count():
            if self.stop.is_set():
                return
            table = TABLES[(w + n) % len(TABLES)]
            key = f"w{w}_{n}"
            began = time.monotonic()
            try:
                r = s.post(f"{f.url}/v1/namespaces/ha/tables/{table}",
                           json={"requirements": [], "updates": [
                               {"action": "set-properties", "updates": {key: "1"}}]},
                           timeout=60)
            except requests.RequestException as e:
                with self.lock:
                    self.bad.append(f"{key}: no answer: {e!r}")
                continue
            kind = str(r.status_code)
            if r.status_code != 200:
                try:
                    kind += " " + r.json()["error"]["type"]
                except (ValueError, KeyError, TypeError):
                    kind += " (not an Iceberg error)"
            with self.lock:
                self.answers[kind] += 1
                if r.status_code == 200:
                    self.acked[table].add(key)
                    self.ok_times.append((began, time.monotonic()))
                elif r.status_code == 503 and r.headers.get("Retry-After", "").isdigit():
                    pass
                elif r.status_code == 500 and kind.endswith("CommitStateUnknownException"):
                    self.unknown[table].add(key)
                else:
                    self.bad.append(f"{key}: {r.status_code} {r.headers.get('Retry-After')!r} "
                                    f"{r.text[:200]}")
            if r.status_code != 200:
                time.sleep(0.05)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(90)

    def acked_count(self):
        with self.lock:
            return sum(len(v) for v in self.acked.values())


def as_a_client(f, method, path, **kw):
    """A request after the switch, as a client makes it: a 503 with
    Retry-After (nothing was done) is sent again after the time it names,
    for at most 30 s; any other answer is returned. A 503 left then fails
    with floe's log."""
    deadline = time.monotonic() + 30
    while True:
        r = f.session.request(method, f.url + path, timeout=30, **kw)
        wait = r.headers.get("Retry-After")
        if r.status_code != 503 or not wait:
            return r
        assert time.monotonic() < deadline, f"{method} {path}: {r.status_code} {r.text}\n" \
            f"{f.log_tail(4000)}"
        time.sleep(min(float(wait), 1.0))


def read_feed(f):
    events, token = [], None
    while True:
        body = {"continuation-token": token} if token else {}
        page = assert_ok_json(as_a_client(f, "POST", "/v1/events", json=body))
        events += page["events"]
        if not page["events"]:
            return events
        token = page["next-page-token"]


def test_a_patroni_failover_loses_no_acknowledged_commit(patroni, floe_factory):
    url = patroni.create_database("floe")
    floes = [floe_factory(env={"FLOE_DATABASE_URL": url}) for _ in range(2)]
    f = floes[0]
    f.create_namespace(NS)
    for t in TABLES:
        assert_ok_json(f.post("/v1/namespaces/ha/tables", json={"name": t, "schema": SCHEMA}))
    feed_before = read_feed(f)

    old = patroni.leader()
    new = next(n for n in patroni.nodes if n is not old)
    load = Load(floes).start()
    try:
        assert wait_until(lambda: load.acked_count() >= 60, 60), "no steady load"
        acked_before = load.acked_count()
        patroni.crash(old)
        crashed = time.monotonic()  # every process of the old leader is gone
        assert wait_until(lambda: new.role() == "primary", 60), \
            f"{new.name} was not promoted:\n{new.log()}"
        promoted = time.monotonic()
        # Steady again: every replica commits after the promotion.
        assert wait_until(lambda: len([b for b, _ in load.ok_times if b > promoted]) >= 60, 60), \
            "floe did not commit again after the promotion"
    finally:
        load.finish()

    # The first commit sent after the crash (after the promotion) that was
    # acknowledged: when floe was committing again.
    after_crash = [e - crashed for b, e in load.ok_times if b > crashed]
    after_promotion = [e - promoted for b, e in load.ok_times if b > promoted]
    per_replica = {}
    for i, fl in enumerate(floes):
        r = as_a_client(fl, "POST", "/v1/namespaces/ha/tables/t0", json={
            "requirements": [], "updates": [
                {"action": "set-properties", "updates": {f"check{i}": "1"}}]})
        per_replica[i] = r.status_code

    lost, unknown_landed = 0, 0
    for t in TABLES:
        props = assert_ok_json(as_a_client(f, "GET", f"/v1/namespaces/ha/tables/{t}"))[
            "metadata"]["properties"]
        lost += len(load.acked[t] - set(props))
        unknown_landed += len(load.unknown[t] & set(props))

    feed_after = read_feed(f)
    commits = [e for e in feed_after[len(feed_before):]
               if e["operation"]["operation-type"] == "update-table"]
    verify = assert_ok_json(as_a_client(f, "GET", "/v1/audit-log/verify"))

    print(f"\nPatroni failover (synchronous standby, ttl 10 s): "
          f"{load.acked_count()} commits acknowledged ({acked_before} before the crash), "
          f"{lost} lost; answers {dict(sorted(load.answers.items()))}; "
          f"unknown outcomes {sum(len(v) for v in load.unknown.values())} "
          f"({unknown_landed} landed); promotion {promoted - crashed:.1f} s after the crash; "
          f"first commit sent after the crash acknowledged "
          f"{min(after_crash, default=float('nan')):.1f} s after it, one sent after the promotion "
          f"{min(after_promotion, default=float('nan')):.2f} s after that")

    assert not load.bad, load.bad[:5]
    assert lost == 0
    assert per_replica == {0: 200, 1: 200}
    # Every acknowledged commit is in the feed once; a commit whose outcome
    # was unknown and that landed is there too, once.
    assert len(commits) == len({(e["operation"].get("table-uuid"), e["operation"].get(
        "metadata-location")) for e in commits}), "a commit is in the change feed twice"
    assert len(commits) >= load.acked_count() + unknown_landed + len(per_replica)
    assert verify["valid"] is True, verify
