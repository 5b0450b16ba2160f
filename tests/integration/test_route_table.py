"""The route table's audit column against what each route writes: a walk
through the catalog's changes, with authentication on, where every request
is matched with the audit events of its request id. A route the table says
writes an event wrote it; a route the table says writes none wrote none.
The table is floe's own (`floe --print-routes=json`)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import (TableHandle, _start_floe_on_fresh_db, _stop_and_check, assert_ok_json,
                      audit_events, floe_binary)

EVENT = re.compile(r"\b[a-z]+\.[a-z-]+\b")


@pytest.fixture(scope="module")
def table():
    out = subprocess.run([str(floe_binary()), "--print-routes=json"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return {(r["method"], r["path"]): r for r in json.loads(out)}


@pytest.fixture(scope="module")
def f(postgres):
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe"})
    f.authenticate()
    yield f
    _stop_and_check(f)


class Walk:
    """Sends requests and checks each one's audit events against its route."""

    def __init__(self, f, table):
        self.f = f
        self.table = table
        self.checked = set()

    def __call__(self, method, route, path, status, **kw):
        r = self.f.request(method, path, **kw)
        assert r.status_code == status, f"{method} {path} -> {r.status_code} {r.text[:300]}"
        rid = r.headers["X-Request-Id"]
        got = {e["event"] for e in audit_events(self.f) if e.get("request-id") == rid}
        row = self.table[(method, route)]
        declared = row["audit-event"]
        if declared is None:
            assert got == set(), f"{method} {route}: the table names no event, it wrote {got}"
        else:
            names = set(EVENT.findall(declared))
            wildcard = "control.*" in declared or "control.{action}" in declared
            # "... when ..." names an event written only in that case.
            if " when " not in declared:
                assert got, f"{method} {route}: the table says {declared!r}, nothing was written"
            for e in got:
                assert e in names or (wildcard and e.startswith("control.")), (
                    f"{method} {route} wrote {e}, the table says {declared!r}")
        self.checked.add((method, route))
        return r


NS = "/v1/{prefix}/namespaces"
TBL = NS + "/{namespace}/tables/{table}"
M = "/management/v1"


