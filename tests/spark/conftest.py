"""Fixtures for floe's Spark engine tests.

Real Apache Spark in local mode (pyspark, with the Iceberg Spark runtime jar
that scripts/spark-deps.sh downloads) talks to the real floe daemon over the
Iceberg REST protocol; floe keeps its state in a real PostgreSQL server and
its warehouse in a local directory (file://), which Spark reads and writes
directly.

* ``postgres`` (session): a private PostgreSQL cluster.
* ``floe`` (session): one floe daemon on a fresh database.
* ``spark`` (session): one SparkSession shared by every test, with the
  catalog ``floe`` (``spark.sql.catalog.floe.*``) pointing at that daemon.
* ``ns`` (function): a fresh namespace, ``floe.<ns>``, for one test.
* ``provider`` (session, tests/integration/oidc_issuer.py): a real OpenID
  provider on loopback; ``issuer_floe`` (session): a second floe daemon
  that accepts its tokens, with the floe roles its claims name.

The PostgreSQL and floe helpers are those of the integration tests
(tests/integration/conftest.py), imported here under the name
``floe_integration``.

Environment: ``FLOE_BIN`` (default <repo>/build/server/floe),
``SPARK_ICEBERG_JAR`` (default: the jar scripts/spark-deps.sh puts in
<repo>/.cache/spark-jars, or in ``SPARK_JARS_DIR``), ``SPARK_ICEBERG_AWS_JAR``
(Iceberg's AWS bundle; default: next to the runtime jar).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTEGRATION = REPO / "tests" / "integration"

# Keep in step with scripts/spark-deps.sh and requirements.txt.
SPARK_VERSION = "3.5"
SCALA_VERSION = "2.12"
ICEBERG_VERSION = os.environ.get("ICEBERG_VERSION", "1.10.1")
ICEBERG_JAR_NAME = f"iceberg-spark-runtime-{SPARK_VERSION}_{SCALA_VERSION}-{ICEBERG_VERSION}.jar"
AWS_BUNDLE_JAR_NAME = f"iceberg-aws-bundle-{ICEBERG_VERSION}.jar"

CATALOG = "floe"

# webhook.py of the integration tests, and the write-audit-publish example.
for p in (INTEGRATION, REPO / "examples" / "spark_wap"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def _load_integration_helpers():
    name = "floe_integration"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, INTEGRATION / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


it = _load_integration_helpers()


integration_module = it.integration_module

# Fixtures shared with the integration tests: webhook receivers that stop,
# and audit hooks that are deleted, at teardown.
webhooks = it.webhooks
hooks = it.hooks

from oidc_issuer import provider, provider_script, provider_workdir, serve_issuer_floe  # noqa: E402,F401


# --------------------------------------------------------------------------
# PostgreSQL and floe


@pytest.fixture(scope="session")
def postgres():
    server = it.PostgresServer(it.find_pg_bin_dir(), "spark").init().start()
    yield server
    server.destroy()


_running_floe = []


@pytest.fixture(scope="session")
def floe(postgres):
    """One floe daemon for the whole Spark suite (Spark's catalog points at it)."""
    yield from it.suite_floe(postgres, _running_floe)


_running_issuer_floe = []


@pytest.fixture(scope="session")
def issuer_floe(postgres, provider):
    """A floe daemon that also accepts the OpenID provider's tokens."""
    yield from serve_issuer_floe(it.suite_floe, postgres, provider, _running_issuer_floe)


@pytest.fixture(autouse=True)
def _floe_log_mark(request):
    """Remember where floe's log stood when the test started (see the report hook)."""
    # 0 when floe is not running yet: it starts for this test.
    request.node._floe_log_offset = len(_running_floe[0].log()) if _running_floe else 0
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries floe's log lines written during the test:
    every REST exchange with its status, and floe's own warnings and errors."""
    outcome = yield
    report = outcome.get_result()
    it.attach_floe_log(item, call, report, _running_floe)


class AccessLog:
    """floe's access log from a mark on: one line per request, with its status.

    A line reads ``... INFO  [access] POST /v1/namespaces/x/tables/t 403 812us principal=anonymous rid=...``.
    """

    LINE = re.compile(r"\[access\] (?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) ")

    def __init__(self, f):
        self.floe = f
        self.offset = len(f.log())

    def entries(self):
        time.sleep(0.2)  # let the last lines reach the file
        out = []
        for line in self.floe.log()[self.offset:].splitlines():
            m = self.LINE.search(line)
            if m:
                out.append((m["method"], m["path"], int(m["status"]), line))
        return out

    def find(self, method=None, path_re=None, status=None):
        return [e for e in self.entries()
                if (method is None or e[0] == method)
                and (path_re is None or re.search(path_re, e[1]))
                and (status is None or e[2] == status)]

    def text(self) -> str:
        return "\n".join(e[3] for e in self.entries())


@pytest.fixture
def access_log(floe):
    """access_log() -> AccessLog marking floe's log at this moment."""
    return lambda: AccessLog(floe)


# --------------------------------------------------------------------------
# Spark


def iceberg_jar() -> Path:
    path = os.environ.get("SPARK_ICEBERG_JAR")
    if path:
        jar = Path(path)
    else:
        jars_dir = Path(os.environ.get("SPARK_JARS_DIR") or REPO / ".cache" / "spark-jars")
        jar = jars_dir / ICEBERG_JAR_NAME
    if not jar.is_file():
        pytest.fail(f"{jar} not found: run scripts/spark-deps.sh first (or set SPARK_ICEBERG_JAR)")
    return jar


def aws_bundle_jar() -> Path:
    """Iceberg's AWS bundle (the AWS SDK S3FileIO needs), next to the runtime jar."""
    path = os.environ.get("SPARK_ICEBERG_AWS_JAR")
    jar = Path(path) if path else iceberg_jar().parent / AWS_BUNDLE_JAR_NAME
    if not jar.is_file():
        pytest.fail(f"{jar} not found: run scripts/spark-deps.sh first (or set SPARK_ICEBERG_AWS_JAR)")
    return jar


def catalog_conf(name: str, uri: str, credential: str | None = None,
                 server_uri: str | None = None) -> dict:
    """The Spark settings of an Iceberg REST catalog called ``name`` at ``uri``;
    with ``credential`` (CLIENT_ID:SECRET) Iceberg's client gets its token
    from floe's POST /v1/oauth/tokens, as a deployment's Spark does, or
    from ``server_uri`` (an external issuer's token endpoint)."""
    conf = {
        f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{name}.type": "rest",
        f"spark.sql.catalog.{name}.uri": uri,
    }
    if credential is not None:
        conf[f"spark.sql.catalog.{name}.credential"] = credential
        conf[f"spark.sql.catalog.{name}.oauth2-server-uri"] = server_uri or uri + "/v1/oauth/tokens"
    return conf


def spark_conf(floe_url: str, local_dir: Path, credential: str | None = None) -> dict:
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": "floe-spark-tests",
        "spark.jars": str(iceberg_jar()),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(local_dir / "spark-warehouse"),
        "spark.local.dir": str(local_dir / "spark-local"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={local_dir}",
    }
    conf.update(catalog_conf(CATALOG, floe_url, credential))
    return conf


@pytest.fixture(scope="session")
def spark(floe):
    """One local SparkSession for the suite, with the Iceberg catalog ``floe``."""
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.fail("no java on PATH and no JAVA_HOME: Spark 3.5 needs Java 17 (openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    local_dir = Path(tempfile.mkdtemp(prefix="floe-spark-"))
    builder = SparkSession.builder
    for k, v in spark_conf(floe.url, local_dir, floe.credential).items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    shutil.rmtree(local_dir, ignore_errors=True)


@pytest.fixture
def ns(spark, request):
    """A fresh namespace in the floe catalog, created with Spark SQL."""
    ns.counter = getattr(ns, "counter", 0) + 1
    name = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[-40:]
    name = f"n{ns.counter}_{name}"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{name}")
    return name


@pytest.fixture
def rest(floe):
    """rest(namespace, table) -> the integration tests' TableHandle (raw REST calls)."""
    return lambda namespace, table: it.TableHandle(floe, [namespace], table)


def table_dir(handle) -> Path:
    """A table's location (asked from floe through a TableHandle) as a local path."""
    loc = handle.metadata()["location"]
    assert loc.startswith("file:"), loc
    return Path(re.sub(r"^file:(//)?", "", loc))


# --------------------------------------------------------------------------
# the reference audit webhook (examples/auditor/auditor.py)

AUDITOR = REPO / "examples" / "auditor" / "auditor.py"


class Auditor:
    """examples/auditor/auditor.py as a subprocess, with an expectations file."""

    def __init__(self, workdir: Path, expectations: dict, secret: str):
        import json
        import subprocess

        import requests

        if not AUDITOR.is_file():
            pytest.fail(f"the reference auditor is missing: {AUDITOR}")
        self.port = it.free_port()
        self.url = f"http://127.0.0.1:{self.port}/audit"
        exp = workdir / "expectations.json"
        exp.write_text(json.dumps(expectations, indent=2))
        self.log_path = workdir / "auditor.log"
        self._log = open(self.log_path, "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "AUDITOR_"))}
        env["FLOE_AUDIT_SECRET"] = secret
        self.proc = subprocess.Popen(
            [sys.executable, str(AUDITOR), "--listen", f"127.0.0.1:{self.port}", "--expectations", str(exp)],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"the auditor exited with {self.proc.returncode}:\n{self.log()}")
            try:
                requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"the auditor did not come up within 30 s:\n{self.log()}")
                time.sleep(0.1)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self):
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


@pytest.fixture
def reference_auditor(tmp_path):
    """reference_auditor(expectations, secret) -> a running Auditor (stopped at teardown)."""
    started = []

    def start(expectations: dict, secret: str) -> Auditor:
        a = Auditor(tmp_path, expectations, secret)
        started.append(a)
        return a

    yield start
    for a in started:
        a.stop()
