"""Spark authenticating against the external OpenID issuer: Iceberg's
SparkCatalog with ``credential`` (a client of the provider, tests/oidc)
and ``oauth2-server-uri`` the provider's token endpoint, on a floe that
accepts the provider's tokens (``issuer_floe``). The catalogs ``oidc``
(the writer client) and ``oidc_reader`` are added to the suite's Spark
session; no other session starts.

Iceberg's client asks for its default scope, ``catalog``, which the
provider grants. ``token-exchange-enabled=false``: the provider does not
do token exchange (RFC 8693), so Iceberg refreshes a token by client
credentials again.

The writer's commits are recorded as the provider's principal; the
reader reads and is refused a write (403).
"""

from __future__ import annotations

import re

import pytest

from conftest import catalog_conf
from oidc_issuer import READER, WRITER, commit_principals, credential


@pytest.fixture(scope="module")
def oidc_spark(spark, issuer_floe, provider):
    """The suite's session with the catalogs oidc and oidc_reader."""
    for name, client in (("oidc", WRITER), ("oidc_reader", READER)):
        conf = catalog_conf(name, issuer_floe.url, credential(client), provider.token_endpoint)
        conf[f"spark.sql.catalog.{name}.token-exchange-enabled"] = "false"
        for k, v in conf.items():
            spark.conf.set(k, v)
    return spark


def test_spark_with_the_providers_token_writes_and_reads(oidc_spark, issuer_floe):
    spark, f = oidc_spark, issuer_floe
    spark.sql("CREATE NAMESPACE oidc.spark_oidc")
    spark.sql("CREATE TABLE oidc.spark_oidc.orders (id BIGINT, customer STRING) USING iceberg")
    spark.sql("INSERT INTO oidc.spark_oidc.orders VALUES (1, 'ada'), (2, 'bob')")
    got = [tuple(r) for r in spark.sql("SELECT id, customer FROM oidc.spark_oidc.orders ORDER BY id").collect()]
    assert got == [(1, "ada"), (2, "bob")]
    principals = commit_principals(f, "spark_oidc", "orders")
    assert principals and set(principals) == {WRITER}, principals
    lines = re.findall(r"\[access\] POST /v1/namespaces/spark_oidc/tables/orders (\d{3}) \S+ principal=(\S+) ",
                       f.log())
    assert lines and all(who == WRITER for _, who in lines), lines

    assert spark.sql("SELECT count(*) FROM oidc_reader.spark_oidc.orders").collect()[0][0] == 2
    with pytest.raises(Exception) as e:
        spark.sql("INSERT INTO oidc_reader.spark_oidc.orders VALUES (3, 'cy')")
    assert "ForbiddenException" in str(e.value), e.value
    assert f"Principal {READER} lacks TABLE_WRITE" in str(e.value), e.value
    assert commit_principals(f, "spark_oidc", "orders") == principals
    refused = re.findall(r"\[access\] POST /v1/namespaces/spark_oidc/tables/orders 403 \S+ principal=(\S+) ",
                         f.log())
    assert refused == [READER], refused
