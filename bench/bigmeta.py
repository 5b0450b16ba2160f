"""CPU cost of large but legal metadata: starts a floe (its own embedded
PostgreSQL, a fresh data directory), sends each big request once and
prints the floe process's CPU seconds for it (user + system, from
/proc/<pid>/stat). A measurement, not a test: see bench/README.md.

    python3 bench/bigmeta.py [path/to/floe]      (default build/server/floe)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")
BASE_TS = 1767225600000


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def schema(n):
    return {"type": "struct", "fields": [
        {"id": i, "name": f"column_{i:06d}", "required": False, "type": "long"}
        for i in range(1, n + 1)]}


def snapshot(i):
    s = {"snapshot-id": i, "sequence-number": i, "timestamp-ms": BASE_TS + i,
         "manifest-list": f"file:///bench/snap-{i}.avro",
         "summary": {"operation": "append", "added-records": "1"}}
    if i > 1:
        s["parent-snapshot-id"] = i - 1
    return s


def steps(n_fields, n_snaps, n_remove, n_schemas, n_changes):
    """(label, method, path, body) in order; paths are under the table."""
    yield (f"createTable, {n_fields} fields", "POST", "",
           {"name": "big", "schema": schema(n_fields),
            "partition-spec": {"fields": [
                {"source-id": i, "name": f"p{i}", "transform": "identity"}
                for i in range(n_fields - 99, n_fields + 1)]}})
    updates = [{"action": "add-snapshot", "snapshot": snapshot(i)}
               for i in range(1, n_snaps + 1)]
    updates.append({"action": "set-snapshot-ref", "ref-name": "main",
                    "type": "branch", "snapshot-id": n_snaps})
    updates += [{"action": "set-snapshot-ref", "ref-name": f"tag-{i}",
                 "type": "tag", "snapshot-id": i} for i in range(1, n_snaps + 1, 10)]
    updates += [{"action": "set-statistics", "statistics": {
        "snapshot-id": i, "statistics-path": f"file:///bench/{i}.stats",
        "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}}
        for i in range(1, n_snaps + 1)]
    yield (f"commit: {n_snaps} add-snapshot, {n_snaps // 10} tags, "
           f"{n_snaps} set-statistics", "POST", "/big",
           {"requirements": [], "updates": updates})
    yield ("create branch at snapshot 1, fast-forward it to main "
           f"({n_snaps}-snapshot ancestry)", "REFS", "/big", None)
    yield (f"commit: {n_remove} remove-snapshots, one id each", "POST", "/big",
           {"requirements": [], "updates": [
               {"action": "remove-snapshots", "snapshot-ids": [i]}
               for i in range(1, n_remove + 1)]})
    yield ("loadTable ?snapshots=refs", "GET", "/big?snapshots=refs", None)
    evolve = []
    for i in range(n_schemas):
        evolve.append({"action": "add-schema", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "column_000001", "required": False, "type": "long"},
            {"id": n_fields + 1 + i, "name": f"x{i}", "required": False, "type": "int"}]}})
        evolve.append({"action": "add-spec", "spec": {"fields": [
            {"source-id": 1, "name": f"b{i}", "transform": "bucket[4]"}]}})
    yield (f"commit: {n_schemas} add-schema + {n_schemas} add-spec", "POST", "/big",
           {"requirements": [], "updates": evolve})
    changes = [{"identifier": {"namespace": ["n"], "name": f"t{i}"}, "updates": []}
               for i in range(n_changes)]
    changes.append({"identifier": {"namespace": ["n"], "name": "t0"}, "updates": []})
    yield (f"transactions/commit: {n_changes} changes, one table twice (400)", "TX", "",
           {"table-changes": changes})


def send(port, method, path, body):
    data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/server/floe"
    n_fields = int(os.environ.get("FIELDS", "20000"))
    n_snaps = int(os.environ.get("SNAPSHOTS", "10000"))
    n_remove = int(os.environ.get("REMOVE", "5000"))
    n_schemas = int(os.environ.get("SCHEMAS", "20000"))
    n_changes = int(os.environ.get("CHANGES", "100000"))
    work = tempfile.mkdtemp(prefix="floe-bigmeta-")
    os.chmod(work, 0o755)  # the embedded PostgreSQL may run as another user
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, f"--data-dir={work}/data",
                             f"--listen=127.0.0.1:{port}", "--auth=none"],
                            stdout=subprocess.DEVNULL, stderr=open(f"{work}/log", "w"))
    try:
        for _ in range(300):
            try:
                if send(port, "GET", "/ready", None) == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        send(port, "POST", "/v1/namespaces", {"namespace": ["bench"]})
        tables = "/v1/namespaces/bench/tables"
        for label, method, path, body in steps(n_fields, n_snaps, n_remove, n_schemas,
                                               n_changes):
            size = len(json.dumps(body, separators=(",", ":"))) if body is not None else 0
            before, t0 = cpu_seconds(proc.pid), time.monotonic()
            if method == "REFS":
                status = send(port, "POST", tables + path + "/refs",
                              {"name": "ff", "type": "branch", "snapshot-id": 1})
                if status < 300:
                    status = send(port, "POST", tables + path + "/refs/ff/fast-forward",
                                  {"to": "main"})
            elif method == "TX":
                status = send(port, "POST", "/v1/transactions/commit", body)
            else:
                status = send(port, method, tables + path, body)
            cpu, wall = cpu_seconds(proc.pid) - before, time.monotonic() - t0
            print(f"{label:75s} {size / 1e6:6.2f} MB  HTTP {status}  "
                  f"cpu {cpu:8.2f} s  wall {wall:8.2f} s", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
