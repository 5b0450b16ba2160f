"""What requests waiting for a commit thread hold in memory: starts floe
(FLOE_BIN, default build/server/floe) with its embedded PostgreSQL, one
commit thread and the given --max-pending-body-bytes, sends CLIENTS
commits of about BODY_KB each at once (a set-properties of many short
properties, the shape that costs jansson most per byte), and prints how
many were answered what, and floe's peak resident memory (VmHWM) before
and after.

    .venv/bin/python bench/queued_bodies.py [CLIENTS [BODY_KB [PENDING_MIB]]]
"""

import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests

CLIENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 48
BODY_KB = int(sys.argv[2]) if len(sys.argv) > 2 else 960
PENDING_MIB = int(sys.argv[3]) if len(sys.argv) > 3 else 64


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def body(n: int) -> dict:
    # {"p000000-<n>": "v..."}: 48 bytes a property in the JSON text
    props, size, i = {}, 0, 0
    while size < BODY_KB * 1000:
        k, v = f"p{i:06d}-{n:04d}", "v" * 22
        props[k] = v
        size += len(k) + len(v) + 8
        i += 1
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": props}]}


def main():
    floe = os.environ.get("FLOE_BIN", "build/server/floe")
    data = tempfile.mkdtemp(prefix="floe-bench.")
    os.chmod(data, 0o755)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(data, "floe.log"), "wb")
    proc = subprocess.Popen([floe, f"--data-dir={data}", f"--listen=127.0.0.1:{port}",
                             "--log-level=warn", "--auth=none", "--commit-threads=1",
                             f"--max-pending-body-bytes={PENDING_MIB * 1048576}"],
                            stderr=log)
    try:
        for _ in range(150):
            try:
                if requests.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
        requests.post(url + "/v1/namespaces", json={"namespace": ["b"]}, timeout=30)
        schema = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long", "required": False}]}
        for i in range(CLIENTS):
            r = requests.post(url + "/v1/namespaces/b/tables", json={"name": f"t{i}", "schema": schema},
                              timeout=30)
            assert r.status_code == 200, r.text
        bodies = [body(i) for i in range(CLIENTS)]
        raw = sum(len(requests.models.complexjson.dumps(b)) for b in bodies) / CLIENTS
        before = rss_kib(proc.pid, "VmHWM")

        def commit(i):
            return requests.post(f"{url}/v1/namespaces/b/tables/t{i}", json=bodies[i], timeout=300).status_code

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            codes = list(pool.map(commit, range(CLIENTS)))
        took = time.monotonic() - t0
        peak = rss_kib(proc.pid, "VmHWM")
        counts = {c: codes.count(c) for c in sorted(set(codes))}
        print(f"{CLIENTS} commits of {raw / 1000:.0f} KB at once, --max-pending-body-bytes "
              f"{PENDING_MIB} MiB, 1 commit thread: answers {counts} in {took:.1f} s")
        print(f"  peak RSS {before / 1024:.1f} MiB before, {peak / 1024:.1f} MiB after "
              f"(+{(peak - before) / 1024:.1f} MiB)")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
