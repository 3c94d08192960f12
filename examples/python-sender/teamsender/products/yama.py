"""Yama: one push, an alert for each message posted in a room (Yama seed, "Push notifications
guide").

"When a message is posted in a room, Yama sends an APNs push to the mobile devices of every
room member except the sender — unless the recipient has muted the conversation or their
account." Android "is reserved for a future FCM channel": Android devices get nothing.
"""

from ..delivery import Push
from .text import apns_headers, clip_preview


def recipients(members, author, muted, dnd, bugs):
    """"every member of the room except the author", "unless the recipient has muted the
    conversation or their account" (a room mute, or Do Not Disturb)."""
    chosen = []
    for member in dict.fromkeys(members):
        if member == author and not bugs.on("author-notified"):
            continue
        if member in muted and not bugs.on("muted-notified"):
            continue
        if member in dnd and not bugs.on("dnd-notified"):
            continue
        chosen.append(member)
    return chosen


def message_payload(room_name, author_name, text):
    """"It is an alert notification (title + body + sound), so it appears on a locked iPhone":
    title "<group name>", body "<sender>: <message preview>", sound "default"."""
    return {"aps": {"alert": {"title": room_name, "body": f"{author_name}: {clip_preview(text)}"}, "sound": "default"}}


class Yama:
    def __init__(self, app, scenario):
        self.app = app
        self.names = {person["id"]: person.get("name", person["id"]) for person in scenario.get("people", [])}
        # "by setting their status to Do Not Disturb (PATCH /api/v1/me)"
        self.dnd = {person["id"] for person in scenario.get("people", []) if person.get("status") == "dnd"}
        self.rooms = {room["id"]: {"name": room["name"], "members": room["members"], "muted": set(room.get("muted_by", []))}
                      for room in scenario.get("rooms", [])}

    def handle(self, event, index):
        kind = event["type"]
        if kind == "message.created":
            return self.message_created(event)
        if kind == "user.status":
            (self.dnd.add if event["status"] == "dnd" else self.dnd.discard)(event["user"])
        elif kind in ("room.muted", "room.unmuted"):
            muted = self.rooms[event["room"]]["muted"]
            (muted.add if kind == "room.muted" else muted.discard)(event["user"])
        return []

    def message_created(self, event):
        """"A push is delivered on message_created to every member of the room except the author."
        An APNs alert to each recipient's iOS devices."""
        room = self.rooms[event["room"]]
        author = event["author"]
        payload = message_payload(room["name"], self.names.get(author, author), event.get("text", ""))
        headers = apns_headers("alert", self.app.bundle_id, 10)
        pushes = []
        for member in recipients(room["members"], author, room["muted"], self.dnd, self.app.bugs):
            for device in self.app.store.devices_of(member):
                if device.platform == "ios":
                    pushes.append(Push(device, payload, headers))
        return pushes
