"""Fixtures and helpers for floe's integration tests.

The tests run the real floe binary against a real PostgreSQL server:

* ``postgres`` (session): a private PostgreSQL cluster (initdb in a temporary
  directory, TCP on 127.0.0.1 plus a Unix socket, fsync off).  Each floe
  instance gets a fresh database from ``postgres.new_database()``.
* ``floe`` (module): one floe daemon on a fresh database, shared by the tests
  of a module.  Tests that need an empty catalog use ``fresh_floe``.
* ``floe_factory`` (function): starts floe with arbitrary arguments and
  environment, and cleans up whatever it started.

The binary is taken from ``$FLOE_BIN``, else ``<repo>/build/server/floe``.
PostgreSQL binaries are looked up on ``PATH``, then in
``/usr/lib/postgresql/<newest>/bin``.  When the tests run as root, PostgreSQL
runs as the ``postgres`` system user.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0
PG_SYSTEM_USER = "postgres"

# The options of the daemon: every one is a flag and an environment variable.
FLOE_OPTIONS = {
    "--listen": "FLOE_LISTEN",
    "--database": "FLOE_DATABASE_URL",
    "--data-dir": "FLOE_DATA_DIR",
    "--warehouse": "FLOE_WAREHOUSE",
    "--threads": "FLOE_THREADS",
    "--log-level": "FLOE_LOG_LEVEL",
    "--log-format": "FLOE_LOG_FORMAT",
    "--max-body-bytes": "FLOE_MAX_BODY_BYTES",
    "--pg-bin-dir": "FLOE_PG_BIN_DIR",
    "--pg-user": "FLOE_PG_USER",
    "--idempotency-lease-seconds": "FLOE_IDEMPOTENCY_LEASE_SECONDS",
    "--janitor-interval-seconds": "FLOE_JANITOR_INTERVAL_SECONDS",
    "--metrics-retention-days": "FLOE_METRICS_RETENTION_DAYS",
    "--purge-max-attempts": "FLOE_PURGE_MAX_ATTEMPTS",
    "--db-statement-timeout-ms": "FLOE_DB_STATEMENT_TIMEOUT_MS",
    "--db-lock-timeout-ms": "FLOE_DB_LOCK_TIMEOUT_MS",
    "--db-acquire-timeout-ms": "FLOE_DB_ACQUIRE_TIMEOUT_MS",
    "--queue-max": "FLOE_QUEUE_MAX",
    "--publish-threads": "FLOE_PUBLISH_THREADS",
    "--idle-timeout-seconds": "FLOE_IDLE_TIMEOUT_SECONDS",
    "--per-ip-connection-limit": "FLOE_PER_IP_CONNECTION_LIMIT",
    "--connection-limit": "FLOE_CONNECTION_LIMIT",
    "--max-pending-body-bytes": "FLOE_MAX_PENDING_BODY_BYTES",
    "--shutdown-grace-seconds": "FLOE_SHUTDOWN_GRACE_SECONDS",
    "--hook-allow": "FLOE_HOOK_ALLOW",
    "--subscription-poll-ms": "FLOE_SUBSCRIPTION_POLL_MS",
    "--subscription-retry-ms": "FLOE_SUBSCRIPTION_RETRY_MS",
    "--warehouse-name": "FLOE_WAREHOUSE_NAME",
    "--cors-origins": "FLOE_CORS_ORIGINS",
    "--s3-endpoint": "FLOE_S3_ENDPOINT",
    "--s3-region": "FLOE_S3_REGION",
    "--s3-path-style": "FLOE_S3_PATH_STYLE",
    "--s3-profile": "FLOE_S3_PROFILE",
}

ERROR_KEYS = {"message", "type", "code", "stack"}


def pytest_configure(config):
    # -m scale picks the tests that compare a cost at two catalog sizes.
    config.addinivalue_line("markers", "scale: compares a cost at two catalog sizes")


# --------------------------------------------------------------------------
# small helpers


# How much slower than a normal build the floe under test runs: a
# sanitizer build with coverage counting takes several times as long on a
# large metadata file, so its requests get that much longer to answer.
TIME_SCALE = float(os.environ.get("FLOE_TEST_TIME_SCALE", "1"))


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def make_shared_tmpdir(prefix: str) -> Path:
    """A fresh directory under /tmp that other users can traverse.

    When the tests run as root, PostgreSQL runs as another user and must be
    able to reach its data directory, so the directory cannot live under
    pytest's private (0700) temporary tree.
    """
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    return d


def ns_path(levels, sep: str = "%1F") -> str:
    """The path form of a namespace: levels percent-encoded, joined by %1F."""
    return sep.join(quote(level, safe="") for level in levels)


def user_properties(props: dict) -> dict:
    """A namespace's properties without "location", which floe answers with
    the namespace's default location when the namespace has none."""
    return {k: v for k, v in props.items() if k != "location"}


