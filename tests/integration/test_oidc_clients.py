"""PyIceberg authenticating against the external OpenID issuer: a real
OpenID provider (oidc-provider, tests/oidc) gives the token, floe accepts
it. The provider's engine clients authenticate by client_secret_post, as
PyIceberg sends its credential; their ``roles`` claim names the floe role
``writer`` or ``reader`` (made here through the management API).

Each way PyIceberg takes a token: ``credential`` with ``oauth2-server-uri``
the provider's token endpoint (PyIceberg's default scope, and an explicit
``scope``), and ``token``, a token the provider gave. What the writer
commits is recorded as the provider's principal; the reader reads and is
refused a write (403).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from conftest import suite_floe
from oidc_issuer import (READER, WRITER, commit_principals, credential, provider,  # noqa: F401
                         provider_script, provider_workdir, serve_issuer_floe)

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Oslo", "Lima", "Pune"]})


@pytest.fixture(scope="module")
def issuer_floe(postgres, provider):
    """floe with its own tokens and the provider's, its roles granted."""
    yield from serve_issuer_floe(suite_floe, postgres, provider, [])


def catalog(f, **props):
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("floe", uri=f.url, **props)


def test_credential_at_the_providers_token_endpoint(issuer_floe, provider):
    f = issuer_floe
    cat = catalog(f, credential=credential(WRITER), **{"oauth2-server-uri": provider.token_endpoint})
    # floe tells a caller with the issuer's token where to refresh it.
    assert cat.properties["oauth2-server-uri"] == provider.token_endpoint
    cat.create_namespace("py_oidc")
    table = cat.create_table("py_oidc.cities", schema=ROWS.schema)
    table.append(ROWS)
    got = cat.load_table("py_oidc.cities").scan().to_arrow().sort_by("id")
    assert got.column("city").to_pylist() == ["Oslo", "Lima", "Pune"]

    assert commit_principals(f, "py_oidc", "cities") == [WRITER, WRITER]
    lines = [l for l in f.log().splitlines()
             if "[access] POST /v1/namespaces/py_oidc/tables/cities " in l]
    assert lines and all(f"principal={WRITER} " in l for l in lines), lines


def test_an_explicit_scope_is_sent_to_the_provider(issuer_floe, provider):
    f = issuer_floe
    cat = catalog(f, credential=credential(WRITER), scope="catalog",
                  **{"oauth2-server-uri": provider.token_endpoint})
    cat.create_namespace("py_oidc_scope")
    cat.create_table("py_oidc_scope.t", schema=ROWS.schema).append(ROWS)
    assert commit_principals(f, "py_oidc_scope", "t") == [WRITER, WRITER]


def test_a_providers_token(issuer_floe, provider):
    from pyiceberg.exceptions import ForbiddenError

    f = issuer_floe
    writer = catalog(f, token=provider.token(WRITER, post=True))
    writer.create_namespace("py_oidc_token")
    writer.create_table("py_oidc_token.t", schema=ROWS.schema).append(ROWS)

    reader = catalog(f, token=provider.token(READER, post=True))
    table = reader.load_table("py_oidc_token.t")
    assert table.scan().to_arrow().num_rows == 3
    with pytest.raises(ForbiddenError, match="TABLE_WRITE"):
        table.append(ROWS)
    with pytest.raises(ForbiddenError, match="NAMESPACE_CREATE"):
        reader.create_namespace("py_oidc_not_mine")
    assert commit_principals(f, "py_oidc_token", "t") == [WRITER, WRITER]


def test_the_reader_by_credential_cannot_write(issuer_floe, provider):
    from pyiceberg.exceptions import ForbiddenError

    f = issuer_floe
    writer = catalog(f, credential=credential(WRITER), **{"oauth2-server-uri": provider.token_endpoint})
    writer.create_namespace("py_oidc_reader")
    writer.create_table("py_oidc_reader.t", schema=ROWS.schema)
    reader = catalog(f, credential=credential(READER), **{"oauth2-server-uri": provider.token_endpoint})
    with pytest.raises(ForbiddenError, match="TABLE_WRITE"):
        reader.load_table("py_oidc_reader.t").append(ROWS)
    assert reader.load_table("py_oidc_reader.t").scan().to_arrow().num_rows == 0
