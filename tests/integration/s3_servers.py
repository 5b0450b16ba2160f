"""S3-compatible servers on loopback for the tests of s3:// warehouses:
moto's server mode (S3, STS and IAM, state in memory) and versitygw (S3 on
a directory of the local file system, its binary built by
scripts/s3-deps.sh), a proxy in front of one that stands for it going down
or answering 503, and the environment that points a floe at one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import tempfile
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from conftest import free_port, port_open, wait_until

REGION = "us-east-1"
KEY_ID = "floe-test-key"
SECRET = "floe-test-secret"


REPO = Path(__file__).resolve().parents[2]


class S3Server:
    """moto's S3 server on a loopback port (state in memory)."""

    name = "moto"

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
        end(self.proc)


def end(proc: subprocess.Popen) -> None:
    """Stops a server's process: SIGTERM, then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def moto_checking_signatures(bucket: str = "signed") -> S3Server:
    """moto's server checking every request's signature against its IAM
    users, with a user floe allowed everything and the bucket: the first
    four requests (making the user, its key, its policy and the bucket) are
    let through unchecked. .key is the user's (key id, secret)."""
    server = S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "4"})
    iam = server.client("iam")
    iam.create_user(UserName="floe")
    key = iam.create_access_key(UserName="floe")["AccessKey"]
    iam.put_user_policy(UserName="floe", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    server.client().create_bucket(Bucket=bucket)
    server.key = (key["AccessKeyId"], key["SecretAccessKey"])
    return server


_versitygw_bin = None


def versitygw_binary() -> str:
    """The versitygw binary scripts/s3-deps.sh built (cached outside the
    clone). A failed build fails the tests: they are not skipped."""
    global _versitygw_bin
    if _versitygw_bin is None:
        r = subprocess.run([str(REPO / "scripts" / "s3-deps.sh")], capture_output=True,
                           text=True, timeout=1200)
        if r.returncode != 0:
            pytest.fail(f"scripts/s3-deps.sh failed: {r.stderr}")
        _versitygw_bin = r.stdout.strip().splitlines()[-1]
    return _versitygw_bin


class VersityServer:
    """versitygw on a loopback port, its buckets directories of a temporary
    directory (the posix backend). keep_alive: connections kept open after
    an answer, as S3 does (versitygw closes each by default; with it kept,
    pyarrow's multipart uploads now and then meet a 400 "error when parsing
    the HTTP request", so engines' tests run without). One root user, whose
    key pair signs every request (it checks each signature). restart()
    starts it again on the same port and directory, with other credentials
    if given: the stored objects stay, as across a key rotation."""

    name = "versitygw"

    def __init__(self, key: str = KEY_ID, secret: str = SECRET, keep_alive: bool = False):
        self.port = free_port()
        self.keep_alive = keep_alive
        self.url = f"http://127.0.0.1:{self.port}"
        self._dir = tempfile.TemporaryDirectory(prefix="floe-versitygw-")
        self.root = Path(self._dir.name) / "buckets"
        self.root.mkdir()
        self.proc = None
        self.key, self.secret = key, secret
        self._start()

    def _start(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "ROOT_ACCESS_KEY_ID": self.key, "ROOT_SECRET_ACCESS_KEY": self.secret}
        self.proc = subprocess.Popen(
            [versitygw_binary(), "--port", f"127.0.0.1:{self.port}", "--region", REGION,
             *(["--keep-alive"] if self.keep_alive else []), "--quiet", "posix",
             str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            env=env)
        if not wait_until(lambda: port_open("127.0.0.1", self.port), 30):
            self.stop()
            pytest.fail("versitygw did not start")

    def restart(self, key: str | None = None, secret: str | None = None):
        self._halt()
        self.key = key or self.key
        self.secret = secret or self.secret
        self._start()

    def client(self, service="s3", key=None, secret=None):
        assert service == "s3", "versitygw serves S3 only"
        return boto3.client("s3", endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=key or self.key,
                            aws_secret_access_key=secret or self.secret,
                            config=Config(s3={"addressing_style": "path"}))

    def _halt(self):
        if self.proc is not None:
            end(self.proc)
        self.proc = None

    def stop(self):
        self._halt()
        self._dir.cleanup()


SERVERS = {"moto": S3Server, "versitygw": VersityServer}


class Proxy:
    """A TCP proxy in front of the S3 server, one request per connection
    (each forwarded request asks the server to close it after answering). mode: "pass", "503" (answers SlowDown itself) or
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
        line, _, rest = req.partition(b"\r\n")
        up.sendall(line + b"\r\nConnection: close\r\n" + rest)
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
