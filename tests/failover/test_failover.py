"""A database that fails over (docs/failover.md): a PostgreSQL primary with
a standby made by pg_basebackup and streaming replication, two floe
replicas connected to both through libpq's multi-host URL with
target_session_attrs=read-write, and steady load from several clients:
table commits through both replicas, write-audit-publish runs audited by
a real webhook receiver, a reader of the change feed, signed audit
checkpoints. Then the primary is killed with SIGKILL and the standby is
promoted with pg_ctl promote, with no restart of floe.

What a user relies on, checked after the switch:
- synchronous standby: no acknowledged write is lost (each snapshot a 200
  named is in its table's main history, each published run's snapshot on
  main); asynchronous standby: what is lost is the end of the old
  primary's history, never a hole, and it is counted, never hidden;
- every answer during the switch is a 200, a true 409, a 503 with
  Retry-After, or a 500 CommitStateUnknownException whose outcome the test
  resolves from the table's history (each counted by kind);
- floe commits again within seconds of the promotion;
- a grant revoked after the switch is refused on every replica;
- the change feed read across the switch has no gap and no duplicate, and
  a token from a history the new primary does not have is refused with a
  clear error, never read on from with a silent skip; the audit log paged
  across the switch likewise;
- the audit trail verifies (floe audit verify) and the signed checkpoints
  still match it, but for those of a lost history, which floe audit
  verify reports from the user's copy;
- a commit waiting for an absent synchronous standby is answered 500
  CommitStateUnknownException, never 200 nor "nothing was committed".

The figures are printed (pytest -s shows them)."""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest
import requests

from floe_integration_fixtures import (Floe, TableHandle, assert_error, assert_ok_json,
                                       clean_env, client_token, floe_binary, make_client)
from webhook import PASS

NS = ["fo"]
TABLES = ["t0", "t1", "t2"]
WAP_TABLE = "w"
M = "/management/v1"
SUBS = "/v1/event-subscriptions"
# Audit events a page of the audit log reader.
AUDIT_PAGE = 5
# Seconds of load before the failover, and after floe commits again.
BEFORE_S = 3.0
AFTER_S = 3.0
# How soon after the promotion floe must commit again, and a revoke reach
# every replica.
RECOVER_S = 15.0
REACH_S = 5.0
_ids = itertools.count(int(time.time()) % 100000 * 1_000_000 + 1)


def make_key(path):
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(path)],
                   check=True, capture_output=True)
    os.chmod(path, 0o600)
    return path


class Replicas:
    """Two floe daemons on the pair's multi-host URL, sharing one data
    directory's keys so one token is good at both."""

    def __init__(self, pair, key):
        env = {"FLOE_DATABASE_URL": pair.url, "FLOE_AUTH": "floe", "FLOE_THREADS": "4",
               "FLOE_AUDIT_SIGNING_KEY": str(key),
               "FLOE_AUDIT_CHECKPOINT_INTERVAL_SECONDS": "0",
               "FLOE_SUBSCRIPTION_POLL_MS": "100"}
        self.a = Floe(env=env)
        self.all = [self.a]
        self.a.wait_ready(60)
        self.a.authenticate()
        self.b = Floe(env={**env, "FLOE_DATA_DIR": str(self.a.workdir / "data")})
        self.all.append(self.b)
        self.b.wait_ready(60)
        self.b.session.headers["Authorization"] = f"Bearer {self.a.token}"

    def cleanup(self):
        for f in self.all:
            f.cleanup()


