"""Seeded bugs: mistakes real senders make, each switched on by PUSHPROOF_EXAMPLE_BUG.

pushproof's own tests turn each one on and check that `pushproof run` catches it with the right
finding and nothing else. With the variable unset the sender is correct.

    PUSHPROOF_EXAMPLE_BUG=author-notified            # one bug
    PUSHPROOF_EXAMPLE_BUG=author-notified,dnd-notified  # several
"""

import os

#: Every bug, with what it does (README.md lists the same).
KNOWN = {
    "author-notified": "Yama: the message's author is pushed their own message",
    "muted-notified": "Yama: a member who muted the room is pushed",
    "dnd-notified": "Yama: a member in Do Not Disturb is pushed",
    "ring-to-alert-token": "poolse: the ring goes to the iOS alert token instead of the PushKit one",
    "number-in-fcm-data": "poolse: ring_deadline travels as a JSON number in the FCM data map",
    "keep-gone-token": "a token APNs/FCM answered as gone is kept, and pushed again",
    "delete-on-503": "a token is deleted after a 503, so it is never pushed again",
    "retry-whole-batch": "a retry resends the whole batch, so pushes already accepted arrive twice",
    "no-apns-expiration": "poolse: the ring goes without apns-expiration",
    "ignore-retry-after": "a 429 or 503 is retried after the sender's own short backoff, not the answer's Retry-After",
    # Content bugs: each push still fits its spec's schema and rules, and says the wrong thing.
    "app-name-title": "Concierge: a team reply is titled with the app's name although Show team names is on",
    "unread-counts-new-twice": "poolse: the new message is counted twice in the badge and unread_total",
    "customer-as-conversation-id": "Concierge: the reply's thread-id and conversationId name the customer (cnv_<customer>)",
    "collapse-replies": "Concierge: replies carry apns-collapse-id <conversation id>, so each replaces the last",
    "ring-ended-always-finished": "poolse: ring_ended always says reason finished, whatever ended the ring",
}

ENVIRONMENT_VARIABLE = "PUSHPROOF_EXAMPLE_BUG"


class UnknownBug(ValueError):
    pass


def enabled_from_environment(environ=os.environ):
    """The set of bug names switched on; an unknown name is an error, not silently ignored."""
    names = {name.strip() for name in environ.get(ENVIRONMENT_VARIABLE, "").split(",") if name.strip()}
    unknown = names - KNOWN.keys()
    if unknown:
        raise UnknownBug(
            f"{ENVIRONMENT_VARIABLE}: unknown bug {', '.join(sorted(unknown))} (one of {', '.join(sorted(KNOWN))})")
    return frozenset(names)


class Bugs:
    """Which seeded bugs are on. `bugs.on("dnd-notified")` reads as the code's condition."""

    def __init__(self, names=frozenset()):
        self.names = frozenset(names)

    def on(self, name):
        assert name in KNOWN, name
        return name in self.names


NONE = Bugs()
