"""The monitoring files, checked without Docker: docker/prometheus.yml
scrapes the compose deployment's floe, the compose file's monitoring
profile mounts what exists, and every query of the Grafana dashboard
(examples/grafana/floe-dashboard.json) names metrics a real floe's
/metrics page lists. (tests/docker/test_compose.py runs the Prometheus of
the profile for real; Grafana's image is not available there.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from conftest import REPO

DOCKER = REPO / "docker"
DASHBOARD = REPO / "examples" / "grafana" / "floe-dashboard.json"
SUFFIXES = ("_bucket", "_sum", "_count")


def compose():
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def exported(floe) -> set[str]:
    """Every sample name floe's /metrics can list (histogram series included)."""
    text = requests.get(floe.url + "/metrics", timeout=10).text
    names = set()
    for fam in text_string_to_metric_families(text):
        if fam.type == "counter":
            names.add(fam.name + "_total")
        elif fam.type == "histogram":
            names.update(fam.name + s for s in SUFFIXES)
        else:
            names.add(fam.name)
    return names


def dashboard_exprs():
    dash = json.loads(DASHBOARD.read_text())
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            yield panel, target


def test_prometheus_scrapes_the_compose_floe():
    cfg = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    floe_job = jobs["floe"]
    assert floe_job.get("metrics_path", "/metrics") == "/metrics"
    targets = [t for sc in floe_job["static_configs"] for t in sc["targets"]]
    svc = compose()["services"]["floe"]
    port = svc["environment"]["FLOE_LISTEN"].rsplit(":", 1)[1]
    assert targets == [f"floe:{port}"], targets
    promtool = shutil.which("promtool")
    if promtool:
        res = subprocess.run([promtool, "check", "config", str(DOCKER / "prometheus.yml")],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr


def test_monitoring_profile_mounts_what_exists_and_binds_loopback():
    services = compose()["services"]
    for name in ("prometheus", "grafana"):
        svc = services[name]
        assert svc["profiles"] == ["monitoring"], name
        for port in svc["ports"]:
            assert port.startswith("127.0.0.1:"), (name, port)
        for vol in svc.get("volumes", []):
            src = vol.split(":", 1)[0]
            assert (DOCKER / src).exists(), (name, vol)
    assert any("prometheus.yml:/etc/prometheus/prometheus.yml" in v
               for v in services["prometheus"]["volumes"])
    # Not started by a plain up: every other service has no monitoring profile.
    for name, svc in services.items():
        if name not in ("prometheus", "grafana"):
            assert "monitoring" not in svc.get("profiles", []), name
    env = services["grafana"]["environment"]
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert env["GF_AUTH_DISABLE_LOGIN_FORM"] == "true"


def test_grafana_provisioning_points_at_the_dashboard_and_prometheus():
    prov = DOCKER / "grafana" / "provisioning"
    ds = yaml.safe_load((prov / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert [d["url"] for d in ds] == ["http://prometheus:9090"]
    providers = yaml.safe_load((prov / "dashboards" / "floe.yml").read_text())["providers"]
    path = providers[0]["options"]["path"]
    mounts = compose()["services"]["grafana"]["volumes"]
    assert any(v.startswith("../examples/grafana/floe-dashboard.json:" + path + "/") for v in mounts), mounts


def test_dashboard_queries_name_exported_metrics(floe):
    names = exported(floe)
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    assert {v["name"] for v in dash["templating"]["list"]} >= {"datasource", "job", "instance"}
    used = set()
    ids = set()
    for panel in dash["panels"]:
        assert panel["id"] not in ids
        ids.add(panel["id"])
    for panel, target in dashboard_exprs():
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        expr = target["expr"]
        assert expr.count("(") == expr.count(")"), expr
        found = set(re.findall(r"\bfloe_[a-z_]+", expr))
        assert found, expr
        assert found <= names, f"{panel['title']}: {sorted(found - names)} not exported"
        used |= found
    # What an operator is promised: request rate and latency by route,
    # commit outcomes, conflicts, retries, hook verdicts, pool, queue depth.
    for must in ("floe_http_requests_total", "floe_http_request_duration_seconds_bucket",
                 "floe_commits_total", "floe_commit_conflicts_total", "floe_commit_retries_total",
                 "floe_wap_runs_total", "floe_hook_calls_total",
                 "floe_hook_call_duration_seconds_bucket", "floe_db_pool_connections_in_use",
                 "floe_db_pool_wait_seconds_bucket", "floe_queue_depth",
                 "floe_postgres_errors_total", "floe_janitor_rows_total"):
        assert must in used, f"the dashboard shows no {must}"