class Tally:
    """Every answer of the load, by what was asked and what came back."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = collections.Counter()
        self.bad = []
        self.acked = collections.defaultdict(list)  # table -> [(sid, location, answered, began)]
        self.unknown = collections.defaultdict(list)  # table -> [sid]
        self.first_after = {}                         # what -> monotonic time of first 200

    def answer(self, what, r, ok=(200,), after=None):
        kind = str(r.status_code)
        try:
            err = r.json().get("error") if r.status_code >= 400 else None
        except ValueError:
            err = {"type": "(not JSON)"}
        if err:
            kind += " " + str(err.get("type"))
        good = r.status_code in ok
        if not good:
            # 503 must say when to retry; 409 must be a true conflict; a 500
            # only "state unknown"; anything else is a defect.
            fine = (r.status_code == 503 and r.headers.get("Retry-After")) or \
                   (r.status_code == 409 and err and err.get("type") in (
                       "CommitFailedException", "NotFastForwardException")) or \
                   (r.status_code == 500 and err and
                    err.get("type") == "CommitStateUnknownException")
            if r.status_code == 503 and err and err.get("type") == "AuditUnavailableException" \
                    and r.headers.get("Retry-After"):
                fine = True
            if not fine:
                self.bad.append((what, r.status_code, dict(r.headers).get("Retry-After"),
                                 r.text[:300]))
        with self.lock:
            self.kinds[f"{what} {kind}"] += 1
            if good and after is not None and what not in self.first_after and \
                    time.monotonic() > after[0] > 0:
                self.first_after[what] = time.monotonic()
        return good

    def failure(self, what, exc):
        with self.lock:
            self.kinds[f"{what} no answer ({type(exc).__name__})"] += 1


def snapshot_change(meta, ref="main"):
    refs = meta.get("refs", {})
    head = refs.get(ref, {}).get("snapshot-id")
    sid = next(_ids)
    snap = {"snapshot-id": sid, "sequence-number": meta.get("last-sequence-number", 0) + 1,
            "timestamp-ms": int(time.time() * 1000),
            "manifest-list": f"{meta['location']}/metadata/snap-{sid}.avro",
            "summary": {"operation": "append"}, "schema-id": meta.get("current-schema-id", 0)}
    if head is not None:
        snap["parent-snapshot-id"] = head
    requirements = [{"type": "assert-ref-snapshot-id", "ref": ref, "snapshot-id": head}]
    updates = [{"action": "add-snapshot", "snapshot": snap},
               {"action": "set-snapshot-ref", "ref-name": ref, "type": "branch",
                "snapshot-id": sid}]
    return sid, requirements, updates


class Load:
    """Writers, a WAP publisher, a change-feed reader and a checkpointer,
    each a thread, until stop()."""

    def __init__(self, reps, tally):
        self.reps, self.tally = reps, tally
        self.stopping = threading.Event()
        self.promoted_at = [0.0]   # set when the standby is promoted
        self.cut_at = [0.0]        # set when an asynchronous standby stops receiving
        self.killed_at = [0.0]     # set when the primary is killed
        self.feed_events = []      # (event-id, event) in the order read
        self.tokens = []           # (monotonic time, token) after each page
        self.audit_read = []       # audit events paged past, in the order read
        self.audit_tail = []       # the last page's, read again until it fills
        self.audit_tokens = []     # (monotonic time, token, the event it follows)
        self.checkpoints = []      # (monotonic time, acknowledged checkpoint)
        self.published = []        # (sid, answered, began) of runs published
        self.threads = []

    def start(self):
        plan = [(self.writer, ("t0", self.reps.a)), (self.writer, ("t0", self.reps.b)),
                (self.writer, ("t1", self.reps.b)), (self.writer, ("t2", self.reps.a)),
                (self.publisher, ()), (self.feed_reader, ()), (self.audit_reader, ()),
                (self.checkpointer, ())]
        for fn, args in plan:
            t = threading.Thread(target=self._guard, args=(fn, args), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)

    def _guard(self, fn, args):
        try:
            fn(*args)
        except Exception as e:  # a thread's own defect must fail the test
            self.tally.bad.append((fn.__name__, "exception", None, repr(e)))

    def _pause(self):
        time.sleep(0.05)

    def writer(self, name, f):
        url = TableHandle(f, NS, name).url
        while not self.stopping.is_set():
            try:
                r = f.get(url, timeout=30)
            except requests.RequestException as e:
                self.tally.failure("load", e)
                self._pause()
                continue
            if not self.tally.answer("load", r):
                self._pause()
                continue
            sid, req, upd = snapshot_change(r.json()["metadata"])
            began = time.monotonic()
            try:
                c = f.post(url, json={"requirements": req, "updates": upd}, timeout=30)
            except requests.RequestException as e:
                self.tally.failure("commit", e)
                with self.tally.lock:
                    self.tally.unknown[name].append(sid)
                continue
            if self.tally.answer("commit", c, after=self.promoted_at):
                with self.tally.lock:
                    self.tally.acked[name].append(
                        (sid, c.json()["metadata-location"], time.monotonic(), began))
            elif c.status_code == 500:
                with self.tally.lock:
                    self.tally.unknown[name].append(sid)
            elif c.status_code == 503:
                self._pause()

    def publisher(self):
        f = self.reps.a
        t = TableHandle(f, NS, WAP_TABLE)
        while not self.stopping.is_set():
            try:
                r = f.post(t.wap_url, json={}, timeout=30)
                if not self.tally.answer("wap stage", r, ok=(201,)):
                    self._pause()
                    continue
                run = r.json()
                b = f.get(t.url, timeout=30)
                if not self.tally.answer("load", b):
                    continue
                sid, req, upd = snapshot_change(b.json()["metadata"], ref=run["branch"])
                c = f.post(t.url, json={"requirements": req, "updates": upd}, timeout=30)
                if not self.tally.answer("wap branch commit", c):
                    continue
                began = time.monotonic()
                p = f.post(t.run_url(run["id"]) + "/publish", json={"snapshot-id": sid},
                           timeout=60)
                if self.tally.answer("wap publish", p, after=self.promoted_at):
                    with self.tally.lock:
                        self.published.append((sid, time.monotonic(), began))
                elif p.status_code == 500:
                    with self.tally.lock:
                        self.tally.unknown[WAP_TABLE].append(sid)
            except requests.RequestException as e:
                self.tally.failure("wap", e)
                self._pause()

    def feed_reader(self):
        token = None
        flip = itertools.cycle([self.reps.a, self.reps.b])
        while True:
            last = self.stopping.is_set()
            f = next(flip)
            body = {"page-size": 200}
            if token:
                body["continuation-token"] = token
            try:
                r = f.post("/v1/events", json=body, timeout=30)
            except requests.RequestException as e:
                self.tally.failure("feed", e)
                continue
            if r.status_code == 400:
                # A token of a history lost with the old primary: the
                # reader has met the error a user would, and stops here.
                self.lost_token_answer = r
                return
            if not self.tally.answer("feed", r):
                time.sleep(0.1)
                continue
            page = r.json()
            for e in page["events"]:
                self.feed_events.append((e["event-id"], e))
            token = page["next-page-token"]
            self.tokens.append((time.monotonic(), token))
            if last and not page["events"]:
                return
            if not page["events"]:
                time.sleep(0.1)

    def audit_reader(self):
        """Pages the audit log across the switch, a few events a page so
        that it holds tokens of the last moments. The last page has no
        token: it is read again from the same one until it fills."""
        token = ""
        flip = itertools.cycle([self.reps.b, self.reps.a])
        while True:
            last = self.stopping.is_set()
            f = next(flip)
            try:
                r = f.get("/v1/audit-log", params={"pageSize": AUDIT_PAGE, "pageToken": token},
                          timeout=30)
            except requests.RequestException as e:
                self.tally.failure("audit log", e)
                continue
            if r.status_code == 400:
                # A token of a history lost with the old primary.
                self.lost_audit_answer = r
                return
            if not self.tally.answer("audit log", r):
                time.sleep(0.1)
                continue
            page = r.json()
            if page["next-page-token"] is None:
                self.audit_tail = page["events"]
                if last:
                    return
                time.sleep(0.05)
                continue
            self.audit_read += page["events"]
            self.audit_tail = []
            token = page["next-page-token"]
            self.audit_tokens.append((time.monotonic(), token, page["events"][-1]))

    def checkpointer(self):
        f = self.reps.b
        while not self.stopping.is_set():
            try:
                r = f.post("/v1/audit-log/checkpoints", timeout=30)
            except requests.RequestException as e:
                self.tally.failure("checkpoint", e)
                continue
            if self.tally.answer("checkpoint", r, ok=(200, 201)):
                self.checkpoints.append((time.monotonic(), r.json()))
            time.sleep(0.25)


def main_history(f, name):
    """The snapshot ids of main's ancestry and every metadata file the
    table's metadata-log and current location name."""
    body = assert_ok_json(f.get(TableHandle(f, NS, name).url, timeout=30))
    meta = body["metadata"]
    parents = {s["snapshot-id"]: s.get("parent-snapshot-id") for s in meta.get("snapshots", [])}
    chain, sid = set(), meta.get("refs", {}).get("main", {}).get("snapshot-id")
    while sid is not None:
        chain.add(sid)
        sid = parents.get(sid)
    files = {e["metadata-file"] for e in meta.get("metadata-log", [])}
    files.add(body["metadata-location"])
    return chain, files