def pid_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except FileNotFoundError:
        return False
    return True


def proc_status(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def is_descendant(pid: int, ancestor: int) -> bool:
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        try:
            pid = int(proc_status(pid)["PPid"])
        except (FileNotFoundError, KeyError, ValueError):
            return False
        seen += 1
    return pid == ancestor


def wait_until(predicate, timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def assert_request_id(resp: requests.Response) -> str:
    rid = resp.headers.get("X-Request-Id")
    assert rid, (
        f"{resp.request.method} {resp.request.url} -> {resp.status_code}: "
        f"no X-Request-Id header (headers: {dict(resp.headers)})"
    )
    return rid


def describe(resp: requests.Response) -> str:
    return (
        f"{resp.request.method} {resp.request.url} -> {resp.status_code} "
        f"{resp.text[:600]!r}"
    )


def assert_error_body(body, status: int, type_: str | None = None, where: str = ""):
    """Validate an Iceberg error body: {"error": {"message", "type", "code"}}."""
    assert isinstance(body, dict), f"{where}: error body is not an object: {body!r}"
    assert set(body) == {"error"}, f"{where}: top-level keys must be exactly ['error']: {body!r}"
    err = body["error"]
    assert isinstance(err, dict), f"{where}: 'error' is not an object: {body!r}"
    missing = {"message", "type", "code"} - set(err)
    assert not missing, f"{where}: error lacks {sorted(missing)}: {body!r}"
    extra = set(err) - ERROR_KEYS
    assert not extra, f"{where}: error has unknown keys {sorted(extra)}: {body!r}"
    assert isinstance(err["message"], str) and err["message"].strip(), f"{where}: empty message: {body!r}"
    assert isinstance(err["type"], str) and err["type"], f"{where}: empty type: {body!r}"
    assert isinstance(err["code"], int) and not isinstance(err["code"], bool), f"{where}: code not an int: {body!r}"
    assert err["code"] == status, f"{where}: code {err['code']} != HTTP status {status}: {body!r}"
    if "stack" in err:
        assert isinstance(err["stack"], list) and all(isinstance(s, str) for s in err["stack"]), body
    if type_ is not None:
        assert err["type"] == type_, f"{where}: expected type {type_}, got {err['type']}: {body!r}"
    return err


def assert_error(resp: requests.Response, status: int, type_: str | None = None,
                 message_has=None) -> dict:
    """Assert an error response: status, X-Request-Id, JSON error body.

    ``message_has``: a string or a tuple of strings; the message must contain
    at least one of them (case-insensitive).
    """
    where = describe(resp)
    assert resp.status_code == status, f"expected {status}: {where}"
    assert_request_id(resp)
    ctype = resp.headers.get("Content-Type", "")
    assert ctype.startswith("application/json"), f"error Content-Type {ctype!r}: {where}"
    try:
        body = resp.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {where}") from None
    err = assert_error_body(body, status, type_, where)
    if message_has is not None:
        options = (message_has,) if isinstance(message_has, str) else tuple(message_has)
        msg = err["message"].lower()
        assert any(o.lower() in msg for o in options), (
            f"message {err['message']!r} should mention one of {options}: {where}"
        )
    return err


def assert_ok_json(resp: requests.Response, status: int = 200):
    where = describe(resp)
    assert resp.status_code == status, f"expected {status}: {where}"
    assert_request_id(resp)
    ctype = resp.headers.get("Content-Type", "")
    assert ctype.startswith("application/json"), f"Content-Type {ctype!r}: {where}"
    return resp.json()


# --------------------------------------------------------------------------
# raw HTTP, for requests that a client library would not send


class RawResponse:
    def __init__(self, status: int, reason: str, headers: dict, body: bytes, elapsed: float):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case keys
        self.body = body
        self.elapsed = elapsed

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return f"RawResponse({self.status} {self.reason}, {self.headers}, {self.body[:300]!r})"


def read_raw_response(sock: socket.socket, timeout: float = 10.0, skip_interim: bool = True,
                      head: bool = False) -> RawResponse:
    """Read one HTTP/1.1 response (Content-Length or chunked or until close).

    ``head``: the request was a HEAD, so the response has no body whatever
    its headers say.
    """
    start = time.monotonic()
    sock.settimeout(timeout)
    buf = b""

    def recv_more():
        nonlocal buf
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk

    while True:
        while b"\r\n\r\n" not in buf:
            recv_more()
        head_bytes, _, rest = buf.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/\d\.\d (\d{3}) ?(.*)", lines[0])
        assert m, f"bad status line {lines[0]!r}"
        status = int(m.group(1))
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        buf = rest
        if 100 <= status < 200 and skip_interim:
            continue
        break

    body = b""
    if head or status in (204, 304):
        pass
    elif "content-length" in headers:
        n = int(headers["content-length"])
        while len(buf) < n:
            recv_more()
        body = buf[:n]
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            while b"\r\n" not in buf:
                recv_more()
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(buf) < size + 2:
                recv_more()
            body += buf[:size]
            buf = buf[size + 2:]
            if size == 0:
                break
    else:
        try:
            while True:
                recv_more()
        except (EOFError, ConnectionResetError):
            pass
        body = buf
    return RawResponse(status, m.group(2), headers, body, time.monotonic() - start)


def raw_request(host: str, port: int, data: bytes, timeout: float = 10.0) -> RawResponse:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        return read_raw_response(s, timeout)


# --------------------------------------------------------------------------
# PostgreSQL


def find_pg_bin_dir() -> Path:
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres") and shutil.which("pg_ctl"):
        # Resolve symlinks so that postgres finds its share directory.
        return Path(os.path.realpath(initdb)).parent
    base = Path("/usr/lib/postgresql")
    versions = []
    if base.is_dir():
        for d in base.iterdir():
            if (d / "bin" / "initdb").exists() and d.name.split(".")[0].isdigit():
                versions.append((int(d.name.split(".")[0]), d / "bin"))
    if not versions:
        pytest.fail("PostgreSQL binaries (initdb, postgres, pg_ctl) not found on PATH "
                    "nor in /usr/lib/postgresql/<version>/bin; install the postgresql package")
    return max(versions)[1]


def _pg_uid_gid():
    try:
        pw = pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        pytest.fail(f"running as root but there is no '{PG_SYSTEM_USER}' system user to run PostgreSQL")
    return pw.pw_uid, pw.pw_gid


def _chown_tree(path: Path, uid: int, gid: int):
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid)


class PostgresServer:
    """A private PostgreSQL cluster for the tests."""

    _db_counter = itertools.count(1)

    def __init__(self, bin_dir: Path, name: str = "pg"):
        self.bin_dir = bin_dir
        self.base = make_shared_tmpdir(f"floe-it-{name}-")
        self.data_dir = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.logfile = self.base / "postgres.log"
        self.host = "127.0.0.1"
        self.port = free_port()
        self.socket_dir.mkdir()
        if IS_ROOT:
            uid, gid = _pg_uid_gid()
            _chown_tree(self.base, uid, gid)
        self._icu = None

    def _run(self, argv, check=True, timeout=120):
        if IS_ROOT:
            argv = ["runuser", "-u", PG_SYSTEM_USER, "--"] + argv
        res = subprocess.run(argv, cwd=self.base, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}\n"
                f"--- postgres log ---\n{self.log()}"
            )
        return res

    def log(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def init(self):
        self._run([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
                   "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        return self

    def start(self):
        opts = (f"-p {self.port} -k {self.socket_dir} -c listen_addresses={self.host} "
                f"-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                f"-c max_connections=300 -c shared_buffers=32MB")
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.logfile),
                   "-w", "-t", "60", "-o", opts, "start"])
        return self

    def stop(self, mode: str = "fast"):
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", "stop"])

    def is_running(self) -> bool:
        return self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"],
                         check=False).returncode == 0

    def destroy(self):
        if self.is_running():
            self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate",
                       "-w", "stop"], check=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres"):
        import psycopg
        return psycopg.connect(self.url(dbname), autocommit=True)

    def new_database(self, icu: bool = True) -> str:
        """Create an empty database and return its postgresql:// URL.

        By default the database's collation is ICU en-US where the server
        supports it, as on many real installations: floe must not depend on
        the database collation for its byte-order listings.
        """
        name = f"floe_{os.getpid()}_{next(self._db_counter)}"
        with self.connect() as conn:
            if icu and self._icu is not False:
                try:
                    conn.execute(
                        f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING \'UTF8\' '
                        f"LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'")
                    self._icu = True
                    return self.url(name)
                except Exception:
                    self._icu = False
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def new_database_with_roles(self) -> tuple[str, str]:
        """An empty database set up as README "Database roles" says: an
        owner role that owns it (migrations) and a runtime login (floe).
        Returns (runtime URL, owner URL)."""
        n = next(self._db_counter)
        name = f"floe_{os.getpid()}_{n}"
        owner, runtime = f"{name}_owner", f"{name}_rt"
        with self.connect() as conn:
            conn.execute(f'CREATE ROLE "{owner}" LOGIN')
            conn.execute(f'CREATE ROLE "{runtime}" LOGIN')
            conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        with self.connect(name) as conn:
            conn.execute(f'ALTER SCHEMA public OWNER TO "{owner}"')
        return (f"postgresql://{runtime}@{self.host}:{self.port}/{name}",
                f"postgresql://{owner}@{self.host}:{self.port}/{name}")


