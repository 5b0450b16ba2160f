"""PyIceberg's REST catalog client against floe: namespace operations."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.exceptions import (  # noqa: E402
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    RESTError,
)

from conftest import user_properties  # noqa: E402

# "warehouse": the default warehouse's name, its prefix.
PREFIXES = [None, "warehouse"]


@pytest.fixture(params=PREFIXES, ids=["no-prefix", "prefix"])
def catalog(request, fresh_floe):
    props = {"uri": fresh_floe.url}
    if request.param is not None:
        props["prefix"] = request.param
    cat = RestCatalog("floe", **props)
    cat.floe = fresh_floe
    cat.floe_prefix = request.param
    return cat


def _requested_paths(floe):
    """Paths of the requests in floe's access log."""
    return re.findall(r"\b(?:GET|HEAD|POST|DELETE|PUT) (/\S*)", floe.log())


def test_catalog_uses_the_configured_prefix(catalog):
    catalog.create_namespace("prefix_probe")
    catalog.list_namespaces()
    paths = [p for p in _requested_paths(catalog.floe) if "namespaces" in p]
    assert paths, catalog.floe.log_tail()
    if catalog.floe_prefix is None:
        assert all(p.startswith("/v1/namespaces") for p in paths), paths
    else:
        assert all(p.startswith(f"/v1/{catalog.floe_prefix}/namespaces") for p in paths), paths


def test_create_and_list_nested(catalog):
    catalog.create_namespace("accounting", {"owner": "finance"})
    catalog.create_namespace(("accounting", "tax"))
    catalog.create_namespace(("accounting", "tax", "paid"), {"year": "2024"})
    catalog.create_namespace("engineering")

    assert catalog.list_namespaces() == [("accounting",), ("engineering",)]
    assert catalog.list_namespaces("accounting") == [("accounting", "tax")]
    assert catalog.list_namespaces(("accounting", "tax")) == [("accounting", "tax", "paid")]
    assert catalog.list_namespaces(("accounting", "tax", "paid")) == []
    assert catalog.list_namespaces("engineering") == []

    assert user_properties(catalog.load_namespace_properties("accounting")) == {"owner": "finance"}
    assert user_properties(catalog.load_namespace_properties(("accounting", "tax"))) == {}
    assert user_properties(catalog.load_namespace_properties(("accounting", "tax", "paid"))) == {"year": "2024"}


def test_list_unknown_parent(catalog):
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces("nope")


def test_create_child_of_unknown_parent_fails(catalog):
    # PyIceberg maps only 409 for create; a 404 arrives as a RESTError that
    # carries floe's error type and message.
    with pytest.raises((RESTError, NoSuchNamespaceError)) as exc:
        catalog.create_namespace(("missing_parent", "child"))
    assert "NoSuchNamespaceException" in str(exc.value), exc.value
    assert catalog.list_namespaces() == []


def test_duplicate_create(catalog):
    catalog.create_namespace("dup", {"a": "1"})
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("dup", {"a": "2"})
    assert user_properties(catalog.load_namespace_properties("dup")) == {"a": "1"}


def test_update_namespace_properties(catalog):
    catalog.create_namespace(("db",), {"a": "1", "b": "2", "c": "3"})
    summary = catalog.update_namespace_properties(("db",), removals={"b", "zz"}, updates={"a": "10", "d": "4"})
    assert sorted(summary.updated) == ["a", "d"]
    assert summary.removed == ["b"]
    assert summary.missing == ["zz"]
    assert user_properties(catalog.load_namespace_properties("db")) == {"a": "10", "c": "3", "d": "4"}


def test_update_properties_conflict(catalog):
    catalog.create_namespace("conflict", {"a": "1"})
    with pytest.raises(RESTError) as exc:
        catalog.update_namespace_properties("conflict", removals={"a"}, updates={"a": "2"})
    assert "UnprocessableEntityException" in str(exc.value), exc.value
    assert user_properties(catalog.load_namespace_properties("conflict")) == {"a": "1"}


def test_update_properties_unknown_namespace(catalog):
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties("ghost", updates={"a": "1"})


def test_load_unknown_namespace(catalog):
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("ghost")


def test_namespace_exists(catalog):
    if not hasattr(catalog, "namespace_exists"):
        pytest.skip("this PyIceberg has no namespace_exists")
    catalog.create_namespace("present")
    catalog.create_namespace(("present", "kid"))
    assert catalog.namespace_exists("present") is True
    assert catalog.namespace_exists(("present", "kid")) is True
    assert catalog.namespace_exists("absent") is False
    assert catalog.namespace_exists(("present", "absent")) is False
    # floe advertises HEAD, so PyIceberg must have used it rather than a GET fallback
    heads = re.findall(r"\bHEAD /\S*namespaces/\S+", catalog.floe.log())
    assert heads, "PyIceberg did not use HEAD: is 'HEAD /v1/{prefix}/namespaces/{namespace}' advertised?"


def test_drop_namespace(catalog):
    catalog.create_namespace("parent")
    catalog.create_namespace(("parent", "child"))
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("parent")
    assert catalog.list_namespaces("parent") == [("parent", "child")]

    catalog.drop_namespace(("parent", "child"))
    assert catalog.list_namespaces("parent") == []
    catalog.drop_namespace("parent")
    assert catalog.list_namespaces() == []
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("parent")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("parent")


def test_special_characters_in_levels(catalog):
    levels = ("with space", "slash/inside", "plus+sign", "ünïcødé", "dot.ted")
    for i in range(1, len(levels) + 1):
        catalog.create_namespace(levels[:i], {"depth": str(i)})
    for i in range(1, len(levels) + 1):
        assert user_properties(catalog.load_namespace_properties(levels[:i])) == {"depth": str(i)}
    if hasattr(catalog, "namespace_exists"):
        assert catalog.namespace_exists(levels)
    catalog.update_namespace_properties(levels, updates={"k": "v"})
    assert user_properties(catalog.load_namespace_properties(levels)) == {"depth": "5", "k": "v"}
    for i in range(len(levels), 0, -1):
        catalog.drop_namespace(levels[:i])
    assert catalog.list_namespaces() == []


def test_list_with_page_size(fresh_floe):
    """With a page size set, PyIceberg still gets every namespace, in order."""
    cat = RestCatalog("floe", uri=fresh_floe.url, **{"rest-page-size": "2"})
    names = [f"ns{i}" for i in range(7)]
    for n in names:
        cat.create_namespace(n)
    for n in names[:3]:
        cat.create_namespace((names[0], n))
    assert cat.list_namespaces() == [(n,) for n in names]
    assert cat.list_namespaces(names[0]) == [(names[0], n) for n in names[:3]]
