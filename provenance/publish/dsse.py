"""DSSE envelopes (secure-systems-lab/dsse, protocol v1) signed with ed25519.

The signature covers PAE(payloadType, payload), never the payload alone, so the type is
bound into what is signed:
    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
where LEN is the byte length as ASCII decimal without leading zeros and SP is one space.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from provenance.keys import key_id
from provenance.model.errors import ProvError

INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def sign(payload: bytes, private_key, payload_type: str = INTOTO_PAYLOAD_TYPE) -> dict:
    sig = private_key.sign(pae(payload_type, payload))
    return {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [
            {"keyid": key_id(private_key.public_key()), "sig": base64.b64encode(sig).decode()}
        ],
    }


class EnvelopeError(ProvError, ValueError):
    """The envelope is malformed or no signature verifies."""


@dataclass(frozen=True)
class Opened:
    payload: bytes
    payload_type: str
    signatures: tuple[tuple[str, bytes], ...]  # (keyid, raw signature)


def _b64(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise EnvelopeError(f"{what} is not a string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        try:  # DSSE allows URL-safe base64 too
            return base64.urlsafe_b64decode(text)
        except (binascii.Error, ValueError):
            raise EnvelopeError(f"{what} is not base64") from None


def parse(data: bytes) -> Opened:
    """Validate the envelope's shape at the edge; nothing is trusted yet."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EnvelopeError(f"envelope is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise EnvelopeError("envelope is not a JSON object")
    ptype = doc.get("payloadType")
    if not isinstance(ptype, str):
        raise EnvelopeError("envelope has no payloadType")
    payload = _b64(doc.get("payload"), "payload")
    sigs = doc.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise EnvelopeError("envelope has no signatures")
    out = []
    for i, s in enumerate(sigs):
        if not isinstance(s, dict):
            raise EnvelopeError(f"signature {i} is not an object")
        keyid = s.get("keyid", "")
        out.append((keyid if isinstance(keyid, str) else "", _b64(s.get("sig"), f"signature {i}")))
    return Opened(payload, ptype, tuple(out))


def verify(opened: Opened, public_key) -> str:
    """The key id that verified; raises EnvelopeError when no signature verifies."""
    from cryptography.exceptions import InvalidSignature

    message = pae(opened.payload_type, opened.payload)
    kid = key_id(public_key)
    for _claimed, sig in opened.signatures:
        try:
            public_key.verify(sig, message)
            return kid
        except InvalidSignature:
            continue
    claimed = ", ".join(k or "(no keyid)" for k, _ in opened.signatures)
    raise EnvelopeError(f"no signature verifies with key {kid} (signed by: {claimed})")
