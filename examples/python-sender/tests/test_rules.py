"""The sender's pieces without a gateway: product rules, answer classification, retries,
signing's DER conversion, the protocol loop. Run: python3 -m unittest discover -s tests"""

import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from teamsender import apns, bugs, fcm, signing  # noqa: E402
from teamsender.backend import App, ScenarioClock  # noqa: E402
from teamsender.delivery import Deliverer, Push, RetryPolicy  # noqa: E402
from teamsender.http2 import Response  # noqa: E402
from teamsender.outcomes import DELIVERED, FAIL, REMOVE_TOKEN, RETRY  # noqa: E402
from teamsender.products import concierge, poolse, yama  # noqa: E402
from teamsender.protocol import Adapter, serve  # noqa: E402
from teamsender.store import Device, DeviceStore  # noqa: E402


def world(product_class, scenario, bug_names=()):
    store = DeviceStore()
    for person in scenario["people"]:
        for d in person["devices"]:
            store.register(Device(d["id"], person["id"], d["platform"], d["id"] + "-token",
                                  d.get("kind", "alert") if d["platform"] == "ios" else None))
    app = App("com.example.loop", "poolse-example", store, ScenarioClock(1793952000000), bugs.Bugs(bug_names))
    return product_class(app, scenario)


def person(pid, *devices):
    kinds = {"voip": ("ios", "voip"), "ios": ("ios", "alert"), "android": ("android", None)}
    return {"id": pid, "name": pid.title(),
            "devices": [dict(id=f"{pid}-{d}", platform=kinds[d][0], **({"kind": kinds[d][1]} if kinds[d][1] else {}))
                        for d in devices]}


def targets(pushes):
    return sorted(push.device.id for push in pushes)


class YamaTests(unittest.TestCase):
    scenario = {"people": [person("alice", "ios"), person("bob", "ios", "android"), person("carol", "ios")],
                "rooms": [{"id": "r", "name": "Design", "members": ["alice", "bob", "carol"], "muted_by": ["carol"]}]}

    def test_everyone_but_the_author_and_the_muted_on_ios_only(self):
        pushes = world(yama.Yama, self.scenario).handle({"type": "message.created", "room": "r", "author": "alice",
                                                         "text": "hi"}, 0)
        self.assertEqual(targets(pushes), ["bob-ios"])
        self.assertEqual(pushes[0].payload["aps"]["alert"], {"title": "Design", "body": "Alice: hi"})

    def test_dnd_silences_until_available(self):
        backend = world(yama.Yama, self.scenario)
        backend.handle({"type": "user.status", "user": "bob", "status": "dnd"}, 0)
        self.assertEqual(backend.handle({"type": "message.created", "room": "r", "author": "alice"}, 1), [])
        backend.handle({"type": "user.status", "user": "bob", "status": "available"}, 2)
        self.assertEqual(targets(backend.handle({"type": "message.created", "room": "r", "author": "alice"}, 3)), ["bob-ios"])

    def test_seeded_bugs_add_exactly_their_recipient(self):
        event = {"type": "message.created", "room": "r", "author": "alice"}
        self.assertEqual(targets(world(yama.Yama, self.scenario, ["author-notified"]).handle(event, 0)),
                         ["alice-ios", "bob-ios"])
        self.assertEqual(targets(world(yama.Yama, self.scenario, ["muted-notified"]).handle(event, 0)),
                         ["bob-ios", "carol-ios"])


