#!/usr/bin/env python3
"""Builds the seed corpus of each fuzz target from floe's test fixtures.

  seed.py FIXTURE_DIR OUT_DIR

OUT_DIR/<target>/ receives one file per seed: createTable bodies from the
create fixtures, {"base", "requirements", "updates"} documents from the
commit fixtures, identifiers and URL fragments, hook registrations, and
tokens, keys and claims (RFC 7515's ES256 example among them).
The committed corpus (tests/fuzz/corpus/<target>/, inputs that once found
a bug) is added by the runner, not here.
"""

import hashlib
import json
import sys
from pathlib import Path


def write(out: Path, target: str, data: bytes):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def write_view_seeds(out: Path):
    """createView bodies and view commits for fuzz_view."""
    schema = {"type": "struct", "schema-id": 0,
              "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}]}
    schema2 = {"type": "struct", "fields": [{"id": 1, "name": "y", "required": False,
                                              "type": {"type": "list", "element-id": 2,
                                                       "element": "string",
                                                       "element-required": False}}]}

    def version(vid, sid, dialects):
        return {"version-id": vid, "timestamp-ms": 1000 + vid, "schema-id": sid,
                "summary": {"engine-name": "spark"}, "default-namespace": ["ns"],
                "default-catalog": None,
                "representations": [{"type": "sql", "sql": "select 1", "dialect": d}
                                    for d in dialects]}
    base = {"view-uuid": "9c12b9a4-2b8c-4e0a-8a4c-7f2d3f6c1a10", "format-version": 1,
            "location": "file:///warehouse/ns/v", "schemas": [schema], "current-version-id": 1,
            "versions": [version(1, 0, ["spark"])],
            "version-log": [{"timestamp-ms": 1001, "version-id": 1}],
            "properties": {"version.history.num-entries": "2"}}
    write(out, "fuzz_view", json.dumps({"request": {
        "name": "v", "schema": schema, "view-version": version(1, 0, ["spark", "trino"]),
        "properties": {"comment": "c"}}}).encode())
    commits = [
        [{"action": "add-schema", "schema": schema2},
         {"action": "add-view-version", "view-version": version(1, -1, ["spark", "Trino"])},
         {"action": "set-current-view-version", "view-version-id": -1}],
        [{"action": "add-view-version", "view-version": version(5, 0, ["a"])},
         {"action": "add-view-version", "view-version": version(6, 0, ["b"])},
         {"action": "add-view-version", "view-version": version(7, 0, ["c"])},
         {"action": "set-current-view-version", "view-version-id": 6}],
        [{"action": "assign-uuid", "uuid": base["view-uuid"]},
         {"action": "upgrade-format-version", "format-version": 1},
         {"action": "set-location", "location": "s3://b/v/"},
         {"action": "set-properties", "updates": {"a": "1"}},
         {"action": "remove-properties", "removals": ["a", "version.history.num-entries"]}],
        [{"action": "add-view-version", "view-version": version(1, 0, ["spark", "SPARK"])}],
    ]
    for updates in commits:
        write(out, "fuzz_view", json.dumps({
            "base": base, "requirements": [{"type": "assert-view-uuid", "uuid": base["view-uuid"]}],
            "updates": updates}).encode())


def main():
    fixtures, out = Path(sys.argv[1]), Path(sys.argv[2])
    for f in sorted((fixtures / "create").glob("*.json")):
        doc = json.loads(f.read_text())
        body = doc.get("request", doc)
        write(out, "fuzz_create_table", json.dumps(body).encode())
    for f in sorted((fixtures / "commit").glob("*.json")):
        doc = json.loads(f.read_text())
        seed = {k: doc[k] for k in ("base", "requirements", "updates") if k in doc}
        write(out, "fuzz_commit", json.dumps(seed).encode())
    write_view_seeds(out)
    for s in ["a", "a%1Fb", "a%1F%1Fb", "%E2%82%AC", "a+b", "%zz", "%", "a%00b",
              "%2F..%2F", "x" * 300, "%C0%AF", "%ED%A0%80", "a%1Fb%1Fc%1Fd"]:
        write(out, "fuzz_ident", s.encode())
    for h in [{"name": "h", "url": "https://auditor.example.com/audit"},
              {"name": "h", "url": "http://192.0.2.10:8080/x", "secret": "s",
               "scope": {"namespace": ["a", "b"], "table": "t"}, "timeout-ms": 5000},
              {"name": "h", "url": "http://[2001:db8::1]/x", "scope": {"namespace": ["a"]}},
              {"name": "h", "url": "http://169.254.169.254/latest"},
              {"name": "", "url": "ftp://x"}]:
        write(out, "fuzz_hook_spec", json.dumps(h).encode())
    es256 = ("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9l"
             "eGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDx"
             "w5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q")
    for t in [es256, es256.replace("eyJhbGciOiJFUzI1NiJ9", "eyJhbGciOiJub25lIn0"),
              "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.AAAA", "e30.e30.", "Zm9vYmFy", "Zg"]:
        write(out, "fuzz_jwt", t.encode())
    for j in [{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
               "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", "kid": "k"},
              {"kty": "RSA", "e": "AQAB", "n": "AQAB"},
              {"keys": [{"kid": "k", "kty": "EC"}]},
              {"iss": "floe", "aud": ["floe"], "sub": "alice", "exp": 1700000100, "nbf": 1700000000},
              {"keys": [{"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "k",
                         "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                         "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]},
              {"issuer": "https://issuer.example", "jwks_uri": "https://issuer.example/jwks",
               "token_endpoint": "https://issuer.example/token"},
              {"sub": "bob", "roles": ["reader", "writer"]},
              {"sub": "carol", "roles": " auditor  analyst "}]:
        write(out, "fuzz_jwt", json.dumps(j).encode())
    for x in ['<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazon'
              'aws.com/doc/2006-03-01/"><Name>b</Name><Contents><Key>wh/t/a&amp;b&#233;</Key>'
              '<ETag>&#34;d41d&#34;</ETag></Contents><IsTruncated>true</IsTruncated>'
              '<NextContinuationToken>1ue/x=</NextContinuationToken></ListBucketResult>',
              '<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b</Key>'
              '<Code>AccessDenied</Code></Error></DeleteResult>',
              '<Error><Code>SlowDown</Code><Message><![CDATA[Reduce]]></Message></Error>',
              '[default]\naws_access_key_id = A\naws_secret_access_key = s\n[p]\nx=y\n']:
        write(out, "fuzz_s3xml", x.encode())
    for loc in ["s3://bucket/wh/ns/t\ns3://bucket/wh", "S3://b.k-t/wh//./x/..\nfile:///wh",
                "s3://bkt/..\ns3://bkt"]:
        write(out, "fuzz_location", loc.encode())


if __name__ == "__main__":
    main()
