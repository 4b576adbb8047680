"""Verify a Laboratory Ordering Partner webhook delivery (Python 3 standard library only)."""
import hashlib
import hmac
import json
import time

TOLERANCE_SECONDS = 300


def verify_webhook(secret: str, headers: dict, raw_body: bytes, now: float | None = None) -> dict:
    """Return the event if the delivery is authentic and fresh; raise ValueError otherwise.

    `headers` keys are lower-case; `raw_body` is the exact bytes received.
    """
    signature = headers.get("x-partner-signature", "")
    timestamp = headers.get("x-partner-timestamp", "")
    if not signature or not timestamp.isdigit():
        raise ValueError("missing or malformed signature headers")
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_SECONDS:
        raise ValueError("timestamp outside the tolerance")

    signed = timestamp.encode() + b"." + raw_body
    expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise ValueError("signature mismatch")

    # Only now is the body trusted. Deduplicate on event_id before acting.
    return json.loads(raw_body)


if __name__ == "__main__":
    # Used by the test suite: reads {"secret", "headers", "body", "now"} as JSON on stdin and
    # prints {"ok": true, "event_id": ...} or {"ok": false, "reason": ...}.
    import sys

    case = json.load(sys.stdin)
    try:
        event = verify_webhook(case["secret"], case["headers"], case["body"].encode(), case.get("now"))
        print(json.dumps({"ok": True, "event_id": event["event_id"]}))
    except ValueError as error:
        print(json.dumps({"ok": False, "reason": str(error)}))
