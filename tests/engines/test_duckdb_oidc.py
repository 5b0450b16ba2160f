"""DuckDB authenticating against the external OpenID issuer: a secret of
DuckDB's iceberg extension with the provider's client id and secret and
OAUTH2_SERVER_URI the provider's token endpoint (tests/oidc, started by
the ``provider`` fixture), the catalog attached on a floe that accepts
the provider's tokens (``issuer_floe``).

DuckDB asks for its default scope, PRINCIPAL_ROLE:ALL, which the provider
does not know and leaves out of the token, as RFC 6749 section 3.3
allows; floe takes an issuer's roles from its roles claim, not its scope.
The writer's commits are recorded as the provider's principal; the
reader reads and is refused a write (403).
"""

from __future__ import annotations

import re

import pytest

from oidc_issuer import READER, WRITER, commit_principals
from test_duckdb import new_connection, rows

duckdb = pytest.importorskip("duckdb")


def attach(issuer_floe, provider, client: str):
    """A DuckDB connection with issuer_floe attached as ``floe``, its token
    from the provider by client credentials."""
    c = new_connection()
    c.execute(f"CREATE SECRET provider (TYPE iceberg, CLIENT_ID '{client}', "
              f"CLIENT_SECRET '{client}-secret', OAUTH2_SERVER_URI '{provider.token_endpoint}')")
    c.execute(f"ATTACH 'warehouse' AS floe (TYPE iceberg, ENDPOINT '{issuer_floe.url}', "
              "SECRET provider)")
    return c


def test_duckdb_with_the_providers_token_writes_and_reads(issuer_floe, provider, ns):
    f = issuer_floe
    with attach(f, provider, WRITER) as con:
        con.execute(f"CREATE SCHEMA floe.{ns}")
        con.execute(f"CREATE TABLE floe.{ns}.orders (id INTEGER, customer VARCHAR)")
        con.execute(f"INSERT INTO floe.{ns}.orders VALUES (1, 'ada'), (2, 'bob')")
        assert rows(con, f"SELECT id, customer FROM floe.{ns}.orders ORDER BY id") == [
            (1, "ada"), (2, "bob")]
    principals = commit_principals(f, ns, "orders")
    assert principals and set(principals) == {WRITER}, principals
    lines = [l for l in f.log().splitlines() if f"[access] POST /v1/namespaces/{ns}/tables" in l]
    assert lines and all(f"principal={WRITER} " in l for l in lines), lines

    with attach(f, provider, READER) as con:
        assert rows(con, f"SELECT count(*) FROM floe.{ns}.orders") == [(2,)]
        with pytest.raises(duckdb.Error) as e:
            con.execute(f"INSERT INTO floe.{ns}.orders VALUES (3, 'cy')")
        assert "Forbidden_403" in str(e.value), e.value
    assert commit_principals(f, ns, "orders") == principals
    # DuckDB commits through POST /v1/transactions/commit: the writer's
    # commit and the reader's refusal, each under its principal.
    commits = re.findall(r"\[access\] POST /v1/transactions/commit (\d{3}) \S+ principal=(\S+) ",
                         f.log())
    assert ("204", WRITER) in commits or ("200", WRITER) in commits, commits
    assert ("403", READER) in commits, commits
