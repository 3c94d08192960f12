"""The backend under test: configured once (`hello`), loaded with a world (`setup`), then driven
event by event. This is the part a team would replace with calls into its own service."""

import json

from . import bugs as seeded_bugs
from .apns import APNsClient
from .delivery import Deliverer
from .fcm import FCMClient
from .http2 import CurlHTTP2
from .products import backend_for
from .store import Device, DeviceStore

#: The apps our products ship, as their dashboards have them (pushproof's Specs/specset.json
#: `config`), used when the scenario does not name its own.
DEFAULT_APPS = {
    "poolse": ("com.example.loop", "poolse-example"),
    "yama": ("com.example.yama.tenant", None),
    "concierge": ("com.example.shop", "concierge-example"),
}


class SetupError(ValueError):
    pass


class ScenarioClock:
    """The backend's clock, set to the scenario's time so payload times (sent_at, ring_deadline,
    apns-expiration) are the ones the scenario speaks of, as a test freezes time."""

    def __init__(self, start_ms):
        self.start_ms = start_ms
        self.now_ms = start_ms

    def advance_to(self, at_ms):
        if at_ms is not None:
            self.now_ms = self.start_ms + at_ms


class App:
    """What the product rules see: the app's ids, the store, the clock and the seeded bugs."""

    def __init__(self, bundle_id, fcm_project, store, clock, bugs):
        self.bundle_id = bundle_id
        self.fcm_project = fcm_project
        self.store = store
        self.clock = clock
        self.bugs = bugs


def _device(person, fields):
    token = fields.get("token")
    if not token:
        raise SetupError(f"device {fields.get('id')!r} of {person!r} has no token")
    return Device(id=fields["id"], person=person, platform=fields["platform"], token=token,
                  kind=(fields.get("kind") or "alert") if fields["platform"] == "ios" else None)


class Backend:
    def __init__(self, gateway, credentials, bugs):
        self.gateway = gateway
        self.bugs = bugs
        self.http = CurlHTTP2(ca_file=gateway.get("ca_file"), h2c=bool(gateway.get("h2c")))
        self.apns = APNsClient(gateway["apns_url"], credentials["apns_key_file"], credentials["apns_key_id"],
                               credentials["apns_team_id"])
        with open(credentials["service_account_file"]) as file:
            self.service_account = json.load(file)
        self.store = DeviceStore()
        self.known = {}
        self.app = None
        self.product = None
        self.deliverer = None

    def setup(self, scenario):
        product = scenario.get("product")
        if product not in DEFAULT_APPS:
            raise SetupError(f"product {product!r}: this sender handles {', '.join(sorted(DEFAULT_APPS))}")
        default_bundle, default_project = DEFAULT_APPS[product]
        # The run's app ids come in `app`; a scenario file without them means the product's own.
        app_ids = scenario.get("app", {})
        bundle_id = app_ids.get("bundle_id") or default_bundle
        fcm_project = app_ids.get("fcm_project") or default_project or self.service_account.get("project_id")
        self.store = DeviceStore()
        self.known = {}
        for person in scenario.get("people", []):
            for fields in person.get("devices", []):
                self.remember(_device(person["id"], fields))
        clock = ScenarioClock(scenario.get("start_ms", 1793952000000))
        self.app = App(bundle_id, fcm_project, self.store, clock, self.bugs)
        self.product = backend_for(product)(self.app, scenario)
        fcm = FCMClient(self.gateway["fcm_url"], fcm_project, self.service_account, self.http)
        self.deliverer = Deliverer(self.apns, fcm, self.http, self.store, self.bugs)

    def event(self, index, event):
        """Acts on one event; returns once its pushes are delivered (or given up)."""
        if self.product is None:
            raise SetupError("event before setup")
        self.app.clock.advance_to(event.get("at_ms"))
        kind = event["type"]
        if kind == "device.registered":
            self.register(event)
            return 0
        if kind == "device.unregistered":
            # Yama seed: "Unregister on logout or when the token rotates".
            device = self.known.get(event["device"])
            if device is not None:
                self.store.remove(device.token)
            return 0
        if kind == "gateway.token":
            return 0  # the gateway's business, not ours
        return self.deliverer.deliver(self.product.handle(event, index))

    def register(self, event):
        """A new device (an object, with its token), or a known one by id registering again:
        the store may have deleted it when its token was answered gone."""
        device = event["device"]
        if isinstance(device, dict):
            self.remember(_device(event["person"], device))
            return
        known = self.known.get(device)
        if known is None:
            raise SetupError(f"device.registered: unknown device {device!r}")
        self.store.register(known)

    def remember(self, device):
        """Registers `device`, and keeps it by id so it can register again after a deletion."""
        self.known[device.id] = device
        self.store.register(device)

    def devices(self):
        return [{"id": device.id, "token": device.token} for device in self.store.all()]
