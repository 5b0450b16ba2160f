"""A real HTTP webhook receiver for floe's audit-hook tests.

``Receiver`` runs ``http.server`` in a thread on a free 127.0.0.1 port and
answers floe's audit calls the way a test tells it to: a status and a body,
after a delay (to hang past floe's timeout), or with bytes that are not HTTP
at all.  It records every request (method, path, headers, raw body) and,
when given the shared secret, checks the ``X-Floe-Signature-256`` header by
recomputing the HMAC-SHA256 of ``"<X-Floe-Timestamp>.<raw body>"``.

``refused_url()`` gives a URL on a free port where nobody listens, so that
a connection to it is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import socket
import threading
import time
from dataclasses import dataclass, field


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def refused_url(path: str = "/audit") -> str:
    """A URL on 127.0.0.1 where no one listens: connecting is refused."""
    port = free_port()
    # Make sure: a port just released is not reused by anyone here.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} unexpectedly accepts connections"
    return f"http://127.0.0.1:{port}{path}"


def signature(secret: str | bytes, timestamp: str | int, body: bytes) -> str:
    """The value of X-Floe-Signature-256: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


@dataclass
class Reply:
    """How to answer one request.

    status/body/headers: the HTTP answer (a dict or list body is sent as
    JSON).  delay: seconds to wait before answering (the wait ends early
    when the receiver stops).  raw: bytes written to the socket instead of
    an HTTP answer, after which the connection is closed.
    """
    status: int = 200
    body: object = b""
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None

    def encoded(self) -> tuple[bytes, str | None]:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return bytes(self.body), None


PASS = Reply(200, {"passed": True})


@dataclass
class Request:
    method: str
    path: str
    headers: dict            # lower-case names
    body: bytes
    received_at: float       # time.monotonic()
    signature_valid: bool | None = None  # None: the receiver has no secret

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def header(self, name: str):
        return self.headers.get(name.lower())


class Receiver:
    """A webhook receiver on 127.0.0.1:<free port>.

    Answers come from ``script`` (a list of Reply, used one per request in
    order) and then ``default``.  ``on_request(request)`` is called before
    answering, in the handler thread; whatever it returns, if a Reply,
    replaces the scripted answer.
    """

    def __init__(self, default: Reply | None = None, script=None, secret: str | None = None,
                 on_request=None, path: str = "/audit"):
        self.default = default or PASS
        self.script = list(script or [])
        self.secret = secret
        self.on_request = on_request
        self.path = path
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"webhook-{self.port}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def set(self, default: Reply | None = None, script=None, on_request="keep"):
        """Change the behaviour for the following requests."""
        with self._lock:
            if default is not None:
                self.default = default
            if script is not None:
                self.script = list(script)
            if on_request != "keep":
                self.on_request = on_request

    def _next_reply(self) -> Reply:
        with self._lock:
            if self.script:
                return self.script.pop(0)
            return self.default

    def _record(self, req: Request):
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def wait_for(self, n: int, timeout: float = 10.0) -> list[Request]:
        """Wait until at least n requests arrived; returns all of them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return list(self.requests)

    def clear(self):
        with self._lock:
            self.requests.clear()

    def sleep(self, seconds: float):
        """Wait, unless the receiver stops first."""
        self._stopping.wait(seconds)

    def stop(self):
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class _Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1 so that "Expect: 100-continue" is answered at once (an
    # HTTP/1.0 server makes libcurl wait a second before sending a body).
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _read_body(self) -> bytes:
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self):
        rcv: Receiver = self.server.receiver
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = Request(self.command, self.path, headers, body, time.monotonic())
        if rcv.secret is not None:
            got = headers.get("x-floe-signature-256")
            ts = headers.get("x-floe-timestamp")
            req.signature_valid = (got is not None and ts is not None
                                   and hmac.compare_digest(got, signature(rcv.secret, ts, body)))
        rcv._record(req)
        reply = rcv._next_reply()
        if rcv.on_request is not None:
            try:
                override = rcv.on_request(req)
            except Exception as e:  # the test reads rcv.errors
                rcv.errors.append(f"on_request: {e!r}")
                override = Reply(500, f"receiver callback failed: {e!r}")
            if isinstance(override, Reply):
                reply = override
        if reply.delay:
            rcv.sleep(reply.delay)
        self.close_connection = True
        try:
            if reply.raw is not None:
                self.wfile.write(reply.raw)
                self.wfile.flush()
                return
            payload, ctype = reply.encoded()
            self.send_response(reply.status)
            if ctype and not any(k.lower() == "content-type" for k in reply.headers):
                self.send_header("Content-Type", ctype)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # floe gave up waiting (a timeout test)

    do_POST = _handle
    do_PUT = _handle
    do_GET = _handle
