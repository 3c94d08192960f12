"""Text helpers the products share."""

#: APNs refuses payloads over 4096 bytes and FCM data over 4 KB, so a preview is bounded.
PREVIEW_MAX_BYTES = 1024
ELLIPSIS = "…"


def clip_preview(text, max_bytes=PREVIEW_MAX_BYTES):
    """`text` cut on a character boundary to at most `max_bytes` UTF-8 bytes, "…" when cut."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    budget = max_bytes - len(ELLIPSIS.encode("utf-8"))
    clipped = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
    return clipped + ELLIPSIS


def apns_headers(push_type, topic, priority, expiration=None, collapse_id=None):
    """The apns-* headers of one push (authorization and content-type are the client's).

    apns.md: apns-expiration is Unix seconds (0: deliver now or never); an apns-collapse-id
    over 64 bytes is refused with 400 BadCollapseId, so a longer one is left out.
    """
    headers = [("apns-push-type", push_type), ("apns-topic", topic), ("apns-priority", str(priority))]
    if expiration is not None:
        headers.append(("apns-expiration", str(expiration)))
    if collapse_id and len(collapse_id.encode("utf-8")) <= 64:
        headers.append(("apns-collapse-id", collapse_id))
    return headers
