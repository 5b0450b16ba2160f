"""gzip answers: a client that accepts gzip gets loadTable compressed (the
metadata deflated once at commit time, the answer built around it), and
what it decompresses is byte for byte the plain answer; a client that does
not, or says q=0, gets the plain answer. Each encoding has its own ETag.
"""

from __future__ import annotations

import gzip
import json

import psycopg
import pytest
import requests

from conftest import assert_ok_json, database_url, ns_path

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
BASE_TS = 1767225600000


def table_url(floe, ns, name):
    return f"{floe.url}/v1/namespaces/{ns_path(ns)}/tables/{name}"


def fetch(url, accept=None, **headers):
    """(status, headers, body as sent on the wire: not decoded)."""
    if accept is not None:
        headers["Accept-Encoding"] = accept
    else:
        # requests sends "gzip, deflate" unless told otherwise.
        headers.setdefault("Accept-Encoding", "identity")
    r = requests.get(url, headers=headers, stream=True, timeout=30)
    body = r.raw.read(decode_content=False)
    r.close()
    return r.status_code, r.headers, body


def add_snapshots(floe, ns, name, first, count):
    updates = []
    for i in range(first, first + count):
        snap = {"snapshot-id": i, "sequence-number": i, "timestamp-ms": BASE_TS + i,
                "manifest-list": f"file:///gzip/snap-{i}.avro",
                "summary": {"operation": "append", "added-records": "1"}}
        if i > 1:
            snap["parent-snapshot-id"] = i - 1
        updates.append({"action": "add-snapshot", "snapshot": snap})
    updates.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                    "snapshot-id": first + count - 1})
    r = floe.post(f"/v1/namespaces/{ns_path(ns)}/tables/{name}",
                  json={"requirements": [], "updates": updates}, timeout=60)
    assert_ok_json(r)


@pytest.fixture(scope="module")
def big(floe):
    """A table with 3,000 snapshots (two commits) and a tag on an old one."""
    ns = ["gzip_big"]
    floe.create_namespace(ns)
    assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                             json={"name": "t", "schema": SCHEMA}))
    add_snapshots(floe, ns, "t", 1, 1500)
    add_snapshots(floe, ns, "t", 1501, 1500)
    r = floe.post(f"/v1/namespaces/{ns_path(ns)}/tables/t", json={"requirements": [], "updates": [
        {"action": "set-snapshot-ref", "ref-name": "old", "type": "tag", "snapshot-id": 7}]})
    assert_ok_json(r)
    return table_url(floe, ns, "t")


def assert_gzip_of(plain, headers, body):
    assert headers.get("Content-Encoding") == "gzip", headers
    assert headers["Content-Type"] == "application/json"
    assert "accept-encoding" in headers.get("Vary", "").lower()
    assert int(headers["Content-Length"]) == len(body)
    # One gzip member whose content is exactly the plain answer.
    assert gzip.decompress(body) == plain


@pytest.mark.parametrize("query", ["", "?snapshots=refs", "?snapshots=all"])
def test_gzip_load_is_the_plain_answer_compressed(big, query):
    status, h_plain, plain = fetch(big + query)
    assert status == 200 and "Content-Encoding" not in h_plain
    assert "accept-encoding" in h_plain.get("Vary", "").lower()
    doc = json.loads(plain)
    if query == "?snapshots=refs":
        assert {s["snapshot-id"] for s in doc["metadata"]["snapshots"]} == {7, 3000}
    else:
        assert len(doc["metadata"]["snapshots"]) == 3000
    status, h_gz, body = fetch(big + query, accept="gzip")
    assert status == 200
    assert_gzip_of(plain, h_gz, body)
    if query != "?snapshots=refs":
        assert len(body) * 5 < len(plain), (len(body), len(plain))
    # Two representations, two strong tags, both naming this version.
    assert h_gz["ETag"] != h_plain["ETag"]
    assert not h_gz["ETag"].startswith("W/")
    assert h_gz["ETag"] == h_plain["ETag"][:-1] + ';gzip"'


@pytest.mark.parametrize("accept, compressed", [
    ("gzip", True), ("GZIP", True), ("deflate, gzip;q=0.5, br", True), ("x-gzip", True),
    ("*", True), ("identity;q=1, *;q=0.1", True),
    ("identity", False), ("gzip;q=0", False), ("gzip;q=0.000, deflate", False),
    ("*;q=0", False), ("*, gzip;q=0", False), ("br", False), ("", False),
])
def test_accept_encoding_is_honoured(big, accept, compressed):
    _, _, plain = fetch(big)
    status, headers, body = fetch(big, accept=accept)
    assert status == 200
    if compressed:
        assert_gzip_of(plain, headers, body)
    else:
        assert "Content-Encoding" not in headers, headers
        assert body == plain


