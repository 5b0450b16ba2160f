#!/usr/bin/env python3
"""End-to-end test of floe's compose deployment on an s3:// warehouse
(docker/docker-compose.yml with the overlay docker/docker-compose.s3.yml).

Needs what tests/docker/test_compose.py needs (scripts/docker-test.sh runs
both, this one second; `scripts/docker-test.sh s3` this one alone) and
reuses its helpers. It builds the images (the
S3 service from docker/test-s3), brings the deployment up, and checks:

- postgres, s3 and floe healthy, /ready 200 on the published port;
- the S3 service checks signatures: a request signed with a wrong secret
  is refused (SignatureDoesNotMatch);
- PyIceberg (a one-off container of the pyiceberg service, holding no
  storage credentials and no S3 settings: no AWS_* or PyIceberg S3
  variable, no ~/.aws) creates a namespace and a table through floe,
  appends two batches and reads them back through a fresh catalog, with
  the key pair, endpoint and addressing floe vends (static mode);
- the table's metadata and data are objects in the S3 service's bucket,
  under the table's prefix, floe's current metadata among them; the
  file:// warehouse folder of floe's volume stays empty;
- docker compose down -v removes it all.

Each check prints "ok" or "FAIL"; the counts go to --result FILE as
"PASSED FAILED". Exit status 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import test_compose as tc
from test_compose import CheckFailed, expect

OVERLAY = tc.REPO / "docker" / "docker-compose.s3.yml"
IDENT = "s3demo.orders"


def compose(*args, timeout=600, check=True):
    """docker compose with both files, as docker-compose.s3.yml says."""
    return tc.sh(["docker", "compose", "-f", str(tc.COMPOSE_FILE), "-f", str(OVERLAY), *args],
                 timeout=timeout, check=check)


# Every helper of test_compose.py (health, wait_healthy, container) then
# looks at this deployment.
tc.compose = compose
state: dict = {}


def check_compose_up():
    # The PostgreSQL image test_compose.py builds (from its layers in the
    # engine's cache when that test ran first), for this test run alone.
    if os.environ.get("FLOE_POSTGRES_IMAGE") == tc.TEST_PG_IMAGE:
        tc.check_build_test_postgres()
    compose("--profile", "tools", "--profile", "monitoring", "down", "-v", "--remove-orphans",
            timeout=180, check=False)
    compose("up", "-d", "--build", timeout=1800)


def check_healthy():
    tc.wait_healthy(["postgres", "s3", "floe"])
    tc.wait_ready()
    cfg = compose("exec", "-T", "floe", "printenv", "FLOE_WAREHOUSE").stdout.strip()
    expect(cfg == "s3://warehouse/wh", f"floe's warehouse: {cfg!r}")


REFUSED = """
import os, boto3
from botocore.config import Config
c = boto3.client("s3", endpoint_url="http://127.0.0.1:9000", region_name="us-east-1",
                 aws_access_key_id=os.environ["S3_ACCESS_KEY_ID"], aws_secret_access_key="wrong",
                 config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
try:
    c.put_object(Bucket="warehouse", Key="wh/intruder", Body=b"x")
    print("accepted")
except Exception as e:
    print(getattr(e, "response", {}).get("Error", {}).get("Code", repr(e)))
"""


def check_s3_checks_signatures():
    p = compose("exec", "-T", "s3", "python", "-c", REFUSED)
    got = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr
    expect(got == "SignatureDoesNotMatch", f"a wrong secret's PutObject: {got!r}")


def check_pyiceberg_writes_and_reads():
    p = compose("run", "--rm", "-T", "-v", f"{tc.HELPERS}:/floe-tests:ro", "pyiceberg",
                "python", "/floe-tests/pyiceberg_s3.py", IDENT, timeout=300)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    expect(lines, f"pyiceberg_s3.py: no result in {p.stdout!r} {p.stderr[-2000:]!r}")
    got = json.loads(lines[-1])
    expect(got["ids"] == [1, 2, 3, 4], f"rows read back: {got}")
    expect(got["cities"] == ["Oslo", "Lima", "Pune", "Kyiv"], f"rows read back: {got}")
    expect(got["location"] == "s3://warehouse/wh/s3demo/orders", f"location: {got}")
    # Nothing of its own: what it used came from floe.
    expect(got["own-variables"] == [] and not got["aws-dir"], f"the client's own settings: {got}")
    for k in ("s3.access-key-id", "s3.secret-access-key", "s3.endpoint", "s3.path-style-access"):
        expect(k in got["io-keys"], f"{k} not vended: {got['io-keys']}")
    answer = tc.ok("GET", "/v1/namespaces/s3demo/tables/orders")
    expect(answer["metadata-location"] == got["metadata-location"], f"floe: {answer['metadata-location']}")
    expect(answer["metadata-location"].startswith("s3://warehouse/wh/s3demo/orders/metadata/"),
           answer["metadata-location"])
    state["metadata-location"] = answer["metadata-location"]


LIST = """
import json, os, boto3
from botocore.config import Config
c = boto3.client("s3", endpoint_url="http://127.0.0.1:9000", region_name="us-east-1",
                 aws_access_key_id=os.environ["S3_ACCESS_KEY_ID"],
                 aws_secret_access_key=os.environ["S3_SECRET_ACCESS_KEY"],
                 config=Config(s3={"addressing_style": "path"}))
keys = [o["Key"] for p in c.get_paginator("list_objects_v2").paginate(Bucket="warehouse")
        for o in p.get("Contents", [])]
print(json.dumps(keys))
"""


def check_objects_in_the_bucket():
    p = compose("exec", "-T", "s3", "python", "-c", LIST)
    keys = json.loads(p.stdout.strip().splitlines()[-1])
    expect(keys and all(k.startswith("wh/s3demo/orders/") for k in keys), f"objects: {keys}")
    meta = [k for k in keys if k.endswith(".metadata.json")]
    data = [k for k in keys if k.startswith("wh/s3demo/orders/data/") and k.endswith(".parquet")]
    expect(len(meta) == 3, f"metadata objects (create and two appends): {meta}")
    expect(len(data) == 2, f"data files: {data}")
    current = state["metadata-location"].removeprefix("s3://warehouse/")
    expect(current in meta, f"{current} not in {meta}")
    # The image's file:// warehouse folder stays empty.
    p = compose("exec", "-T", "floe", "find", "/var/lib/floe/warehouse", "-mindepth", "1")
    expect(p.stdout.strip() == "", f"files in floe's volume: {p.stdout}")


def check_down_removes_volumes():
    compose("down", "-v", timeout=180)
    p = tc.sh(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={tc.PROJECT}"])
    expect(p.stdout.strip() == "", f"containers left: {p.stdout}")


CHECKS = [
    ("s3 overlay: docker compose up -d --build (S3 service built from docker/test-s3)",
     check_compose_up),
    ("s3 overlay: postgres, s3 and floe healthy; floe on s3://warehouse/wh", check_healthy),
    ("s3 overlay: the S3 service refuses a request signed with a wrong secret", check_s3_checks_signatures),
    ("s3 overlay: PyIceberg, holding no storage credentials, creates, writes and reads a table "
     "with floe's vended credentials", check_pyiceberg_writes_and_reads),
    ("s3 overlay: metadata and data files are objects under the table's prefix", check_objects_in_the_bucket),
    ("s3 overlay: docker compose down -v removes it", check_down_removes_volumes),
]


def main():
    signal.signal(signal.SIGTERM, tc.interrupted)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--result", help="write 'PASSED FAILED' here")
    ap.add_argument("--log", help="append every command's output here")
    args = ap.parse_args()
    if args.log:
        tc.LOG = open(args.log, "a")
    os.environ.setdefault("FLOE_POSTGRES_IMAGE", tc.TEST_PG_IMAGE)
    tc.PORT = tc.host_port()
    tc.BASE = f"http://127.0.0.1:{tc.PORT}"
    os.environ["FLOE_PORT"] = str(tc.PORT)
    os.environ["FLOE_ADMIN_CREDENTIAL"] = tc.ADMIN_CREDENTIAL
    tc.CHECKS[:] = CHECKS
    tc.FATAL.clear()
    tc.FATAL.update({check_compose_up, check_healthy})
    try:
        passed, failed = tc.run_checks()
    except KeyboardInterrupt as e:
        print(f"FAIL interrupted ({e})", flush=True)
        passed, failed = tc.PROGRESS["passed"], tc.PROGRESS["failed"] + 1
    if args.result:
        Path(args.result).write_text(f"{passed} {failed}\n")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
