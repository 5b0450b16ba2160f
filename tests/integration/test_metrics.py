"""GET /metrics: the Prometheus text page, read with Prometheus' own Python
parser, and its counters moving with real requests, commits, conflicts,
server-side retries, write-audit-publish runs and audit hook calls."""

from __future__ import annotations

import json
import math
import subprocess
import threading
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import TableHandle, assert_ok_json, describe, floe_binary, wait_until
from webhook import PASS, Reply

FAMILIES = {
    "floe_http_requests": "counter",
    "floe_http_request_duration_seconds": "histogram",
    "floe_commit_attempts": "counter",
    "floe_commit_retries": "counter",
    "floe_commit_conflicts": "counter",
    "floe_commits": "counter",
    "floe_wap_runs": "counter",
    "floe_hook_calls": "counter",
    "floe_hook_call_duration_seconds": "histogram",
    "floe_db_pool_connections": "gauge",
    "floe_db_pool_connections_in_use": "gauge",
    "floe_db_pool_wait_seconds": "histogram",
    "floe_db_pool_timeouts": "counter",
    "floe_queue_depth": "gauge",
    "floe_queue_refused": "counter",
    "floe_janitor_rounds": "counter",
    "floe_janitor_rows": "counter",
    "floe_janitor_files_removed": "counter",
    "floe_postgres_errors": "counter",
    "floe_authz_decisions": "counter",
}

NS_ROUTE = {"method": "GET", "route": "/v1/{prefix}/namespaces/{namespace}"}
COMMIT_ROUTE = {"method": "POST", "route": "/v1/{prefix}/namespaces/{namespace}/tables/{table}"}


