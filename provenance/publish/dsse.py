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
from collections.abc import Callable
from dataclasses import dataclass

from provenance.model.errors import ProvError
from provenance.publish.keys import key_id

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


_ENVELOPE_FIELDS = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_FIELDS = frozenset({"keyid", "sig"})
MAX_ENVELOPE_BYTES = 64 << 20


def _b64(text: object, what: str) -> bytes:
    """Standard base64 in its one canonical form: the same bytes can be spelled only one
    way, so a malleated envelope (URL-safe alphabet, junk, odd padding) is refused."""
    if not isinstance(text, str):
        raise EnvelopeError(f"{what} is not a string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError(f"{what} is not standard base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise EnvelopeError(f"{what} is not canonical base64")
    return raw


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    doc: dict[str, object] = {}
    for key, value in pairs:
        if key in doc:
            raise EnvelopeError(f"duplicate JSON key {key!r}")
        doc[key] = value
    return doc


def load_strict_json(data: bytes, what: str) -> object:
    """JSON whose every object has unique keys (a first-wins and a last-wins parser must
    not read two documents out of one), nested at most `json_depth` deep."""
    from provenance.model.inputs import check_json_shape

    try:
        text = data.decode("utf-8")
        check_json_shape(text, what)
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except EnvelopeError:
        raise
    except ProvError as exc:
        raise EnvelopeError(str(exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise EnvelopeError(f"{what} is not JSON ({exc})") from None


def parse(data: bytes, check_payload: Callable[[int], None] | None = None) -> Opened:
    """Validate the envelope's shape at the edge; nothing is trusted yet. `check_payload`
    sees the payload's decoded size before it is decoded (and may refuse it)."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"envelope is over {MAX_ENVELOPE_BYTES} bytes")
    doc = load_strict_json(data, "envelope")
    if not isinstance(doc, dict):
        raise EnvelopeError("envelope is not a JSON object")
    unknown = sorted(set(doc) - _ENVELOPE_FIELDS)
    if unknown:
        raise EnvelopeError(f"envelope has unknown fields: {', '.join(unknown)}")
    ptype = doc.get("payloadType")
    if not isinstance(ptype, str):
        raise EnvelopeError("envelope has no payloadType")
    encoded = doc.get("payload")
    if check_payload is not None and isinstance(encoded, str):
        check_payload(len(encoded) // 4 * 3 - encoded[-2:].count("="))
    payload = _b64(encoded, "payload")
    sigs = doc.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise EnvelopeError("envelope has no signatures")
    out = []
    for i, s in enumerate(sigs):
        if not isinstance(s, dict):
            raise EnvelopeError(f"signature {i} is not an object")
        unknown = sorted(set(s) - _SIGNATURE_FIELDS)
        if unknown:
            raise EnvelopeError(f"signature {i} has unknown fields: {', '.join(unknown)}")
        keyid = s.get("keyid", "")
        if not isinstance(keyid, str):
            raise EnvelopeError(f"signature {i}: keyid is not a string")
        out.append((keyid, _b64(s.get("sig"), f"signature {i}")))
    return Opened(payload, ptype, tuple(out))


def verify(opened: Opened, public_key) -> str:
    """The key id that verified; raises EnvelopeError when no signature verifies."""
    from cryptography.exceptions import InvalidSignature

    message = pae(opened.payload_type, opened.payload)
    kid = key_id(public_key)
    for claimed, sig in opened.signatures:
        try:
            public_key.verify(sig, message)
        except InvalidSignature:
            continue
        if claimed != kid:  # the keyid is unsigned: a wrong one is a malleated envelope
            raise EnvelopeError(f"signature verifies with {kid} but claims keyid {claimed!r}")
        return kid
    claimed = ", ".join(k or "(no keyid)" for k, _ in opened.signatures)
    raise EnvelopeError(f"no signature verifies with key {kid} (signed by: {claimed})")