def test_no_accept_encoding_header_is_plain(big):
    # http.client-level request: no Accept-Encoding at all.
    import http.client
    from urllib.parse import urlsplit
    u = urlsplit(big)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest("GET", u.path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 200 and r.getheader("Content-Encoding") is None
    assert body == fetch(big)[2]


def test_if_none_match_with_either_tag_is_304(big):
    _, h_plain, _ = fetch(big)
    _, h_gz, _ = fetch(big, accept="gzip")
    for accept in ("gzip", "identity"):
        for tag in (h_plain["ETag"], h_gz["ETag"]):
            status, headers, body = fetch(big, accept=accept, **{"If-None-Match": tag})
            assert status == 304 and body == b"", (accept, tag)
            assert headers["ETag"] == tag
            assert "Content-Encoding" not in headers
            assert headers.get("Vary", "").lower() == "accept-encoding"


def test_if_none_match_star_names_the_tag_of_the_encoding_asked_for(big):
    _, h_plain, _ = fetch(big)
    _, h_gz, _ = fetch(big, accept="gzip")
    for accept, tag in (("gzip", h_gz["ETag"]), ("identity", h_plain["ETag"])):
        status, headers, _ = fetch(big, accept=accept, **{"If-None-Match": "*"})
        assert status == 304 and headers["ETag"] == tag, accept
    status, _, _ = fetch(big, accept="gzip", **{"If-None-Match": '"other", "x;gzip"'})
    assert status == 200


def test_small_table_and_every_commit_are_compressed(floe):
    ns = ["gzip_small"]
    floe.create_namespace(ns)
    assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/tables",
                             json={"name": "s", "schema": SCHEMA}))
    url = table_url(floe, ns, "s")
    for i in range(3):
        _, _, plain = fetch(url)
        _, headers, body = fetch(url, accept="gzip")
        assert_gzip_of(plain, headers, body)
        assert json.loads(plain)["metadata"]["properties"].get("k") == (str(i - 1) if i else None)
        r = floe.post(f"/v1/namespaces/{ns_path(ns)}/tables/s", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": str(i)}}]})
        assert_ok_json(r)
    # The answer after the last commit, not one made for an earlier one.
    _, headers, body = fetch(url, accept="gzip")
    assert json.loads(gzip.decompress(body))["metadata"]["properties"]["k"] == "2"


def test_rows_without_a_deflated_form_are_still_right(floe, big):
    """A row from before the deflated form was kept (or swapped by a floe
    that does not keep it) is answered from its text: compressed on the fly
    when large, never from a deflated form of another version."""
    _, _, plain = fetch(big)
    _, _, refs_plain = fetch(big + "?snapshots=refs")
    with psycopg.connect(database_url(floe), autocommit=True) as db:
        # As an older writer leaves a row: a new version, the old gz.
        n = db.execute("UPDATE tables SET version = version + 1 "
                       "WHERE name = 't' AND metadata_gz IS NOT NULL").rowcount
        assert n == 1
        try:
            _, headers, body = fetch(big, accept="gzip")
            assert_gzip_of(plain, headers, body)  # over 64 KiB: on the fly
            assert headers["ETag"].endswith(';gzip"')
            _, headers, body = fetch(big + "?snapshots=refs", accept="gzip")
            assert "Content-Encoding" not in headers  # small: plain
            assert body == refs_plain
        finally:
            db.execute("UPDATE tables SET version = version - 1 WHERE name = 't'")
        db.execute("UPDATE tables SET metadata_gz = NULL, refs_gz = NULL, gz_version = NULL "
                   "WHERE name = 's'")
    ns = ["gzip_small"]
    url = table_url(floe, ns, "s")
    _, _, plain_s = fetch(url)
    _, headers, body = fetch(url, accept="gzip")
    assert "Content-Encoding" not in headers and body == plain_s
    # The next commit keeps the deflated form again.
    assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/tables/s", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "9"}}]}))
    _, _, plain_s = fetch(url)
    _, headers, body = fetch(url, accept="gzip")
    assert_gzip_of(plain_s, headers, body)


def test_commit_answers_and_errors_stay_plain(floe, big):
    r = requests.post(big, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"x": "y"}}]},
        headers={"Accept-Encoding": "gzip"}, stream=True, timeout=60)
    raw = r.raw.read(decode_content=False)
    assert r.status_code == 200 and "Content-Encoding" not in r.headers
    assert json.loads(raw)["metadata"]["properties"]["x"] == "y"
    status, headers, body = fetch(big.rsplit("/", 1)[0] + "/nope", accept="gzip")
    assert status == 404 and "Content-Encoding" not in headers
    assert json.loads(body)["error"]["type"] == "NoSuchTableException"


def test_register_overwrite_and_transactions_keep_the_gzip_answer_current(floe):
    ns = ["gzip_reg"]
    floe.create_namespace(ns)
    tables = f"/v1/namespaces/{ns_path(ns)}/tables"
    assert_ok_json(floe.post(tables, json={"name": "src", "schema": SCHEMA}))
    v1 = assert_ok_json(floe.post(f"{tables}/src", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"gen": "1"}}]}))["metadata-location"]
    v2 = assert_ok_json(floe.post(f"{tables}/src", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"gen": "2"}}]}))["metadata-location"]
    assert floe.delete(f"{tables}/src").status_code == 204
    url = table_url(floe, ns, "reg")

    def gen():
        _, _, plain = fetch(url)
        _, headers, body = fetch(url, accept="gzip")
        assert_gzip_of(plain, headers, body)
        return json.loads(plain)["metadata"]["properties"]["gen"]

    reg = f"/v1/namespaces/{ns_path(ns)}/register"
    assert_ok_json(floe.post(reg, json={"name": "reg", "metadata-location": v2}))
    assert gen() == "2"
    assert_ok_json(floe.post(reg, json={"name": "reg", "metadata-location": v1, "overwrite": True}))
    assert gen() == "1"
    r = floe.post("/v1/transactions/commit", json={"table-changes": [{
        "identifier": {"namespace": ns, "name": "reg"}, "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"gen": "3"}}]}]})
    assert r.status_code == 204, r.text
    assert gen() == "3"
