"""The device store: who has which push token.

A team keeps this in its database (a `devices` table keyed by token). This one lives in memory,
which is all an adapter needs: pushproof hands it the devices in `setup` and the registrations
as events.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """One registered push token.

    `kind` is poolse's iOS token kind: "voip" for the PushKit token, "alert" for the regular
    APNs token ("VoIP pushes go to the PushKit token ... Everything else goes to the regular
    APNs token", poolse seed, Overview). Android devices have kind None.
    """

    id: str
    person: str
    platform: str  # "ios" or "android"
    token: str
    kind: str = None

    @property
    def is_voip(self):
        return self.platform == "ios" and self.kind == "voip"

    @property
    def is_ios_alert(self):
        return self.platform == "ios" and self.kind != "voip"

    @property
    def is_android(self):
        return self.platform == "android"


class DeviceStore:
    """Devices by token, in registration order, and by person."""

    def __init__(self):
        self._by_token = {}
        # person -> {token: Device}; a fan-out to thousands asks once per member.
        self._by_person = {}

    def register(self, device):
        """Re-registering is idempotent (Yama seed: "Re-registering is idempotent")."""
        self.remove(device.token)
        self._by_token[device.token] = device
        self._by_person.setdefault(device.person, {})[device.token] = device

    def remove(self, token):
        """Forget a token (logout, or the gateway said it is gone). Unknown tokens are fine."""
        device = self._by_token.pop(token, None)
        if device is not None:
            self._by_person.get(device.person, {}).pop(token, None)

    def devices_of(self, person):
        return list(self._by_person.get(person, {}).values())

    def all(self):
        return list(self._by_token.values())

    def __contains__(self, token):
        return token in self._by_token
