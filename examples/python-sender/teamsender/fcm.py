"""The FCM HTTP v1 client: OAuth access token, request shape, and what each answer means.

Google, "Send a message using FCM HTTP v1 API": POST <base>/v1/projects/<project>/messages:send
with `authorization: Bearer <access token>` and {"message": {...}}. The access token comes from
the service account's `token_uri` (grant_type urn:ietf:params:oauth:grant-type:jwt-bearer).
"FCM error codes": UNREGISTERED (404) means the token is no longer valid, so delete it;
INVALID_ARGUMENT (400) about the registration token means the same; QUOTA_EXCEEDED (429),
UNAVAILABLE (503) and INTERNAL (500) are retried with exponential backoff; 401 means our access
token was refused.
"""

import json
import time
import urllib.parse

from . import signing
from .outcomes import DELIVERED, FAIL, REFRESH_AND_RETRY, REMOVE_TOKEN, RETRY, RETRYABLE_STATUSES
from .http2 import Request

INVALID_TOKEN_MESSAGE = "not a valid FCM registration token"


class TokenEndpointError(RuntimeError):
    pass


def _error(body):
    try:
        return json.loads(body or b"{}").get("error") or {}
    except (ValueError, AttributeError):
        return {}


def classify(status, body):
    """(outcome, reason) for one FCM answer. `status` 0 is a transport failure: retry."""
    if status == 200:
        return DELIVERED, None
    if status == 0:
        return RETRY, "no answer"
    error = _error(body)
    codes = [detail.get("errorCode") for detail in error.get("details", []) if isinstance(detail, dict)]
    code = next((c for c in codes if c), None) or error.get("status") or f"HTTP {status}"
    if code == "UNREGISTERED":
        return REMOVE_TOKEN, code
    if code == "INVALID_ARGUMENT":
        # A payload mistake has the same code: only the token's own message costs a device.
        if INVALID_TOKEN_MESSAGE in (error.get("message") or ""):
            return REMOVE_TOKEN, code
        return FAIL, code
    if status in RETRYABLE_STATUSES:
        return RETRY, code
    if status == 401 and code != "THIRD_PARTY_AUTH_ERROR":
        return REFRESH_AND_RETRY, code
    return FAIL, code


class FCMClient:
    def __init__(self, base_url, project, service_account, http, clock=time.time):
        self.base_url = base_url.rstrip("/")
        self.project = project
        self.service_account = service_account
        self.http = http
        self.clock = clock
        self._access_token = None
        self._expires_at = 0

    def access_token(self):
        """A cached access token, exchanged again a minute before it expires."""
        now = self.clock()
        if self._access_token is None or now >= self._expires_at - 60:
            assertion = signing.google_assertion(self.service_account, int(now))
            form = urllib.parse.urlencode({
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion})
            [response] = self.http.send_all([Request(
                url=self.service_account["token_uri"],
                headers=[("content-type", "application/x-www-form-urlencoded")], body=form.encode("ascii"))])
            if response.status != 200:
                raise TokenEndpointError(
                    f"token endpoint {self.service_account['token_uri']}: HTTP {response.status} "
                    f"{response.error or response.body.decode(errors='replace')}")
            answer = json.loads(response.body)
            self._access_token = answer["access_token"]
            self._expires_at = now + float(answer.get("expires_in", 3600))
        return self._access_token

    def forget_access_token(self):
        self._access_token = None

    def request(self, message):
        """The HTTP request for one FCM v1 message (the object inside {"message": ...})."""
        return Request(
            url=f"{self.base_url}/v1/projects/{self.project}/messages:send",
            headers=[("authorization", "Bearer " + self.access_token()), ("content-type", "application/json")],
            body=json.dumps({"message": message}, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
