#!/usr/bin/env python3
"""The smallest pushproof adapter (docs/adapter-protocol.md): copy it, then fill in the three
places marked YOUR BACKEND. As it stands it answers every request and sends nothing, so
`pushproof run` plays the scenario and reports every expected push as missing: the protocol
works, and what is left is your sender's part.

Python's standard library only. Log to stderr; stdout carries the protocol.
"""
import json
import sys


def log(*parts):
    print("adapter:", *parts, file=sys.stderr, flush=True)


def hello(request):
    gateway, credentials = request["gateway"], request["credentials"]
    # YOUR BACKEND: point your sender at the mock instead of Apple and Google:
    #   APNs base URL   gateway["apns_url"]  (it posts to <apns_url>/3/device/<token>)
    #   FCM base URL    gateway["fcm_url"]   (<fcm_url>/v1/projects/<project>/messages:send)
    #   trust           gateway["ca_file"]   (PEM; empty when gateway["h2c"] is true)
    #   APNs signing    credentials["apns_key_file"], ["apns_key_id"], ["apns_team_id"]
    #   FCM OAuth       credentials["service_account_file"] (its token_uri is the mock's)
    log("gateway", gateway["apns_url"])
    return {"sender": {"name": "my sender", "version": "0.0.1"},
            "products": ["poolse", "yama", "concierge"],
            # Add "devices" once you answer the devices request below.
            "capabilities": []}


def setup(request):
    scenario = request["scenario"]
    # YOUR BACKEND: load the people, their devices (each with its token) and the
    # conversations or rooms into your test database or fixtures.
    log("setup:", len(scenario.get("people", [])), "people of", scenario["app"]["bundle_id"])
    return {}


def event(request):
    # YOUR BACKEND: make your system act on it (post the message, place the call), as your
    # API would; answer once it is accepted, delivery may go on after.
    log("event", request["index"], request["event"]["type"])
    return {}


def devices(request):
    # With the "devices" capability: the tokens your store still holds, [{"id", "token"}].
    return {"devices": []}


HANDLERS = {"hello": hello, "setup": setup, "event": event, "devices": devices, "shutdown": lambda request: {}}


def main():
    for line in sys.stdin:
        request = json.loads(line)
        reply = {"id": request["id"], "ok": True}
        try:
            reply.update(HANDLERS[request["type"]](request))
        except Exception as error:  # the run stops and quotes this, never a silent failure
            reply = {"id": request["id"], "ok": False, "error": f"{request['type']}: {error!r}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if request["type"] == "shutdown":
            return


if __name__ == "__main__":
    main()