@pytest.fixture(scope="session")
def pg_bin_dir() -> Path:
    return find_pg_bin_dir()


@pytest.fixture(scope="session")
def postgres(pg_bin_dir):
    server = PostgresServer(pg_bin_dir, "shared").init().start()
    yield server
    server.destroy()


@pytest.fixture(scope="module")
def dedicated_postgres(pg_bin_dir):
    """A PostgreSQL cluster of its own, for tests that stop and start it."""
    server = PostgresServer(pg_bin_dir, "dedicated").init().start()
    yield server
    server.destroy()


# --------------------------------------------------------------------------
# floe


def floe_binary() -> Path:
    path = Path(os.environ.get("FLOE_BIN") or REPO / "build" / "server" / "floe")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"floe binary not found at {path}: build it first (or set FLOE_BIN)")
    return path


def clean_env(**extra) -> dict:
    """The test runner's environment without any FLOE_* variable, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    env.update({k: str(v) for k, v in extra.items() if v is not None})
    return env


def run_floe(args, env=None, timeout: float = 20, cwd=None) -> subprocess.CompletedProcess:
    """Run floe to completion (for --help, --version, bad options)."""
    return subprocess.run([str(floe_binary())] + list(args), env=clean_env(**(env or {})),
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=cwd)


class Floe:
    """A running floe daemon."""

    def __init__(self, args=(), env=None, workdir: Path | None = None, listen_host="127.0.0.1",
                 port: int | None = None, listen_via="env"):
        self.workdir = workdir or make_shared_tmpdir("floe-it-run-")
        self._own_workdir = workdir is None
        self.host = listen_host
        self.port = port or free_port(listen_host)
        hostpart = f"[{listen_host}]" if ":" in listen_host else listen_host
        self.listen = f"{hostpart}:{self.port}"
        self.url = f"http://{hostpart}:{self.port}"
        env = dict(env or {})
        args = list(args)
        env.setdefault("FLOE_DATA_DIR", str(self.workdir / "data"))
        # Authentication is tested in test_auth.py and the suites that pass
        # FLOE_AUTH=floe; the rest of the catalog is tested without tokens,
        # on loopback, where floe allows --auth=none.
        env.setdefault("FLOE_AUTH", "none")
        # The webhook receivers of the tests listen on loopback, which floe
        # refuses as a hook target unless it is allowlisted.
        env.setdefault("FLOE_HOOK_ALLOW", "127.0.0.1")
        if listen_via == "env":
            env.setdefault("FLOE_LISTEN", self.listen)
        elif listen_via == "flag":
            args.append(f"--listen={self.listen}")
        self.args = args
        self.env = env
        self.stderr_path = self.workdir / "floe.stderr"
        self.stdout_path = self.workdir / "floe.stdout"
        self._stderr = open(self.stderr_path, "wb")
        self._stdout = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen([str(floe_binary())] + args, env=clean_env(**env),
                                     stdout=self._stdout, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL, cwd=self.workdir)
        self.session = requests.Session()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        """floe's stderr so far."""
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_bytes().decode("utf-8", errors="replace")

    def log_tail(self, n: int = 4000) -> str:
        return self.log()[-n:]

    def wait_ready(self, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"floe exited with {self.proc.returncode} before it was ready; stderr:\n{self.log_tail()}")
            try:
                r = requests.get(self.url + "/ready", timeout=2)
                if r.status_code == 200:
                    return self
                last = f"{r.status_code} {r.text[:200]}"
            except requests.RequestException as e:
                last = repr(e)
            time.sleep(0.05)
        raise AssertionError(
            f"floe not ready within {timeout}s (last answer: {last}); stderr:\n{self.log_tail()}")

    def stop(self, sig=signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send a signal and wait for the exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(
                    f"floe did not exit within {timeout}s of {sig!r}; stderr:\n{self.log_tail()}")
        self._close_files()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._close_files()

    def _close_files(self):
        for f in (self._stderr, self._stdout):
            if not f.closed:
                f.close()
        self.session.close()

    def cleanup(self):
        # A normal shutdown first, so a coverage build writes its counts;
        # a daemon that does not exit promptly is killed.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # Authentication -----------------------------------------------------
    @property
    def credential(self) -> str:
        """CLIENT_ID:SECRET of the admin client the first start made."""
        return (self.workdir / "data" / "auth" / "admin-credential").read_text().strip()

    def authenticate(self):
        """Gets a token for the admin client and sends it with every request
        of self.session from now on (a floe started with FLOE_AUTH=floe)."""
        cid, secret = self.credential.split(":", 1)
        r = requests.post(self.url + "/v1/oauth/tokens", timeout=30, data={
            "grant_type": "client_credentials", "client_id": cid, "client_secret": secret})
        assert r.status_code == 200, f"token for the admin client: {describe(r)}"
        self.token = r.json()["access_token"]
        self.session.headers["Authorization"] = f"Bearer {self.token}"
        return self

    # HTTP helpers -------------------------------------------------------
    def request(self, method: str, path: str, **kw) -> requests.Response:
        kw.setdefault("timeout", 15 * TIME_SCALE)
        return self.session.request(method, self.url + path, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def head(self, path, **kw):
        return self.request("HEAD", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def raw(self, data: bytes, timeout: float = 10.0) -> RawResponse:
        return raw_request(self.host, self.port, data, timeout)

    def create_namespace(self, levels, properties=None, base="/v1"):
        body = {"namespace": list(levels)}
        if properties is not None:
            body["properties"] = properties
        r = self.post(f"{base}/namespaces", json=body)
        assert r.status_code == 200, f"create {levels}: {describe(r)}"
        return r.json()

    def list_namespaces(self, parent=None, base="/v1"):
        params = {}
        if parent is not None:
            params["parent"] = "\x1f".join(parent)
        r = self.get(f"{base}/namespaces", params=params)
        assert r.status_code == 200, describe(r)
        body = r.json()
        return [list(ns) for ns in body["namespaces"]]

    def access_log_lines(self, rid: str, timeout: float = 3.0):
        """The access-log lines of one request id (waits for the log to flush)."""
        pat = re.compile(rf"rid={re.escape(rid)}(?![\w-])")

        def lines():
            return [l for l in self.log().splitlines() if pat.search(l)]
        return wait_until(lines, timeout) or []


@pytest.fixture
def floe_factory(tmp_path_factory):
    """Start floe daemons with arbitrary args/env; all are killed at teardown.

    floe_factory(args=[...], env={...}, ready=True, ready_timeout=30, ...)
    returns a Floe.  When ``ready`` is true it waits for GET /ready = 200.
    """
    started = []

    def start(args=(), env=None, ready=True, ready_timeout=30.0, **kw):
        f = Floe(args=args, env=env, **kw)
        started.append(f)
        if ready:
            f.wait_ready(ready_timeout)
        return f

    yield start
    for f in started:
        f.cleanup()


def _start_floe_on_fresh_db(postgres, env=None, **kw) -> Floe:
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(), **(env or {})}, **kw)
    try:
        f.wait_ready(30)
    except BaseException:
        f.cleanup()
        raise
    return f


def _stop_and_check(f: Floe):
    try:
        code = f.stop(signal.SIGTERM, timeout=30)
        assert code == 0, f"floe exited with {code} after SIGTERM; stderr:\n{f.log_tail()}"
    finally:
        f.cleanup()


def suite_floe(postgres, running: list, env: dict | None = None):
    """One floe daemon for a whole engine suite (tests/spark, tests/engines),
    as a generator for their session fixture: on a fresh database, with
    authentication on as deployed (the engines get the admin client's
    credential, f.credential; f.session sends its token), in ``running``
    while it serves (for attach_floe_log), stopped and checked at the end.
    FLOE_LOG_LEVEL is passed on; ``env`` adds settings (an external issuer's)."""
    env = {"FLOE_AUTH": "floe", "FLOE_TOKEN_TTL_SECONDS": "86400", **(env or {})}
    if os.environ.get("FLOE_LOG_LEVEL"):
        env["FLOE_LOG_LEVEL"] = os.environ["FLOE_LOG_LEVEL"]
    f = _start_floe_on_fresh_db(postgres, env=env)
    f.authenticate()
    running.append(f)
    try:
        yield f
    finally:
        running.remove(f)
        _stop_and_check(f)


def attach_floe_log(item, call, report, running: list):
    """Adds to a failed test's report floe's log lines written during the
    test (from item._floe_log_offset on): every REST exchange with its
    status, and floe's own warnings and errors."""
    offset = getattr(item, "_floe_log_offset", None)
    if report.failed and offset is not None and running:
        lines = running[0].log()[offset:].splitlines()
        if len(lines) > 300:
            lines = [f"... ({len(lines) - 300} earlier lines)"] + lines[-300:]
        report.sections.append((f"floe log ({call.when})", "\n".join(lines)))


@pytest.fixture(scope="module")
def floe(postgres):
    """One floe daemon on a fresh database, shared by a module's tests."""
    f = _start_floe_on_fresh_db(postgres)
    yield f
    _stop_and_check(f)


@pytest.fixture
def fresh_floe(postgres):
    """A floe daemon on a fresh, empty database, for one test."""
    f = _start_floe_on_fresh_db(postgres)
    yield f
    _stop_and_check(f)


@pytest.fixture
def uniq(request):
    """A short name unique to the test, for namespaces in a shared catalog."""
    uniq.counter = getattr(uniq, "counter", 0) + 1
    name = re.sub(r"[^A-Za-z0-9]+", "_", request.node.name)[-40:]
    return f"t{uniq.counter}_{name}"


# --------------------------------------------------------------------------
# refs, audit hooks, write-audit-publish and the audit log (the extension
# routes); used by test_refs, test_audit_hooks, test_wap, test_wap_pyiceberg

_snapshot_ids = itertools.count(int(time.time() * 1000) % 1_000_000 * 1000 + 7)


def next_snapshot_id() -> int:
    """A snapshot id unused in this test run."""
    return next(_snapshot_ids)


def database_url(f: Floe) -> str:
    """The postgresql:// URL a floe started by these fixtures uses."""
    url = f.env.get("FLOE_DATABASE_URL")
    assert url, "this floe was not started with FLOE_DATABASE_URL"
    return url


def database_identity(f: Floe) -> tuple[str, int]:
    """The system identifier and the timeline of f's PostgreSQL, as floe
    names them in its tokens of the change feed and the audit log."""
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        sysid, timeline = conn.execute(
            "SELECT system_identifier::text, "
            "('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int "
            "FROM pg_control_system()").fetchone()
    return sysid, timeline


def timeline_first_xid(f: Floe) -> int:
    """The transaction id below every one floe ran on the current timeline
    of f's PostgreSQL (feed_timelines, migration 0032): a position of an
    earlier timeline below it is in the history this timeline shares."""
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        (first,) = conn.execute(
            "SELECT first_xid::text FROM feed_timelines ORDER BY timeline DESC LIMIT 1").fetchone()
    return int(first)


def far_xid(f: Floe) -> int:
    """A transaction id f's PostgreSQL has not reached: a position of a
    history it never had."""
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        (xmax,) = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
    return int(xmax) + 1_000_000


def make_client(f: Floe, name: str, roles=("admin",), secret: str | None = None) -> str:
    """A client principal NAME (client id NAME) holding roles, made in the
    catalog's database with a secret stored as floe stores one (scrypt, at a
    small cost so tests stay fast); returns CLIENT_ID:SECRET. Until the
    management API makes principals, this is how a test gets a second
    identity."""
    import base64
    import hashlib
    import secrets as _secrets
    import psycopg

    secret = secret or _secrets.token_urlsafe(24)
    salt = _secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=1024, r=8, p=1, dklen=32)
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    stored = f"scrypt$1024$8$1${b64(salt)}${b64(digest)}"
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        pid = conn.execute("INSERT INTO principals (name, kind, client_id, secret_hash, source) "
                           "VALUES (%s, 'client', %s, %s, 'floe') RETURNING id",
                           (name, name, stored)).fetchone()[0]
        for role in roles:
            conn.execute("INSERT INTO role_members (role_id, principal_id) "
                         "SELECT id, %s FROM roles WHERE name = %s", (pid, role))
    return f"{name}:{secret}"


