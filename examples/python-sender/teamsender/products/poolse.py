"""poolse: calls and chat (poolse seed, "Push payloads").

Routing ("Overview"): "VoIP pushes go to the PushKit token ... Everything else goes to the
regular APNs token." "Android pushes are FCM data messages with android.priority: "HIGH"" and
"FCM turns every value into a string: numbers arrive as "1793952000000", flags as "0" / "1"."
"On iOS, numbers stay numbers." "Every payload has cv: "1" (the payload version) and a type."
"""

import base64
import json
from dataclasses import dataclass, field

from ..delivery import Push
from .text import apns_headers, clip_preview

PAYLOAD_VERSION = "1"
RING_SECONDS = 45
ONE_DAY = 86400


def _grant(kind, subject, person):
    """A stand-in for the signed grant our call and reply services issue (opaque to the phone)."""
    claims = base64.urlsafe_b64encode(json.dumps({"sub": subject, "user": person}).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJFUzI1NiJ9.{claims}.{kind}"


def fcm_data_message(token, data, ttl):
    """An FCM data message, no notification block ("your app's code decides what to show")."""
    return {"token": token, "data": data, "android": {"priority": "HIGH", "ttl": ttl}}


def flag(value):
    return "1" if value else "0"


@dataclass
class Call:
    id: str
    conversation: dict
    caller: str
    media: str
    is_room: bool = False
    ring_deadline: int = 0
    rung: list = field(default_factory=list)
    added: list = field(default_factory=list)
    joined: set = field(default_factory=set)
    declined: set = field(default_factory=set)
    busy: set = field(default_factory=set)

    @property
    def everyone_rung(self):
        return list(dict.fromkeys(self.rung + self.added))

    @property
    def still_ringing(self):
        return [p for p in self.everyone_rung if p not in self.joined | self.declined | self.busy]

    @property
    def everyone_involved(self):
        """"the caller, everyone rung, and everyone who joined"."""
        return list(dict.fromkeys([self.caller] + self.everyone_rung + sorted(self.joined)))

    @property
    def missed_by(self):
        """"each person rung who never joined ..., except people who declined. People whose phone
        refused the ring because they were on another call (busy) do get it.\""""
        return [p for p in self.everyone_rung if p not in self.joined and p not in self.declined and p != self.caller]


#: `call.ended` reason -> the ring_ended reason of phones still ringing: "the call ends while
#: their phone is still ringing (cancelled, timeout or finished)".
RING_ENDED_REASON = {"cancelled": "cancelled", "no_answer": "timeout", "finished": "finished",
                     "declined_all": "finished", "busy_all": "finished"}


class Poolse:
    def __init__(self, app, scenario):
        self.app = app
        self.people = {p["id"]: p for p in scenario.get("people", [])}
        self.conversations = {c["id"]: c for c in scenario.get("conversations", [])}
        settings = scenario.get("workspace", {})
        self.chat_notifications = settings.get("chat_notifications", True)
        self.only_mentions_in_groups = settings.get("group_conversations", "all") == "mentions"
        self.full_preview = settings.get("preview", "full") != "hidden"
        self.missed_calls = settings.get("missed_calls", True)
        self.calls = {}
        self.messages = {}  # conversation -> [(message id, sender)]
        self.cursors = {}   # conversation -> {person: messages read}

    # Who is who.

    def name(self, person):
        return self.people.get(person, {}).get("name", person)

    def external_id(self, person):
        return self.people.get(person, {}).get("external_id", "ext-" + person)

    def devices(self, person):
        return self.app.store.devices_of(person)

    @staticmethod
    def is_group(conversation):
        return conversation.get("kind") == "group"

    def handle(self, event, index):
        kind = event["type"]
        handler = {
            "call.placed": self.call_placed, "room.started": self.room_started, "call.answered": self.call_answered,
            "call.declined": self.call_declined, "call.busy": self.call_busy, "call.people_added": self.people_added,
            "call.joined": self.call_joined, "call.ended": self.call_ended, "message.sent": self.message_sent,
            "conversation.read": self.conversation_read,
        }.get(kind)
        return handler(event, index) if handler else []

    # Ring.

    def call_placed(self, event, index):
        conversation = self.conversations[event["conversation"]]
        caller = event["caller"]
        call = Call(event["call"], conversation, caller, event.get("media", "audio"),
                    ring_deadline=self.app.clock.now_ms + RING_SECONDS * 1000,
                    rung=[m for m in conversation["members"] if m != caller])
        self.calls[call.id] = call
        return self.ring(call, call.rung)

    def people_added(self, event, index):
        """"the people added with "Add people"" are rung too; not the caller, not people in the call."""
        call = self.calls[event["call"]]
        people = [p for p in event["people"] if p != call.caller and p not in call.joined]
        pushes = self.ring(call, people)
        call.added += people
        return pushes

    def ring(self, call, people):
        """"Sent to every registered device of each person rung ... Rooms never ring." "On iOS it
        goes to the PushKit token only (apns-push-type: voip, priority 10, apns-expiration: 0, topic
        <bundle id>.voip). On Android it goes to the FCM token with ttl: 60s.\""""
        if call.is_room:
            return []
        now = self.app.clock.now_ms
        bugs = self.app.bugs
        headers = apns_headers("voip", self.app.bundle_id + ".voip", 10,
                               expiration=None if bugs.on("no-apns-expiration") else 0)
        pushes = []
        for person in dict.fromkeys(people):
            fields = {
                "cv": PAYLOAD_VERSION, "type": "call", "event": "ring", "call_id": call.id,
                "conversation_id": call.conversation["id"], "conversation_name": call.conversation.get("name") or "",
                "caller_user_id": call.caller, "caller_external_id": self.external_id(call.caller),
                "caller_name": self.name(call.caller), "media": call.media,
            }
            grant = _grant("call", call.id, person)
            for device in self.devices(person):
                ios_target = device.is_ios_alert if bugs.on("ring-to-alert-token") else device.is_voip
                if ios_target:
                    pushes.append(Push(device, dict(fields, has_video=call.media == "video",
                                                    ring_deadline=call.ring_deadline, sent_at=now, grant=grant), headers))
                elif device.is_android:
                    deadline = call.ring_deadline if bugs.on("number-in-fcm-data") else str(call.ring_deadline)
                    data = dict(fields, has_video=flag(call.media == "video"), ring_deadline=deadline,
                                sent_at=str(now), grant=grant)
                    pushes.append(Push(device, fcm_data_message(device.token, data, "60s")))
        return pushes

    # Ring ended, call finished, missed call.

    def room_started(self, event, index):
        call = Call(event["call"], self.conversations[event["conversation"]], event["by"], event.get("media", "audio"),
                    is_room=True, joined={event["by"]})
        self.calls[call.id] = call
        return []

    def call_answered(self, event, index):
        call = self.calls[event["call"]]
        call.joined.add(event["user"])
        return self.ring_ended(call, [event["user"]], "answered_elsewhere", skip_device=event.get("device"))

    def call_declined(self, event, index):
        call = self.calls[event["call"]]
        call.declined.add(event["user"])
        return self.ring_ended(call, [event["user"]], "declined", skip_device=event.get("device"))

    def call_busy(self, event, index):
        self.calls[event["call"]].busy.add(event["user"])
        return []

    def call_joined(self, event, index):
        self.calls[event["call"]].joined.add(event["user"])
        return []

    def ring_ended(self, call, people, reason, skip_device=None):
        """"Tells a ringing Android phone to stop. Sent to the user's Android devices when: they
        answer on another device (answered_elsewhere); the device that answered is skipped; they
        decline on another device (declined); the call ends while their phone is still ringing."
        "FCM ttl: 60s." "Not sent to iOS.\""""
        if call.is_room:
            return []
        data = self.call_event("ring_ended", call, reason)
        return [Push(device, fcm_data_message(device.token, data, "60s"))
                for person in people for device in self.devices(person)
                if device.is_android and device.id != skip_device]

    def call_event(self, name, call, reason):
        return {"cv": PAYLOAD_VERSION, "type": "call_event", "event": name, "call_id": call.id,
                "conversation_id": call.conversation["id"], "reason": reason, "sent_at": str(self.app.clock.now_ms)}

    def call_ended(self, event, index):
        call = self.calls.pop(event["call"])
        reason = event.get("reason", "finished")
        ring_reason = "finished" if self.app.bugs.on("ring-ended-always-finished") else RING_ENDED_REASON[reason]
        pushes = self.ring_ended(call, call.still_ringing, ring_reason)
        # "Call finished": "Sent when a call or room ends, to the Android devices of everyone
        # involved: the caller, everyone rung, and everyone who joined." FCM ttl 60s.
        finished = self.call_event("finished", call, reason)
        pushes += [Push(device, fcm_data_message(device.token, finished, "60s"))
                   for person in call.everyone_involved for device in self.devices(person) if device.is_android]
        return pushes + self.missed_call(call)

    def missed_call_text(self, call):
        """"In a group, title is the conversation name and body reads "Missed video call from
        Alice". Otherwise title is the caller's name and body is "Missed voice call" or "Missed
        video call".\""""
        what = "Missed " + ("video" if call.media == "video" else "voice") + " call"
        name = call.conversation.get("name")
        if self.is_group(call.conversation) and name:
            return name, what + " from " + self.name(call.caller)
        return self.name(call.caller), what

    def missed_call(self, call):
        """"Sent when a call ends to each person rung who never joined ... Rooms never produce one.
        Turn it off with the dashboard's Missed-call notifications setting." Android: FCM ttl
        86400s. iOS: "alert push to the APNs token, expires after 24 hours, apns-collapse-id:
        missed-<call_id>"."""
        if call.is_room or not self.missed_calls:
            return []
        now = self.app.clock.now_ms
        title, body = self.missed_call_text(call)
        common = {"cv": PAYLOAD_VERSION, "event": "missed", "call_id": call.id, "conversation_id": call.conversation["id"],
                  "conversation_name": call.conversation.get("name") or "", "caller_user_id": call.caller,
                  "caller_name": self.name(call.caller), "media": call.media}
        android = dict(common, type="call_event", title=title, body=body, sent_at=str(now))
        # "On iOS type is "call_missed", not "call_event". The top-level body object repeats the
        # routing keys, because expo-notifications reads a remote push's data from there."
        ios = dict(common, type="call_missed", sent_at=now,
                   aps={"alert": {"title": title, "body": body}, "sound": "default",
                        "category": "poolse_missed_call", "thread-id": call.conversation["id"]},
                   body={"type": "call_missed", "call_id": call.id, "conversation_id": call.conversation["id"],
                         "media": call.media, "caller_user_id": call.caller})
        headers = apns_headers("alert", self.app.bundle_id, 10, expiration=now // 1000 + ONE_DAY,
                               collapse_id="missed-" + call.id)
        pushes = []
        for person in call.missed_by:
            for device in self.devices(person):
                if device.is_ios_alert:
                    pushes.append(Push(device, ios, headers))
                elif device.is_android:
                    pushes.append(Push(device, fcm_data_message(device.token, android, "86400s")))
        return pushes

    # Messages.

    def message_recipients(self, conversation, sender, kind, mentions):
        """"sent when a text message is sent and the workspace has Send chat notifications on.
        custom and system messages never send one." "every member except the sender, minus members
        who muted the conversation, unless the message mentions them. If the workspace's Group
        conversations setting is Only @mentions, a group conversation notifies only the people
        mentioned. Direct conversations always notify.\""""
        if not self.chat_notifications or kind != "text":
            return []
        only_mentions = self.is_group(conversation) and self.only_mentions_in_groups
        muted = set(conversation.get("muted_by", []))
        chosen = []
        for member in dict.fromkeys(conversation["members"]):
            mentioned = member in mentions
            if member == sender or (only_mentions and not mentioned) or (member in muted and not mentioned):
                continue
            chosen.append(member)
        return chosen

    def unread_total(self, person):
        """Messages from others past the person's read cursor, over every conversation they are in."""
        total = 0
        for conversation_id, sent in self.messages.items():
            if person in self.conversations[conversation_id]["members"]:
                position = self.cursors.get(conversation_id, {}).get(person, 0)
                total += sum(1 for _, sender in sent[position:] if sender != person)
        return total

    def message_alert(self, conversation, sender, text):
        """"hidden: no title, and the body is "New message". A group with a name: the conversation
        name as title, and "Sender: text" as body. Anything else: the sender's name as title, and
        the text as body.\""""
        if not self.full_preview:
            return None, "New message"
        name = conversation.get("name")
        if self.is_group(conversation) and name:
            return name, f"{self.name(sender)}: {clip_preview(text)}"
        return self.name(sender), clip_preview(text)

    def message_sent(self, event, index):
        conversation = self.conversations[event["conversation"]]
        sender = event["sender"]
        message_id = event.get("message", f"msg-{index}")
        sent = self.messages.setdefault(conversation["id"], [])
        sent.append((message_id, sender))
        # A person's own messages are never unread.
        self.cursors.setdefault(conversation["id"], {})[sender] = len(sent)
        recipients = self.message_recipients(conversation, sender, event.get("kind", "text"), set(event.get("mentions", [])))
        if not recipients:
            return []
        now = self.app.clock.now_ms
        text = event.get("text", "")
        group = flag(self.is_group(conversation))
        title, body = self.message_alert(conversation, sender, text)
        # iOS: "alert push to the APNs token, apns-collapse-id: <message_id>, expires after 24 hours".
        headers = apns_headers("alert", self.app.bundle_id, 10, expiration=now // 1000 + ONE_DAY, collapse_id=message_id)
        pushes = []
        for person in recipients:
            devices = self.devices(person)
            if not devices:
                continue
            unread = self.unread_total(person) + (1 if self.app.bugs.on("unread-counts-new-twice") else 0)
            fields = {"cv": PAYLOAD_VERSION, "type": "message", "event": "new", "message_id": message_id,
                      "conversation_id": conversation["id"], "conversation_name": conversation.get("name") or "",
                      "group": group, "sender_user_id": sender, "sender_external_id": self.external_id(sender),
                      "sender_name": self.name(sender), "mentioned": flag(person in event.get("mentions", [])),
                      "reply_grant": _grant("reply", conversation["id"], person)}
            if self.full_preview:
                # "The workspace's What a notification shows setting (preview) changes what the push carries."
                fields["text"] = clip_preview(text)
            for device in devices:
                if device.is_ios_alert:
                    alert = {"body": body} if title is None else {"title": title, "body": body}
                    payload = dict(fields, sent_at=now, unread_total=unread,
                                   aps={"alert": alert, "sound": "default", "badge": unread,
                                        "thread-id": conversation["id"], "category": "poolse_message",
                                        "mutable-content": 1, "summary-arg": self.name(sender)},
                                   body={"type": "message", "event": "new", "conversation_id": conversation["id"],
                                         "message_id": message_id, "sender_user_id": sender, "group": group})
                    pushes.append(Push(device, payload, headers))
                elif device.is_android:
                    data = dict(fields, sent_at=str(now), unread_total=str(unread))
                    pushes.append(Push(device, fcm_data_message(device.token, data, "86400s")))
        return pushes

    def conversation_read(self, event, index):
        """"Sent to the reader's own devices when their read cursor moves forward past unread
        messages." Android: FCM ttl 86400s. iOS: "background push to the APNs token,
        apns-push-type: background, priority 5"."""
        conversation_id, reader = event["conversation"], event["reader"]
        sent = self.messages.get(conversation_id, [])
        through = next((i for i, (message_id, _) in enumerate(sent) if message_id == event["through"]), None)
        if through is None:
            return []
        cursors = self.cursors.setdefault(conversation_id, {})
        previous = cursors.get(reader, 0)
        position = max(previous, through + 1)
        passed = sum(1 for _, sender in sent[previous:position] if sender != reader)
        cursors[reader] = position
        if position <= previous or passed == 0:
            return []
        unread = self.unread_total(reader)
        headers = apns_headers("background", self.app.bundle_id, 5)
        fields = {"cv": PAYLOAD_VERSION, "event": "read", "conversation_id": conversation_id}
        pushes = []
        for device in self.devices(reader):
            if device.is_ios_alert:
                pushes.append(Push(device, dict(fields, type="message_read", unread_total=unread,
                                                aps={"content-available": 1}), headers))
            elif device.is_android:
                data = dict(fields, type="message", unread_total=str(unread))
                pushes.append(Push(device, fcm_data_message(device.token, data, "86400s")))
        return pushes
