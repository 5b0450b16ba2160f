"""moto's S3 server on 0.0.0.0:S3_PORT with the bucket S3_BUCKET made
before it counts as ready. `serve.py --check` (the health check) exits 0
once the bucket answers HeadBucket."""

from __future__ import annotations

import os
import signal
import sys
import threading

import boto3
from botocore.config import Config

PORT = int(os.environ.get("S3_PORT", "9000"))
BUCKET = os.environ.get("S3_BUCKET", "warehouse")


def client():
    # moto checks no signature: any key pair does.
    return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{PORT}", region_name="us-east-1",
                        aws_access_key_id="check", aws_secret_access_key="check",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def main() -> int:
    if sys.argv[1:] == ["--check"]:
        try:
            client().head_bucket(Bucket=BUCKET)
        except Exception as e:  # noqa: BLE001 - any failure is "not healthy"
            print(f"not ready: {e}", file=sys.stderr)
            return 1
        return 0
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="0.0.0.0", port=PORT)
    server.start()
    client().create_bucket(Bucket=BUCKET)
    print(f"S3 on port {PORT}, bucket {BUCKET}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
