"""Idempotency-Key on floe's mutation routes: a retry with the same key gets
the first answer and changes nothing; the same key on another request is
refused. Against a real daemon and PostgreSQL."""

from __future__ import annotations

import threading
import uuid

from conftest import TableHandle, assert_error, assert_ok_json, ns_path


def key() -> str:
    return str(uuid.uuid4())


def new_table(floe, ns: str) -> TableHandle:
    assert_ok_json(floe.post("/v1/namespaces", json={"namespace": [ns]}))
    t = TableHandle(floe, [ns], "t")
    t.create()
    return t


def metadata_files(t: TableHandle) -> set:
    from pathlib import Path
    loc = t.metadata()["location"]
    return {p.name for p in (Path(loc[len("file://"):]) / "metadata").glob("*.metadata.json")}


def test_config_advertises_the_key_lifetime(floe):
    cfg = assert_ok_json(floe.get("/v1/config"))
    assert cfg["idempotency-key-lifetime"] == "PT30M"


def test_a_retried_commit_gets_the_first_answer_and_commits_once(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    body = {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"run": "1"}}]}
    first = floe.post(t.url, json=body, headers={"Idempotency-Key": k})
    assert first.status_code == 200, first.text
    files = metadata_files(t)
    second = floe.post(t.url, json=body, headers={"Idempotency-Key": k})
    assert second.status_code == 200
    assert second.json() == first.json()
    assert second.headers.get("Idempotency-Replayed") == "true"
    assert metadata_files(t) == files, "the retry wrote a new metadata file"
    assert t.load()["metadata-location"] == first.json()["metadata-location"]
    # Without the key the same body commits again (a new version).
    third = assert_ok_json(floe.post(t.url, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"run": "2"}}]}))
    assert third["metadata-location"] != first.json()["metadata-location"]


def test_the_same_key_on_another_request_is_422(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    assert_ok_json(floe.post(t.url, headers={"Idempotency-Key": k}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "1"}}]}))
    other_body = floe.post(t.url, headers={"Idempotency-Key": k}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "2"}}]})
    assert_error(other_body, 422, "UnprocessableEntityException")
    other_route = floe.post("/v1/namespaces", headers={"Idempotency-Key": k},
                            json={"namespace": [uniq + "_other"]})
    assert_error(other_route, 422, "UnprocessableEntityException")
    assert t.metadata()["properties"]["a"] == "1"
    assert floe.head(f"/v1/namespaces/{uniq}_other").status_code == 404


def test_a_terminal_4xx_is_replayed_too(floe, uniq):
    t = new_table(floe, uniq)
    k = key()
    stale = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
             "updates": [{"action": "set-properties", "updates": {"x": "1"}}]}
    first = floe.post(t.url, json=stale, headers={"Idempotency-Key": k})
    assert_error(first, 409, "CommitFailedException")
    again = floe.post(t.url, json=stale, headers={"Idempotency-Key": k})
    assert again.status_code == 409
    assert again.json() == first.json()
    assert "x" not in t.metadata()["properties"]


def test_namespace_create_and_drop_retries(floe, uniq):
    k = key()
    body = {"namespace": [uniq], "properties": {"owner": "a"}}
    first = assert_ok_json(floe.post("/v1/namespaces", json=body, headers={"Idempotency-Key": k}))
    # A plain retry would be 409 AlreadyExists; with the key it is the first answer.
    second = floe.post("/v1/namespaces", json=body, headers={"Idempotency-Key": k})
    assert second.status_code == 200 and second.json() == first
    kd = key()
    assert floe.delete(f"/v1/namespaces/{ns_path([uniq])}", headers={"Idempotency-Key": kd}).status_code == 204
    again = floe.delete(f"/v1/namespaces/{ns_path([uniq])}", headers={"Idempotency-Key": kd})
    assert again.status_code == 204, again.text
    plain = floe.delete(f"/v1/namespaces/{ns_path([uniq])}")
    assert_error(plain, 404, "NoSuchNamespaceException")


def test_a_malformed_key_is_400(floe, uniq):
    for bad in ("not-a-uuid", "0190a3a0-0000-7000-8000-00000000000", "x" * 36):
        r = floe.post("/v1/namespaces", json={"namespace": [uniq]}, headers={"Idempotency-Key": bad})
        assert_error(r, 400, "BadRequestException")
    assert floe.head(f"/v1/namespaces/{ns_path([uniq])}").status_code == 404


def test_concurrent_retries_commit_once(floe, uniq):
    t = new_table(floe, uniq)
    before = len(metadata_files(t))
    k = key()
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": 4242, "sequence-number": 1, "timestamp-ms": 1767225600000,
            "manifest-list": t.metadata()["location"] + "/metadata/snap-4242.avro",
            "summary": {"operation": "append"}}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 4242}]}
    answers = []

    def send():
        answers.append(floe.post(t.url, json=body, headers={"Idempotency-Key": k}, timeout=30))

    threads = [threading.Thread(target=send) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [a.status_code for a in answers] == [200] * 6, [a.text for a in answers]
    assert len({a.json()["metadata-location"] for a in answers}) == 1
    assert len(metadata_files(t)) == before + 1
    assert t.head("main") == 4242
