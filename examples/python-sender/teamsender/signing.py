"""JSON Web Tokens for both gateways, signed by the `openssl` command line.

Python's standard library has no ECDSA or RSA, so the private-key step goes through `openssl
dgst -sign`, the way a team without a JWT package would do it:

- APNs provider token (Apple, "Establishing a token-based connection to APNs"): header
  {"alg": "ES256", "kid": <key id>}, claims {"iss": <team id>, "iat": <now>}, signed with the
  .p8 key. JWS wants the raw 64-byte r||s signature; openssl prints DER, converted here.
- Google's OAuth 2.0 JWT-bearer assertion (RFC 7523; Google's "Using OAuth 2.0 for Server to
  Server Applications"): header {"alg": "RS256", "typ": "JWT", "kid": <private_key_id>},
  claims iss/scope/aud/iat/exp, signed with the service account's RSA key.
"""

import base64
import json
import os
import subprocess
import tempfile

FCM_SCOPES = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/firebase.messaging"


class SigningError(RuntimeError):
    pass


def b64url(data):
    """base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _segment(obj):
    return b64url(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


def _openssl_sign(key_file, message):
    """SHA-256 signature of `message` with the PEM key in `key_file` (DER for EC keys)."""
    try:
        completed = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", key_file], input=message, capture_output=True, check=False)
    except FileNotFoundError as error:
        raise SigningError("the openssl command is not installed") from error
    if completed.returncode != 0:
        raise SigningError(f"openssl dgst -sign {key_file}: {completed.stderr.decode(errors='replace').strip()}")
    return completed.stdout


def der_to_raw_ecdsa(der, size=32):
    """DER `SEQUENCE { INTEGER r, INTEGER s }` to r||s, each left-padded to `size` bytes."""
    if len(der) < 8 or der[0] != 0x30:
        raise SigningError("not a DER ECDSA signature")
    position = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    parts = []
    for _ in range(2):
        if der[position] != 0x02:
            raise SigningError("not a DER ECDSA signature")
        length = der[position + 1]
        value = der[position + 2:position + 2 + length].lstrip(b"\x00")
        if len(value) > size:
            raise SigningError("ECDSA integer longer than the curve")
        parts.append(value.rjust(size, b"\x00"))
        position += 2 + length
    return parts[0] + parts[1]


def apns_provider_token(key_file, key_id, team_id, issued_at):
    """An ES256 provider token for APNs (valid for an hour; re-sign well before)."""
    signing_input = _segment({"alg": "ES256", "kid": key_id}) + "." + _segment({"iss": team_id, "iat": issued_at})
    signature = der_to_raw_ecdsa(_openssl_sign(key_file, signing_input.encode("ascii")))
    return signing_input + "." + b64url(signature)


def google_assertion(service_account, issued_at, lifetime=3600):
    """An RS256 JWT-bearer assertion for the service account's own `token_uri`."""
    header = {"alg": "RS256", "typ": "JWT", "kid": service_account["private_key_id"]}
    claims = {
        "iss": service_account["client_email"],
        "scope": FCM_SCOPES,
        "aud": service_account["token_uri"],
        "iat": issued_at,
        "exp": issued_at + lifetime,
    }
    signing_input = _segment(header) + "." + _segment(claims)
    # openssl reads keys from files only: a private temporary one, removed at once.
    descriptor, path = tempfile.mkstemp(prefix="sa-key-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as key_file:
            key_file.write(service_account["private_key"])
        signature = _openssl_sign(path, signing_input.encode("ascii"))
    finally:
        os.unlink(path)
    return signing_input + "." + b64url(signature)
