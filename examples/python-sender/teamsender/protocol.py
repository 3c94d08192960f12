"""The pushproof adapter protocol, version 1 (pushproof's docs/adapter-protocol.md): one JSON
object a line on stdin, one answer a line on stdout, in order, each with the request's `id`.

    hello     configure the sender (gateway URLs, CA file, credentials); answer who we are
    setup     load the scenario's world (people, devices, conversations, rooms, settings)
    event     act on one event; answer once its pushes are delivered
    devices   the devices our store still holds (the "devices" capability)
    shutdown  answer, then exit

Anything that goes wrong in a request is answered {"id", "ok": false, "error"}; nothing is
written to stdout but answers (logs go to stderr).
"""

import json
import sys
import traceback

from . import NAME, VERSION
from .backend import Backend, SetupError

PROTOCOL_VERSION = 1
PRODUCTS = ["poolse", "yama", "concierge"]


class ProtocolError(ValueError):
    pass


class Adapter:
    """Turns requests into calls on the backend. Pure over (request) -> (answer, keep going)."""

    def __init__(self, bugs, backend_factory=Backend):
        self.bugs = bugs
        self.backend_factory = backend_factory
        self.backend = None

    def answer(self, request):
        """The answer object for one request, and whether to read another."""
        request_id = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict):
                raise ProtocolError("a request is a JSON object")
            fields, keep_going = self.dispatch(request)
            return dict({"id": request_id, "ok": True}, **fields), keep_going
        except Exception as error:  # every failure is an answer, never a dead adapter
            if isinstance(error, (ProtocolError, SetupError)):
                print(f"teamsender: {error}", file=sys.stderr)
            else:
                traceback.print_exc(file=sys.stderr)
            return {"id": request_id, "ok": False, "error": f"{type(error).__name__}: {error}"}, True

    def dispatch(self, request):
        kind = request.get("type")
        if kind == "hello":
            if request.get("protocol") != PROTOCOL_VERSION:
                raise ProtocolError(f"protocol {request.get('protocol')!r}: this adapter speaks {PROTOCOL_VERSION}")
            self.backend = self.backend_factory(request["gateway"], request["credentials"], self.bugs)
            return {"protocol": PROTOCOL_VERSION, "sender": {"name": NAME, "version": VERSION}, "products": PRODUCTS,
                    "capabilities": ["devices"]}, True
        if kind == "shutdown":
            return {}, False
        if self.backend is None:
            raise ProtocolError(f"{kind!r} before hello")
        if kind == "setup":
            self.backend.setup(request["scenario"])
            return {}, True
        if kind == "event":
            self.backend.event(request["index"], request["event"])
            return {}, True
        if kind == "devices":
            return {"devices": self.backend.devices()}, True
        raise ProtocolError(f"unknown request {kind!r}")


def serve(adapter, stdin=sys.stdin, stdout=sys.stdout):
    """Reads requests until shutdown or end of input."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            answer, keep_going = {"id": None, "ok": False, "error": f"not JSON: {error}"}, True
        else:
            answer, keep_going = adapter.answer(request)
        stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
        stdout.flush()
        if not keep_going:
            return
