#!/usr/bin/env bash
# floe benchmark: publish latency of a release over 1, 10 and 100 tables,
# with one audit hook that passes at once (a loopback receiver), so what is
# measured is floe's own work: reading every member, the lease, the hook
# call, and the one transaction that moves every member's main.
#   bench/release.sh [ROUNDS]      (default 10 publishes per size)
# Needs a built floe (scripts/setup.sh) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
port=${BENCH_PORT:-18185}
hook_port=$((port + 1))
base=http://127.0.0.1:$port/v1

python3 - "$hook_port" <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"passed": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
hook_pid=$!

source bench/start-floe.sh
start_floe "$port" --hook-allow=127.0.0.1
trap 'kill $hook_pid 2>/dev/null; kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT

python3 - "$base" "$hook_port" "$rounds" <<'PY'
import json, random, statistics, sys, time, urllib.error, urllib.request
base, hook_port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r) if r.status != 204 else None
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read()[:300]!r}")

def snapshot(ns, name, ref):
    meta = call("GET", f"/namespaces/{ns}/tables/{name}")["metadata"]
    refs = meta.get("refs", {})
    parent = refs.get(ref, refs.get("main", {})).get("snapshot-id")
    sid = random.getrandbits(62)
    snap = {"snapshot-id": sid, "sequence-number": meta.get("last-sequence-number", 0) + 1,
            "timestamp-ms": int(time.time() * 1000), "summary": {"operation": "append"},
            "manifest-list": f"{meta['location']}/metadata/snap-{sid}.avro", "schema-id": 0}
    if parent is not None:
        snap["parent-snapshot-id"] = parent
    call("POST", f"/namespaces/{ns}/tables/{name}", {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": snap},
        {"action": "set-snapshot-ref", "ref-name": ref, "type": "branch", "snapshot-id": sid}]})

schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
call("POST", "/audit-hooks", {"name": "pass", "url": f"http://127.0.0.1:{hook_port}/"})
print(f"== publish of a release, {rounds} rounds per size; the hook passes at once")
print("   tables   publish p50   publish max   per table (p50)")
for size in (1, 10, 100):
    ns = f"bench{size}"
    call("POST", "/namespaces", {"namespace": [ns]})
    names = [f"t{i}" for i in range(size)]
    for n in names:
        call("POST", f"/namespaces/{ns}/tables", {"name": n, "schema": schema})
        snapshot(ns, n, "main")
    times = []
    for r in range(rounds):
        rel = call("POST", "/releases", {"namespaces": [[ns]], "name": f"r{r}"})
        for n in names:
            snapshot(ns, n, f"r{r}")
        start = time.monotonic()
        done = call("POST", f"/releases/{rel['id']}/publish")
        times.append(time.monotonic() - start)
        assert done["state"] == "published", done
    p50 = statistics.median(times) * 1000
    print(f"   {size:6d}   {p50:8.1f} ms   {max(times) * 1000:8.1f} ms   {p50 / size:8.2f} ms")
PY
