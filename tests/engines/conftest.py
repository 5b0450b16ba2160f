"""Fixtures for floe's engine tests: DuckDB, Trino and Apache Iceberg's REST
Compatibility Kit, each a real client of the real floe daemon.

* ``postgres`` (session): a private PostgreSQL cluster.
* ``floe`` (session): one floe daemon on a fresh database, its warehouse a
  local ``file://`` directory that the engines read and write directly.
* ``pyiceberg`` (session): a PyIceberg REST catalog on that daemon, to check
  what an engine wrote (and to write what an engine then reads).
* ``ns`` (function): a fresh namespace name for one test (not created).
* ``trino`` (session, tests/engines/trino_server.py): one Trino server for the suite.
* ``spark`` (session): Spark with the Iceberg runtime, as in tests/spark.
* ``provider`` (session, tests/integration/oidc_issuer.py): a real OpenID
  provider on loopback; ``issuer_floe`` (session): a second floe daemon
  that accepts its tokens beside its own, with the floe roles its claims
  name (``reader``, ``writer``). Trino's catalogs ``oidc``,
  ``oidc_reader`` and ``oidc_credential`` are on it.

The PostgreSQL and floe helpers are those of tests/integration, imported
here under the name ``floe_integration``.

Environment: ``FLOE_BIN`` (default <repo>/build/server/floe),
``FLOE_ENGINES_CACHE`` (where scripts/engine-deps.sh put Trino and the
kit; default ``${XDG_CACHE_HOME:-~/.cache}/floe``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTEGRATION = REPO / "tests" / "integration"

for p in (HERE, INTEGRATION):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def _load(name: str, path: Path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


it = _load("floe_integration", INTEGRATION / "conftest.py")

from oidc_issuer import (READER, WRITER, credential, provider, provider_script,  # noqa: E402,F401
                         provider_workdir, serve_issuer_floe)


def cache_dir() -> Path:
    """Where scripts/engine-deps.sh keeps the downloads (outside the clone)."""
    explicit = os.environ.get("FLOE_ENGINES_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "floe"


# --------------------------------------------------------------------------
# PostgreSQL and floe


@pytest.fixture(scope="session")
def postgres():
    server = it.PostgresServer(it.find_pg_bin_dir(), "engines").init().start()
    yield server
    server.destroy()


_running_floe = []


@pytest.fixture(scope="session")
def floe(postgres):
    """One floe daemon for the whole suite, configured as a user would: its
    defaults, a database, and a file:// warehouse under its data directory."""
    yield from it.suite_floe(postgres, _running_floe)


_running_issuer_floe = []


@pytest.fixture(scope="session")
def issuer_floe(postgres, provider):
    """A floe daemon that also accepts the OpenID provider's tokens; the
    floe roles its claims name exist, with their grants."""
    yield from serve_issuer_floe(it.suite_floe, postgres, provider, _running_issuer_floe)


@pytest.fixture(autouse=True)
def _floe_log_mark(request):
    """Remember where floe's log stood when the test started (see the report hook)."""
    request.node._floe_log_offset = len(_running_floe[0].log()) if _running_floe else 0
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries floe's log lines written during the test:
    every REST exchange with its status."""
    outcome = yield
    report = outcome.get_result()
    it.attach_floe_log(item, call, report, _running_floe)


@pytest.fixture(scope="session")
def pyiceberg(floe):
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("floe", uri=floe.url, credential=floe.credential)


@pytest.fixture
def ns(request):
    """A fresh namespace name for one test (the test creates it, the way its
    engine does)."""
    ns.counter = getattr(ns, "counter", 0) + 1
    name = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[-40:]
    return f"n{ns.counter}_{name}"


# --------------------------------------------------------------------------
# Spark (for the branch Trino reads): the Spark suite's session settings


@pytest.fixture(scope="session")
def spark(floe, tmp_path_factory):
    spark_conftest = _load("floe_spark_conftest", REPO / "tests" / "spark" / "conftest.py")
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    local_dir = tmp_path_factory.mktemp("spark")
    builder = SparkSession.builder
    for k, v in spark_conftest.spark_conf(floe.url, local_dir, floe.credential).items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# --------------------------------------------------------------------------
# Trino


@pytest.fixture(scope="session")
def trino(floe, issuer_floe, provider, tmp_path_factory):
    """One Trino server for the suite, its catalog ``floe`` on this floe
    (floe's own token endpoint), and on issuer_floe ``oidc`` and
    ``oidc_reader`` with tokens of the OpenID provider's writer and reader
    clients, and ``oidc_credential`` with the writer's credential at the
    provider's token endpoint (see tests/engines/test_trino_oidc.py)."""
    from trino_server import TrinoServer

    server = TrinoServer(cache_dir(), tmp_path_factory.mktemp("trino"), floe.url, it.free_port(),
                         credential=floe.credential,
                         catalogs={
                             "oidc": (issuer_floe.url, {"token": provider.token(WRITER, post=True)}),
                             "oidc_reader": (issuer_floe.url, {"token": provider.token(READER, post=True)}),
                             "oidc_credential": (issuer_floe.url, {
                                 "credential": credential(WRITER),
                                 "server-uri": provider.token_endpoint}),
                         })
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()
