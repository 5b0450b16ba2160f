"""The floe daemon: options, embedded PostgreSQL, shutdown, database outages,
several replicas on one database."""

from __future__ import annotations

import concurrent.futures
import os
import json
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import (
    FLOE_OPTIONS,
    IS_ROOT,
    REPO,
    assert_error,
    assert_ok_json,
    describe,
    floe_binary,
    free_port,
    is_descendant,
    make_shared_tmpdir,
    pid_alive,
    port_open,
    proc_status,
    read_raw_response,
    run_floe,
    TableHandle,
    clean_env,
    user_properties,
    wait_until,
)

EMBEDDED_READY_TIMEOUT = 120

# What a crash or a misuse of libmicrohttpd leaves in the log. The access
# log's "aborted(3)" is not one: an answer whose connection was still open
# when the daemon stopped (the client had it already; each test asserts the
# answers it got).
CRASH_SIGNS = re.compile(r"abort(?!ed\(\d+\))|panic|libmicrohttpd failed", re.I)


# ---------------------------------------------------------------- command line


def test_help_lists_every_option(tmp_path):
    res = run_floe(["--help"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for flag, var in FLOE_OPTIONS.items():
        assert flag in out, f"--help does not mention {flag}:\n{out}"
        assert var in out, f"--help does not mention {var}:\n{out}"
    for word in ("--help", "--version", "--print-routes", "--print-man"):
        assert word in out, f"--help does not mention {word}:\n{out}"
    for default in ("127.0.0.1:8181", "8388608", "info", "floe-data", "30000", "10000", "5000",
                    "1024", "256", "268435456", "60"):
        assert default in out, f"--help does not show the default {default!r}:\n{out}"
    assert list(tmp_path.iterdir()) == [], "--help created files"


def test_man_page_lists_every_option_and_renders(tmp_path):
    res = run_floe(["--print-man"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    roff = res.stdout
    assert roff.startswith(".TH FLOE 1 "), roff[:200]
    plain = roff.replace("\\-", "-")
    for flag, var in FLOE_OPTIONS.items():
        assert f".BR {flag} " in plain, f"floe(1) does not list {flag}"
        assert var in plain, f"floe(1) does not name {var}"
    # Rendered by a real man(1) where the machine has one: every option
    # shows up in the text a reader sees.
    man = shutil.which("man")
    if man:
        page = tmp_path / "floe.1"
        page.write_text(roff)
        shown = subprocess.run([man, "-l", str(page)], capture_output=True, text=True,
                               env={**os.environ, "MANWIDTH": "200"},
                               timeout=30)
        assert shown.returncode == 0, shown.stderr
        text = re.sub(".\b", "", shown.stdout).replace("\u2010", "-")
        for flag in FLOE_OPTIONS:
            assert flag in text, f"the rendered floe(1) does not show {flag}"
    assert list(tmp_path.iterdir()) in ([], [tmp_path / "floe.1"]), "--print-man created files"


def test_systemd_unit_is_valid_and_waits_as_long_as_floe(tmp_path):
    """dist/floe.service: systemd accepts it, and its stop timeout covers
    floe's own shutdown waits (the grace period, the wait for running
    commits and publishes, the embedded PostgreSQL's shutdown)."""
    unit = (REPO / "dist" / "floe.service").read_text()
    timeout = int(re.search(r"^TimeoutStopSec=(\d+)$", unit, re.M).group(1))
    grace = 30   # --shutdown-grace-seconds' default (test_help_lists_every_option)
    jobs = 90    # server/http.c HTTP_ASYNC_WAIT_SECONDS
    pg_stop = 30  # server/embedpg.c: 600 waits of 50 ms for a fast shutdown
    assert timeout > grace + jobs + pg_stop, unit
    assert "KillMode=mixed" in unit  # SIGTERM to floe only; it stops PostgreSQL itself
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    local = tmp_path / "floe.service"
    local.write_text(re.sub(r"^ExecStart=.*$", f"ExecStart={floe_binary()}", unit, flags=re.M))
    res = subprocess.run([analyze, "verify", "--man=no", str(local)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and "floe.service" not in res.stderr, res.stderr


def test_version(tmp_path):
    res = run_floe(["--version"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert re.search(r"floe\S*\s+\S*\d", res.stdout, re.I), res.stdout
    assert list(tmp_path.iterdir()) == []


def test_print_routes(tmp_path):
    """--print-routes: one line a route, METHOD PATH WHO-OR-PRIVILEGES OBJECT,
    read from the route table the gate enforces."""
    res = run_floe(["--print-routes"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = [l.split() for l in res.stdout.splitlines() if l.strip()]
    for r in rows:
        assert len(r) == 4, f"bad route line {r!r}"
        assert re.fullmatch(r"(GET|HEAD|POST|PUT|DELETE|PATCH)", r[0]), r
        assert r[1].startswith("/"), r
    lines = [f"{r[0]} {r[1]}" for r in rows]
    assert len(lines) == len(set(lines)), "duplicate routes"
    by_route = {f"{r[0]} {r[1]}": (r[2], r[3]) for r in rows}
    assert by_route["GET /health"] == ("public-if-configured", "-")
    assert by_route["GET /v1/config"] == ("any-principal", "-")
    assert by_route["POST /v1/oauth/tokens"] == ("public", "-")
    assert by_route["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"] == (
        "TABLE_READ", "table")
    assert by_route["DELETE /v1/{prefix}/namespaces/{namespace}"] == ("NAMESPACE_DROP", "namespace")
    assert by_route["POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"] == (
        "from-body", "table")
    assert by_route["POST /v1/{prefix}/namespaces/{namespace}/register"] == (
        "TABLE_CREATE+from-body", "namespace")
    assert by_route["GET /v1/{prefix}/audit-hooks"] == ("AUDIT_READ|HOOKS_MANAGE", "catalog")
    assert by_route["POST /v1/{prefix}/event-subscriptions"] == (
        "AUDIT_READ,HOOKS_MANAGE", "catalog")
    assert by_route["GET /management/v1/roles"] == ("ADMIN", "catalog")
    for route in ("GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces",
                  "GET /v1/{prefix}/namespaces/{namespace}", "HEAD /v1/{prefix}/namespaces/{namespace}",
                  "DELETE /v1/{prefix}/namespaces/{namespace}",
                  "POST /v1/{prefix}/namespaces/{namespace}/properties"):
        assert route in lines, f"{route} missing from --print-routes:\n{res.stdout}"
    assert list(tmp_path.iterdir()) == []


def test_print_routes_json(tmp_path):
    """--print-routes=json: the whole route table, the rows --print-routes shows."""
    res = run_floe(["--print-routes=json"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    table = json.loads(res.stdout)
    text = run_floe(["--print-routes"], cwd=tmp_path).stdout
    assert [f"{r['method']} {r['path']}" for r in table] == [
        " ".join(l.split()[:2]) for l in text.splitlines() if l.strip()]
    keys = {"method", "path", "access", "privileges", "object", "demands", "queue", "flags",
            "audit-event"}
    for r in table:
        assert set(r) == keys, r
    commit = next(r for r in table if r["method"] == "POST"
                  and r["path"] == "/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    assert commit["queue"] == "commit"
    assert commit["privileges"] == [] and commit["demands"].startswith("by update")
    assert set(commit["flags"]) == {"advertised", "body", "mutating",
                                    "idempotent-in-transaction"}
    publish = next(r for r in table if r["path"].endswith("/wap/{run}/publish"))
    assert (publish["privileges"], publish["object"], publish["queue"]) == (
        ["WAP_PUBLISH"], "table", "publish")
    drop = next(r for r in table if r["method"] == "DELETE"
                and r["path"] == "/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    assert drop["audit-event"] == "table.dropped"
    # Only what never touches the database runs on libmicrohttpd's threads.
    assert {r["path"] for r in table if r["queue"] == "inline"} == {
        "/health", "/ready", "/metrics"}
    assert drop["queue"] == "request"
    assert {r["queue"] for r in table} == {"inline", "request", "commit", "publish"}
    assert list(tmp_path.iterdir()) == []


BAD_OPTIONS = [
    (["--threads=0"], {}, ("--threads", "FLOE_THREADS")),
    (["--threads=abc"], {}, ("--threads", "FLOE_THREADS")),
    (["--threads=-1"], {}, ("--threads", "FLOE_THREADS")),
    (["--threads=257"], {}, ("--threads", "FLOE_THREADS")),
    (["--threads="], {}, ("--threads", "FLOE_THREADS")),
    (["--listen=nonsense"], {}, ("--listen", "FLOE_LISTEN")),
    (["--listen=127.0.0.1"], {}, ("--listen", "FLOE_LISTEN")),
    (["--listen=127.0.0.1:99999"], {}, ("--listen", "FLOE_LISTEN")),
    (["--listen=127.0.0.1:http"], {}, ("--listen", "FLOE_LISTEN")),
    (["--log-level=loud"], {}, ("--log-level", "FLOE_LOG_LEVEL")),
    (["--max-body-bytes=1023"], {}, ("--max-body-bytes", "FLOE_MAX_BODY_BYTES")),
    (["--max-body-bytes=abc"], {}, ("--max-body-bytes", "FLOE_MAX_BODY_BYTES")),
    (["--max-body-bytes=-5"], {}, ("--max-body-bytes", "FLOE_MAX_BODY_BYTES")),
    (["--no-such-flag"], {}, ("--no-such-flag",)),
    (["--threads=2", "stray-argument"], {}, ("stray-argument",)),
    ([], {"FLOE_THREADS": "0"}, ("FLOE_THREADS", "--threads")),
    ([], {"FLOE_THREADS": "abc"}, ("FLOE_THREADS", "--threads")),
    ([], {"FLOE_LOG_LEVEL": "loud"}, ("FLOE_LOG_LEVEL", "--log-level")),
    ([], {"FLOE_LISTEN": "nonsense"}, ("FLOE_LISTEN", "--listen")),
    ([], {"FLOE_MAX_BODY_BYTES": "10"}, ("FLOE_MAX_BODY_BYTES", "--max-body-bytes")),
    (["--db-statement-timeout-ms=0"], {}, ("--db-statement-timeout-ms",)),
    ([], {"FLOE_DB_LOCK_TIMEOUT_MS": "soon"}, ("FLOE_DB_LOCK_TIMEOUT_MS",)),
    (["--db-acquire-timeout-ms=-1"], {}, ("--db-acquire-timeout-ms",)),
    (["--queue-max=0"], {}, ("--queue-max",)),
    (["--publish-threads=257"], {}, ("--publish-threads",)),
    (["--idle-timeout-seconds=0"], {}, ("--idle-timeout-seconds",)),
    (["--per-ip-connection-limit=0"], {}, ("--per-ip-connection-limit",)),
    (["--connection-limit=x"], {}, ("--connection-limit",)),
    (["--max-pending-body-bytes=1024"], {}, ("--max-pending-body-bytes",)),
]


@pytest.mark.parametrize("args,env,names", BAD_OPTIONS,
                         ids=[" ".join(a) or " ".join(f"{k}={v}" for k, v in e.items()) for a, e, _ in BAD_OPTIONS])
def test_bad_option_exits_2(tmp_path, args, env, names):
    env = dict(env)
    env.setdefault("FLOE_DATA_DIR", str(tmp_path / "data"))
    # a database nobody listens on: a floe that wrongly accepts the option fails differently
    env.setdefault("FLOE_DATABASE_URL", f"postgresql://postgres@127.0.0.1:{free_port()}/none?connect_timeout=2")
    try:
        res = run_floe(args, env=env, timeout=20, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"floe {args} {env} did not exit: the bad value was accepted")
    assert res.returncode == 2, f"exit {res.returncode}; stderr:\n{res.stderr}"
    assert any(n in res.stderr for n in names), f"stderr should name one of {names}:\n{res.stderr}"


# ---------------------------------------------------------------- options in effect


def test_logs_listening_line(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    assert "listening on" in f.log(), f.log_tail()
    assert str(f.port) in [l for l in f.log().splitlines() if "listening on" in l][0]


def test_listen_flag_beats_env(postgres, floe_factory):
    env_port = free_port()
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(),
                          "FLOE_LISTEN": f"127.0.0.1:{env_port}"}, listen_via="flag")
    assert f.port != env_port
    assert requests.get(f.url + "/health", timeout=5).status_code == 200
    assert not port_open("127.0.0.1", env_port), "floe listens on the FLOE_LISTEN port despite --listen"


def test_database_flag_beats_env(postgres, floe_factory):
    bad = f"postgresql://postgres@127.0.0.1:{free_port()}/none?connect_timeout=2"
    f = floe_factory(args=[f"--database={postgres.new_database()}"], env={"FLOE_DATABASE_URL": bad})
    assert_ok_json(f.get("/v1/namespaces"))


def test_database_as_conninfo(postgres, floe_factory):
    url = postgres.new_database()
    dbname = url.rsplit("/", 1)[1]
    conninfo = f"host={postgres.host} port={postgres.port} user=postgres dbname={dbname}"
    f = floe_factory(env={"FLOE_DATABASE_URL": conninfo})
    f.create_namespace(["via_conninfo"])
    assert ["via_conninfo"] in f.list_namespaces()


def test_database_with_a_data_dir_whose_parents_are_missing(postgres, floe_factory, tmp_path):
    """With --database, floe makes the data directory and every missing
    parent of it, each 0700 as the data directory itself (mkdir -p); it
    failed to start when the parent was missing."""
    base = tmp_path / "missing"
    data = base / "a" / "b" / "data"
    f = floe_factory(args=[f"--database={postgres.new_database()}", f"--data-dir={data}"],
                     env={"FLOE_AUTH": "floe"})
    assert data.is_dir()
    for d in (base, base / "a", base / "a" / "b", data):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, (d, oct(d.stat().st_mode))
    assert (data / "auth" / "hook-secrets.key").is_file()
    assert_error(f.get("/v1/namespaces"), 401, "NotAuthorizedException")


def test_a_data_dir_that_cannot_be_made_is_a_setup_mistake(postgres, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = run_floe([f"--database={postgres.new_database()}", f"--data-dir={blocker / 'sub' / 'data'}"],
                 env={"FLOE_AUTH": "none"})
    assert r.returncode == 2, r.stderr
    assert f"floe: cannot create the data directory {blocker / 'sub'}: Not a directory" in r.stderr


def test_a_schema_newer_than_floe_is_refused(postgres, floe_factory, tmp_path):
    """A database a newer floe migrated (a migration recorded that this
    binary does not have, as in a rolling upgrade) is refused at start:
    exit status 1, a message naming the database's newest migration and
    this floe's, and nothing applied."""
    import psycopg
    url = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": url})
    f.create_namespace(["before_upgrade"])
    assert f.stop() == 0
    with psycopg.connect(url, autocommit=True) as conn:
        ours = conn.execute("SELECT name FROM floe_schema_version "
                            "ORDER BY version DESC LIMIT 1").fetchone()[0]
        conn.execute("INSERT INTO floe_schema_version (version, name) "
                     "VALUES (9999, '9999_from_a_newer_floe')")
    r = run_floe([f"--database={url}", f"--data-dir={tmp_path / 'd'}",
                  f"--listen=127.0.0.1:{free_port()}"], env={"FLOE_AUTH": "none"}, timeout=30)
    assert r.returncode == 1, r.stderr
    version = run_floe(["--version"]).stdout.split()[-1]
    assert (f"floe {version} cannot prepare the catalog database: The database's schema is "
            "newer than this floe: it has migration 9999_from_a_newer_floe applied (its newest "
            f"is 9999_from_a_newer_floe), and this floe knows migrations up to {ours} only; a "
            "newer floe migrated it, so start that floe's version or a later one") in r.stderr
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM floe_schema_version WHERE version > 9000"
                            ).fetchone()[0] == 1
        conn.execute("DELETE FROM floe_schema_version WHERE version = 9999")
    again = floe_factory(env={"FLOE_DATABASE_URL": url})
    assert ["before_upgrade"] in again.list_namespaces()


def test_every_option_as_flag(postgres, pg_bin_dir, floe_factory, tmp_path):
    port = free_port()
    args = [
        f"--listen=127.0.0.1:{port}",
        f"--database={postgres.new_database()}",
        f"--data-dir={tmp_path / 'd'}",
        f"--warehouse=file://{tmp_path / 'wh'}",
        "--threads=3",
        "--log-level=debug",
        "--max-body-bytes=2048",
        f"--pg-bin-dir={pg_bin_dir}",
        "--pg-user=postgres",
    ]
    f = floe_factory(args=args, port=port, listen_via="none")
    f.create_namespace(["all_flags"])
    r = f.post("/v1/namespaces", data=b"x" * 4096, headers={"Content-Type": "application/json"})
    assert_error(r, 413, "RequestEntityTooLargeException")


def test_every_option_as_env(postgres, pg_bin_dir, floe_factory, tmp_path):
    port = free_port()
    env = {
        "FLOE_LISTEN": f"127.0.0.1:{port}",
        "FLOE_DATABASE_URL": postgres.new_database(),
        "FLOE_DATA_DIR": str(tmp_path / "d"),
        "FLOE_WAREHOUSE": f"file://{tmp_path / 'wh'}",
        "FLOE_THREADS": "3",
        "FLOE_LOG_LEVEL": "debug",
        "FLOE_MAX_BODY_BYTES": "2048",
        "FLOE_PG_BIN_DIR": str(pg_bin_dir),
        "FLOE_PG_USER": "postgres",
    }
    f = floe_factory(env=env, port=port)
    f.create_namespace(["all_env"])
    r = f.post("/v1/namespaces", data=b"x" * 4096, headers={"Content-Type": "application/json"})
    assert_error(r, 413, "RequestEntityTooLargeException")


@pytest.mark.parametrize("level", ["error", "warn", "info", "debug"])
def test_log_levels_are_accepted(postgres, floe_factory, level):
    f = floe_factory(args=[f"--log-level={level}"], env={"FLOE_DATABASE_URL": postgres.new_database()})
    assert f.get("/health").status_code == 200


def test_one_thread_serves_concurrent_clients(postgres, floe_factory):
    f = floe_factory(args=["--threads=1"], env={"FLOE_DATABASE_URL": postgres.new_database()})
    f.create_namespace(["one_thread"])

    def call(i):
        return requests.get(f.url + "/v1/namespaces/one_thread", timeout=20).status_code

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        codes = list(ex.map(call, range(64)))
    assert codes == [200] * 64


def test_ipv6_listen(postgres, floe_factory):
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()}, listen_host="::1")
    assert f.listen.startswith("[::1]:")
    assert requests.get(f.url + "/health", timeout=5).json() == {"status": "ok"}


def test_restart_on_same_database_keeps_data(postgres, floe_factory):
    url = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": url})
    f.create_namespace(["kept"], {"k": "v"})
    assert f.stop() == 0, f.log_tail()
    g = floe_factory(env={"FLOE_DATABASE_URL": url})
    assert user_properties(assert_ok_json(g.get("/v1/namespaces/kept"))["properties"]) == {"k": "v"}


# ---------------------------------------------------------------- shutdown


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_0_and_closes_port(postgres, floe_factory, sig):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    f.create_namespace(["x"])
    code = f.stop(sig, timeout=20)
    assert code == 0, f"exit {code} after {sig!r}; stderr:\n{f.log_tail()}"
    assert not port_open(f.host, f.port)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_while_waiting_for_the_database(floe_factory, sig):
    """A floe still waiting for its database at start-up stops when told to."""
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/none?connect_timeout=2"
    f = floe_factory(env={"FLOE_DATABASE_URL": url}, ready=False)
    time.sleep(2)
    assert f.proc.poll() is None, f"floe gave up on the database at once:\n{f.log_tail()}"
    t0 = time.monotonic()
    f.proc.send_signal(sig)
    try:
        f.proc.wait(10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"floe ignored {sig!r} while waiting for PostgreSQL; stderr:\n{f.log_tail()}")
    assert time.monotonic() - t0 < 10


def test_idle_keepalive_connection_does_not_block_shutdown(postgres, floe_factory):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    s = requests.Session()
    assert s.get(f.url + "/health", timeout=5).status_code == 200  # connection stays open
    t0 = time.monotonic()
    code = f.stop(signal.SIGTERM, timeout=20)
    assert code == 0, f.log_tail()
    assert time.monotonic() - t0 < 15
    s.close()


def test_request_in_flight_at_sigterm_is_answered(postgres, floe_factory):
    """A request whose body is still arriving when SIGTERM comes is finished."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    body = b'{"namespace": ["in_flight"], "properties": {"k": "v"}}'
    head = (f"POST /v1/namespaces HTTP/1.1\r\nHost: {f.host}:{f.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection((f.host, f.port), timeout=10) as s:
        s.sendall(head + body[:10])
        time.sleep(0.5)
        f.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert f.proc.poll() is None, f"floe exited with a request in flight; stderr:\n{f.log_tail()}"
        # no new connections are served meanwhile
        try:
            r = requests.get(f.url + "/health", timeout=2)
            pytest.fail(f"floe answered a new request while shutting down: {describe(r)}")
        except requests.RequestException:
            pass
        s.sendall(body[10:])
        resp = read_raw_response(s, timeout=10)
    assert resp.status == 200, resp
    assert resp.json()["namespace"] == ["in_flight"]
    f.proc.wait(20)
    assert f.proc.returncode == 0, f.log_tail()


def test_shutdown_under_load(postgres, floe_factory):
    """Responses sent while shutting down are complete; the exit is clean."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()})
    f.create_namespace(["load"])
    stop = threading.Event()
    problems = []
    completed = [0]

    def client():
        s = requests.Session()
        while not stop.is_set():
            try:
                r = s.get(f.url + "/v1/namespaces/load", timeout=10)
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.01)
                continue
            except Exception as e:  # a truncated or garbled answer
                problems.append(repr(e))
                continue
            if r.status_code == 200:
                try:
                    assert r.json()["namespace"] == ["load"]
                    completed[0] += 1
                except Exception as e:
                    problems.append(f"bad 200 body {r.content!r}: {e!r}")
            elif r.status_code != 503:
                problems.append(describe(r))

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    assert wait_until(lambda: completed[0] >= 4, 20), "no answer before the stop"
    code = f.stop(signal.SIGTERM, timeout=20)
    stop.set()
    for t in threads:
        t.join(20)
    assert code == 0, f.log_tail()
    assert completed[0] > 0
    assert not problems, problems[:5]


def test_sigterm_under_keepalive_commit_load_exits_0_in_bounded_time(postgres, floe_factory):
    """Many keep-alive connections busy with commits and reads at SIGTERM:
    floe exits 0 within its grace time, never aborts, and every request it
    took is answered in full."""
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database()},
                     args=[])
    f.create_namespace(["ka"])
    for i in range(3):
        r = f.post("/v1/namespaces/ka/tables", json={"name": f"t{i}", "schema": {
            "type": "struct", "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}})
        assert r.status_code == 200, describe(r)
    stop = threading.Event()
    problems, answered = [], [0]
    lock = threading.Lock()

    def client(i):
        s = requests.Session()
        n = 0
        while not stop.is_set():
            n += 1
            try:
                if i % 2:
                    r = s.post(f.url + f"/v1/namespaces/ka/tables/t{i % 3}", json={
                        "requirements": [], "updates": [
                            {"action": "set-properties", "updates": {f"c{i}": str(n)}}]}, timeout=40)
                else:
                    r = s.get(f.url + f"/v1/namespaces/ka/tables/t{i % 3}", timeout=40)
            except requests.ConnectionError as e:
                if "refused" not in repr(e).lower():
                    with lock:
                        problems.append(f"dropped: {e!r}")
                time.sleep(0.05)
                continue
            except Exception as e:  # a truncated or garbled answer, a timeout
                with lock:
                    problems.append(repr(e))
                continue
            if r.status_code == 200:
                try:
                    r.json()["metadata"]
                except Exception as e:
                    with lock:
                        problems.append(f"bad 200 body: {e!r}")
                with lock:
                    answered[0] += 1
            elif r.status_code == 503:
                if not r.headers.get("Retry-After", "").isdigit():
                    with lock:
                        problems.append(f"503 without Retry-After: {describe(r)}")
            else:
                with lock:
                    problems.append(describe(r))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(48)]
    for t in threads:
        t.start()
    try:
        # Steady load first: every client connected and answered at least
        # once (a connection still in the listen backlog when the socket
        # closes is reset by the kernel).
        time.sleep(2.0)
        t0 = time.monotonic()
        code = f.stop(signal.SIGTERM, timeout=45)
        elapsed = time.monotonic() - t0
    finally:
        stop.set()
        for t in threads:
            t.join(45)
    log = f.log()
    assert code == 0, f"exit {code} after SIGTERM under load; stderr:\n{f.log_tail()}"
    assert elapsed < 35, f"took {elapsed:.1f} s to stop"
    assert not CRASH_SIGNS.search(log), f.log_tail()
    assert answered[0] > 0
    assert not problems, problems[:5]


def test_sigterm_with_commits_stuck_and_queued_answers_each_and_exits_0(postgres, floe_factory):
    """A commit waiting on a row lock and commits queued behind it at
    SIGTERM: the queued ones are answered 503 when the grace time ends (not
    run, not dropped), the stuck one when its lock timeout fires; floe
    never stops libmicrohttpd with a suspended connection (which aborts)."""
    import psycopg
    url = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": url},
                     args=["--commit-threads=1", "--db-lock-timeout-ms=6000",
                           "--shutdown-grace-seconds=2"])
    f.create_namespace(["stuck"])
    r = f.post("/v1/namespaces/stuck/tables", json={"name": "t", "schema": {
        "type": "struct", "schema-id": 0,
        "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}})
    assert r.status_code == 200, describe(r)

    def commit(i):
        return requests.post(f.url + "/v1/namespaces/stuck/tables/t", json={
            "requirements": [], "updates": [
                {"action": "set-properties", "updates": {f"k{i}": "v"}}]}, timeout=60)

    lock = psycopg.connect(url)
    try:
        lock.execute("SELECT id FROM tables WHERE name = 't' FOR UPDATE")
        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            running = ex.submit(commit, 0)
            # The first commit waits on the row lock; the next two wait in
            # the commit queue behind it (one commit thread).
            with psycopg.connect(url, autocommit=True) as watch:
                assert wait_until(lambda: watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'floe' "
                    "AND wait_event_type = 'Lock'").fetchone()[0] == 1, 20)
            queued = [ex.submit(commit, i) for i in (1, 2)]
            assert wait_until(lambda: 'floe_queue_depth{queue="commit"} 2' in requests.get(
                f.url + "/metrics", timeout=10).text, 20)
            t0 = time.monotonic()
            code = f.stop(signal.SIGTERM, timeout=30)
            elapsed = time.monotonic() - t0
            answers = [running.result(30)] + [q.result(30) for q in queued]
    finally:
        lock.rollback()
        lock.close()
    assert code == 0, f"exit {code}; stderr:\n{f.log_tail()}"
    assert elapsed < 15, f"took {elapsed:.1f} s to stop"
    for r in answers:
        assert_error(r, 503, "ServiceUnavailableException")
        assert r.headers.get("Retry-After", "").isdigit(), dict(r.headers)
    assert "shutting down" in answers[1].json()["error"]["message"], describe(answers[1])
    assert not CRASH_SIGNS.search(f.log()), f.log_tail()


# ---------------------------------------------------------------- database outage


def test_database_restart(dedicated_postgres, floe_factory):
    pg = dedicated_postgres
    f = floe_factory(env={"FLOE_DATABASE_URL": pg.new_database(), "FLOE_THREADS": "2"})
    f.create_namespace(["before_outage"], {"k": "v"})
    assert f.get("/ready").status_code == 200

    pg.stop("fast")
    try:
        # /ready answers from the database watch, which checks every 250 ms:
        # it says so within a second.
        assert wait_until(lambda: f.get("/ready").status_code == 503, 2), "/ready still 200"
        calls = [
            ("GET", "/ready", None),
            ("GET", "/v1/namespaces", None),
            ("GET", "/v1/namespaces/before_outage", None),
            ("POST", "/v1/namespaces", {"namespace": ["during_outage"]}),
            ("POST", "/v1/namespaces/before_outage/properties", {"updates": {"k": "w"}}),
            ("DELETE", "/v1/namespaces/before_outage", None),
            ("GET", "/ready", None),
            ("GET", "/v1/warehouse/namespaces", None),
        ]
        for method, path, body in calls:
            t0 = time.monotonic()
            try:
                r = requests.request(method, f.url + path, json=body, timeout=10)
            except requests.Timeout:
                pytest.fail(f"{method} {path} not answered within 10 s while PostgreSQL is down")
            assert time.monotonic() - t0 < 10
            assert_error(r, 503, "ServiceUnavailableException")
            assert r.headers.get("Retry-After", "").strip().isdigit(), \
                f"503 without a Retry-After (seconds): {dict(r.headers)}"

        r = requests.head(f.url + "/v1/namespaces/before_outage", timeout=10)
        assert r.status_code == 503 and r.content == b"", describe(r)
        assert r.headers.get("Retry-After") == "1", dict(r.headers)

        def call(i):
            return requests.get(f.url + "/v1/namespaces", timeout=10).status_code
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            assert set(ex.map(call, range(16))) == {503}

        # liveness does not depend on the database
        assert requests.get(f.url + "/health", timeout=10).status_code == 200
        assert f.proc.poll() is None, f"floe died while PostgreSQL was down:\n{f.log_tail()}"
    finally:
        pg.start()

    statuses = []

    def recovered():
        ok = 0
        for path in ("/ready", "/v1/namespaces", "/v1/namespaces/before_outage"):
            try:
                r = requests.get(f.url + path, timeout=10)
            except requests.RequestException as e:
                statuses.append(repr(e))
                return False
            statuses.append(r.status_code)
            ok += r.status_code == 200
        return ok == 3

    assert wait_until(recovered, 30, 0.5), f"not recovered in 30 s: {statuses[-12:]}\n{f.log_tail()}"
    bad = [s for s in statuses if s not in (200, 503)]
    assert not bad, f"answers other than 200/503 while recovering: {bad}"
    # every worker's connection works again
    for _ in range(20):
        r = f.get("/v1/namespaces/before_outage")
        assert r.status_code == 200, describe(r)
        assert user_properties(r.json()["properties"]) == {"k": "v"}, "a request during the outage changed data"
    assert ["during_outage"] not in f.list_namespaces()
    f.create_namespace(["after_outage"])
    assert f.proc.poll() is None
    assert f.stop() == 0, f.log_tail()


# ---------------------------------------------------------------- replicas


@pytest.mark.parametrize("n", [2, 3])
def test_daemons_started_together_share_one_fresh_database(postgres, floe_factory, n):
    url = postgres.new_database()
    daemons = [floe_factory(env={"FLOE_DATABASE_URL": url}, ready=False) for _ in range(n)]
    for d in daemons:
        d.wait_ready(30)
    for i, d in enumerate(daemons):
        d.create_namespace([f"from_{i}"], {"by": str(i)})
    expected = [[f"from_{i}"] for i in range(n)]
    for d in daemons:
        assert d.list_namespaces() == expected
        for i in range(n):
            assert user_properties(assert_ok_json(d.get(f"/v1/namespaces/from_{i}"))["properties"]) == {"by": str(i)}
    r = daemons[-1].post("/v1/namespaces", json={"namespace": ["from_0"]})
    assert_error(r, 409, "AlreadyExistsException")
    for d in daemons:
        assert d.stop() == 0, d.log_tail()


# ---------------------------------------------------------------- embedded PostgreSQL


@pytest.fixture
def embedded_workdir():
    """A world-traversable directory under /tmp; kills a leftover postgres at the end."""
    d = make_shared_tmpdir("floe-it-embedded-")
    yield d
    pidfile = d / "data" / "pg" / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().splitlines()[0])
        if pid_alive(pid) and "postgres" in Path(f"/proc/{pid}/comm").read_text():
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass
    shutil.rmtree(d, ignore_errors=True)


def postmaster_pid(data_dir: Path):
    try:
        return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def listening_tcp_inodes():
    inodes = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as fh:
                next(fh)
                for line in fh:
                    parts = line.split()
                    if parts[3] == "0A":  # LISTEN
                        inodes.add(parts[9])
        except FileNotFoundError:
            pass
    return inodes


def socket_inodes(pid):
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", link)
        if m:
            out.add(m.group(1))
    return out


def start_embedded(floe_factory, workdir, args=(), env=None):
    env = dict(env or {})
    env["FLOE_DATA_DIR"] = str(workdir / "data")
    return floe_factory(args=args, env=env, workdir=workdir, ready_timeout=EMBEDDED_READY_TIMEOUT)


def check_postgres_child(f, data_dir: Path, expect_uid=None):
    pgpid = postmaster_pid(data_dir)
    assert pgpid, f"no {data_dir}/pg/postmaster.pid while floe runs; stderr:\n{f.log_tail()}"
    assert pid_alive(pgpid)
    assert is_descendant(pgpid, f.pid), f"postgres {pgpid} is not a child of floe {f.pid}"
    if IS_ROOT:
        uid = int(proc_status(pgpid)["Uid"].split()[0])
        assert uid != 0, "the embedded postgres runs as root"
        if expect_uid is not None:
            assert uid == expect_uid, f"postgres runs as uid {uid}, expected {expect_uid}"
    # only a Unix socket in <data dir>/run; no TCP listener
    assert not (socket_inodes(pgpid) & listening_tcp_inodes()), "the embedded postgres listens on TCP"
    run = data_dir / "run"
    sockets = [p for p in run.iterdir() if stat.S_ISSOCK(p.lstat().st_mode)] if run.is_dir() else []
    assert sockets, f"no Unix socket in {run}"
    return pgpid


def test_embedded_lifecycle(embedded_workdir, floe_factory):
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    assert "listening on" in f.log()
    assert (data / "pg" / "PG_VERSION").is_file(), "initdb did not run in <data dir>/pg"
    pgpid = check_postgres_child(f, data)
    if IS_ROOT:
        expected = pwd.getpwnam("postgres").pw_uid
        assert int(proc_status(pgpid)["Uid"].split()[0]) == expected
    pg_version_mtime = (data / "pg" / "PG_VERSION").stat().st_mtime_ns

    f.create_namespace(["persist"], {"k": "v"})
    f.create_namespace(["persist", "child"])

    code = f.stop(signal.SIGTERM, timeout=30)
    assert code == 0, f"exit {code}; stderr:\n{f.log_tail()}"
    assert wait_until(lambda: not pid_alive(pgpid), 10), "the postgres child outlived floe"
    assert not port_open(f.host, f.port)

    # second start: no new initdb, data still there; stopped with SIGINT
    g = start_embedded(floe_factory, embedded_workdir)
    assert (data / "pg" / "PG_VERSION").stat().st_mtime_ns == pg_version_mtime, "initdb ran again"
    assert user_properties(assert_ok_json(g.get("/v1/namespaces/persist"))["properties"]) == {"k": "v"}
    assert g.list_namespaces(parent=["persist"]) == [["persist", "child"]]
    pgpid2 = check_postgres_child(g, data)
    code = g.stop(signal.SIGINT, timeout=30)
    assert code == 0, f"exit {code} after SIGINT; stderr:\n{g.log_tail()}"
    assert wait_until(lambda: not pid_alive(pgpid2), 10), "the postgres child outlived floe"


def test_embedded_postgres_killed(embedded_workdir, floe_factory):
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    f.create_namespace(["survivor"])
    pgpid = check_postgres_child(f, data)
    log_before = len(f.log())
    os.kill(pgpid, signal.SIGKILL)
    try:
        f.proc.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"floe still runs 15 s after its postgres died; stderr:\n{f.log_tail()}")
    assert f.proc.returncode != 0, "floe exited 0 after its postgres was killed"
    after = f.log()[log_before:]
    assert re.search(r"postgres", after, re.I), f"no log line about postgres after the kill:\n{after}"

    # the next start recovers the crashed cluster
    g = start_embedded(floe_factory, embedded_workdir)
    assert_ok_json(g.get("/v1/namespaces/survivor"))
    assert g.stop() == 0, g.log_tail()


def cluster_pids(master: int) -> list[int]:
    pids = [master]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(proc_status(int(d)).get("PPid", "0")) == master:
                    pids.append(int(d))
            except (OSError, ValueError):
                pass
    return pids


def process_start(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks."""
    stat_line = Path(f"/proc/{pid}/stat").read_text()
    return int(stat_line[stat_line.rindex(")") + 2:].split()[19])


def in_use_message(data: Path, pid: int, tail: str) -> str:
    return (f"floe: the data directory {data} is in use by another floe (pid {pid}){tail}; "
            "stop that floe first, or give this one its own --data-dir\n")


def refused_start(floe_factory, data: Path, args=(), env=None) -> tuple[int, str]:
    """A floe started on data that must exit at once: its status and stderr."""
    g = floe_factory(args=args, env={"FLOE_DATA_DIR": str(data), **(env or {})}, ready=False)
    try:
        code = g.proc.wait(30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a second floe on {data} did not exit; stderr:\n{g.log_tail()}")
    assert not port_open(g.host, g.port), "the refused floe bound its port"
    return code, g.log()


def test_a_second_floe_on_an_embedded_data_dir_is_refused(embedded_workdir, floe_factory, postgres):
    """The README's advice on a busy port, followed beside a running floe:
    the second floe exits with status 2 naming the first, before it touches
    PostgreSQL or its port; the first keeps its PostgreSQL and serves on."""
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    pgpid = check_postgres_child(f, data)
    assert (data / "floe.pid").read_text() == f"{f.pid}\n{process_start(f.pid)}\n"
    taken = in_use_message(data, f.pid, ", which runs its embedded PostgreSQL there")
    # The same command again, on another port; then as a replica on a database.
    for args in ([], [f"--database={postgres.new_database()}"]):
        code, err = refused_start(floe_factory, data, args=args, env={"FLOE_AUTH": "none"})
        assert (code, err[-len(taken):]) == (2, taken), err
        assert "started PostgreSQL" not in err and "left over" not in err, err
    assert pid_alive(pgpid) and postmaster_pid(data) == pgpid, "the first floe's PostgreSQL was touched"
    assert "left over" not in f.log(), f.log_tail()
    assert f.get("/v1/config").status_code == 200
    f.create_namespace(["still_serving"])
    t = TableHandle(f, ["still_serving"], "t")
    t.create()
    sid = t.add_snapshot()
    assert t.head() == sid
    assert f.stop() == 0, f.log_tail()
    assert (data / "floe.pid").read_text() == "", "a clean stop leaves the lock file naming no floe"


def test_replicas_on_a_database_share_a_data_dir_an_embedded_floe_does_not(postgres, floe_factory,
                                                                          tmp_path):
    """Replicas with --database may share a data directory (its keys and
    warehouse); a floe with an embedded PostgreSQL needs it alone."""
    data = tmp_path / "shared"
    db = postgres.new_database()
    a = floe_factory(env={"FLOE_DATABASE_URL": db, "FLOE_DATA_DIR": str(data)})
    b = floe_factory(env={"FLOE_DATABASE_URL": db, "FLOE_DATA_DIR": str(data)})
    a.create_namespace(["from_a"])
    assert b.list_namespaces() == [["from_a"]]
    code, err = refused_start(floe_factory, data, env={"FLOE_AUTH": "none"})
    m = re.search(r"floe: the data directory (.*) is in use by another floe \(pid (\d+)\)(.*); "
                  r"stop that floe first, or give this one its own --data-dir\n$", err)
    assert code == 2 and m, err
    assert (m.group(1), int(m.group(2)) in (a.pid, b.pid), m.group(3)) == (
        str(data), True, ", and an embedded PostgreSQL needs it alone")
    assert not (data / "pg").exists(), "the refused floe made a cluster"
    assert a.stop() == 0 and b.stop() == 0


def test_floe_audit_reads_a_running_floe_by_a_relative_data_dir(embedded_workdir, floe_factory):
    """`floe audit verify --data-dir=floe-data` as the README runs it, from
    the directory that holds it, beside the running floe; and with
    FLOE_DATA_DIR=./floe-data for an export."""
    f = start_embedded(floe_factory, embedded_workdir)
    f.create_namespace(["audited"])
    links = assert_ok_json(f.get("/v1/audit-log/verify"))["links"]
    r = run_floe(["audit", "verify", "--data-dir=data"], cwd=embedded_workdir, timeout=60)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert (report["valid"], report["links"], r.stderr) == (True, links, "")
    r = run_floe(["audit", "export"], env={"FLOE_DATA_DIR": "./data/"}, cwd=embedded_workdir,
                 timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) > links and r.stderr == ""
    assert f.stop() == 0, f.log_tail()


def test_floe_audit_says_why_the_database_cannot_be_reached(tmp_path):
    """libpq's own reason, with the socket path it tried (made absolute)."""
    (tmp_path / "stopped").mkdir()
    r = run_floe(["audit", "verify", "--data-dir=stopped"], cwd=tmp_path)
    sock = tmp_path / "stopped" / "run" / ".s.PGSQL.5432"
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    assert r.stderr.startswith(
        "floe audit verify: cannot reach the database: connection to server on socket "
        f'"{sock}" failed: No such file or directory\n'), r.stderr
    r = run_floe(["audit", "export", "--data-dir=missing"], cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", "floe audit export: cannot use the data directory missing: No such file or directory\n")
    port = free_port()
    r = run_floe(["audit", "export", f"--database=postgresql://floe@127.0.0.1:{port}/floe"])
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    assert r.stderr.startswith(
        "floe audit export: cannot reach the database: connection to server at \"127.0.0.1\", "
        f"port {port} failed: Connection refused\n"), r.stderr


def test_kill_9_of_floe_takes_its_postgres_with_it(embedded_workdir, floe_factory):
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    f.create_namespace(["before_kill"])
    pids = cluster_pids(check_postgres_child(f, data))
    assert len(pids) > 1, "no backend processes under the postmaster"
    owner = f"{f.pid}\n{process_start(f.pid)}\n"
    assert (data / "floe.pid").read_text() == owner
    f.proc.send_signal(signal.SIGKILL)
    f.proc.wait(10)
    left = wait_until(lambda: not [p for p in pids if pid_alive(p)], 10)
    assert left, f"postgres processes outlived floe: {[p for p in pids if pid_alive(p)]}"
    # and the next start takes over the dead floe's lock and serves the same data
    assert (data / "floe.pid").read_text() == owner, "the dead floe's lock file is not as it left it"
    g = start_embedded(floe_factory, embedded_workdir)
    assert (data / "floe.pid").read_text() == f"{g.pid}\n{process_start(g.pid)}\n"
    assert_ok_json(g.get("/v1/namespaces/before_kill"))
    assert g.stop() == 0, g.log_tail()


def test_leftover_embedded_postgres_is_stopped_on_the_next_start(embedded_workdir, floe_factory, pg_bin_dir):
    """A PostgreSQL still running on the embedded data directory (left by a
    floe that crashed) is found, stopped and replaced by the next start."""
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    f.create_namespace(["kept"])
    assert f.stop() == 0, f.log_tail()
    # Start the cluster the way floe does, but not as floe's child.
    argv = [str(Path(pg_bin_dir) / "pg_ctl"), "-D", str(data / "pg"), "-l", str(data / "pg" / "leftover.log"),
            "-w", "-t", "60", "-o", f"-k {data / 'run'} -p 5432 -c listen_addresses=", "start"]
    if IS_ROOT:
        argv = ["runuser", "-u", "postgres", "--"] + argv
    res = subprocess.run(argv, capture_output=True, text=True, timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    leftover = postmaster_pid(data)
    try:
        assert leftover and pid_alive(leftover)
        g = start_embedded(floe_factory, embedded_workdir)
        assert wait_until(lambda: not pid_alive(leftover), 5), "the left-over postgres still runs"
        assert re.search(r"left over", g.log()), g.log_tail()
        assert_ok_json(g.get("/v1/namespaces/kept"))
        check_postgres_child(g, data)
        assert g.stop() == 0, g.log_tail()
    finally:
        if leftover and pid_alive(leftover):
            os.kill(leftover, signal.SIGKILL)


# A process named floe that runs a PostgreSQL as its child and waits: a
# floe from before the data directory's lock.
FLOE_NAMED_PARENT = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(15, b"floe", 0, 0, 0)  # PR_SET_NAME
user = os.environ.get("PG_RUN_AS") or None
subprocess.Popen(sys.argv[1:], user=user, stdin=subprocess.DEVNULL).wait()
"""


def test_a_postgres_whose_floe_still_runs_is_not_stopped(embedded_workdir, floe_factory, pg_bin_dir):
    """A cluster that is the child of a live floe is no leftover, even to a
    floe that holds the data directory's lock: that start fails and the
    cluster runs on."""
    data = embedded_workdir / "data"
    f = start_embedded(floe_factory, embedded_workdir)
    assert f.stop() == 0, f.log_tail()
    argv = [str(Path(pg_bin_dir) / "postgres"), "-D", str(data / "pg"), "-k", str(data / "run"),
            "-p", "5432", "-c", "listen_addresses="]
    env = clean_env(PG_RUN_AS="postgres" if IS_ROOT else "")
    holder = subprocess.Popen([sys.executable, "-c", FLOE_NAMED_PARENT, *argv], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    master = None
    try:
        assert wait_until(lambda: (data / "run" / ".s.PGSQL.5432").exists(), 60), "no postgres"
        master = postmaster_pid(data)
        assert master and int(proc_status(master)["PPid"]) == holder.pid
        assert Path(f"/proc/{holder.pid}/comm").read_text() == "floe\n"
        g = floe_factory(env={"FLOE_DATA_DIR": str(data)}, workdir=embedded_workdir, ready=False)
        try:
            code = g.proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"floe took over a live floe's PostgreSQL; stderr:\n{g.log_tail()}")
        assert code == 1, g.log_tail()
        assert (f"the PostgreSQL (pid {master}) on {data / 'pg'} is run by another floe "
                f"(pid {holder.pid}), which still runs; stop that floe first, or give this one "
                "its own --data-dir") in g.log(), g.log_tail()
        assert pid_alive(master), "the live floe's PostgreSQL was stopped"
    finally:
        if master and pid_alive(master):
            os.kill(master, signal.SIGQUIT)
            wait_until(lambda: not pid_alive(master), 15)
        holder.kill()
        holder.wait(10)


def test_embedded_with_explicit_pg_bin_dir(embedded_workdir, floe_factory, pg_bin_dir):
    f = start_embedded(floe_factory, embedded_workdir, args=[f"--pg-bin-dir={pg_bin_dir}"])
    f.create_namespace(["x"])
    assert f.stop() == 0, f.log_tail()


@pytest.mark.skipif(not IS_ROOT, reason="--pg-user applies when floe runs as root")
def test_embedded_pg_user(embedded_workdir, floe_factory):
    nobody = pwd.getpwnam("nobody").pw_uid
    f = start_embedded(floe_factory, embedded_workdir, env={"FLOE_PG_USER": "nobody"})
    check_postgres_child(f, embedded_workdir / "data", expect_uid=nobody)
    assert f.stop() == 0, f.log_tail()


def test_embedded_bad_pg_bin_dir(embedded_workdir, floe_factory):
    f = floe_factory(args=["--pg-bin-dir=/nonexistent/pg/bin"],
                     env={"FLOE_DATA_DIR": str(embedded_workdir / "data")},
                     workdir=embedded_workdir, ready=False)
    try:
        f.proc.wait(30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"floe with a missing --pg-bin-dir did not exit; stderr:\n{f.log_tail()}")
    assert f.proc.returncode != 0
    assert re.search(r"pg-bin-dir|PG_BIN_DIR|initdb|/nonexistent/pg/bin", f.log()), f.log_tail()