class PoolseTests(unittest.TestCase):
    scenario = {"people": [person("alice", "voip", "ios", "android"), person("bob", "voip", "ios", "android")],
                "conversations": [{"id": "eng", "kind": "group", "name": "Engineering", "members": ["alice", "bob"]}]}
    placed = {"type": "call.placed", "call": "k1", "conversation": "eng", "caller": "alice", "media": "video"}

    def test_a_ring_goes_to_pushkit_and_android_never_the_caller(self):
        pushes = world(poolse.Poolse, self.scenario).handle(self.placed, 0)
        self.assertEqual(targets(pushes), ["bob-android", "bob-voip"])
        voip = next(p for p in pushes if p.device.id == "bob-voip")
        self.assertIn(("apns-expiration", "0"), voip.apns_headers)
        self.assertIs(voip.payload["has_video"], True)
        android = next(p for p in pushes if p.device.id == "bob-android").payload
        self.assertTrue(all(isinstance(v, str) for v in android["data"].values()))
        self.assertEqual(android["android"], {"priority": "HIGH", "ttl": "60s"})

    def test_ring_bugs(self):
        pushes = world(poolse.Poolse, self.scenario, ["ring-to-alert-token"]).handle(self.placed, 0)
        self.assertEqual(targets(pushes), ["bob-android", "bob-ios"])
        pushes = world(poolse.Poolse, self.scenario, ["number-in-fcm-data"]).handle(self.placed, 0)
        android = next(p for p in pushes if p.device.id == "bob-android").payload
        self.assertIsInstance(android["data"]["ring_deadline"], int)
        pushes = world(poolse.Poolse, self.scenario, ["no-apns-expiration"]).handle(self.placed, 0)
        voip = next(p for p in pushes if p.device.id == "bob-voip")
        self.assertNotIn("apns-expiration", dict(voip.apns_headers))

    def test_no_answer_ends_the_ring_and_reports_a_missed_call(self):
        backend = world(poolse.Poolse, self.scenario)
        backend.handle(self.placed, 0)
        pushes = backend.handle({"type": "call.ended", "call": "k1", "reason": "no_answer"}, 1)
        kinds = sorted((p.device.id, p.payload.get("data", p.payload).get("event")) for p in pushes)
        self.assertEqual(kinds, [("alice-android", "finished"), ("bob-android", "finished"),
                                 ("bob-android", "missed"), ("bob-android", "ring_ended"), ("bob-ios", "missed")])
        missed = next(p for p in pushes if p.device.id == "bob-ios").payload
        self.assertEqual(missed["aps"]["alert"], {"title": "Engineering", "body": "Missed video call from Alice"})

    def test_a_message_counts_unread_and_a_read_clears_it(self):
        backend = world(poolse.Poolse, self.scenario)
        pushes = backend.handle({"type": "message.sent", "conversation": "eng", "sender": "alice", "text": "one",
                                 "message": "m1"}, 0)
        self.assertEqual(targets(pushes), ["bob-android", "bob-ios"])
        ios = next(p for p in pushes if p.device.id == "bob-ios")
        self.assertEqual(ios.payload["aps"]["badge"], 1)
        self.assertEqual(ios.payload["aps"]["alert"]["body"], "Alice: one")
        read = backend.handle({"type": "conversation.read", "conversation": "eng", "reader": "bob", "through": "m1"}, 1)
        self.assertEqual(targets(read), ["bob-android", "bob-ios"])
        self.assertEqual(backend.handle({"type": "conversation.read", "conversation": "eng", "reader": "bob",
                                         "through": "m1"}, 2), [])


class ConciergeTests(unittest.TestCase):
    def test_a_reply_reaches_each_customer_device(self):
        scenario = {"people": [person("ana", "ios", "android")], "conversations": [{"id": "cnv_1", "customer": "ana"}],
                    "concierge": {"name": "Shop", "show_team_names": False}}
        pushes = world(concierge.Concierge, scenario).handle(
            {"type": "reply.sent", "conversation": "cnv_1", "author": {"team_member": "Kirill"}, "text": "hi"}, 3)
        self.assertEqual(targets(pushes), ["ana-android", "ana-ios"])
        ios = next(p for p in pushes if p.device.id == "ana-ios").payload
        self.assertEqual(ios["aps"]["alert"]["title"], "Shop")
        self.assertEqual(ios["concierge"], {"source": "concierge", "conversationId": "cnv_1", "messageId": "msg_3", "unread": 1})


