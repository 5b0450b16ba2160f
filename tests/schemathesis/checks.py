"""floe's own schemathesis checks, loaded by run.py (SCHEMATHESIS_HOOKS).

iceberg_error_body: every answer of 400 and above is the Iceberg error
body {"error": {"message", "type", "code"}} with code equal to the status
(HEAD answers have no body; a 400 or 401 of the token endpoint is the
OAuth2 error body {"error", "error_description"}), and a 5xx is only ever a 503 with Retry-After
for a documented transient state (an audit hook that cannot give a verdict,
a full queue, the database out of reach): never 500, 502 or 504.
"""

import json

import schemathesis

TRANSIENT_503 = {"AuditUnavailableException", "ServiceUnavailableException"}


@schemathesis.check
def iceberg_error_body(ctx, response, case):
    status = response.status_code
    if status < 400:
        return None
    oauth = case.path.startswith("/v1/oauth/") and status in (400, 401)
    if oauth:
        # RFC 6749 section 5.2: the token endpoint's own error body.
        body = json.loads(response.content)
        if not (isinstance(body, dict) and isinstance(body.get("error"), str)
                and isinstance(body.get("error_description", ""), str)):
            raise AssertionError(f"{status} answer is not an OAuth2 error body: {body!r}")
    elif case.method.upper() != "HEAD":
        try:
            body = json.loads(response.content)
        except ValueError:
            raise AssertionError(f"{status} answer is not JSON: {response.content[:200]!r}") from None
        err = body.get("error") if isinstance(body, dict) else None
        if not (isinstance(err, dict) and set(body) == {"error"} and isinstance(err.get("message"), str)
                and isinstance(err.get("type"), str) and err.get("code") == status):
            raise AssertionError(f"{status} answer is not an Iceberg error body: {body!r}")
    if status >= 500:
        kind = None if case.method.upper() == "HEAD" else err["type"]
        retry = {k.lower(): v for k, v in response.headers.items()}.get("retry-after")
        if status != 503 or not retry or (kind is not None and kind not in TRANSIENT_503):
            raise AssertionError(f"server error {status} {kind} (Retry-After: {retry!r})")
    return None


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """Keeps every failure but one that schemathesis makes itself: a value
    it takes over an API link goes into the path as it is, so a raw '?' or
    '#' in it ends the path early, and floe truthfully answers the shorter
    path it received (404 or 405), which the operation does not document."""
    if response.status_code in (404, 405):
        raw = "".join(str(v) for v in (case.path_parameters or {}).values())
        if "?" in raw or "#" in raw:
            return False
    return True
