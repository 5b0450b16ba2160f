#!/usr/bin/env python3
"""End-to-end test of floe's compose deployment (docker/docker-compose.yml).

Needs a Docker engine at DOCKER_HOST with the image debian:bookworm-slim and
`docker compose` (scripts/docker-test.sh provides all three); uses only the
Python standard library. It builds the images, brings the deployment up,
and through the published port (127.0.0.1:8181; FLOE_PORT or a free port when
8181 is taken):

- checks health, the non-root user and the port binding;
- creates namespaces and tables and commits to them with raw REST commits;
- reads floe's GET /metrics (Prometheus text) and checks the commits are
  counted; starts the monitoring profile's Prometheus (docker/test-prometheus,
  built here, unless FLOE_PROMETHEUS_IMAGE names another image) and checks
  that it scrapes floe;
- runs write-audit-publish through the auditor service: PyIceberg (a
  one-off container of the compose file's pyiceberg service) writes real
  rows to the staging branch, a bad batch is rejected (422) and a good one
  published (200, main moves to exactly the audited snapshot);
- restarts floe, then PostgreSQL, then recreates every container, and
  checks each time that all of it is still there;
- takes the deployment down with its volumes.

PostgreSQL is docker/test-postgres (built here) unless FLOE_POSTGRES_IMAGE
names another image. Each check prints "ok" or "FAIL"; the counts go to --result FILE as
"PASSED FAILED". Exit status 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker" / "docker-compose.yml"
HELPERS = Path(__file__).resolve().parent
PROJECT = "floe"  # docker/.env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_port() -> int:
    """FLOE_PORT, else 8181 when it is free on 127.0.0.1, else any free port."""
    if os.environ.get("FLOE_PORT"):
        return int(os.environ["FLOE_PORT"])
    for port in (8181, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise SystemExit("no free port on 127.0.0.1")


PORT = 8181  # set in main()
BASE = "http://127.0.0.1:8181"
TEST_PG_IMAGE = "floe-test-postgres:latest"
TEST_PROMETHEUS_IMAGE = "floe-test-prometheus:latest"
PROMETHEUS = "http://127.0.0.1:9090"  # set in main()
SECRET = secrets.token_hex(24)
ADMIN_CREDENTIAL = "admin:" + secrets.token_urlsafe(24)

ORDERS_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "amount_eur", "type": "double", "required": False},
    {"id": 3, "name": "currency", "type": "string", "required": False},
    {"id": 4, "name": "status", "type": "string", "required": False},
    {"id": 5, "name": "order_ts", "type": "timestamp", "required": False},
]}
HEARTBEAT_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "at", "type": "timestamptz", "required": True},
]}


class CheckFailed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)


# ---------------------------------------------------------------------------
# Running things


def sh(cmd, timeout=600, check=True, quiet=False, input=None, env=None):
    """Run a command; its output (stdout, stderr) as text. Raises CheckFailed."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                           env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{' '.join(map(str, cmd))}: still running after {timeout}s")
    if check and p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-40:])
        raise CheckFailed(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{tail}")
    if not quiet and LOG is not None:
        LOG.write(f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}\n")
        LOG.flush()
    return p


def compose(*args, timeout=600, check=True):
    """docker compose, as the README writes it (the v2 command line)."""
    return sh(["docker", "compose", "-f", str(COMPOSE_FILE), *args], timeout=timeout, check=check)


def pyiceberg(*args):
    """tests/docker/pyiceberg_rows.py in a one-off container of the pyiceberg service."""
    p = compose("run", "--rm", "-T", "-v", f"{HELPERS}:/floe-tests:ro", "pyiceberg",
                "python", "/floe-tests/pyiceberg_rows.py", *args, timeout=300)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    expect(lines, f"pyiceberg {' '.join(args)}: no result in {p.stdout!r} {p.stderr[-2000:]!r}")
    return json.loads(lines[-1])


def container(service):
    cid = compose("ps", "-q", service).stdout.strip()
    expect(cid, f"no container for {service}")
    return cid


def health(service):
    cid = compose("ps", "-q", service, check=False).stdout.strip()
    if not cid:
        return "missing"
    p = sh(["docker", "inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}",
            cid], check=False, quiet=True)
    return p.stdout.strip() or "unknown"


def wait_healthy(services, timeout=240):
    deadline = time.monotonic() + timeout
    states = {}
    while time.monotonic() < deadline:
        states = {s: health(s) for s in services}
        if all(v == "running healthy" for v in states.values()):
            return
        time.sleep(2)
    logs = compose("logs", "--no-color", "--tail", "30", *services, check=False).stdout
    raise CheckFailed(f"not healthy within {timeout}s: {states}\n{logs}")


# ---------------------------------------------------------------------------
# HTTP against the published port


# 127.0.0.1 directly, whatever proxy the environment names
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


TOKEN = {"value": None}


def send(req, timeout):
    try:
        with NO_PROXY.open(req, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = raw.decode(errors="replace")
    return status, doc


def token(fresh=False):
    """A bearer token for the admin client of FLOE_ADMIN_CREDENTIAL, as the
    README's quick start gets one."""
    if TOKEN["value"] is None or fresh:
        cid, secret = os.environ["FLOE_ADMIN_CREDENTIAL"].split(":", 1)
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid,
                                       "client_secret": secret}).encode()
        req = urllib.request.Request(BASE + "/v1/oauth/tokens", data=form, method="POST")
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
        status, doc = send(req, 30)
        expect(status == 200, f"token: {status} {doc}")
        TOKEN["value"] = doc["access_token"]
    return TOKEN["value"]


