"""Concierge: a push for each team or AI reply (Concierge seed, "Push notifications").

"Every team or AI reply is pushed to each of the customer's devices that has a push token."
"""

from ..delivery import Push
from .text import apns_headers, clip_preview


def alert_text(app_name, show_team_names, author, text):
    """"the title is the team member's name when Show team names is on, otherwise your app's
    name; the body is the message preview"."""
    team_member = author.get("team_member")
    title = team_member if show_team_names and team_member else app_name
    return title, clip_preview(text)


def apns_payload(title, body, conversation_id, message_id, unread):
    """"The alert lives in aps ...; badge is the unread count; thread-id is the conversation id.
    Data fields sit in a top-level concierge dictionary" (unread a number on iOS)."""
    return {
        "aps": {"alert": {"title": title, "body": body}, "badge": unread, "thread-id": conversation_id},
        "concierge": {"source": "concierge", "conversationId": conversation_id, "messageId": message_id, "unread": unread},
    }


def fcm_message(token, title, body, conversation_id, message_id, unread):
    """"A notification block (title, body) plus a data map where every value is a string"."""
    return {
        "token": token,
        "notification": {"title": title, "body": body},
        "data": {"source": "concierge", "conversationId": conversation_id, "messageId": message_id,
                 "unread": str(unread), "title": title, "body": body},
    }


class Concierge:
    def __init__(self, app, scenario):
        self.app = app
        settings = scenario.get("concierge", {})
        self.app_name = settings.get("name", "Shop")
        self.show_team_names = settings.get("show_team_names", True)
        self.customers = {c["id"]: c["customer"] for c in scenario.get("conversations", [])}
        # "unread: Messages this customer hasn't read yet", per conversation.
        self.unread = {}

    def handle(self, event, index):
        kind = event["type"]
        if kind == "reply.sent":
            return self.reply_sent(event, index)
        if kind == "customer.message":
            # The customer writes in the chat, so they have seen every reply.
            self.unread[event["conversation"]] = 0
        return []

    def reply_sent(self, event, index):
        bugs = self.app.bugs
        conversation = event["conversation"]
        unread = event.get("unread", self.unread.get(conversation, 0) + 1)
        self.unread[conversation] = unread
        message_id = event.get("message", f"msg_{index}")
        show_team_names = self.show_team_names and not bugs.on("app-name-title")
        title, body = alert_text(self.app_name, show_team_names, event["author"], event.get("text", ""))
        headers = apns_headers("alert", self.app.bundle_id, 10,
                               collapse_id=conversation if bugs.on("collapse-replies") else None)
        threaded = "cnv_" + self.customers[conversation] if bugs.on("customer-as-conversation-id") else conversation
        pushes = []
        for device in self.app.store.devices_of(self.customers[conversation]):
            if device.is_ios_alert:
                pushes.append(Push(device, apns_payload(title, body, threaded, message_id, unread), headers))
            elif device.is_android:
                pushes.append(Push(device, fcm_message(device.token, title, body, threaded, message_id, unread)))
        return pushes
