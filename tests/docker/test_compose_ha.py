#!/usr/bin/env python3
"""End-to-end test of the compose deployment's "ha" profile
(docker/docker-compose.yml): floe-ha on a PostgreSQL cluster that Patroni
runs (etcd, pg1 and pg2 from docker/patroni, a leader and a synchronous
standby), reached through libpq's multi-host URL.

Needs what tests/docker/test_compose.py needs (scripts/docker-test.sh
runs it after the other two; `scripts/docker-test.sh ha` alone) and reuses
its helpers. It builds the images, brings the profile up, and checks:

- etcd, pg1, pg2 and floe-ha up, pg1 and pg2 healthy, /ready 200 on
  floe-ha's published port; one node leads, the other is the synchronous
  standby;
- a namespace, a table and commits through floe-ha;
- the leader's container killed (SIGKILL) under steady commits: the
  standby is promoted, floe-ha commits again without a restart, and every
  acknowledged commit is in the table; every other answer is a 503 with
  Retry-After (or a 500 CommitStateUnknown, counted);
- docker compose --profile ha down -v removes it all.

Each check prints "ok" or "FAIL"; the counts go to --result FILE as
"PASSED FAILED". Exit status 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

import test_compose as tc
from test_compose import CheckFailed, expect

NODES = ("pg1", "pg2")
state: dict = {}


def compose(*args, timeout=600, check=True):
    return tc.sh(["docker", "compose", "-f", str(tc.COMPOSE_FILE), "--profile", "ha", *args],
                 timeout=timeout, check=check)


tc.compose = compose


def role(node: str) -> str:
    """What Patroni's REST API says of a node, asked from inside the
    network (from whichever node container still runs)."""
    script = ("import sys, urllib.request\n"
              "for path in ('primary', 'sync'):\n"
              "    try:\n"
              f"        urllib.request.urlopen('http://{node}:8008/' + path, timeout=2)\n"
              "        print(path); sys.exit(0)\n"
              "    except Exception:\n"
              "        pass\n"
              "print('other')\n")
    for asker in NODES:
        if asker in state.get("killed", ()):
            continue
        p = tc.sh(["docker", "compose", "-f", str(tc.COMPOSE_FILE), "--profile", "ha", "exec", "-T",
                   asker, "python3", "-"], timeout=60, check=False, quiet=True, input=script)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip().splitlines()[-1]
    return "unknown"


def check_compose_up():
    compose("down", "-v", "--remove-orphans", timeout=180, check=False)
    compose("up", "-d", "--build", "floe-ha", timeout=1800)


def check_healthy():
    tc.wait_healthy(["pg1", "pg2", "floe-ha"], timeout=300)
    tc.wait_ready()
    deadline = time.monotonic() + 90
    roles = {}
    while time.monotonic() < deadline:
        roles = {n: role(n) for n in NODES}
        if sorted(roles.values()) == ["primary", "sync"]:
            state["leader"] = next(n for n, r in roles.items() if r == "primary")
            return
        time.sleep(2)
    raise CheckFailed(f"no leader and synchronous standby: {roles}")


def commit(key, timeout=60):
    """One set-properties commit; (status, error type, Retry-After)."""
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {key: "1"}}]}
    status, doc = tc.http("POST", "/v1/namespaces/ha/tables/t", body, timeout=timeout)
    kind = doc.get("error", {}).get("type") if isinstance(doc, dict) and status != 200 else None
    return status, kind


def check_table_and_commits():
    tc.ok("POST", "/v1/namespaces", {"namespace": ["ha"]})
    tc.ok("POST", "/v1/namespaces/ha/tables", {"name": "t", "schema": tc.HEARTBEAT_SCHEMA})
    for i in range(5):
        status, kind = commit(f"before{i}")
        expect(status == 200, f"commit before{i}: {status} {kind}")


def check_failover():
    acked, answers, bad = [], {}, []
    stop = threading.Event()
    lock = threading.Lock()
    ok_times = []

    def writer(w):
        n = 0
        while not stop.is_set():
            key = f"w{w}_{n}"
            n += 1
            began = time.monotonic()
            try:
                status, kind = commit(key)
            except OSError as e:
                with lock:
                    bad.append(f"{key}: no answer ({e})")
                continue
            with lock:
                label = f"{status} {kind}" if kind else str(status)
                answers[label] = answers.get(label, 0) + 1
                if status == 200:
                    acked.append(key)
                    ok_times.append((began, time.monotonic()))
                elif status not in (503,) and kind != "CommitStateUnknownException":
                    bad.append(f"{key}: {label}")
            if status != 200:
                time.sleep(0.1)

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        expect(len(acked) >= 20, f"no steady commits before the kill: {answers}")
        leader = state["leader"]
        other = next(n for n in NODES if n != leader)
        compose("kill", "-s", "SIGKILL", leader)
        crashed = time.monotonic()  # the container is gone
        state["killed"] = (leader,)
        deadline = time.monotonic() + 90
        while role(other) != "primary" and time.monotonic() < deadline:
            time.sleep(1)
        promoted = time.monotonic()
        expect(role(other) == "primary", f"{other} was not promoted")
        deadline = time.monotonic() + 60
        # Recovered: a commit sent after the kill is acknowledged.
        while not [e for b, e in ok_times if b > crashed] and time.monotonic() < deadline:
            time.sleep(0.2)
        recovered = [e - crashed for b, e in ok_times if b > crashed]
        expect(recovered, f"floe-ha did not commit after the promotion: {answers}")
        time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    props = tc.table_meta("ha", "t")["properties"]
    lost = [k for k in acked if k not in props]
    print(f"  failover: {len(acked)} commits acknowledged, {len(lost)} lost; answers {answers}; "
          f"promotion seen {promoted - crashed:.1f} s after the kill; the first commit sent "
          f"after the kill acknowledged {min(recovered):.1f} s after it", flush=True)
    expect(not bad, f"answers other than 200, 503 and CommitStateUnknown: {bad[:5]}")
    expect(not lost, f"acknowledged commits lost: {lost[:10]}")


def check_down_removes_volumes():
    compose("down", "-v", "--remove-orphans", timeout=180)
    p = tc.sh(["docker", "volume", "ls", "-q"])
    left = [v for v in p.stdout.split() if any(v.endswith(s) for s in
                                              ("_pg1-data", "_pg2-data", "_etcd-data",
                                               "_floe-ha-data"))]
    expect(not left, f"volumes left: {left}")


CHECKS = [
    ("docker compose --profile ha up -d --build floe-ha", check_compose_up),
    ("pg1, pg2 and floe-ha healthy; a leader and a synchronous standby", check_healthy),
    ("a namespace, a table and commits through floe-ha", check_table_and_commits),
    ("the leader killed under commits: promoted, committing again, nothing acknowledged lost",
     check_failover),
    ("docker compose --profile ha down -v removes containers and volumes",
     check_down_removes_volumes),
]
FATAL = {check_compose_up, check_healthy}


def main():
    signal.signal(signal.SIGTERM, tc.interrupted)
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--result", help="write 'PASSED FAILED' here")
    ap.add_argument("--log", help="append every command's output here")
    args = ap.parse_args()
    if args.log:
        tc.LOG = open(args.log, "a")
    port = tc.free_port()
    os.environ["FLOE_HA_PORT"] = str(port)
    tc.PORT = port
    tc.BASE = f"http://127.0.0.1:{port}"
    print(f"floe-ha will be published on {tc.BASE}", flush=True)
    os.environ["FLOE_ADMIN_CREDENTIAL"] = tc.ADMIN_CREDENTIAL
    passed = failed = 0
    try:
        passed, failed = run_checks()
    except KeyboardInterrupt as e:
        print(f"FAIL interrupted ({e})", flush=True)
        passed, failed = tc.PROGRESS["passed"], tc.PROGRESS["failed"] + 1
    if args.result:
        Path(args.result).write_text(f"{passed} {failed}\n")
    return 0 if failed == 0 else 1


def run_checks():
    tc.CHECKS[:] = CHECKS
    tc.FATAL.clear()
    tc.FATAL.update(FATAL)
    return tc.run_checks()


if __name__ == "__main__":
    sys.exit(main())
