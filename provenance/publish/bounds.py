"""Every bound on what `prov verify` reads from a bundle, in one place (issue #30).

A bundle is untrusted input. Files are checked against these bounds by size (a directory's
`stat`, an archive member's header) before a byte of them is read, so a huge attestation
costs nothing. Results are only hashed, streaming, unless one is a JSON object (it may
declare a KL figure), which is bounded like any JSON document prov parses (the model's
`MAX_JSON_MEMORY`). With these bounds verify's peak RSS stays under 256 MB whatever the
bundle: bench/results/2026-12-05-cpu-2core/verify-memory.md.

`prov publish` holds itself to the same bounds, so it never writes a bundle verify refuses.
"""

from __future__ import annotations

from provenance.model.inputs import InputError

MiB = 1 << 20
# The in-toto statement: the bare attestation, or the payload of the DSSE envelope. Real ones
# are far smaller: 10,000 members (the most a bundle holds) take ~1.5 MB of descriptors.
MAX_STATEMENT_BYTES = 8 * MiB
# The envelope: the statement's base64 plus its signatures.
MAX_ENVELOPE_BYTES = 4 * ((MAX_STATEMENT_BYTES + 2) // 3) + 64 * 1024
# Each other document verify parses: run records, manifests, the SBOM, disclosure cards, the
# exchanges.
MAX_DOCUMENT_BYTES = 16 * MiB
# ... and its text plus parsed objects (the model's `json_memory` estimate): verify holds a
# document more than once (the SBOM: its text, the schema validator's parse, its own, and the
# SBOM rebuilt from the manifest), so it gets three eighths of the model's 128 MiB.
MAX_DOCUMENT_MEMORY = 48 * MiB
# A .tar.gz bundle as a whole (results included): one member, everything unpacked, members.
MAX_MEMBER_BYTES = 256 * MiB
MAX_TOTAL_BYTES = 1024 * MiB
MAX_MEMBERS = 10_000

SIGNED_NAME = "attestation.dsse.json"
UNSIGNED_NAME = "attestation.intoto.json"


class BoundError(InputError):
    """A bundle file over its bound: refused unread, one line, exit 2 (bad input)."""


def bound_of(name: str) -> tuple[int, str]:
    """The most bytes the bundle file `name` may have, and what it is called."""
    if name == SIGNED_NAME:
        return MAX_ENVELOPE_BYTES, "DSSE envelope"
    if name == UNSIGNED_NAME:
        return MAX_STATEMENT_BYTES, "statement"
    if name.startswith("results/"):
        return MAX_MEMBER_BYTES, "result"
    return MAX_DOCUMENT_BYTES, "bundle document"


def check_size(name: str, size: int) -> None:
    """Refuse `name` of `size` bytes if over its bound (results: left to the archive's
    per-member bound, a step-1 failure)."""
    limit, what = bound_of(name)
    if size > limit and not name.startswith("results/"):
        raise BoundError(f"{name}: {size} bytes, over the {limit}-byte bound for a {what} "
                         "(prov verify reads none larger); refused unread")


def check_document(name: str, data: bytes) -> None:
    """Refuse a bundle document whose parse would take more than MAX_DOCUMENT_MEMORY (its
    decoded text judged before it is decoded). Text that is not UTF-8 passes: the step that
    parses it fails on it."""
    from provenance.model.inputs import json_memory, text_memory

    need = 2 * text_memory(data)
    if need <= MAX_DOCUMENT_MEMORY:
        try:
            need = json_memory(data.decode("utf-8"))
        except UnicodeDecodeError:
            return
    if need > MAX_DOCUMENT_MEMORY:
        raise BoundError(f"{name}: would take ~{need >> 20} MiB in memory once parsed, over "
                         f"the {MAX_DOCUMENT_MEMORY >> 20} MiB bound for a bundle document; "
                         "refused")


def check_statement(size: int) -> None:
    """Refuse an in-toto statement (bare, or decoded from an envelope) over its bound."""
    if size > MAX_STATEMENT_BYTES:
        raise BoundError(f"in-toto statement: {size} bytes, over the {MAX_STATEMENT_BYTES}-byte "
                         "bound (prov verify reads none larger); refused")
