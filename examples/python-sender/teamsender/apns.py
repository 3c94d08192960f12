"""The APNs client: request shape, provider token, and what each answer means.

Apple, "Sending notification requests to APNs": POST /3/device/<hex token> over HTTP/2 with
`authorization: bearer <provider token>` and the apns-* headers; 200 carries `apns-id`.
"Handling notification responses from APNs": 410 Unregistered (and ExpiredToken) and
400 BadDeviceToken mean the token is no good, so stop sending to it; 429 TooManyRequests,
500 InternalServerError and 503 ServiceUnavailable may be retried later; 403
ExpiredProviderToken wants a fresh provider token.
"""

import json
import time

from . import signing
from .http2 import Request
from .outcomes import DELIVERED, FAIL, REFRESH_AND_RETRY, REMOVE_TOKEN, RETRY, RETRYABLE_STATUSES

TOKEN_IS_GONE_REASONS = {"Unregistered", "ExpiredToken", "BadDeviceToken"}

#: Apple refuses provider tokens older than an hour and throttles ones changed more often than
#: every 20 minutes; re-sign after 50.
PROVIDER_TOKEN_REFRESH_SECONDS = 50 * 60


def classify(status, body):
    """(outcome, reason) for one APNs answer. `status` 0 is a transport failure: retry."""
    if status == 200:
        return DELIVERED, None
    reason = None
    try:
        reason = json.loads(body or b"{}").get("reason")
    except (ValueError, AttributeError):
        pass
    if status == 0:
        return RETRY, "no answer"
    if reason in TOKEN_IS_GONE_REASONS or status == 410:
        return REMOVE_TOKEN, reason or "HTTP 410"
    if reason == "ExpiredProviderToken":
        return REFRESH_AND_RETRY, reason
    if status in RETRYABLE_STATUSES:
        return RETRY, reason or f"HTTP {status}"
    return FAIL, reason or f"HTTP {status}"


class APNsClient:
    def __init__(self, base_url, key_file, key_id, team_id, clock=time.time):
        self.base_url = base_url.rstrip("/")
        self.key_file = key_file
        self.key_id = key_id
        self.team_id = team_id
        self.clock = clock
        self._token = None
        self._issued_at = 0

    def provider_token(self):
        now = int(self.clock())
        if self._token is None or now - self._issued_at >= PROVIDER_TOKEN_REFRESH_SECONDS:
            self._token = signing.apns_provider_token(self.key_file, self.key_id, self.team_id, now)
            self._issued_at = now
        return self._token

    def forget_provider_token(self):
        self._token = None

    def request(self, token, headers, payload):
        """The HTTP request for one push: `headers` are the apns-* ones the push rule chose."""
        return Request(
            url=f"{self.base_url}/3/device/{token}",
            headers=[("authorization", "bearer " + self.provider_token()), ("content-type", "application/json")]
            + list(headers),
            body=json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
