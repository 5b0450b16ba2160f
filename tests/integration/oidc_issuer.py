"""The real OpenID provider of floe's external-issuer tests, and a floe that
trusts it: shared by tests/integration, tests/engines and tests/spark.

The provider is the OpenID-certified ``oidc-provider`` package (tests/oidc,
installed by scripts/oidc-deps.sh) on a loopback port; its clients are the
rows of tests/oidc/provider.mjs, each with the secret ``<id>-secret``.

* ``Provider``: one provider process, its key file, its tokens.
* fixtures ``provider_script``, ``provider_workdir`` and ``provider``
  (session): import them into a test module or conftest.
* ``issuer_env(provider)``: the settings of a floe that accepts the
  provider's tokens beside its own (roles from the ``roles`` claim).
* ``grant_issuer_roles(f)``: makes, through the management API of an
  authenticated floe, the issuer-grantable floe roles the engine clients'
  claims name:
  ``reader`` (read the catalog) and ``writer`` (read, create, write, drop).
* ``serve_issuer_floe(suite_floe, postgres, provider, running)``: a
  fixture's generator of a floe that accepts the provider's tokens, its
  roles granted.
* ``commit_principals(f, namespace, table)``: who made each of a table's
  commits, from floe's commit_log.
"""

from __future__ import annotations

import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30

# The clients of provider.mjs the engines use (client_secret_post).
WRITER = "floe-engine-writer"
READER = "floe-engine-reader"

READ = ["NAMESPACE_READ", "TABLE_READ"]
ROLE_GRANTS = {
    "reader": READ,
    "writer": READ + ["NAMESPACE_CREATE", "NAMESPACE_DROP", "NAMESPACE_UPDATE_PROPERTIES",
                      "TABLE_CREATE", "TABLE_DROP", "TABLE_UPDATE_PROPERTIES", "TABLE_WRITE",
                      "TABLE_WRITE_MAIN"],
}


def credential(client: str) -> str:
    """CLIENT_ID:SECRET of one of the provider's clients."""
    return f"{client}:{client}-secret"


class Provider:
    """One oidc-provider process on a loopback port, with its key file."""

    def __init__(self, script: Path, workdir: Path, port: int, keys: Path | None = None):
        self.script = script
        self.port = port
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.token_endpoint = f"{self.issuer}/token"
        self.keys = keys or workdir / f"keys-{self.port}.json"
        self.log = workdir / f"provider-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self.start_seconds = 0.0

    def start(self, rotate: bool = False):
        args = ["node", str(self.script), "--port", str(self.port),
                "--keys", str(self.keys)] + (["--rotate"] if rotate else [])
        began = time.monotonic()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL, cwd=self.script.parent)
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("ready "):
            self.stop()
            pytest.fail(f"the OpenID provider did not start within {START_TIMEOUT} s: "
                        f"{self.log.read_text(errors='replace')[-2000:]}")
        assert line.split()[1] == self.issuer
        self.start_seconds = time.monotonic() - began
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def rotate(self):
        """Restarts on the same port with a new key pair in front."""
        self.stop()
        self.start(rotate=True)

    def token(self, client: str, post: bool = False, scope: str | None = None) -> str:
        """An access token by client credentials: the secret in an
        Authorization: Basic header, or with ``post`` in the form body."""
        data = {"grant_type": "client_credentials"}
        if scope is not None:
            data["scope"] = scope
        auth = None
        if post:
            data.update(client_id=client, client_secret=f"{client}-secret")
        else:
            auth = (client, f"{client}-secret")
        r = requests.post(self.token_endpoint, auth=auth, data=data, timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["token_type"].lower() == "bearer"
        return body["access_token"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_provider(script: Path, workdir: Path) -> Provider:
    """A provider on a free loopback port, started."""
    return Provider(script, workdir, _free_port()).start()


@pytest.fixture(scope="session")
def provider_script() -> Path:
    """The provider's script, beside the modules scripts/oidc-deps.sh
    installed (cached)."""
    r = subprocess.run([str(REPO / "scripts" / "oidc-deps.sh")], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"scripts/oidc-deps.sh failed: {r.stderr}")
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def provider_workdir():
    d = Path(tempfile.mkdtemp(prefix="floe-oidc-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def provider(provider_script, provider_workdir):
    p = start_provider(provider_script, provider_workdir)
    yield p
    p.stop()


def issuer_env(p: Provider) -> dict:
    """floe's settings to accept p's tokens (audience floe, roles claim)."""
    return {"FLOE_OIDC_ISSUER": p.issuer, "FLOE_OIDC_ROLES_CLAIM": "roles"}


def grant_issuer_roles(f) -> None:
    """The floe roles the provider's claims name, with their grants on the
    catalog, made by f's admin session and marked issuer-grantable (an
    issuer names roles; it does not make them, and grants only those marked
    as its to grant)."""
    for role, privileges in ROLE_GRANTS.items():
        r = f.post("/management/v1/roles", json={"name": role, "issuer-grantable": True})
        assert r.status_code == 201, r.text
        for p in privileges:
            r = f.post(f"/management/v1/roles/{role}/grants",
                       json={"privilege": p, "on": {"kind": "catalog"}})
            assert r.status_code == 201, r.text


def serve_issuer_floe(suite_floe, postgres, p: Provider, running: list):
    """Yields one floe (tests/integration/conftest.py's suite_floe) that
    accepts p's tokens beside its own, with grant_issuer_roles done."""
    for f in suite_floe(postgres, running, env=issuer_env(p)):
        grant_issuer_roles(f)
        yield f


def commit_principals(f, namespace: str, table: str) -> list[str]:
    """The principal of each of a table's commits, oldest first."""
    import psycopg

    r = f.get(f"/v1/namespaces/{namespace}/tables/{table}")
    assert r.status_code == 200, r.text
    uuid = r.json()["metadata"]["table-uuid"]
    with psycopg.connect(f.env["FLOE_DATABASE_URL"], autocommit=True) as conn:
        rows = conn.execute("SELECT principal FROM commit_log WHERE table_uuid = %s ORDER BY id",
                            (uuid,)).fetchall()
    return [p for (p,) in rows]
