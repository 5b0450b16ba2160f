"""moto's S3 server on 0.0.0.0:S3_PORT with the bucket S3_BUCKET made
before it counts as ready. `serve.py --check` (the health check) exits 0
once the bucket answers HeadBucket.

With S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY set, moto checks every
request's signature (its IAM checks): the one key pair it knows is that
one, of an IAM user allowed everything, so a client holding no key, or
another, is refused. Without them, no signature is checked."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

import boto3
from botocore.config import Config

PORT = int(os.environ.get("S3_PORT", "9000"))
BUCKET = os.environ.get("S3_BUCKET", "warehouse")
KEY_ID = os.environ.get("S3_ACCESS_KEY_ID", "")
SECRET = os.environ.get("S3_SECRET_ACCESS_KEY", "")
# The requests that make the IAM user, its key and its policy are the only
# ones moto lets through unchecked.
SETUP_REQUESTS = 3


def client(service="s3", key=None, secret=None):
    # Without a key pair configured moto checks no signature: any does.
    return boto3.client(service, endpoint_url=f"http://127.0.0.1:{PORT}", region_name="us-east-1",
                        aws_access_key_id=key or KEY_ID or "check",
                        aws_secret_access_key=secret or SECRET or "check",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def make_user():
    """The IAM user whose key pair is S3_ACCESS_KEY_ID/S3_SECRET_ACCESS_KEY
    (moto makes a key of its own; it is given the configured one)."""
    iam = client("iam")
    iam.create_user(UserName="floe")
    iam.create_access_key(UserName="floe")
    iam.put_user_policy(UserName="floe", PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.iam.models import iam_backends

    [key] = iam_backends[DEFAULT_ACCOUNT_ID]["aws"].get_user("floe").access_keys
    key.access_key_id = KEY_ID
    key.secret_access_key = SECRET


def main() -> int:
    if sys.argv[1:] == ["--check"]:
        try:
            client().head_bucket(Bucket=BUCKET)
        except Exception as e:  # noqa: BLE001 - any failure is "not healthy"
            print(f"not ready: {e}", file=sys.stderr)
            return 1
        return 0
    if bool(KEY_ID) != bool(SECRET):
        print("set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither", file=sys.stderr)
        return 2
    if KEY_ID:
        # Read by moto's settings when it is imported.
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = str(SETUP_REQUESTS)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="0.0.0.0", port=PORT)
    server.start()
    if KEY_ID:
        make_user()
    # The first request moto checks, when it checks.
    client().create_bucket(Bucket=BUCKET)
    checked = "every signature checked" if KEY_ID else "no signature checked"
    print(f"S3 on port {PORT}, bucket {BUCKET}, {checked}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