def client_token(f: Floe, credential: str, scope: str | None = None) -> str:
    cid, secret = credential.split(":", 1)
    data = {"grant_type": "client_credentials", "client_id": cid, "client_secret": secret}
    if scope:
        data["scope"] = scope
    r = requests.post(f.url + "/v1/oauth/tokens", data=data, timeout=30)
    assert r.status_code == 200, f"token for {cid}: {describe(r)}"
    return r.json()["access_token"]


class TableHandle:
    """One table of a floe, with the raw calls the extension tests need."""

    SCHEMA = {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "data", "required": False, "type": "string"},
        ],
    }

    def __init__(self, f: Floe, namespace, name: str, base: str = "/v1"):
        self.floe = f
        self.namespace = list(namespace)
        self.name = name
        self.base = base
        self.ns_url = f"{base}/namespaces/{ns_path(self.namespace)}"
        self.url = f"{self.ns_url}/tables/{quote(name, safe='')}"
        self.refs_url = self.url + "/refs"
        self.wap_url = self.url + "/wap"

    def ref_url(self, ref: str) -> str:
        return f"{self.refs_url}/{quote(ref, safe='')}"

    def run_url(self, run_id: str) -> str:
        return f"{self.wap_url}/{run_id}"

    def create(self, **extra) -> dict:
        body = {"name": self.name, "schema": self.SCHEMA}
        body.update(extra)
        return assert_ok_json(self.floe.post(f"{self.ns_url}/tables", json=body))

    def load(self) -> dict:
        return assert_ok_json(self.floe.get(self.url))

    def metadata(self) -> dict:
        return self.load()["metadata"]

    def head(self, ref: str = "main"):
        """The snapshot id a ref points at, None when there is no such ref."""
        r = self.metadata().get("refs", {}).get(ref)
        return None if r is None else r["snapshot-id"]

    def commit(self, updates, requirements=()) -> requests.Response:
        return self.floe.post(self.url, json={"requirements": list(requirements), "updates": list(updates)})

    def commit_ok(self, updates, requirements=()) -> dict:
        return assert_ok_json(self.commit(updates, requirements))

    def snapshot_updates(self, ref: str = "main", parent="head", snapshot_id: int | None = None,
                         meta: dict | None = None) -> tuple[int, list]:
        """add-snapshot (a fake manifest list) + set-snapshot-ref for ref.

        parent: "head" (the ref's current snapshot; main's for a new branch),
        None, or a snapshot id.
        """
        meta = meta or self.metadata()
        if parent == "head":
            refs = meta.get("refs", {})
            parent = refs.get(ref, refs.get("main", {})).get("snapshot-id")
        sid = snapshot_id or next_snapshot_id()
        snap = {
            "snapshot-id": sid,
            "sequence-number": meta.get("last-sequence-number", 0) + 1,
            "timestamp-ms": int(time.time() * 1000),
            "manifest-list": f"{meta['location']}/metadata/snap-{sid}-1-{sid:x}.avro",
            "summary": {"operation": "append"},
            "schema-id": meta.get("current-schema-id", 0),
        }
        if parent is not None:
            snap["parent-snapshot-id"] = parent
        return sid, [
            {"action": "add-snapshot", "snapshot": snap},
            {"action": "set-snapshot-ref", "ref-name": ref, "type": "branch", "snapshot-id": sid},
        ]

    def add_snapshot(self, ref: str = "main", parent="head") -> int:
        """Commit a new snapshot to a branch (created if missing); its id."""
        sid, updates = self.snapshot_updates(ref, parent)
        body = self.commit_ok(updates)
        assert body["metadata"]["refs"][ref]["snapshot-id"] == sid, body["metadata"]["refs"]
        return sid

    def refs(self) -> list:
        return assert_ok_json(self.floe.get(self.refs_url))["refs"]

    def stage(self, **body) -> dict:
        """POST .../wap: a staged run."""
        return assert_ok_json(self.floe.post(self.wap_url, json=body), 201)

    def run(self, run_id: str) -> dict:
        return assert_ok_json(self.floe.get(self.run_url(run_id)))

    def publish(self, run_id: str, timeout: float = 90, **body) -> requests.Response:
        return self.floe.post(self.run_url(run_id) + "/publish", json=body, timeout=timeout)