def test_every_change_writes_the_event_its_route_names(f, table):
    go = Walk(f, table)
    schema = TableHandle.SCHEMA
    go("POST", NS, "/v1/namespaces", 200, json={"namespace": ["rt"]})
    go("POST", NS + "/{namespace}/properties", "/v1/namespaces/rt/properties", 200,
       json={"updates": {"owner": "x"}, "removals": []})
    go("POST", NS + "/{namespace}/properties", "/v1/namespaces/rt/properties", 200,
       json={"updates": {"floe.wap.separation-of-duties": "true"}, "removals": []})
    go("POST", NS + "/{namespace}/tables", "/v1/namespaces/rt/tables", 200,
       json={"name": "t", "schema": schema})
    t = TableHandle(f, ["rt"], "t")
    sid = t.add_snapshot("main")
    first = t.load()["metadata-location"]
    go("POST", TBL, "/v1/namespaces/rt/tables/t", 200,
       json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    go("POST", TBL + "/refs", "/v1/namespaces/rt/tables/t/refs", 201,
       json={"name": "dev", "type": "branch", "snapshot-id": sid})
    go("DELETE", TBL + "/refs/{ref}", "/v1/namespaces/rt/tables/t/refs/dev", 204)
    run = go("POST", TBL + "/wap", "/v1/namespaces/rt/tables/t/wap", 201, json={}).json()
    go("DELETE", TBL + "/wap/{run}", f"/v1/namespaces/rt/tables/t/wap/{run['id']}", 200)
    go("POST", NS + "/{namespace}/register", "/v1/namespaces/rt/register", 200,
       json={"name": "t", "metadata-location": first, "overwrite": True})
    go("POST", "/v1/{prefix}/tables/rename", "/v1/tables/rename", 204,
       json={"source": {"namespace": ["rt"], "name": "t"},
             "destination": {"namespace": ["rt"], "name": "t2"}})
    go("DELETE", TBL, "/v1/namespaces/rt/tables/t2", 204)
    go("POST", TBL + "/undrop", "/v1/namespaces/rt/tables/t2/undrop", 200)
    go("POST", NS + "/{namespace}/views", "/v1/namespaces/rt/views", 200, json={
        "name": "v", "schema": schema, "view-version": {
            "version-id": 1, "timestamp-ms": 1700000000000, "schema-id": 0,
            "summary": {"engine-name": "spark"}, "default-namespace": ["rt"],
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}})
    go("POST", "/v1/{prefix}/views/rename", "/v1/views/rename", 204,
       json={"source": {"namespace": ["rt"], "name": "v"},
             "destination": {"namespace": ["rt"], "name": "v2"}})
    go("DELETE", NS + "/{namespace}/views/{view}", "/v1/namespaces/rt/views/v2", 204)
    hook = go("POST", "/v1/{prefix}/audit-hooks", "/v1/audit-hooks", 201,
              json={"name": "h", "url": "http://127.0.0.1:9/audit",
                    "scope": {"namespace": ["rt"], "table": "elsewhere"}}).json()
    go("DELETE", "/v1/{prefix}/audit-hooks/{id}", f"/v1/audit-hooks/{hook['id']}", 204)
    rel = go("POST", "/v1/{prefix}/releases", "/v1/releases", 201,
             json={"tables": [{"namespace": ["rt"], "name": "t2"}]}).json()
    go("DELETE", "/v1/{prefix}/releases/{release}", f"/v1/releases/{rel['id']}", 200)
    go("POST", "/v1/{prefix}/controls/{action}", "/v1/controls/separation-of-duties", 200,
       json={"namespace": ["rt"], "required": False, "reason": "the walk"})
    # the management API
    go("POST", M + "/principals", f"{M}/principals", 201, json={"name": "walker", "kind": "user"})
    go("POST", M + "/principals/{name}/disable", f"{M}/principals/walker/disable", 200)
    go("POST", M + "/principals/{name}/enable", f"{M}/principals/walker/enable", 200)
    go("POST", M + "/roles", f"{M}/roles", 201, json={"name": "walkers"})
    go("PATCH", M + "/roles/{role}", f"{M}/roles/walkers", 200, json={"issuer-grantable": True})
    go("PUT", M + "/roles/{role}/members/{principal}", f"{M}/roles/walkers/members/walker", 204)
    go("POST", M + "/roles/{role}/grants", f"{M}/roles/walkers/grants", 201,
       json={"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["rt"]}})
    go("POST", M + "/roles/{role}/grants/revoke", f"{M}/roles/walkers/grants/revoke", 200,
       json={"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["rt"]}})
    go("DELETE", M + "/roles/{role}/members/{principal}", f"{M}/roles/walkers/members/walker",
       204)
    go("DELETE", M + "/roles/{role}", f"{M}/roles/walkers", 204)
    # The namespace goes last, emptied first.
    go("DELETE", TBL, "/v1/namespaces/rt/tables/t2", 204, params={"purgeRequested": "false"})
    go("DELETE", NS + "/{namespace}", "/v1/namespaces/rt", 204)

    # Every route of the table that changes the catalog and names an event
    # of its own was walked, but those that need a live receiver or an
    # audit (publishes, subscriptions) and the secret-bearing ones.
    skipped = {r for r in table if any(w in r[1] for w in (
        "publish", "event-subscriptions", "rotate-secret", "/sign", "/tables/{table}/metrics",
        "transactions", "fast-forward", "register-view", "releases/{release}/tables"))}
    named = {k for k, r in table.items()
             if r["audit-event"] is not None and "mutating" in r["flags"]}
    assert named - skipped - go.checked == set(), sorted(named - skipped - go.checked)


def test_every_change_records_its_answer_in_its_own_transaction(table):
    """The rule of the table: a route that changes the catalog records its
    Idempotency-Key answer in the transaction of its change, so a retry
    never runs a change whose answer was lost."""
    mutating = {k for k, r in table.items() if "mutating" in r["flags"]}
    assert len(mutating) > 40
    assert sorted(k for k in mutating
                  if "idempotent-in-transaction" not in table[k]["flags"]) == []
    assert sorted(k for k, r in table.items() if "idempotent-in-transaction" in r["flags"]
                  and k not in mutating) == []
