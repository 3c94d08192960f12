"""Delivering one event's pushes: send, retry what may be retried, clean up dead tokens.

The rules (apns.md, fcm.md, and the seeds' "A device whose token Apple or Google reports as gone
is deleted"):

- a token answered gone (APNs 410 Unregistered, 400 BadDeviceToken; FCM UNREGISTERED, or
  INVALID_ARGUMENT about the token) is deleted from the store and never retried;
- a transient answer (429, 500, 503, no answer) keeps the token and is retried with exponential
  backoff and jitter, honouring Retry-After, at most `max_attempts` times in all;
- only the pushes that failed go again: one the gateway accepted is never resent, so a retry
  delivers nothing twice.
"""

import random
import sys
import time
from dataclasses import dataclass

from . import apns, fcm
from .outcomes import DELIVERED, REFRESH_AND_RETRY, REMOVE_TOKEN, RETRY


@dataclass
class Push:
    """One push to one device: APNs headers and body, or an FCM message object."""

    device: object  # store.Device
    payload: dict
    apns_headers: list = None

    @property
    def transport(self):
        return "apns" if self.device.platform == "ios" else "fcm"


@dataclass
class RetryPolicy:
    """Attempt n waits uniformly in [0, min(max_delay, base_delay * 2**(n-1))) ("full jitter")."""

    base_delay: float = 0.01
    max_delay: float = 0.2
    max_attempts: int = 5
    #: A Retry-After longer than this is cut short, so one answer cannot stall the event.
    max_retry_after: float = 30.0

    def delay(self, attempt, retry_after=None, unit_random=random.random):
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * unit_random()


def _retry_after(response):
    value = response.headers.get("retry-after", "")
    return float(value) if value.strip().isdigit() else None


class Deliverer:
    def __init__(self, apns_client, fcm_client, http, store, bugs, retry=RetryPolicy(), sleep=time.sleep, log=None):
        self.apns = apns_client
        self.fcm = fcm_client
        self.http = http
        self.store = store
        self.bugs = bugs
        self.retry = retry
        self.sleep = sleep
        self.log = log or (lambda text: print(text, file=sys.stderr))

    def _request(self, push):
        if push.transport == "apns":
            return self.apns.request(push.device.token, push.apns_headers, push.payload)
        return self.fcm.request(push.payload)

    def deliver(self, pushes):
        """Sends `pushes`; returns how many the gateways accepted."""
        pending = list(pushes)
        delivered = 0
        attempt = 1
        while pending:
            responses = self.http.send_all([self._request(push) for push in pending])
            again = []
            wait_hint = None
            for push, response in zip(pending, responses):
                classify = apns.classify if push.transport == "apns" else fcm.classify
                outcome, reason = classify(response.status, response.body)
                if outcome == DELIVERED:
                    delivered += 1
                elif outcome == REMOVE_TOKEN:
                    self.log(f"{push.device.id}: {reason}: token deleted")
                    if not self.bugs.on("keep-gone-token"):
                        self.store.remove(push.device.token)
                elif outcome == RETRY and response.status == 503 and self.bugs.on("delete-on-503"):
                    self.store.remove(push.device.token)
                elif outcome in (RETRY, REFRESH_AND_RETRY):
                    if outcome == REFRESH_AND_RETRY:
                        (self.apns.forget_provider_token if push.transport == "apns" else self.fcm.forget_access_token)()
                    again.append(push)
                    hint = _retry_after(response)
                    if hint is not None:
                        wait_hint = max(wait_hint or 0, hint)
                else:
                    self.log(f"{push.device.id}: {reason or response.error}: not delivered")
            if not again or attempt >= self.retry.max_attempts:
                for push in again:
                    self.log(f"{push.device.id}: still failing after {attempt} attempts; token kept")
                break
            if self.bugs.on("retry-whole-batch"):
                again = pending
            self.sleep(self.retry.delay(attempt, None if self.bugs.on("ignore-retry-after") else wait_hint))
            pending = again
            attempt += 1
        return delivered
