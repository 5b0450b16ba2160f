"""Faults of object storage as a commit meets them, against each S3 server
on loopback (moto and versitygw): an object already at the name floe chose
for the new metadata, credentials that are wrong at start-up, and
credentials rotated while floe runs. Each is a known failure: a 503 with
the Iceberg error body, the table unchanged, nothing overwritten.
(The server down or answering 503 during a commit, and a bucket that does
not exist at start-up, are in test_s3_warehouse.py, run against both.)
"""

from __future__ import annotations

import urllib.parse

import pytest

from s3_servers import (SERVERS, Proxy, S3Server, VersityServer, keys, make_bucket,
                        moto_checking_signatures, s3_env)
from conftest import _start_floe_on_fresh_db, _stop_and_check, assert_error, run_floe
from test_s3_warehouse import commit_property, create_table, load


@pytest.fixture(scope="module", params=sorted(SERVERS))
def s3(request):
    server = SERVERS[request.param]()
    yield server
    server.stop()


def test_an_object_already_at_the_chosen_name_is_a_known_failure(postgres, s3):
    """Another writer stores an object at the very key floe's PUT names
    just before the PUT arrives: the server answers 412 to the conditional
    PUT, the other object stays as it was, and the table is unchanged."""
    bucket = make_bucket(s3)
    proxy = Proxy(s3.port)
    f = _start_floe_on_fresh_db(postgres, env=s3_env(proxy.url, f"s3://{bucket}/wh"))
    try:
        f.create_namespace(["x"])
        assert create_table(f, "x", "t").status_code == 200
        before = load(f, "x", "t")
        taken = []
        serve = proxy._serve

        def occupying(c):
            req = proxy._read_request(c)
            if req.startswith(b"PUT ") and not taken:
                path = req.split(b" ", 2)[1].decode()
                key = urllib.parse.unquote(path.split("?", 1)[0]).split("/", 2)[2]
                s3.client().put_object(Bucket=bucket, Key=key, Body=b"someone else's")
                taken.append(key)
            try:
                c.sendall(proxy.forward(req))
            finally:
                c.close()

        proxy._serve = occupying
        r = commit_property(f, "x", "t", "lost")
        proxy._serve = serve
        assert len(taken) == 1
        assert taken[0].startswith("wh/x/t/metadata/") and taken[0].endswith(".metadata.json")
        assert_error(r, 503, "ServiceUnavailableException")
        assert "already exists" in r.json()["error"]["message"]
        assert r.headers.get("Retry-After") == "1"
        # Never overwritten, never swapped in.
        got = s3.client().get_object(Bucket=bucket, Key=taken[0])["Body"].read()
        assert got == b"someone else's"
        after = load(f, "x", "t")
        assert after["metadata-location"] == before["metadata-location"]
        assert "k" not in after["metadata"].get("properties", {})

        # The client's retry gets a fresh name and lands.
        r = commit_property(f, "x", "t", "again")
        assert r.status_code == 200, r.text
        assert load(f, "x", "t")["metadata"]["properties"]["k"] == "again"
    finally:
        _stop_and_check(f)
        proxy.down()


def checked_key(s3) -> tuple[object, str, str, str]:
    """A server that checks signatures, a bucket on it and a key pair it
    accepts: moto with IAM checks on (a user allowed everything), or
    versitygw as it is (its root user)."""
    if isinstance(s3, S3Server):
        server = moto_checking_signatures()
        return server, "signed", server.key[0], server.key[1]
    return s3, make_bucket(s3), s3.key, s3.secret


def test_wrong_credentials_stop_the_start(postgres, s3):
    server, bucket, key_id, _ = checked_key(s3)
    try:
        env = s3_env(server.url, f"s3://{bucket}/wh", AWS_ACCESS_KEY_ID=key_id,
                     AWS_SECRET_ACCESS_KEY="not-the-secret-at-all")
        r = run_floe([], env={"FLOE_DATABASE_URL": postgres.new_database(), **env})
        assert r.returncode == 2, r.stderr
        assert f"refused floe's credentials for the bucket {bucket}" in r.stderr
        assert "not-the-secret-at-all" not in r.stderr
    finally:
        if server is not s3:
            server.stop()