def http(method, path, body=None, timeout=60, auth=True):
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(2):
        req = urllib.request.Request(BASE + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if auth and path not in ("/health", "/ready", "/metrics"):
            req.add_header("Authorization", f"Bearer {token(fresh=attempt > 0)}")
        status, doc = send(req, timeout)
        # A new volume has new signing keys: an older token is refused once.
        if status != 401 or not auth:
            break
    return status, doc


def ok(method, path, body=None, want=(200,), timeout=60):
    status, doc = http(method, path, body, timeout)
    expect(status in want, f"{method} {path}: {status} {doc}")
    return doc


def wait_ready(timeout=120):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = http("GET", "/ready", timeout=5)
            if last[0] == 200:
                return
        except OSError as e:
            last = e
        time.sleep(1)
    raise CheckFailed(f"/ready did not answer 200 within {timeout}s: {last}")


def table_meta(ns, name):
    return ok("GET", f"/v1/namespaces/{ns}/tables/{name}")["metadata"]


def audit_log(**params):
    events, token = [], None
    while True:
        q = urllib.parse.urlencode({**params, **({"pageToken": token} if token else {})})
        doc = ok("GET", f"/v1/audit-log?{q}")
        events += doc["events"]
        token = doc.get("next-page-token")
        if not token:
            return events


def commit(ns, name, updates, requirements=(), want=(200,)):
    return ok("POST", f"/v1/namespaces/{ns}/tables/{name}",
              {"requirements": list(requirements), "updates": updates}, want=want)


def fake_snapshot(meta, sid, ref="main"):
    """add-snapshot (a manifest list nobody reads) + set-snapshot-ref."""
    parent = meta.get("refs", {}).get(ref, {}).get("snapshot-id")
    snap = {"snapshot-id": sid, "sequence-number": meta.get("last-sequence-number", 0) + 1,
            "timestamp-ms": int(time.time() * 1000),
            "manifest-list": f"{meta['location']}/metadata/snap-{sid}-1-{sid:x}.avro",
            "summary": {"operation": "append"}, "schema-id": meta.get("current-schema-id", 0)}
    if parent is not None:
        snap["parent-snapshot-id"] = parent
    return [{"action": "add-snapshot", "snapshot": snap},
            {"action": "set-snapshot-ref", "ref-name": ref, "type": "branch", "snapshot-id": sid}]


# ---------------------------------------------------------------------------
# The checks, in order; state carries what later checks compare against.

state: dict = {}
LOG = None


def check_build_test_postgres():
    sh(["docker", "build", "--network", "host", "-t", TEST_PG_IMAGE, str(REPO / "docker" / "test-postgres")],
       timeout=900)


def check_compose_up():
    # whatever an interrupted run left in the engine's cache
    compose("--profile", "tools", "--profile", "monitoring", "down", "-v", "--remove-orphans",
            timeout=180, check=False)
    compose("up", "-d", "--build", timeout=1800)


def check_plain_build():
    # The README's command line (plus the host network, which this test's
    # engine builds with); compose built the same layers, so this is quick.
    sh(["docker", "build", "--network", "host", "-f", "docker/Dockerfile", "-t", "floe:plain", "."], timeout=1800)
    p = sh(["docker", "image", "inspect", "-f", "{{.Id}}", "floe:plain", "floe:latest"])
    ids = p.stdout.split()
    sh(["docker", "rmi", "floe:plain"], check=False)
    expect(len(ids) == 2 and ids[0] == ids[1], f"docker build made another image than compose: {ids}")


def check_healthy():
    wait_healthy(["postgres", "floe", "auditor"])
    wait_ready()
    expect(http("GET", "/health")[0] == 200, "/health")


def check_authentication_on():
    status, doc = http("GET", "/v1/namespaces", auth=False)
    expect(status == 401 and doc["error"]["type"] == "NotAuthorizedException",
           f"without a token: {status} {doc}")
    # The provisioned admin: no credential file was written into the volume.
    p = compose("exec", "-T", "floe", "test", "-e", "/var/lib/floe/auth/admin-credential",
                check=False)
    expect(p.returncode != 0, "a provisioned admin credential must not be written to a file")
    expect(http("GET", "/v1/namespaces")[0] == 200, "with a token")


def check_container_setup():
    uid = compose("exec", "-T", "floe", "id", "-u").stdout.strip()
    expect(uid == "10001", f"floe runs as uid {uid!r}, not the floe user")
    auid = compose("exec", "-T", "auditor", "id", "-u").stdout.strip()
    expect(auid not in ("", "0"), f"the auditor runs as uid {auid!r}")
    port = compose("port", "floe", "8181").stdout.strip()
    expect(port == f"127.0.0.1:{PORT}", f"floe's port is published on {port!r}, not 127.0.0.1:{PORT}")
    # The runtime image: the floe binary and its libraries, no toolchain.
    p = sh(["docker", "run", "--rm", "--network", "none", "--entrypoint", "sh", "floe:latest", "-c",
            "floe --version && ! command -v cc && ! command -v meson && ! ls /usr/include/jansson.h"],
           check=False)
    expect(p.returncode == 0 and p.stdout.startswith("floe "), f"runtime image: {p.stdout} {p.stderr}")
    # The auditor mounts the warehouse read-only.
    p = compose("exec", "-T", "auditor", "sh", "-c", "touch /var/lib/floe/warehouse/x", check=False)
    expect(p.returncode != 0, "the auditor can write to the warehouse")


def check_namespaces_and_raw_commits():
    ok("POST", "/v1/namespaces", {"namespace": ["sales"], "properties": {"owner": "sox"}})
    ok("POST", "/v1/namespaces", {"namespace": ["ops"]})
    ok("POST", "/v1/namespaces/ops/tables", {"name": "heartbeat", "schema": HEARTBEAT_SCHEMA})
    commit("ops", "heartbeat", [{"action": "set-properties", "updates": {"retention": "7d"}}],
           [{"type": "assert-current-schema-id", "current-schema-id": 0}])
    meta = table_meta("ops", "heartbeat")
    sid = 4242
    commit("ops", "heartbeat", fake_snapshot(meta, sid))
    meta = table_meta("ops", "heartbeat")
    expect(meta.get("current-snapshot-id") == sid, f"main is {meta.get('current-snapshot-id')}")
    expect(meta["properties"].get("retention") == "7d", meta["properties"])
    expect(meta["location"].startswith("file:///var/lib/floe/warehouse/"), meta["location"])
    state["heartbeat"] = meta


def metrics_page():
    with NO_PROXY.open(urllib.request.Request(BASE + "/metrics"), timeout=30) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def sample(page, series):
    """The value of one series ("name{labels}") on a metrics page, or None."""
    for line in page.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def check_metrics():
    status, ctype, page = metrics_page()
    expect(status == 200, f"/metrics: {status}")
    expect(ctype == "text/plain; version=0.0.4; charset=utf-8", f"/metrics Content-Type {ctype!r}")
    expect("# TYPE floe_http_requests_total counter" in page, page[:2000])
    committed = sample(page, 'floe_commits_total{outcome="committed"}')
    expect(committed is not None and committed >= 2, f"commits not counted: {committed}")
    route = '{method="POST",route="/v1/{prefix}/namespaces/{namespace}/tables/{table}",code="200"}'
    expect((sample(page, "floe_http_requests_total" + route) or 0) >= 2, "commit requests not counted")


def prometheus_api(path):
    with NO_PROXY.open(urllib.request.Request(PROMETHEUS + path), timeout=10) as r:
        return json.loads(r.read())


def check_prometheus_scrapes_floe():
    if os.environ["FLOE_PROMETHEUS_IMAGE"] == TEST_PROMETHEUS_IMAGE:
        sh(["docker", "build", "--network", "host", "-t", TEST_PROMETHEUS_IMAGE,
            str(REPO / "docker" / "test-prometheus")], timeout=900)
    compose("--profile", "monitoring", "up", "-d", "prometheus", timeout=300)
    try:
        deadline = time.monotonic() + 120
        last = None
        while time.monotonic() < deadline:
            try:
                targets = prometheus_api("/api/v1/targets")["data"]["activeTargets"]
                floe = [t for t in targets if t["labels"].get("job") == "floe"]
                q = prometheus_api("/api/v1/query?" + urllib.parse.urlencode(
                    {"query": 'floe_commits_total{outcome="committed"}'}))["data"]["result"]
                last = (floe, q)
                if floe and floe[0]["health"] == "up" and q and float(q[0]["value"][1]) >= 2:
                    return
            except (OSError, ValueError, KeyError) as e:
                last = e
            time.sleep(2)
        raise CheckFailed(f"Prometheus did not scrape floe within 120s: {last}")
    finally:
        compose("--profile", "monitoring", "rm", "-sfv", "prometheus", timeout=120, check=False)


def check_wap_setup():
    ok("POST", "/v1/namespaces/sales/tables", {"name": "orders", "schema": ORDERS_SCHEMA})
    # main's first rows, while direct writes are still allowed
    wrote = pyiceberg("append", "sales.orders", "main", "first")
    expect(table_meta("sales", "orders").get("current-snapshot-id") == wrote["snapshot-id"], wrote)
    state["first"] = wrote["snapshot-id"]
    hook = ok("POST", "/v1/audit-hooks", {
        "name": "quality", "url": "http://auditor:8282/", "secret": SECRET,
        "scope": {"namespace": ["sales"]}, "timeout-ms": 60000}, want=(200, 201))
    state["hook"] = hook
    # The auditor is admitted by name (FLOE_HOOK_ALLOW=auditor); a private
    # address that is not allowlisted is still refused.
    status, doc = http("POST", "/v1/audit-hooks", {"name": "probe", "url": "http://172.17.0.1:5432/"})
    expect(status == 400 and "private" in doc["error"]["message"], f"private hook target: {status} {doc}")
    ok("POST", "/v1/namespaces/sales/properties", {"updates": {"floe.wap.required": "true"}})
    # main of sales.orders now moves only through a publish
    meta = table_meta("sales", "orders")
    status, doc = http("POST", "/v1/namespaces/sales/tables/orders",
                       {"requirements": [], "updates": fake_snapshot(meta, 77)})
    expect(status == 403 and doc["error"]["type"] == "ForbiddenException", f"direct commit: {status} {doc}")


def check_wap_rejected():
    run = ok("POST", "/v1/namespaces/sales/tables/orders/wap", {}, want=(201,))
    wrote = pyiceberg("append", "sales.orders", run["branch"], "bad")
    status, doc = http("POST", f"/v1/namespaces/sales/tables/orders/wap/{run['id']}/publish", {}, timeout=120)
    expect(status == 422 and doc["error"]["type"] == "AuditRejectedException", f"publish: {status} {doc}")
    msg = doc["error"]["message"]
    expect("amount_positive" in msg and "known_currency" in msg, msg)
    got = ok("GET", f"/v1/namespaces/sales/tables/orders/wap/{run['id']}")
    expect(got["state"] == "rejected" and got["audited-snapshot-id"] == wrote["snapshot-id"], got)
    expect(table_meta("sales", "orders").get("current-snapshot-id") == state["first"], "main moved")
    rows = pyiceberg("read", "sales.orders")
    expect(rows["ids"] == [1, 2], f"main's rows: {rows}")
    state["rejected"] = run["id"]


def check_wap_published():
    run = ok("POST", "/v1/namespaces/sales/tables/orders/wap", {}, want=(201,))
    wrote = pyiceberg("append", "sales.orders", run["branch"], "good")
    done = ok("POST", f"/v1/namespaces/sales/tables/orders/wap/{run['id']}/publish", {}, timeout=120)
    expect(done["state"] == "published" and done["published-snapshot-id"] == wrote["snapshot-id"], done)
    expect([a["verdict"] for a in done["audits"]] == ["pass"], done["audits"])
    meta = table_meta("sales", "orders")
    expect(meta["current-snapshot-id"] == wrote["snapshot-id"], "main is not the audited snapshot")
    expect(run["branch"] not in meta["refs"], f"the staging branch is still there: {meta['refs']}")
    rows = pyiceberg("read", "sales.orders")
    expect(rows["ids"] == [1, 2, 3, 4, 5, 6], rows)
    state["published"] = run["id"]
    state["orders"] = meta


def check_audit_log():
    events = audit_log(namespace="sales", table="orders")
    by_run = {}
    for e in events:
        if e.get("run-id"):
            by_run.setdefault(e["run-id"], []).append(e["event"])
    expect(by_run.get(state["published"]) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.published"], by_run)
    expect(by_run.get(state["rejected"]) == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.rejected"], by_run)
    state["events"] = events


def snapshot_of_everything():
    """What must survive a restart, as floe serves it."""
    return {
        "namespaces": ok("GET", "/v1/namespaces")["namespaces"],
        "sales": ok("GET", "/v1/namespaces/sales")["properties"],
        "tables": ok("GET", "/v1/namespaces/sales/tables")["identifiers"],
        "orders": table_meta("sales", "orders"),
        "heartbeat": table_meta("ops", "heartbeat"),
        "runs": [ok("GET", f"/v1/namespaces/sales/tables/orders/wap/{state[k]}") for k in ("rejected", "published")],
        "hooks": ok("GET", "/v1/audit-hooks"),
        "events": audit_log(),
    }


def check_everything_before_restart():
    state["before"] = snapshot_of_everything()
    b = state["before"]
    expect(sorted(map(tuple, b["namespaces"])) == [("ops",), ("sales",)], b["namespaces"])
    expect(b["runs"][1]["state"] == "published", b["runs"])


def compare_with_before(label):
    now = snapshot_of_everything()
    for key, was in state["before"].items():
        expect(now[key] == was, f"{label}: {key} changed:\nbefore {was}\nafter  {now[key]}")
    rows = pyiceberg("read", "sales.orders")
    expect(rows["ids"] == [1, 2, 3, 4, 5, 6], f"{label}: rows {rows}")


def check_restart_floe():
    before = container("floe")
    compose("restart", "floe", timeout=120)
    wait_healthy(["floe"])
    wait_ready()
    expect(container("floe") == before, "restart replaced the container")
    compare_with_before("after docker compose restart floe")


def check_restart_postgres():
    compose("restart", "postgres", timeout=120)
    wait_healthy(["postgres"])
    wait_ready()  # floe reconnects by itself
    compare_with_before("after docker compose restart postgres")


def check_recreate_all():
    compose("down", timeout=180)
    compose("up", "-d", timeout=600)
    wait_healthy(["postgres", "floe", "auditor"])
    wait_ready()
    compare_with_before("after docker compose down and up")
    # ...and the auditor still reads the warehouse: a publish of nothing new
    # audits main's snapshot again and passes.
    run = ok("POST", "/v1/namespaces/sales/tables/orders/wap", {}, want=(201,))
    done = ok("POST", f"/v1/namespaces/sales/tables/orders/wap/{run['id']}/publish", {}, timeout=120)
    expect(done["state"] == "published", done)


def check_down_removes_volumes():
    compose("down", "-v", timeout=180)
    p = sh(["docker", "volume", "ls", "-q", "--filter", f"label=com.docker.compose.project={PROJECT}"])
    expect(p.stdout.strip() == "", f"volumes left: {p.stdout}")
    p = sh(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}"])
    expect(p.stdout.strip() == "", f"containers left: {p.stdout}")


CHECKS = [
    ("build the test PostgreSQL image", check_build_test_postgres),
    ("docker compose up -d --build", check_compose_up),
    ("docker build -f docker/Dockerfile . gives the image compose built", check_plain_build),
    ("postgres, floe and auditor healthy; /ready 200 on the published port", check_healthy),
    ("authentication on: 401 without a token, the provisioned admin's token works",
     check_authentication_on),
    ("floe as uid 10001, its port on 127.0.0.1 only, runtime image without toolchain, warehouse read-only for the auditor",
     check_container_setup),
    ("namespaces, a table, raw commits (set-properties, add-snapshot + set-snapshot-ref)",
     check_namespaces_and_raw_commits),
    ("GET /metrics: Prometheus text, the commits counted", check_metrics),
    ("the monitoring profile's Prometheus scrapes floe's /metrics", check_prometheus_scrapes_floe),
    ("first rows on main with PyIceberg; audit hook http://auditor:8282/ (allowlisted; a private address is not); floe.wap.required refuses a direct commit (403)",
     check_wap_setup),
    ("WAP: a bad batch written with PyIceberg is rejected by the auditor (422)", check_wap_rejected),
    ("WAP: a good batch is published (200), main is the audited snapshot", check_wap_published),
    ("audit log records both runs", check_audit_log),
    ("state before restart", check_everything_before_restart),
    ("docker compose restart floe: namespaces, tables, metadata, runs, hooks, audit log kept", check_restart_floe),
    ("docker compose restart postgres: floe reconnects, everything kept", check_restart_postgres),
    ("docker compose down + up: everything kept, the auditor reads the warehouse", check_recreate_all),
    ("docker compose down -v removes containers and volumes", check_down_removes_volumes),
]

# Once one of these fails, the later checks cannot mean anything.
FATAL = {check_build_test_postgres, check_compose_up, check_healthy}


def interrupted(signum, frame):
    # subprocess.run kills the command it waits for, then this propagates
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    global LOG, PORT, BASE, PROMETHEUS
    signal.signal(signal.SIGTERM, interrupted)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--result", help="write 'PASSED FAILED' here")
    ap.add_argument("--log", help="append every command's output here")
    args = ap.parse_args()
    if args.log:
        LOG = open(args.log, "a")

    os.environ.setdefault("FLOE_POSTGRES_IMAGE", TEST_PG_IMAGE)
    os.environ.setdefault("FLOE_PROMETHEUS_IMAGE", TEST_PROMETHEUS_IMAGE)
    prometheus_port = free_port()
    os.environ["FLOE_PROMETHEUS_PORT"] = str(prometheus_port)
    PROMETHEUS = f"http://127.0.0.1:{prometheus_port}"
    PORT = host_port()
    BASE = f"http://127.0.0.1:{PORT}"
    os.environ["FLOE_PORT"] = str(PORT)
    print(f"floe will be published on {BASE}", flush=True)
    os.environ["FLOE_AUDIT_SECRET"] = SECRET
    os.environ["FLOE_ADMIN_CREDENTIAL"] = ADMIN_CREDENTIAL
    passed = failed = 0
    try:
        passed, failed = run_checks()
    except KeyboardInterrupt as e:
        print(f"FAIL interrupted ({e})", flush=True)
        passed, failed = PROGRESS["passed"], PROGRESS["failed"] + 1
    if args.result:
        Path(args.result).write_text(f"{passed} {failed}\n")
    return 0 if failed == 0 else 1


PROGRESS = {"passed": 0, "failed": 0}


def run_checks():
    passed = failed = 0
    for i, (name, fn) in enumerate(CHECKS):
        started = time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            detail = str(e) if isinstance(e, CheckFailed) else traceback.format_exc()
            print(f"FAIL {name} ({time.monotonic() - started:.0f}s)\n  " + detail.replace("\n", "\n  "),
                  flush=True)
            if fn in FATAL:
                skipped = len(CHECKS) - i - 1
                failed += skipped
                print(f"FAIL the remaining {skipped} checks (not run)", flush=True)
                break
        else:
            passed += 1
            print(f"ok   {name} ({time.monotonic() - started:.0f}s)", flush=True)
        PROGRESS.update(passed=passed, failed=failed)
    return passed, failed


if __name__ == "__main__":
    sys.exit(main())
