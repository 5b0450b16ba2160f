"""S3-compatible servers on loopback for the tests of s3:// warehouses:
moto's server mode (S3, STS and IAM, state in memory), a proxy in front
of one that stands for it going down or answering 503, and the
environment that points a floe at one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid

import boto3
import pytest
from botocore.config import Config

from conftest import free_port, port_open, wait_until

REGION = "us-east-1"
KEY_ID = "floe-test-key"
SECRET = "floe-test-secret"


class S3Server:
    """moto's S3 server on a loopback port (state in memory)."""

    def __init__(self, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            env=full_env)
        if not wait_until(lambda: port_open("127.0.0.1", self.port), 30):
            self.stop()
            pytest.fail("moto's S3 server did not start")

    def client(self, service="s3", key=KEY_ID, secret=SECRET):
        return boto3.client(service, endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=key, aws_secret_access_key=secret,
                            config=Config(s3={"addressing_style": "path"}))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Proxy:
    """A TCP proxy in front of the S3 server, one request per connection
    (moto closes each). mode: "pass", "503" (answers SlowDown itself) or
    "down" (the port refuses connections)."""

    def __init__(self, upstream_port: int):
        self.upstream = upstream_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "pass"
        self.seen = []
        self._sock = None
        self._stop = False
        self.up()

    def up(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self._sock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def down(self):
        s, self._sock = self._sock, None
        if s is not None:
            # shutdown wakes the accepting thread and stops the listening
            # at once; close alone would not while accept() holds it.
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read_request(c) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = c.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def forward(self, req: bytes) -> bytes:
        """Sends one request to the S3 server and returns its whole answer."""
        up = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
        up.sendall(req)
        answer = b""
        while True:
            chunk = up.recv(65536)
            if not chunk:
                break
            answer += chunk
        up.close()
        return answer

    def _serve(self, c):
        try:
            req = self._read_request(c)
            if not req:
                return
            self.seen.append(req.split(b"\r\n", 1)[0].decode())
            if self.mode == "503":
                body = (b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
                        b"<Message>Please reduce your request rate.</Message></Error>")
                c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                          b"Connection: close\r\nContent-Length: " + str(len(body)).encode()
                          + b"\r\n\r\n" + body)
                return
            c.sendall(self.forward(req))
        except OSError:
            pass
        finally:
            c.close()


def make_bucket(s3: S3Server) -> str:
    name = f"wh-{uuid.uuid4().hex[:12]}"
    s3.client().create_bucket(Bucket=name)
    return name


def s3_env(endpoint: str, warehouse: str, **extra) -> dict:
    env = {
        "FLOE_WAREHOUSE": warehouse,
        "FLOE_S3_ENDPOINT": endpoint,
        "FLOE_S3_REGION": REGION,
        "FLOE_S3_PATH_STYLE": "true",
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "FLOE_JANITOR_INTERVAL_SECONDS": "1",
    }
    env.update(extra)
    return env


def keys(s3: S3Server, bucket: str, prefix: str = "") -> set[str]:
    out = set()
    for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                      Prefix=prefix):
        out.update(o["Key"] for o in page.get("Contents", []))
    return out