class Page:
    """One scrape: the families by name, and each sample's value."""

    def __init__(self, text: str):
        self.text = text
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples = {}
        for f in self.families.values():
            for s in f.samples:
                self.samples[(s.name, frozenset(s.labels.items()))] = s.value

    def value(self, name: str, **labels) -> float:
        """A sample's value; 0 when the page does not list it (yet)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)


def scrape(f) -> Page:
    r = requests.get(f.url + "/metrics", timeout=10)
    assert r.status_code == 200, describe(r)
    return Page(r.text)


def props_commit(key: str, value: str, requirements=()):
    return {"requirements": list(requirements),
            "updates": [{"action": "set-properties", "updates": {key: value}}]}


def new_table(f, ns: str, name: str = "t") -> TableHandle:
    f.create_namespace([ns])
    t = TableHandle(f, [ns], name)
    t.create()
    return t


# --------------------------------------------------------------------------
# the page itself


def test_page_is_prometheus_text_without_auth(floe):
    r = requests.get(floe.url + "/metrics", timeout=10)
    assert r.status_code == 200, describe(r)
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "X-Request-Id" in r.headers
    page = Page(r.text)
    for name, kind in FAMILIES.items():
        assert name in page.families, f"{name} missing from /metrics:\n{r.text[:3000]}"
        assert page.families[name].type == kind, (name, page.families[name].type)
        assert page.families[name].documentation, f"{name} has no HELP"
    lines = r.text.splitlines()
    for line in lines:
        if line.startswith("# TYPE ") and line.endswith(" counter"):
            assert line.split()[2].endswith("_total"), line
        if not line.startswith("#"):
            assert line.split("{")[0].split(" ")[0].startswith("floe_"), line
    # Every series the format allows once: no sample is listed twice.
    series = [ln.rsplit(" ", 1)[0] for ln in lines if ln and not ln.startswith("#")]
    assert len(series) == len(set(series))


def test_histograms_are_cumulative_and_end_at_count(floe):
    for _ in range(3):
        floe.get("/v1/config")
    page = scrape(floe)
    fam = page.families["floe_http_request_duration_seconds"]
    by_series = {}
    for s in fam.samples:
        key = frozenset((k, v) for k, v in s.labels.items() if k != "le")
        by_series.setdefault(key, {})[(s.name, s.labels.get("le"))] = s.value
    assert by_series
    for key, vals in by_series.items():
        buckets = sorted(((float(le), v) for (n, le), v in vals.items()
                          if n.endswith("_bucket")), key=lambda b: b[0])
        assert buckets[-1][0] == math.inf, key
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), (key, buckets)
        assert counts[-1] == vals[("floe_http_request_duration_seconds_count", None)], key
        assert vals[("floe_http_request_duration_seconds_sum", None)] >= 0
    cfg = frozenset({"method": "GET", "route": "/v1/config"}.items())
    assert vals_count(by_series[cfg]) >= 3


def vals_count(vals):
    return vals[("floe_http_request_duration_seconds_count", None)]


# --------------------------------------------------------------------------
# requests


def test_requests_are_counted_by_route_pattern_and_status(floe, uniq):
    before = scrape(floe)
    for i in range(5):
        r = floe.get(f"/v1/namespaces/{uniq}_missing_{i}")
        assert r.status_code == 404, describe(r)
    floe.create_namespace([uniq])
    r = floe.get(f"/v1/namespaces/{uniq}")
    assert r.status_code == 200, describe(r)
    r = floe.get(f"/no/such/{uniq}/route")
    assert r.status_code == 404
    after = scrape(floe)

    def delta(name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("floe_http_requests_total", code="404", **NS_ROUTE) == 5
    assert delta("floe_http_requests_total", code="200", **NS_ROUTE) == 1
    assert delta("floe_http_requests_total", code="200", method="POST",
                 route="/v1/{prefix}/namespaces") == 1
    assert delta("floe_http_requests_total", code="404", method="", route="unrouted") == 1
    assert delta("floe_http_request_duration_seconds_count", **NS_ROUTE) == 6
    # Bounded cardinality: the raw path is never a label value.
    assert uniq not in after.text
    routes = {r["path"] for r in json.loads(subprocess.run(
        [str(floe_binary()), "--print-routes=json"], capture_output=True, text=True,
        check=True).stdout)}
    for (name, labels), _ in after.samples.items():
        labels = dict(labels)
        if "route" in labels and labels["route"] != "unrouted":
            assert labels["route"] in routes, labels


# --------------------------------------------------------------------------
# commits


def test_commits_and_conflicts_are_counted(floe, uniq):
    t = new_table(floe, uniq)
    uuid = t.metadata()["table-uuid"]
    before = scrape(floe)
    for i in range(3):
        assert_ok_json(floe.post(t.url, json=props_commit("k", str(i))))
    stale = [{"type": "assert-table-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}]
    r = floe.post(t.url, json=props_commit("k", "x", stale))
    assert r.status_code == 409, describe(r)
    assert r.json()["error"]["type"] == "CommitFailedException"
    ok = [{"type": "assert-table-uuid", "uuid": uuid}]
    assert_ok_json(floe.post(t.url, json=props_commit("k", "y", ok)))
    after = scrape(floe)

    def delta(name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("floe_commits_total", outcome="committed") == 4
    assert delta("floe_commits_total", outcome="failed") == 1
    assert delta("floe_commits_total", outcome="unknown") == 0
    assert delta("floe_commit_conflicts_total") == 1
    assert delta("floe_commit_attempts_total") == 5
    assert delta("floe_commit_retries_total") == 0
    assert delta("floe_http_requests_total", code="409", **COMMIT_ROUTE) == 1
    assert delta("floe_http_requests_total", code="200", **COMMIT_ROUTE) == 4
    assert delta("floe_db_pool_wait_seconds_count", pool="commit") >= 5


def test_server_side_retries_are_counted(postgres, floe_factory, uniq):
    """Two replicas on one database: their commits to one table collide on
    the compare-and-swap, and floe retries them itself: every commit is one
    attempt and lands, and the lost rounds are retries."""
    db = postgres.new_database()
    a = floe_factory(env={"FLOE_DATABASE_URL": db})
    b = floe_factory(env={"FLOE_DATABASE_URL": db})
    t = new_table(a, uniq)
    writers, each = 8, 10
    errors = []

    def write(i):
        target = (a, b)[i % 2]
        s = requests.Session()
        for k in range(each):
            r = s.post(target.url + t.url, json=props_commit(f"w{i}", str(k)), timeout=60)
            if r.status_code != 200:
                errors.append(describe(r))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not errors, errors[:3]
    pages = [scrape(a), scrape(b)]
    total = {name: sum(p.value(name) for p in pages) for name in
             ("floe_commit_attempts_total", "floe_commit_retries_total")}
    committed = sum(p.value("floe_commits_total", outcome="committed") for p in pages)
    assert committed == writers * each
    assert total["floe_commit_retries_total"] > 0, total
    assert total["floe_commit_attempts_total"] == committed


# --------------------------------------------------------------------------
# write-audit-publish and hooks


def test_wap_runs_and_hook_verdicts_are_counted(floe, uniq, webhooks, hooks):
    t = new_table(floe, uniq)
    t.add_snapshot("main")
    rcv = webhooks(PASS)
    hooks(floe, f"{uniq}-hook", rcv.url, scope={"namespace": [uniq]})
    before = scrape(floe)

    run = t.stage()
    t.add_snapshot(run["branch"])
    r = t.publish(run["id"])
    assert r.status_code == 200, describe(r)

    rcv.set(default=Reply(422, {"reason": "bad rows"}))
    run2 = t.stage()
    t.add_snapshot(run2["branch"])
    r = t.publish(run2["id"])
    assert r.status_code == 422, describe(r)

    rcv.set(default=Reply(500, "down"))
    r = t.publish(run2["id"])
    assert r.status_code == 503, describe(r)

    run3 = t.stage()
    assert floe.delete(t.run_url(run3["id"])).status_code == 200
    after = scrape(floe)

    def delta(name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("floe_wap_runs_total", outcome="staged") == 3
    assert delta("floe_wap_runs_total", outcome="published") == 1
    assert delta("floe_wap_runs_total", outcome="rejected") == 1
    assert delta("floe_wap_runs_total", outcome="audit_failed") == 1
    assert delta("floe_wap_runs_total", outcome="abandoned") == 1
    assert delta("floe_hook_calls_total", verdict="pass") == 1
    assert delta("floe_hook_calls_total", verdict="reject") == 1
    assert delta("floe_hook_calls_total", verdict="error") == 1
    assert delta("floe_hook_call_duration_seconds_count") == 3
    assert delta("floe_hook_call_duration_seconds_sum") > 0
    publish = {"method": "POST",
               "route": "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap/{run}/publish"}
    assert delta("floe_http_requests_total", code="200", **publish) == 1
    assert delta("floe_http_requests_total", code="422", **publish) == 1
    assert delta("floe_http_requests_total", code="503", **publish) == 1
    assert delta("floe_db_pool_wait_seconds_count", pool="publish") >= 3


def test_publish_without_hook_is_counted(floe, uniq):
    t = new_table(floe, uniq)
    t.add_snapshot("main")
    run = t.stage()
    before = scrape(floe)
    r = t.publish(run["id"])
    assert r.status_code == 412, describe(r)
    after = scrape(floe)
    assert (after.value("floe_wap_runs_total", outcome="no_hook")
            - before.value("floe_wap_runs_total", outcome="no_hook")) == 1


# --------------------------------------------------------------------------
# pools, queues, PostgreSQL errors, the janitor


def test_pools_and_queues_at_rest(floe_factory):
    f = floe_factory(args=["--threads=3", "--commit-threads=5", "--publish-threads=2"])
    page = scrape(f)
    assert page.value("floe_db_pool_connections", pool="http") == 3
    assert page.value("floe_db_pool_connections", pool="commit") == 5
    assert page.value("floe_db_pool_connections", pool="publish") == 2
    assert page.value("floe_db_pool_connections", pool="janitor") == 1
    # The scrape itself holds no connection; nothing else runs.
    for pool in ("http", "commit", "publish"):
        assert page.value("floe_db_pool_connections_in_use", pool=pool) == 0
    for q in ("request", "commit", "publish"):
        assert page.value("floe_queue_depth", queue=q) == 0
        assert page.value("floe_queue_refused_total", queue=q) == 0


def test_queue_refusals_are_counted(floe_factory, uniq):
    """One commit thread and room for one waiting commit (and one waiting
    request): a burst of commits overflows the queues, and each 503 is
    counted under the queue that refused it."""
    f = floe_factory(args=["--commit-threads=1", "--queue-max=1"])
    t = new_table(f, uniq)
    codes = []

    def write(i):
        r = requests.post(f.url + t.url, json=props_commit(f"k{i}", "v"), timeout=60)
        codes.append(r.status_code)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(24)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    page = scrape(f)
    refused = codes.count(503)
    assert refused > 0
    assert page.value("floe_queue_refused_total", queue="commit") + \
        page.value("floe_queue_refused_total", queue="request") == refused
    for q in ("request", "commit"):
        assert page.value("floe_queue_depth", queue=q) == 0
    assert page.value("floe_commits_total", outcome="committed") == codes.count(200)


def test_postgres_errors_are_counted_by_sqlstate_class(floe, uniq):
    new_table(floe, uniq, "a")
    TableHandle(floe, [uniq], "b").create()
    before = scrape(floe)
    # A rename onto an existing table ends in a unique violation (23505).
    r = floe.post("/v1/tables/rename", json={
        "source": {"namespace": [uniq], "name": "a"},
        "destination": {"namespace": [uniq], "name": "b"}})
    assert r.status_code == 409, describe(r)
    # A since that is no timestamp is refused before any SQL runs: no
    # data exception (class 22) reaches PostgreSQL.
    r = floe.get("/v1/audit-log", params={"since": "not a time"})
    assert r.status_code == 400, describe(r)
    after = scrape(floe)

    def delta(cls):
        return (after.value("floe_postgres_errors_total", **{"class": cls})
                - before.value("floe_postgres_errors_total", **{"class": cls}))

    assert delta("23") == 1
    assert delta("22") == 0
    assert delta("40") == 0


def test_janitor_rounds_and_rows_are_counted(floe_factory, uniq):
    f = floe_factory(args=["--janitor-interval-seconds=1"])
    assert wait_until(lambda: scrape(f).value("floe_janitor_rounds_total") >= 2, 15)
    # A dropped table with purgeRequested: the janitor purges its files.
    t = new_table(f, uniq)
    r = f.delete(t.url, params={"purgeRequested": "true"})
    assert r.status_code == 204, describe(r)
    assert wait_until(lambda: scrape(f).value("floe_janitor_rows_total", kind="purges_done") == 1, 20)
    assert scrape(f).value("floe_janitor_files_removed_total", kind="purged") >= 1