def register_hook(f: Floe, name: str, url: str, scope=None, secret=None, timeout_ms=None,
                  base: str = "/v1") -> dict:
    body = {"name": name, "url": url}
    if scope is not None:
        body["scope"] = scope
    if secret is not None:
        body["secret"] = secret
    if timeout_ms is not None:
        body["timeout-ms"] = timeout_ms
    return assert_ok_json(f.post(f"{base}/audit-hooks", json=body), 201)


def set_ns_props(f: Floe, levels, updates=None, removals=None) -> requests.Response:
    """POST .../namespaces/{levels}/properties."""
    return f.post(f"/v1/namespaces/{ns_path(levels)}/properties",
                  json={"updates": updates or {}, "removals": removals or []})


def control(f: Floe, action: str, **body) -> requests.Response:
    """POST /v1/controls/{action}: the route that may weaken a control."""
    return f.post(f"/v1/controls/{action}", json=body)


def audit_events(f: Floe, page_size: int | None = None, base: str = "/v1", **params) -> list:
    """Every audit-log event matching the filters, walking all pages.

    With page_size, pages are asked for as the Iceberg REST spec has it: the
    first request carries an empty pageToken.
    """
    params = {k: v for k, v in params.items() if v is not None}
    token = None
    if page_size is not None:
        params["pageSize"] = page_size
        token = ""
    out, pages = [], 0
    while True:
        q = dict(params)
        if token is not None:
            q["pageToken"] = token
        body = assert_ok_json(f.get(f"{base}/audit-log", params=q))
        if page_size is not None:
            assert len(body["events"]) <= page_size, f"pageSize={page_size}: {len(body['events'])} events"
        out.extend(body["events"])
        token = body.get("next-page-token")
        pages += 1
        assert pages < 10_000, "audit-log pagination does not end"
        if not token:
            return out