def rotate(server, s3, key_id: str) -> None:
    """Makes the secret floe holds invalid, as a rotation that floe did not
    follow: moto deletes the IAM access key; versitygw restarts on the same
    directory with a new secret for its root user."""
    if server is not s3:
        server.client("iam", key=key_id, secret=server.floe_secret).delete_access_key(
            UserName="floe", AccessKeyId=key_id)
    else:
        server.restart(secret="rotated-secret")


def test_credentials_rotated_away_make_each_write_a_known_failure(postgres, s3):
    server, bucket, key_id, secret = checked_key(s3)
    server.floe_secret = secret
    f = _start_floe_on_fresh_db(postgres, env=s3_env(
        server.url, f"s3://{bucket}/wh", AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret))
    try:
        f.create_namespace(["r"])
        assert create_table(f, "r", "t").status_code == 200
        before = load(f, "r", "t")["metadata-location"]
        # (moto's signature check refuses listings with a '/' in the
        # prefix; versitygw's listing is compared.)
        stored = keys(s3, bucket) if server is s3 else None
        rotate(server, s3, key_id)
        for attempt in range(2):
            r = commit_property(f, "r", "t", f"refused-{attempt}")
            assert_error(r, 503, "ServiceUnavailableException")
            assert "object storage refused floe's credentials" in r.json()["error"]["message"]
            assert secret not in r.text
        r = create_table(f, "r", "t2")
        assert_error(r, 503, "ServiceUnavailableException")
        assert "object storage refused floe's credentials" in r.json()["error"]["message"]
        if server is s3:
            # A key id the server does not know at all: versitygw answers
            # 404 XAdminUserNotFound where S3 answers 403
            # InvalidAccessKeyId; still a known failure, nothing written.
            s3.restart(key="rotated-key")
            r = commit_property(f, "r", "t", "unknown-key")
            assert_error(r, 503, "ServiceUnavailableException")
            assert "object storage" in r.json()["error"]["message"]
        # Reads from the catalog go on; nothing was swapped.
        assert load(f, "r", "t")["metadata-location"] == before
        assert secret not in f.log()
        if stored is not None:
            assert keys(s3, bucket) == stored
    finally:
        _stop_and_check(f)
        if server is not s3:
            server.stop()
        else:
            env = s3_env("", "")
            s3.restart(key=env["AWS_ACCESS_KEY_ID"], secret=env["AWS_SECRET_ACCESS_KEY"])


def test_commits_over_kept_connections_survive_the_server_restarting(postgres):
    """With a server that keeps connections open (versitygw --keep-alive),
    floe reuses its connection for the next request; when the server went
    away and came back, the kept connection is dead and the next commit
    still lands, on a new one."""
    server = VersityServer(keep_alive=True)
    try:
        bucket = make_bucket(server)
        f = _start_floe_on_fresh_db(postgres, env=s3_env(server.url, f"s3://{bucket}/wh"))
        try:
            f.create_namespace(["ka"])
            assert create_table(f, "ka", "t").status_code == 200
            for i in range(10):
                r = commit_property(f, "ka", "t", f"v{i}")
                assert r.status_code == 200, r.text
            server.restart()
            for i in range(3):
                r = commit_property(f, "ka", "t", f"after{i}")
                assert r.status_code == 200, r.text
            got = load(f, "ka", "t")
            assert got["metadata"]["properties"]["k"] == "after2"
            metas = {k for k in keys(server, bucket) if k.endswith(".metadata.json")}
            assert len(metas) == 14  # the create and thirteen commits
        finally:
            _stop_and_check(f)
    finally:
        server.stop()
