"""Trino authenticating against the external OpenID issuer. The suite's
Trino server has, beside its catalog ``floe``, catalogs on a floe that
accepts the provider's tokens (``issuer_floe``), each with
``iceberg.rest-catalog.security=OAUTH2``:

* ``oidc`` and ``oidc_reader``: ``oauth2.token``, a token the provider
  gave its writer and its reader client by client credentials;
* ``oidc_credential``: ``oauth2.credential`` (the writer's) with
  ``oauth2.server-uri`` the provider's token endpoint. Trino gets its
  catalog token there, and then, for every query's session (Trino's
  ``session=NONE`` passes the catalog's credential on as the session's),
  asks the token endpoint again through Iceberg's OAuth2 client, which
  sends the client secret in the form body *and* the catalog token as
  ``Authorization: Bearer``. RFC 6749 (section 2.3) lets a client use one
  authentication method per request, and the provider refuses the
  second: ``client authentication must only be provided using one
  mechanism``. floe's own token endpoint reads only the form, so the
  credential works there (test_trino.py).

The writer's commits are recorded as the provider's principal; the
reader reads and is refused a write (403).
"""

from __future__ import annotations

import re

import pytest

from oidc_issuer import READER, WRITER, commit_principals


def test_trino_with_the_providers_token_writes_and_reads(trino, issuer_floe, ns):
    from trino_server import TrinoError

    f = issuer_floe
    trino.query(f"CREATE SCHEMA oidc.{ns}")
    trino.query(f"CREATE TABLE oidc.{ns}.orders (id integer, customer varchar)")
    assert trino.query(f"INSERT INTO oidc.{ns}.orders VALUES (1, 'ada'), (2, 'bob')") == [[2]]
    assert trino.query(f"SELECT id, customer FROM oidc.{ns}.orders ORDER BY id") == [
        [1, "ada"], [2, "bob"]]
    principals = commit_principals(f, ns, "orders")
    assert principals and set(principals) == {WRITER}, principals
    lines = re.findall(rf"\[access\] POST /v1/namespaces/{ns}/tables/orders (\d{{3}}) \S+ principal=(\S+) ",
                       f.log())
    assert lines and all(who == WRITER for _, who in lines), lines

    # The reader's catalog on the same floe: reads, and may not write.
    assert trino.query(f"SELECT count(*) FROM oidc_reader.{ns}.orders") == [[2]]
    with pytest.raises(TrinoError) as e:
        trino.query(f"INSERT INTO oidc_reader.{ns}.orders VALUES (3, 'cy')")
    assert f"Forbidden: Principal {READER} lacks TABLE_WRITE" in str(e.value), e.value
    with pytest.raises(TrinoError) as e:
        trino.query(f"CREATE SCHEMA oidc_reader.{ns}_not_mine")
    assert f"Forbidden: Principal {READER} lacks NAMESPACE_CREATE" in str(e.value), e.value
    assert commit_principals(f, ns, "orders") == principals
    refused = re.findall(rf"\[access\] POST /v1/namespaces/{ns}/tables/orders 403 \S+ principal=(\S+) ",
                         f.log())
    assert refused == [READER], refused


def test_trino_with_a_credential_at_the_provider_is_refused_by_it(trino, issuer_floe, ns):
    """Why Trino takes a token, not a credential, from an external issuer."""
    from trino_server import TrinoError

    with pytest.raises(TrinoError) as e:
        trino.query(f"CREATE SCHEMA oidc_credential.{ns}")
    assert any("client authentication must only be provided using one mechanism" in c
               for c in e.value.causes), e.value
    # Trino did get its catalog token there: floe saw the writer's /v1/config.
    assert re.search(rf"\[access\] GET /v1/config 200 \S+ principal={WRITER} ", issuer_floe.log())
