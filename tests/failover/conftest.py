"""The failover suite's parts: a real PostgreSQL primary and a standby made
from it with pg_basebackup, streaming through a relay the test can cut (a
network partition between them), and floe replicas connected to both by
libpq's multi-host URL with target_session_attrs=read-write.

The integration suite's fixtures (PostgreSQL binaries, the floe daemon,
webhook receivers) are loaded from tests/integration/conftest.py under a
name of their own, as the soak does."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import integration_fixtures  # noqa: E402

fixtures = integration_fixtures.load()

pg_bin_dir = fixtures.pg_bin_dir
webhooks = fixtures.webhooks

DATABASE = "floe"


class Node(fixtures.PostgresServer):
    """One PostgreSQL server of the pair. Unlike the integration suite's,
    it keeps synchronous_commit on: what a commit's acknowledgement
    promises is what is tested here."""

    def start(self, settings=()):
        """Starts the server with settings (name=value) added."""
        opts = [f"-p {self.port}", f"-k {self.socket_dir}", f"-c listen_addresses={self.host}",
                "-c fsync=off", "-c synchronous_commit=on", "-c max_connections=100",
                "-c shared_buffers=32MB", "-c wal_level=replica", "-c max_wal_senders=4",
                "-c wal_keep_size=256MB", "-c hot_standby=on"]
        opts += [f"-c {s}" for s in settings]
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l",
                   str(self.logfile), "-w", "-t", "60", "-o", " ".join(opts), "start"])
        return self

    def kill9(self):
        """kill -9 the postmaster and every process of it: a crash, not a
        shutdown; nothing is flushed or sent on."""
        pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                              text=True).stdout.split()
        for p in [pid] + [int(k) for k in kids]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while fixtures.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def kill_postmaster(self):
        """kill -9 the postmaster alone: its backends notice, and each
        tells its client FATAL "terminating connection due to unexpected
        postmaster exit" and exits. Returns once they are gone."""
        pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        kids = [int(k) for k in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                               text=True).stdout.split()]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(fixtures.pid_alive(p) for p in [pid] + kids) and time.monotonic() < deadline:
            time.sleep(0.02)

    def promote(self):
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-w", "-t", "60",
                   "promote"])

    def sql(self, statement, args=(), dbname=DATABASE):
        with psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(statement, args)
            return cur.fetchall() if cur.description else []


class Relay:
    """A TCP relay from a local port to the primary: the standby streams
    through it, and cut() is a network partition (every connection closed,
    no new one accepted), after which an asynchronous standby receives
    nothing more."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut_off = threading.Event()
        self.conns = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="relay").start()

    def _accept(self):
        while not self.cut_off.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off.is_set():
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while not self.cut_off.is_set():
                data = src.recv(65536)
                if not data or self.cut_off.is_set():
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass

    def cut(self):
        self.cut_off.set()
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        self.listener.close()


class Pair:
    """A primary and a standby of it (synchronous or not), and the URL
    that names both."""

    def __init__(self, bin_dir: Path, synchronous: bool):
        self.synchronous = synchronous
        self.primary = Node(bin_dir, "fo-primary").init().start()
        self.primary.sql(f'CREATE DATABASE "{DATABASE}"', dbname="postgres")
        self.relay = Relay(self.primary.host, self.primary.port)
        self.standby = Node(bin_dir, "fo-standby")
        self.standby._run([str(bin_dir / "pg_basebackup"), "-h", self.primary.host, "-p",
                           str(self.primary.port), "-U", "postgres", "-D",
                           str(self.standby.data_dir), "-X", "stream", "-R", "-c", "fast",
                           "--no-sync"])
        # The standby names itself as the primary's synchronous_standby_names
        # expects, and streams through the relay.
        with open(self.standby.data_dir / "postgresql.auto.conf", "a") as conf:
            conf.write(f"primary_conninfo = 'host=127.0.0.1 port={self.relay.port} "
                       f"user=postgres application_name=standby1'\n")
        self.standby.start()
        if synchronous:
            # Only the primary waits for the standby: set after the base
            # backup, so a promoted standby waits for no one.
            self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'",
                             dbname="postgres")
            self.primary.sql("SELECT pg_reload_conf()", dbname="postgres")
        want = "sync" if synchronous else "async"
        fixtures.wait_until(lambda: self.primary.sql(
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1' "
            "AND state = 'streaming'", dbname="postgres") == [(want,)], 30)
        assert self.primary.sql(
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'",
            dbname="postgres") == [(want,)], self.primary.log()

    @property
    def url(self) -> str:
        """libpq's multi-host URL: whichever of the two accepts writes."""
        p, s = self.primary, self.standby
        return (f"postgresql://postgres@{p.host}:{p.port},{s.host}:{s.port}/{DATABASE}"
                f"?target_session_attrs=read-write")

    def destroy(self):
        if not self.relay.cut_off.is_set():
            self.relay.cut()
        self.standby.destroy()
        self.primary.destroy()


@pytest.fixture
def pair_factory(pg_bin_dir):
    made = []

    def make(synchronous: bool) -> Pair:
        p = Pair(pg_bin_dir, synchronous)
        made.append(p)
        return p

    yield make
    for p in made:
        p.destroy()
