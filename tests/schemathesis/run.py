#!/usr/bin/env python3
"""schemathesis against floe's OpenAPI document, for a bounded time.

Starts floe (the binary in $FLOE_BIN, else build/server/floe) with its
embedded PostgreSQL in a temporary directory, seeds a namespace, a table
with a snapshot and a branch, a staged write-audit-publish run and a
catalog-wide audit hook (a passing webhook served here, on loopback and
allowlisted), then runs `schemathesis run api-spec/openapi.yaml` with the
`not_a_server_error` check, floe's own `iceberg_error_body` (checks.py:
every error is the Iceberg error body, and a 5xx is only a 503 with
Retry-After for a documented transient state) and two conformance checks. Path parameters are drawn from
the seeded names part of the time, so that requests reach real resources,
and generated otherwise. Stops floe and exits with schemathesis's status;
floe must also have stayed up and stop cleanly.

    tests/schemathesis/run.py [--seconds 120] [--max-examples 30] [--seed N] [--checks LIST]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "api-spec" / "openapi.yaml"
CHECKS = "not_a_server_error,iceberg_error_body,status_code_conformance,content_type_conformance"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PassingHook(http.server.BaseHTTPRequestHandler):
    """An audit hook that passes every audit."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        body = b'{"passed": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def call(base: str, method: str, path: str, body=None, want=(200,)):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    if status not in want:
        raise SystemExit(f"seed: {method} {path} -> {status} {text[:300]!r}")
    return json.loads(text) if text else None


def seed(base: str, hook_url: str) -> dict:
    call(base, "POST", "/v1/namespaces", {"namespace": ["seed"], "properties": {"owner": "fuzz"}})
    call(base, "POST", "/v1/namespaces", {"namespace": ["seed", "child"]})
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"}]}
    meta = call(base, "POST", "/v1/namespaces/seed/tables", {"name": "t", "schema": schema})["metadata"]
    sid = 4242
    snap = {"snapshot-id": sid, "sequence-number": 1, "timestamp-ms": int(time.time() * 1000),
            "manifest-list": f"{meta['location']}/metadata/snap-{sid}.avro",
            "summary": {"operation": "append"}, "schema-id": 0}
    call(base, "POST", "/v1/namespaces/seed/tables/t", {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": snap},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": sid},
        {"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch", "snapshot-id": sid}]})
    hook = call(base, "POST", "/v1/audit-hooks", {"name": "pass", "url": hook_url}, want=(201,))
    run = call(base, "POST", "/v1/namespaces/seed/tables/t/wap", {}, want=(201,))
    return {"hook": hook["id"], "run": run["id"]}


def config(seeded: dict) -> str:
    def values(xs):
        return "[" + ", ".join(json.dumps(x) for x in xs) + "]"

    dictionaries = {
        "prefix": ["warehouse"],  # the default warehouse's name
        "namespace": ["seed", "seed\x1fchild"],
        "table": ["t"],
        "ref": ["main", "dev"],
        "run": [seeded["run"]],
        "id": [seeded["hook"]],
    }
    out = []
    for name, vals in dictionaries.items():
        out += [f"[dictionaries.{name}]", f"values = {values(vals)}", ""]
    out.append("[parameters]")
    for name in dictionaries:
        out.append(f'"path.{name}" = {{ dictionary = "{name}", probability = 0.7 }}')
    # A publish whose hooks cannot give a verdict (the fuzzer registers
    # hooks at names that do not resolve) answers the documented 503 with
    # Retry-After; iceberg_error_body still refuses any other 5xx there.
    out += ["", "[[operations]]", 'include-path-regex = "/publish$"',
            'checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]']
    return "\n".join(out) + "\n"


def wait_ready(base: str, proc: subprocess.Popen, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"floe exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(base + "/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("floe was not ready in time")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("SCHEMATHESIS_SECONDS", "120")))
    ap.add_argument("--max-examples", type=int, default=30)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--checks", default=CHECKS, help=f"schemathesis checks (default {CHECKS})")
    args = ap.parse_args()

    floe = Path(os.environ.get("FLOE_BIN") or REPO / "build" / "server" / "floe")
    schemathesis = Path(sys.executable).parent / "schemathesis"
    work = Path(tempfile.mkdtemp(prefix="floe-schemathesis-", dir="/tmp"))
    work.chmod(0o755)  # the embedded PostgreSQL may run as another user
    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PassingHook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    env.update(FLOE_LISTEN=f"127.0.0.1:{port}", FLOE_DATA_DIR=str(work / "data"),
               FLOE_HOOK_ALLOW="127.0.0.1", FLOE_LOG_LEVEL="warn", FLOE_THREADS="4",
               FLOE_AUTH="none")
    log = open(work / "floe.log", "wb")
    proc = subprocess.Popen([str(floe)], env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=work)
    status = 1
    try:
        wait_ready(base, proc)
        seeded = seed(base, f"http://127.0.0.1:{hook.server_address[1]}/")
        (work / "schemathesis.toml").write_text(config(seeded))
        argv = [str(schemathesis), "--config-file", str(work / "schemathesis.toml"), "run", str(SPEC),
                "--url", base, "--checks", args.checks, "--max-time", str(args.seconds),
                "--max-examples", str(args.max_examples),
                # One worker: generating in parallel threads can crash inside
                # hypothesis's lambda descriptions (CPython 3.11's ast.parse
                # is not thread-safe: "AST constructor recursion depth
                # mismatch").
                "--workers", "1",
                "--phases", "examples,coverage,fuzzing,stateful",
                "--request-timeout", "30", "--no-color", "--warnings", "off",
                "--suppress-health-check", "all", "--generation-database", "none",
                "--report", "junit", "--report-dir", str(work / "report")]
        if args.seed is not None:
            argv += ["--seed", str(args.seed)]
        print("schemathesis:", " ".join(argv[3:]), flush=True)
        st_env = dict(os.environ, SCHEMATHESIS_HOOKS=str(Path(__file__).with_name("checks.py")))
        status = subprocess.run(argv, cwd=work, env=st_env).returncode
        if proc.poll() is not None:
            print(f"schemathesis: floe died during the run (exit {proc.returncode})", flush=True)
            status = status or 1
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait(10)
            if code != 0:
                print(f"schemathesis: floe exited with {code} on SIGTERM", flush=True)
                status = status or 1
        hook.shutdown()
        log.close()
        tail = (work / "floe.log").read_bytes()[-4000:].decode("utf-8", "replace")
        if status != 0:
            print("--- floe log (tail) ---\n" + tail, flush=True)
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