def read_feed(f, token=None):
    """Every event after token (from the start without one), by pages."""
    events = []
    while True:
        body = {"page-size": 500}
        if token:
            body["continuation-token"] = token
        page = assert_ok_json(f.post("/v1/events", json=body, timeout=30))
        events += page["events"]
        token = page["next-page-token"]
        if not page["events"]:
            return events, token


def read_audit_log(f, token=""):
    """Every audit event after token (from the start with ""), by pages."""
    events = []
    while True:
        page = assert_ok_json(f.get("/v1/audit-log", params={"pageSize": 500, "pageToken": token},
                                    timeout=30))
        events += page["events"]
        token = page["next-page-token"]
        if token is None:
            return events


def check_audit_read_across(reps, load):
    """The audit log paged across the switch is the log as the new primary
    has it: no gap, no duplicate."""
    full = read_audit_log(reps.a)
    rest = read_audit_log(reps.b, load.audit_tokens[-1][1]) if load.audit_tokens else \
        read_audit_log(reps.b)
    read = load.audit_read + rest
    assert read[:len(full)] == full, \
        "the audit log paged across the switch is not the log as it now stands"
    return len(read)


def revoke_reaches_every_replica(reps, token, grant, path):
    """Revoke through replica a; both refuse within REACH_S."""
    assert_ok_json(reps.a.post(f"{M}/roles/readers/grants/revoke", json=grant), 200)
    for f in (reps.a, reps.b):
        began = time.monotonic()
        while True:
            r = requests.get(f.url + path, headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
            if r.status_code == 403:
                assert_error(r, 403, "ForbiddenException", "lacks TABLE_READ")
                break
            assert r.status_code == 200, r.text
            assert time.monotonic() - began < REACH_S, \
                f"{f.url} still allows a grant revoked {REACH_S} s ago"
            time.sleep(0.05)


def audit_verify(pair, key):
    r = subprocess.run([str(floe_binary()), "audit", "verify", f"--database={pair.url}",
                        f"--public-key={key}"], capture_output=True, text=True,
                       env=clean_env(), timeout=120)
    return r.returncode, r.stdout + r.stderr


def setup_catalog(reps, webhooks):
    f = reps.a
    f.create_namespace(NS)
    for name in TABLES + [WAP_TABLE]:
        TableHandle(f, NS, name).create()
    receiver = webhooks(default=PASS)
    assert_ok_json(f.post("/v1/audit-hooks", json={"name": "pass", "url": receiver.url}), 201)
    # A subscription pushing the events of two tables to a real receiver.
    sink = webhooks(default=PASS, path="/floe")
    sub = assert_ok_json(f.post(SUBS, json={
        "name": "lineage", "url": sink.url, "secret": "a shared secret of some length",
        "filter": {"catalog-objects-by-name": [NS + ["t1"], NS + [WAP_TABLE]]}}), 201)
    reps.sink, reps.sub = sink, sub
    # A reader whose allowed read both replicas keep before the switch.
    assert_ok_json(f.post(f"{M}/roles", json={"name": "readers"}), 201)
    grant = {"privilege": "TABLE_READ", "on": {"kind": "table", "namespace": NS, "table": "t1"}}
    assert_ok_json(f.post(f"{M}/roles/readers/grants", json=grant), 201)
    token = client_token(f, make_client(f, "reader", roles=("readers",)))
    path = f"/v1/namespaces/{NS[0]}/tables/t1"
    for rep in (reps.a, reps.b):
        for _ in range(3):
            r = requests.get(rep.url + path, headers={"Authorization": f"Bearer {token}"},
                             timeout=30)
            assert r.status_code == 200, r.text
    return token, grant, path


def fail_over(pair, load, partition_s):
    """kill -9 the primary (after cutting the standby off partition_s
    before, for an asynchronous standby) and promote the standby."""
    if partition_s:
        pair.relay.cut()
        load.cut_at[0] = time.monotonic()
        time.sleep(partition_s)
    killed = time.monotonic()
    load.killed_at[0] = killed
    pair.primary.kill9()
    # The moments an operator or an HA agent takes to decide.
    time.sleep(1.0)
    began = time.monotonic()
    pair.standby.promote()
    load.promoted_at[0] = time.monotonic()
    return killed, began


def run_failover(pair, reps, webhooks, key, partition_s=0.0):
    token, grant, path = setup_catalog(reps, webhooks)
    tally = Tally()
    load = Load(reps, tally)
    began = time.monotonic()
    load.start()
    time.sleep(BEFORE_S)
    killed, promote_began = fail_over(pair, load, partition_s)
    deadline = time.monotonic() + RECOVER_S
    while "commit" not in tally.first_after and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "commit" in tally.first_after, \
        f"no commit within {RECOVER_S} s of the promotion: {dict(tally.kinds)}\n" + \
        reps.a.log_tail(3000)
    time.sleep(AFTER_S)
    load.stop()
    figures = {
        "load seconds": round(time.monotonic() - began, 1),
        "first commit after promotion (s)":
            round(tally.first_after["commit"] - load.promoted_at[0], 2),
        "pg_ctl promote took (s)": round(load.promoted_at[0] - promote_began, 2),
        "promotion after the kill (s)": round(promote_began - killed, 2),
    }
    return tally, load, (token, grant, path), figures


def check_answers(tally):
    assert not tally.bad, "answers no client can act on:\n" + \
        "\n".join(map(repr, tally.bad[:20]))


def logged_files(pair):
    """Every metadata file commit_log names (the table's own metadata-log
    keeps only the last write.metadata.previous-versions-max)."""
    rows = pair.standby.sql("SELECT metadata_location FROM commit_log")
    return {r[0] for r in rows}


def resolve(pair, reps, tally, load):
    """For every table: acknowledged snapshots present and lost; unknown
    outcomes resolved from the history."""
    out = {"acked": 0, "lost": [], "kept": [], "unknown landed": 0, "unknown not landed": 0}
    logged = logged_files(pair)
    for name in TABLES:
        chain, files = main_history(reps.b, name)
        files |= logged
        for sid, location, t, began in tally.acked[name]:
            out["acked"] += 1
            if sid not in chain or location not in files:
                out["lost"].append((name, sid, t, began))
            else:
                out["kept"].append((name, sid, t, began))
        for sid in tally.unknown[name]:
            out["unknown landed" if sid in chain else "unknown not landed"] += 1
    chain, _ = main_history(reps.b, WAP_TABLE)
    for sid, t, began in load.published:
        out["acked"] += 1
        if sid not in chain:
            out["lost"].append((WAP_TABLE, sid, t, began))
        else:
            out["kept"].append((WAP_TABLE, sid, t, began))
    for sid in tally.unknown[WAP_TABLE]:
        out["unknown landed" if sid in chain else "unknown not landed"] += 1
    return out


def print_figures(title, figures, tally, outcome):
    print(f"\n=== {title} ===")
    for k, v in figures.items():
        print(f"  {k}: {v}")
    print(f"  writes acknowledged: {outcome['acked']}, lost: {len(outcome['lost'])}")
    print(f"  500 CommitStateUnknown resolved: landed {outcome['unknown landed']}, "
          f"not landed {outcome['unknown not landed']}")
    print("  answers by kind:")
    for k, v in sorted(tally.kinds.items()):
        print(f"    {k}: {v}")


def check_pushed(reps, tally):
    """Every event of the subscription's filter after its start reaches
    the receiver, in the feed's order; a delivery repeated across the
    switch (at least once) is counted. Returns (events, repeated)."""
    want, _ = read_feed(reps.a, reps.sub["position"])
    want = [e["event-id"] for e in want
            if e["operation"].get("identifier", {}).get("name") in ("t1", WAP_TABLE)]

    def delivered():
        return [json.loads(r.body)["data"]["event-id"] for r in list(reps.sink.requests)]
    deadline = time.monotonic() + 60
    while not set(want) <= set(delivered()) and time.monotonic() < deadline:
        time.sleep(0.2)
    got = delivered()
    first = list(dict.fromkeys(got))
    missing = [i for i in want if i not in set(got)]
    assert not missing, f"{len(missing)} events never pushed, first {missing[:5]}"
    assert [i for i in first if i in set(want)] == want, "pushed out of the feed's order"
    return len(want), len(got) - len(first)


def check_feed_read_across(reps, load):
    """The reader's events, read page by page across the switch, are the
    feed as the new primary has it: no gap, no duplicate."""
    full, _ = read_feed(reps.a)
    # The reader's stream, read on to the end from its last token.
    rest, _ = read_feed(reps.b, load.tokens[-1][1])
    ids = [i for i, _ in load.feed_events] + [e["event-id"] for e in rest]
    assert len(ids) == len(set(ids)), "the feed gave an event twice across the switch"
    full_ids = [e["event-id"] for e in full]
    assert ids[:len(full_ids)] == full_ids, \
        "the feed read across the switch is not the feed as it now stands"
    return len(ids)


def check_feed_has_every_acknowledged_commit(reps, tally):
    """Each acknowledged commit's metadata file has its event. The feed
    shows an event once no older transaction is running, so the test
    waits for the last ones."""
    deadline = time.monotonic() + 15
    while True:
        full, _ = read_feed(reps.a)
        located = {e["operation"].get("metadata-location") for e in full}
        missing = [(n, sid) for n in TABLES for sid, loc, _, _ in tally.acked[n]
                   if loc not in located]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not missing, f"acknowledged commits without their change event: {missing[:5]}"


def audit_export(pair):
    r = subprocess.run([str(floe_binary()), "audit", "export", f"--database={pair.url}"],
                       capture_output=True, text=True, env=clean_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def check_checkpoints(pair, load, key, tmp_path):
    """The signed checkpoints acknowledged during the load, against the
    chain as the new primary has it. Of those signed on the old primary,
    the ones that still match are the first (a lost history is a suffix,
    never a hole); every one signed on the new primary matches; any
    that does not is found by floe audit verify when the user's own copy
    of it is checked with the database's export: a loss is never hidden.
    Returns (acknowledged, matching)."""
    lines = audit_export(pair)
    chain = {l["position"]: l["hash"] for l in lines if l.get("kind") == "link"}
    acked = [(t, {k: v for k, v in c.items() if k != "created"}) for t, c in load.checkpoints]
    matching = [c for _, c in acked if chain.get(c["position"]) == c["hash"]]
    flags = [chain.get(c["position"]) == c["hash"] for t, c in acked if t < load.killed_at[0]]
    assert flags == sorted(flags, reverse=True), \
        f"a checkpoint no longer matches while a later one does: {flags}"
    after = [c for t, c in acked if t > load.promoted_at[0] and c not in matching]
    assert not after, f"checkpoints signed on the new primary do not match: {after[:2]}"
    if len(matching) < len(acked):
        mine = [dict(c, kind="checkpoint") for _, c in acked
                if chain.get(c["position"]) != c["hash"]]
        at = max(i for i, l in enumerate(lines) if l.get("kind") in ("header", "checkpoint"))
        export = tmp_path / "with-kept-checkpoints.jsonl"
        export.write_text("\n".join(json.dumps(l) for l in lines[:at + 1] + mine +
                                    lines[at + 1:]) + "\n")
        r = subprocess.run([str(floe_binary()), "audit", "verify", f"--file={export}",
                            f"--public-key={key}"], capture_output=True, text=True,
                           env=clean_env(), timeout=120)
        assert r.returncode == 1, "verify accepted checkpoints the chain no longer has:\n" + \
            r.stdout + r.stderr
        assert json.loads(r.stdout)["problems"], r.stdout
    return len(acked), len(matching)


@pytest.fixture
def key(tmp_path):
    return make_key(tmp_path / "audit.key")


def test_a_synchronous_standby_takes_over_with_nothing_acknowledged_lost(
        pair_factory, webhooks, key, tmp_path):
    pair = pair_factory(synchronous=True)
    reps = Replicas(pair, key)
    try:
        tally, load, (token, grant, path), figures = run_failover(pair, reps, webhooks, key)
        outcome = resolve(pair, reps, tally, load)
        acked, present = check_checkpoints(pair, load, key, tmp_path)
        figures["signed checkpoints acknowledged / still matching"] = f"{acked} / {present}"
        print_figures("synchronous standby", figures, tally, outcome)
        assert outcome["acked"] > 0 and tally.kinds.get("commit 200", 0) > 0
        assert not outcome["lost"], f"acknowledged writes lost: {outcome['lost'][:5]}"
        assert acked == present
        revoke_reaches_every_replica(reps, token, grant, path)
        rc, report = audit_verify(pair, key)
        assert rc == 0, report
        pushed, repeated = check_pushed(reps, tally)
        print(f"  subscription: events pushed / pushed again: {pushed} / {repeated}")
        check_answers(tally)
        print(f"  audit events paged across the switch: {check_audit_read_across(reps, load)}")
        events = check_feed_read_across(reps, load)
        print(f"  feed events read across the switch: {events}")
        check_feed_has_every_acknowledged_commit(reps, tally)
    finally:
        reps.cleanup()


def test_an_asynchronous_standby_loses_only_what_it_never_received_and_the_feed_says_so(
        pair_factory, webhooks, key, tmp_path):
    pair = pair_factory(synchronous=False)
    reps = Replicas(pair, key)
    try:
        tally, load, (token, grant, path), figures = run_failover(
            pair, reps, webhooks, key, partition_s=1.0)
        outcome = resolve(pair, reps, tally, load)
        cut = load.cut_at[0]
        # PostgreSQL loses what the standby had not received: the end of
        # the old primary's history, never a hole. No write on the old
        # primary that began after a lost one was acknowledged is kept,
        # and none made after the partition is.
        killed = load.killed_at[0]
        for name, sid, answered, _ in outcome["lost"]:
            later_kept = [k for k in outcome["kept"] if answered < k[3] and k[2] < killed]
            assert not later_kept, \
                f"{name} {sid} lost while writes begun after it was acknowledged are kept: " \
                f"{later_kept[:3]}"
        after_cut = [k for k in outcome["kept"] if k[3] > cut and k[2] < killed]
        assert not after_cut, f"writes made after the partition survived it: {after_cut[:3]}"
        assert outcome["lost"], "nothing was lost: the partition did not hold back the standby"
        lost_first = min(x[2] for x in outcome["lost"])
        figures["writes acknowledged between the partition and the promotion"] = sum(
            1 for x in outcome["lost"] + outcome["kept"] if cut <= x[2] < load.promoted_at[0])
        figures["first lost write acknowledged before the partition (s)"] = \
            round(max(0.0, cut - lost_first), 2)

        # The feed: a token from before the partition reads every later
        # event exactly once; the reader's last token, from the lost
        # history, is refused with a clear error.
        full, _ = read_feed(reps.a)
        full_ids = [e["event-id"] for e in full]
        assert len(full_ids) == len(set(full_ids))
        # Tokens at an event the new primary has (the shared history), and
        # tokens at an event it lost.
        known = set(full_ids)
        shared = [tok for t, tok in load.tokens if t < killed and tok.split(".")[1] in known]
        gone = [tok for t, tok in load.tokens if tok.split(".")[1] not in known | {"0"}]
        assert shared, "the reader read nothing that the new primary has"
        safe = shared[-1]
        later, _ = read_feed(reps.b, safe)
        later_ids = [e["event-id"] for e in later]
        at = safe.split(".")[1]
        expected = full_ids[full_ids.index(at) + 1:] if at != "0" else full_ids
        assert later_ids == expected, \
            "a token from before the partition skipped or repeated an event"
        assert len(later_ids) > 0
        seen_before = [i for i, _ in load.feed_events]
        assert gone, "the reader read no event that the failover lost"
        answer = reps.a.post("/v1/events", json={"continuation-token": gone[-1]}, timeout=30)
        assert_error(answer, 400, "BadRequestException",
                     ("no longer has", "past the last event"))
        # The reader itself met that answer when its token was lost, and
        # never read on past the new primary's events.
        mine = getattr(load, "lost_token_answer", None)
        if load.tokens[-1][1] in gone:
            assert mine is not None, "the reader read on from a lost position"
            assert_error(mine, 400, "BadRequestException")
        lost_events = [i for i in seen_before if i not in set(full_ids)]
        figures["feed events read before the switch and lost with it"] = len(lost_events)
        figures["feed events after the safe token, each once"] = len(later_ids)
        pushed, repeated = check_pushed(reps, tally)
        figures["subscription: events pushed / pushed again"] = f"{pushed} / {repeated}"
        figures["feed answer to the lost-history token"] = \
            f"{answer.status_code} {answer.json()['error']['message']}"

        # The audit log, paged the same way: a page token at an event the
        # new primary has pages on with no gap and no repeat; one at an
        # event it lost is refused. An audit event's id may be handed out
        # again by the new primary, so an event is matched whole.
        full = read_audit_log(reps.a)
        whole = {json.dumps(e, sort_keys=True) for e in full}
        shared = [(tok, e) for t, tok, e in load.audit_tokens
                  if t < killed and json.dumps(e, sort_keys=True) in whole]
        gone = [tok for _, tok, e in load.audit_tokens
                if json.dumps(e, sort_keys=True) not in whole]
        assert shared, "the audit reader paged past nothing that the new primary has"
        safe, at = shared[-1]
        later = read_audit_log(reps.b, safe)
        assert later == full[full.index(at) + 1:], \
            "a page token from before the partition skipped or repeated an audit event"
        assert gone, "the audit reader paged past no event that the failover lost"
        answer = reps.b.get("/v1/audit-log", params={"pageToken": gone[-1]}, timeout=30)
        assert_error(answer, 400, "BadRequestException", ("no longer has", "past the last event"))
        if load.audit_tokens[-1][1] in gone:
            mine = getattr(load, "lost_audit_answer", None)
            assert mine is not None, "the audit reader paged on from a lost position"
            assert_error(mine, 400, "BadRequestException")
        figures["audit events paged before the switch and lost with it"] = len(
            [e for e in load.audit_read if json.dumps(e, sort_keys=True) not in whole])
        figures["audit events after the safe page token, each once"] = len(later)
        figures["audit log answer to the lost-history page token"] = \
            f"{answer.status_code} {answer.json()['error']['message']}"

        acked, present = check_checkpoints(pair, load, key, tmp_path)
        figures["signed checkpoints acknowledged / still matching"] = f"{acked} / {present}"
        print_figures("asynchronous standby, partitioned 1 s before the kill", figures, tally,
                      outcome)
        revoke_reaches_every_replica(reps, token, grant, path)
        rc, report = audit_verify(pair, key)
        assert rc == 0, report
        check_answers(tally)
    finally:
        reps.cleanup()


def test_a_commit_waiting_for_an_absent_synchronous_standby_is_never_acknowledged(pair_factory):
    """A synchronous standby cut off: a commit waits for it, and when
    floe's deadline passes the answer is 500 CommitStateUnknownException:
    never a 200 that the promotion of that standby would take back, and
    never a 503 "nothing was committed" for a COMMIT still waiting on the
    server, which lands when the standby answers again."""
    pair = pair_factory(synchronous=True)
    f = Floe(env={"FLOE_DATABASE_URL": pair.url, "FLOE_DB_STATEMENT_TIMEOUT_MS": "1000"})
    try:
        f.wait_ready(60)
        f.create_namespace(NS)
        t = TableHandle(f, NS, "held")
        t.create()
        kept = t.add_snapshot()
        pair.relay.cut()
        sid, req, upd = snapshot_change(t.metadata())
        began = time.monotonic()
        r = f.post(t.url, json={"requirements": req, "updates": upd}, timeout=60)
        took = time.monotonic() - began
        assert r.status_code != 200, \
            f"a commit the standby never received was acknowledged after {took:.1f} s"
        assert r.status_code == 500, f"{r.status_code} {r.text}\n{f.log_tail(3000)}"
        assert_error(r, 500, "CommitStateUnknownException")
        pair.primary.kill9()
        pair.standby.promote()
        deadline = time.monotonic() + RECOVER_S
        while f.get(t.url, timeout=30).status_code != 200:
            assert time.monotonic() < deadline, f.log_tail(3000)
            time.sleep(0.1)
        chain, _ = main_history(f, "held")
        assert kept in chain and sid not in chain
        print(f"\n=== synchronous standby cut off ===\n  commit answered {r.status_code} "
              f"{r.json()['error']['type']} after {took:.1f} s; after the promotion it is "
              f"not in the history, the commit before it is")
    finally:
        f.cleanup()


def test_a_commit_the_standby_never_received_is_settled_as_lost_after_the_promotion(pair_factory):
    """A commit in flight when the primary dies, none of whose WAL reached
    the standby: the promoted standby hands its transaction id out again,
    and that id soon belongs to another transaction that committed. floe
    settles the broken commit on the new primary and must not take that
    for its own: the answer is 503 "nothing was committed" with
    Retry-After, the file it wrote is removed, and the table's history is
    the new primary's. (Taking the status of the id alone answered 200 for
    a commit that is in no history.)"""
    pair = pair_factory(synchronous=True)
    f = Floe(env={"FLOE_DATABASE_URL": pair.url, "FLOE_DB_STATEMENT_TIMEOUT_MS": "60000"})
    try:
        f.wait_ready(60)
        f.create_namespace(NS)
        t = TableHandle(f, NS, "reused")
        t.create()
        kept = t.add_snapshot()
        pair.relay.cut()
        sid, req, upd = snapshot_change(t.metadata())
        answer = []
        poster = threading.Thread(target=lambda: answer.append(f.post(
            t.url, json={"requirements": req, "updates": upd}, timeout=120)), daemon=True)
        poster.start()
        # The COMMIT waits for the standby that receives nothing: its id.
        deadline = time.monotonic() + 30
        rows = []
        while not rows:
            assert time.monotonic() < deadline, f.log_tail(3000)
            rows = pair.primary.sql("SELECT backend_xid::text FROM pg_stat_activity "
                                    "WHERE wait_event = 'SyncRep'")
            time.sleep(0.05)
        xid = int(rows[0][0])
        pair.primary.kill9()
        pair.standby.promote()
        # The new primary hands the id out again, to transactions that
        # commit (each statement of an autocommit session is one).
        burnt = 0
        with psycopg.connect(pair.standby.url("postgres"), autocommit=True) as conn:
            while int(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]) <= xid:
                burnt += 1
        poster.join(120)
        assert answer, "the commit was not answered"
        r = answer[0]
        assert_error(r, 503, "ServiceUnavailableException")
        assert r.json()["error"]["message"] == (
            "The database connection broke before the commit completed; nothing was "
            "committed, retry"), r.text
        assert r.headers.get("Retry-After"), r.headers
        chain, files = main_history(f, "reused")
        assert kept in chain and sid not in chain
        # Only the files of the table's history are left.
        meta_dir = Path(t.metadata()["location"].removeprefix("file://")) / "metadata"
        on_disk = {f"file://{p}" for p in meta_dir.glob("*.metadata.json")}
        assert on_disk == files, (on_disk - files, f.log_tail(3000))
        assert "did not land" in f.log(), f.log_tail(3000)
        print(f"\n=== a commit in no history ===\n  its id {xid} handed out again after "
              f"{burnt} transactions on the new primary; answered {r.status_code}")
    finally:
        f.stop()


def test_connections_left_open_to_a_dead_primary_are_not_handed_out(pair_factory):
    """The postmaster dies and its backends follow, each telling its idle
    client FATAL "terminating connection due to unexpected postmaster
    exit" before it closes. A pooled connection in that state is opened
    again (on the promoted standby) before a request uses it: every
    request after the promotion is answered 200, none 503 "The catalog
    database is unavailable" for a connection floe could have known was
    gone."""
    pair = pair_factory(synchronous=False)
    f = Floe(env={"FLOE_DATABASE_URL": pair.url})
    try:
        f.wait_ready(60)
        f.create_namespace(NS)
        t = TableHandle(f, NS, "pooled")
        t.create()
        t.add_snapshot()

        def loads(n):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                return list(pool.map(lambda _: f.get(t.url, timeout=30), range(n)))

        # Every connection of the HTTP workers' pool is open, on the primary.
        assert {r.status_code for r in loads(32)} == {200}
        pair.primary.kill_postmaster()
        pair.standby.promote()
        answers = loads(64)
        assert [r.status_code for r in answers] == [200] * 64, \
            [(r.status_code, r.text[:200]) for r in answers if r.status_code != 200][:3]
        assert "was lost; reconnecting" in f.log(), f.log_tail(3000)
    finally:
        f.stop()
