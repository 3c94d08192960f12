"""What the sender does after one attempt, whichever gateway answered (apns.classify, fcm.classify)."""

DELIVERED = "delivered"
#: Transient (429, 500, 503, no answer): try again after backing off; the token stays.
RETRY = "retry"
#: Our credential was refused: sign or fetch a new one, then try again.
REFRESH_AND_RETRY = "refresh_and_retry"
#: The token is gone or invalid: delete the device. Never retried.
REMOVE_TOKEN = "remove_token"
#: Permanent for this push (a payload or configuration mistake): not retried, token kept.
FAIL = "fail"

#: Both gateways ask senders to retry these with backoff.
RETRYABLE_STATUSES = {429, 500, 503}
