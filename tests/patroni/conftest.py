"""A PostgreSQL cluster that Patroni runs: etcd as its consensus store,
two PostgreSQL 15 nodes (a leader and a synchronous standby), each under
its own Patroni, all from Debian's packages (patroni, etcd-server). The
integration suite's fixtures (real floe daemons) are loaded from
tests/integration/conftest.py under a name of their own."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import integration_fixtures  # noqa: E402

fixtures = integration_fixtures.load()

pg_bin_dir = fixtures.pg_bin_dir
floe_factory = fixtures.floe_factory

PATRONI = shutil.which("patroni") or "/usr/bin/patroni"
ETCD = shutil.which("etcd") or "/usr/bin/etcd"
SCOPE = "floe-ha"


def _as_pg_user(argv):
    if fixtures.IS_ROOT:
        return ["runuser", "-u", fixtures.PG_SYSTEM_USER, "--"] + argv
    return argv


def _http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def _children(pid: int) -> list[int]:
    """Every process whose parent is pid (a postmaster's backends)."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after ')'
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


class Node:
    def __init__(self, cluster: "PatroniCluster", name: str):
        self.name = name
        self.api_port = fixtures.free_port()
        self.pg_port = fixtures.free_port()
        self.data_dir = cluster.base / f"{name}-data"
        self.config = cluster.base / f"{name}.yml"
        self.logfile = cluster.base / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.api = f"http://127.0.0.1:{self.api_port}"

    def role(self) -> str:
        if _http_status(self.api + "/primary") == 200:
            return "primary"
        if _http_status(self.api + "/sync") == 200:
            return "sync"
        if _http_status(self.api + "/replica") == 200:
            return "replica"
        return "down"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def log(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class PatroniCluster:
    """etcd and two Patroni nodes on loopback, torn down at the end."""

    def __init__(self, bin_dir: Path):
        self.bin_dir = bin_dir
        self.base = fixtures.make_shared_tmpdir("floe-patroni-")
        self.etcd_client = fixtures.free_port()
        self.etcd_peer = fixtures.free_port()
        self.nodes = [Node(self, "node1"), Node(self, "node2")]
        self.etcd: subprocess.Popen | None = None
        self._logs = []

    def _spawn(self, argv, logfile: Path) -> subprocess.Popen:
        out = open(logfile, "ab")
        self._logs.append(out)
        return subprocess.Popen(_as_pg_user(argv), stdout=out, stderr=subprocess.STDOUT,
                                cwd=self.base, start_new_session=True)

    def _write_config(self, node: Node):
        # Patroni reads YAML, of which JSON is a subset.
        doc = {
            "scope": SCOPE,
            "name": node.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{node.api_port}",
                        "connect_address": f"127.0.0.1:{node.api_port}"},
            "etcd3": {"hosts": f"127.0.0.1:{self.etcd_client}"},
            "bootstrap": {
                "dcs": {
                    # The leader's key lives ttl seconds: a dead leader is
                    # replaced that long after its last renewal.
                    "ttl": 10, "loop_wait": 1, "retry_timeout": 4,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    "postgresql": {"use_pg_rewind": False,
                                   "parameters": {"max_connections": 200,
                                                  "synchronous_commit": "on",
                                                  "wal_level": "replica",
                                                  "max_wal_senders": 10,
                                                  "max_replication_slots": 10,
                                                  "hot_standby": "on"}},
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, {"auth": "trust"}],
                "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust",
                           "host replication all 127.0.0.1/32 trust"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{node.pg_port}",
                "connect_address": f"127.0.0.1:{node.pg_port}",
                "data_dir": str(node.data_dir),
                "bin_dir": str(self.bin_dir),
                "pgpass": str(self.base / f"{node.name}.pgpass"),
                "authentication": {"superuser": {"username": "postgres", "password": "postgres"},
                                   "replication": {"username": "replicator",
                                                   "password": "replicator"}},
                "parameters": {"unix_socket_directories": str(self.base),
                               "fsync": "off", "full_page_writes": "off"},
            },
        }
        node.config.write_text(json.dumps(doc, indent=1))

    def start(self) -> "PatroniCluster":
        if fixtures.IS_ROOT:
            uid, gid = fixtures._pg_uid_gid()
            fixtures._chown_tree(self.base, uid, gid)
        self.etcd = self._spawn([
            ETCD, "--name", "e1", "--data-dir", str(self.base / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{self.etcd_client}",
            "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_client}",
            "--listen-peer-urls", f"http://127.0.0.1:{self.etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.etcd_peer}",
            "--initial-cluster", f"e1=http://127.0.0.1:{self.etcd_peer}"],
            self.base / "etcd.log")
        assert fixtures.wait_until(
            lambda: _http_status(f"http://127.0.0.1:{self.etcd_client}/version") == 200, 30), \
            "etcd did not start"
        first, second = self.nodes
        for node in self.nodes:
            self._write_config(node)
            if fixtures.IS_ROOT:
                uid, gid = fixtures._pg_uid_gid()
                os.chown(node.config, uid, gid)
        first.proc = self._spawn([PATRONI, str(first.config)], first.logfile)
        assert fixtures.wait_until(lambda: first.role() == "primary", 60), \
            f"{first.name} never led:\n{first.log()}"
        second.proc = self._spawn([PATRONI, str(second.config)], second.logfile)
        assert fixtures.wait_until(lambda: second.role() == "sync", 90), \
            f"{second.name} never became the synchronous standby:\n{second.log()}"
        return self

    def leader(self) -> Node:
        for node in self.nodes:
            if node.role() == "primary":
                return node
        raise AssertionError("no leader")

    def url(self, dbname: str) -> str:
        """libpq's multi-host URL: whichever node takes writes."""
        hosts = ",".join(f"127.0.0.1:{n.pg_port}" for n in self.nodes)
        return (f"postgresql://postgres:postgres@{hosts}/{dbname}"
                f"?target_session_attrs=read-write&connect_timeout=2")

    def create_database(self, name: str) -> str:
        node = self.leader()
        subprocess.run([str(self.bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(node.pg_port),
                        "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                        "-c", f'CREATE DATABASE "{name}"'], check=True, capture_output=True,
                       timeout=60)
        return self.url(name)

    def crash(self, node: Node):
        """The node's machine dies: Patroni, the postmaster and every
        backend killed at once (SIGKILL), nothing shut down."""
        pm = node.postmaster_pid()
        victims = [node.proc.pid] + _children(node.proc.pid)
        if pm is not None:
            victims += [pm] + _children(pm)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.proc.wait(10)

    def stop(self):
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                try:
                    os.killpg(node.proc.pid, signal.SIGTERM)
                    node.proc.wait(30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            pm = node.postmaster_pid()
            if pm is not None:
                for pid in [pm] + _children(pm):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            self.etcd.wait(10)
        for out in self._logs:
            out.close()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def patroni(pg_bin_dir):
    missing = [p for p in (PATRONI, ETCD) if not Path(p).exists()]
    if missing:
        pytest.fail(f"not installed: {missing} (Debian packages patroni, etcd-server)")
    cluster = PatroniCluster(pg_bin_dir)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