class ClassificationTests(unittest.TestCase):
    def test_apns(self):
        self.assertEqual(apns.classify(200, b"")[0], DELIVERED)
        self.assertEqual(apns.classify(410, b'{"reason":"Unregistered","timestamp":1}'), (REMOVE_TOKEN, "Unregistered"))
        self.assertEqual(apns.classify(400, b'{"reason":"BadDeviceToken"}')[0], REMOVE_TOKEN)
        self.assertEqual(apns.classify(503, b'{"reason":"ServiceUnavailable"}')[0], RETRY)
        self.assertEqual(apns.classify(0, b"")[0], RETRY)
        self.assertEqual(apns.classify(400, b'{"reason":"BadCollapseId"}')[0], FAIL)

    def test_fcm(self):
        gone = {"error": {"code": 404, "status": "NOT_FOUND", "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
        self.assertEqual(fcm.classify(404, json.dumps(gone).encode())[0], REMOVE_TOKEN)
        payload = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "Invalid value at 'message.data[0].value'",
                             "details": [{"errorCode": "INVALID_ARGUMENT"}]}}
        self.assertEqual(fcm.classify(400, json.dumps(payload).encode())[0], FAIL, "a payload error keeps the token")
        self.assertEqual(fcm.classify(503, b'{"error":{"status":"UNAVAILABLE"}}')[0], RETRY)


class FakeHTTP:
    """Answers each round from a list of status lists."""

    def __init__(self, rounds):
        self.rounds = list(rounds)
        self.sent = []

    def send_all(self, requests):
        self.sent.append([request.url for request in requests])
        return [Response(status) for status in self.rounds.pop(0)]


class FakeClient:
    def request(self, *arguments):
        from teamsender.http2 import Request
        return Request(url=str(arguments[0] if isinstance(arguments[0], str) else arguments[0]["token"]), headers=[], body=b"")


class DeliveryTests(unittest.TestCase):
    def deliver(self, rounds, bug_names=()):
        store = DeviceStore()
        devices = [Device("a", "p", "ios", "tok-a"), Device("b", "p", "ios", "tok-b")]
        for device in devices:
            store.register(device)
        http = FakeHTTP(rounds)
        deliverer = Deliverer(FakeClient(), FakeClient(), http, store, bugs.Bugs(bug_names), RetryPolicy(),
                              sleep=lambda _: None, log=lambda _: None)
        delivered = deliverer.deliver([Push(device, {}, []) for device in devices])
        return delivered, http.sent, sorted(d.token for d in store.all())

    def test_only_the_failed_push_is_retried_and_its_token_kept(self):
        self.assertEqual(self.deliver([[200, 503], [200]]), (2, [["tok-a", "tok-b"], ["tok-b"]], ["tok-a", "tok-b"]))

    def test_a_gone_token_is_deleted_and_not_retried(self):
        self.assertEqual(self.deliver([[200, 410]]), (1, [["tok-a", "tok-b"]], ["tok-a"]))

    def test_the_cleanup_bugs(self):
        self.assertEqual(self.deliver([[200, 410]], ["keep-gone-token"])[2], ["tok-a", "tok-b"])
        self.assertEqual(self.deliver([[200, 503]], ["delete-on-503"])[2], ["tok-a"])
        self.assertEqual(self.deliver([[200, 503], [200, 200]], ["retry-whole-batch"])[1],
                         [["tok-a", "tok-b"], ["tok-a", "tok-b"]])


class SigningTests(unittest.TestCase):
    def test_der_to_raw(self):
        r, s = b"\x00\x80" + b"\x01" * 31, b"\x02" * 30
        der = bytes([0x30, 4 + len(r) + len(s), 0x02, len(r)]) + r + bytes([0x02, len(s)]) + s
        raw = signing.der_to_raw_ecdsa(der)
        self.assertEqual(raw, b"\x80" + b"\x01" * 31 + b"\x00\x00" + b"\x02" * 30)


class ProtocolTests(unittest.TestCase):
    def test_unknown_protocol_and_requests_before_hello_are_answered_not_fatal(self):
        lines = [{"id": 1, "type": "setup", "scenario": {}}, {"id": 2, "type": "hello", "protocol": 9},
                 {"id": 3, "type": "shutdown"}, {"id": 4, "type": "devices"}]
        out = io.StringIO()
        serve(Adapter(bugs.NONE), io.StringIO("\n".join(json.dumps(line) for line in lines) + "\n"), out)
        answers = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual([(a["id"], a["ok"]) for a in answers], [(1, False), (2, False), (3, True)])
        self.assertIn("protocol 9", answers[1]["error"])

    def test_an_unknown_bug_name_is_refused(self):
        with self.assertRaises(bugs.UnknownBug):
            bugs.enabled_from_environment({"PUSHPROOF_EXAMPLE_BUG": "author-notified,typo"})


if __name__ == "__main__":
    unittest.main()
