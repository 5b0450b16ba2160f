"""Every route that changes the catalog records its Idempotency-Key answer
in the change's own transaction: when the answer cannot be recorded, the
change is undone and the client is told 503 (nothing changed, retry); the
retry then runs the change once, and a second retry replays its answer.

The record is made to fail for real: a trigger the test installs on
idempotency_keys in floe's PostgreSQL raises when the answer to one key is
written."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from conftest import TableHandle, assert_error, assert_ok_json, database_url, ns_path


def key() -> str:
    return str(uuid.uuid4())


class FailingRecord:
    """While installed, writing the answer to Idempotency-Key k raises."""

    def __init__(self, f, k: str):
        self.url = database_url(f)
        self.k = k
        self.name = "fail_answer_" + k.replace("-", "")

    def __enter__(self):
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION {self.name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'the answer is not kept'; END $$")
            conn.execute(
                f"CREATE TRIGGER {self.name} BEFORE UPDATE ON idempotency_keys FOR EACH ROW "
                f"WHEN (NEW.key = '{self.k}' AND NEW.status <> 0) EXECUTE FUNCTION {self.name}()")
        return self

    def __exit__(self, *exc):
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP TRIGGER {self.name} ON idempotency_keys")
            conn.execute(f"DROP FUNCTION {self.name}()")


def keyed_retry(f, method: str, path: str, status: int, unchanged, changed, body=None):
    """The change at (method, path, body) with a key whose answer cannot be
    recorded: 503 and unchanged(); with the record possible again, the
    same key runs it once (status, changed()), and again replays it."""
    k = key()
    kw = {"headers": {"Idempotency-Key": k}}
    if body is not None:
        kw["json"] = body
    with FailingRecord(f, k):
        first = f.request(method, path, **kw)
        assert_error(first, 503, "ServiceUnavailableException")
        assert first.json()["error"]["message"] == (
            f"The answer to Idempotency-Key {k} could not be recorded; nothing changed; retry")
        assert first.headers.get("Retry-After") == "1"
        unchanged()
    second = f.request(method, path, **kw)
    assert second.status_code == status, second.text
    assert "Idempotency-Replayed" not in second.headers
    changed()
    third = f.request(method, path, **kw)
    assert third.status_code == status, third.text
    assert third.headers.get("Idempotency-Replayed") == "true"
    assert third.content == second.content
    changed()
    return second


def audit_events(f, **query) -> list:
    return assert_ok_json(f.get("/v1/audit-log", params=query))["events"]


def count_events(f, event: str, **query) -> int:
    return sum(1 for e in audit_events(f, **query) if e["event"] == event)


# --- namespaces ---


def test_namespace_create(floe, uniq):
    exists = lambda: floe.head(f"/v1/namespaces/{uniq}").status_code
    r = keyed_retry(floe, "POST", "/v1/namespaces", 200,
                    lambda: (exists() == 404) or pytest.fail("the namespace was kept"),
                    lambda: exists() == 204 or pytest.fail("no namespace"),
                    body={"namespace": [uniq]})
    assert r.json()["namespace"] == [uniq]
    assert count_events(floe, "namespace.created", namespace=uniq) == 1


def test_namespace_drop(floe, uniq):
    floe.create_namespace([uniq])
    exists = lambda: floe.head(f"/v1/namespaces/{uniq}").status_code
    keyed_retry(floe, "DELETE", f"/v1/namespaces/{uniq}", 204,
                lambda: exists() == 204 or pytest.fail("the namespace was dropped"),
                lambda: exists() == 404 or pytest.fail("the namespace is there"))
    assert count_events(floe, "namespace.dropped", namespace=uniq) == 1


# --- audit hooks ---


def hooks_named(f, name: str) -> list:
    return [h for h in assert_ok_json(f.get("/v1/audit-hooks"))["hooks"] if h["name"] == name]


def test_hook_register_and_delete(floe, uniq):
    floe.create_namespace([uniq])
    body = {"name": uniq, "url": "http://127.0.0.1:9/audit", "scope": {"namespace": [uniq]}}
    r = keyed_retry(floe, "POST", "/v1/audit-hooks", 201,
                    lambda: hooks_named(floe, uniq) == [] or pytest.fail("the hook was kept"),
                    lambda: len(hooks_named(floe, uniq)) == 1 or pytest.fail("no single hook"),
                    body=body)
    hook = r.json()
    assert hooks_named(floe, uniq) == [hook]
    keyed_retry(floe, "DELETE", f"/v1/audit-hooks/{hook['id']}", 204,
                lambda: hooks_named(floe, uniq) == [hook] or pytest.fail("the hook went"),
                lambda: hooks_named(floe, uniq) == [] or pytest.fail("the hook is there"))
    assert count_events(floe, "hook.registered", namespace=uniq) == 1
    assert count_events(floe, "hook.deleted", namespace=uniq) == 1
