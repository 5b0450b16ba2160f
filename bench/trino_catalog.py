"""Trino walking floe's catalog: SELECT count(*) FROM information_schema.columns
over many tables, with the README's Trino setup (oauth2.credential at floe's
token endpoint). Trino asks floe for a token per catalog session, one per
table when it walks information_schema, so with authentication on every
table costs one client-credentials grant. Prints the time of each run and
the grants floe answered; run it with the old and the new binary (FLOE_BIN)
and with --auth=none to compare.

    FLOE_BIN=build/server/floe .venv/bin/python bench/trino_catalog.py \
        [--tables 371] [--runs 3] [--auth floe|none]

Needs Trino (scripts/engine-deps.sh trino) and a JDK 24+.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "engines"))
from trino_server import TrinoServer  # noqa: E402

CACHE = Path(os.environ.get("FLOE_ENGINES_CACHE",
                            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "floe"))
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "name", "type": "string", "required": False},
    {"id": 3, "name": "amount", "type": "double", "required": False}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=371)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--auth", choices=("floe", "none"), default="floe")
    args = ap.parse_args()
    floe_bin = os.environ.get("FLOE_BIN", str(REPO / "build" / "server" / "floe"))
    work = Path(tempfile.mkdtemp(prefix="floe-bench-trino-"))
    os.chmod(work, 0o755)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / "floe.log", "wb")
    floe = subprocess.Popen([floe_bin, f"--data-dir={work / 'data'}", f"--listen=127.0.0.1:{port}",
                             "--log-level=info", f"--auth={args.auth}"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    trino = None
    try:
        for _ in range(150):
            try:
                if requests.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
        s = requests.Session()
        credential = None
        if args.auth == "floe":
            credential = (work / "data" / "auth" / "admin-credential").read_text().strip()
            cid, secret = credential.split(":", 1)
            r = s.post(url + "/v1/oauth/tokens", timeout=30, data={
                "grant_type": "client_credentials", "client_id": cid, "client_secret": secret})
            r.raise_for_status()
            s.headers["Authorization"] = "Bearer " + r.json()["access_token"]
        per_ns = 40
        for i in range(args.tables):
            ns = f"bench{i // per_ns:02d}"
            if i % per_ns == 0:
                s.post(url + "/v1/namespaces", json={"namespace": [ns]}, timeout=30).raise_for_status()
            s.post(f"{url}/v1/namespaces/{ns}/tables", json={"name": f"t{i:04d}", "schema": SCHEMA},
                   timeout=30).raise_for_status()
        trino = TrinoServer(CACHE, work / "trino", url, free_port(), credential=credential)
        trino.wait_ready(300)
        trino.query("SELECT 1")
        log.flush()
        before = (work / "floe.log").read_text(errors="replace").count("issued a token to")
        print(f"floe {floe_bin} --auth={args.auth}, {args.tables} tables "
              f"in {(args.tables + per_ns - 1) // per_ns} schemas")
        for run in range(args.runs):
            began = time.monotonic()
            rows = trino.query("SELECT count(*) FROM floe.information_schema.columns", timeout=900)
            took = time.monotonic() - began
            log.flush()
            grants = (work / "floe.log").read_text(errors="replace").count("issued a token to")
            print(f"  run {run + 1}: {took:.1f} s, {rows[0][0]} columns, "
                  f"{grants - before} token grants")
            before = grants
        return 0
    finally:
        if trino is not None:
            trino.cleanup()
        floe.terminate()
        floe.wait(30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