@pytest.fixture
def webhooks():
    """Start webhook receivers (webhook.Receiver); all stop at teardown."""
    from webhook import Receiver
    started = []

    def start(*args, **kw) -> Receiver:
        r = Receiver(*args, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


@pytest.fixture
def hooks():
    """Register audit hooks on a floe; each is deleted at teardown.

    hooks(floe, name, url, scope=..., secret=..., timeout_ms=...) -> hook
    """
    made = []

    def add(f: Floe, name: str, url: str, **kw) -> dict:
        h = register_hook(f, name, url, **kw)
        made.append((f, h["id"]))
        return h

    yield add
    for f, hook_id in made:
        try:
            f.delete(f"/v1/audit-hooks/{hook_id}", timeout=5)
        except requests.RequestException:
            pass


@pytest.fixture(scope="session")
def psql_bin(pg_bin_dir) -> Path:
    """The real psql client binary."""
    p = Path(pg_bin_dir) / "psql"
    if p.is_file():
        return p
    found = shutil.which("psql")
    if not found:
        pytest.fail("psql not found next to the PostgreSQL server binaries nor on PATH")
    return Path(found)


def integration_module(name: str):
    """tests/integration/<name>.py for another suite (tests/spark,
    tests/engines), imported under its own name with its ``from conftest
    import ...`` reading this module (the s3:// servers of s3_servers.py,
    the IAM set-up of test_vended_credentials.py)."""
    if name in sys.modules:
        return sys.modules[name]
    ours = sys.modules.get("conftest")
    sys.modules["conftest"] = sys.modules[__name__]
    try:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
    finally:
        if ours is None:
            del sys.modules["conftest"]
        else:
            sys.modules["conftest"] = ours
    return mod


def postgres_pids(pg) -> list[int]:
    """The postmaster of a test cluster and every process it started."""
    master = int((pg.data_dir / "postmaster.pid").read_text().splitlines()[0])
    pids = [master]
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as fh:
                for line in fh:
                    if line.startswith("PPid:"):
                        if int(line.split()[1]) == master:
                            pids.append(int(d))
                        break
        except OSError:
            pass
    return pids


def table_in_new_namespace(floe, ns: str) -> "TableHandle":
    """Namespace ns, created, and its table t, created without a snapshot."""
    assert_ok_json(floe.post("/v1/namespaces", json={"namespace": [ns]}))
    t = TableHandle(floe, [ns], "t")
    t.create()
    return t


def metadata_file_names(t: "TableHandle") -> set:
    """The names of the metadata files in the table's metadata directory
    (a file:// warehouse)."""
    loc = t.metadata()["location"]
    return {p.name for p in (Path(loc[len("file://"):]) / "metadata").glob("*.metadata.json")}
