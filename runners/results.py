"""The result format: a directory with result.json (metadata) and arrays.npz (numpy arrays).

result.json carries `format`, `kind` (repeat | diverge | replay | invariance), the engine
configurations and the runtime facts they resolved, model/tokenizer/text digests, positions,
the summary, the disclosure card, the acceptance policy's verdict when one was given
(`policy`: path, sha256, verdict, each check with its observed value), the list of arrays
with shape and dtype, and `arrays_sha256` (over the npz bytes). A result is written to a temp
directory and renamed into place, and only with a constructed (strict) DisclosureCard: a
result with a missing or malformed disclosure item cannot be produced. A result written
before the strict card holds free-text items: `read_result` reads it (its card is a legacy
card, `read_card`, shown as such by the report and refused by `prov publish`); a card that
lost an item is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import replace_dir, write_atomic
from provenance.model.disclosure import DisclosureCard, DisclosureError, read_card
from provenance.model.errors import ProvError
from provenance.model.policy import Policy
from runners.arrays import npz_bytes

RESULT_FORMAT = "prov-result/1"
KINDS = ("repeat", "diverge", "replay", "invariance")
REQUIRED_META = ("engines", "model_digest", "tokenizer_digest", "text_digest", "positions")


class ResultError(ProvError, ValueError):
    """An unreadable, tampered or incomplete result."""


def write_result(path: Path, kind: str, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                 disclosure: DisclosureCard, policy: Policy | None = None) -> Path:
    """With a policy: its verdict on the summary (as result.json will hold it) is recorded
    under `policy`, inside the document the digests cover."""
    if not isinstance(disclosure, DisclosureCard):
        raise DisclosureError("a result needs a DisclosureCard (all nine items, typed)")
    if kind not in KINDS:
        raise ResultError(f"result kind must be one of {KINDS}")
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise ResultError(f"result metadata is missing: {', '.join(missing)}")
    blob = npz_bytes({k: np.asarray(v) for k, v in arrays.items()})
    doc = {
        "format": RESULT_FORMAT,
        "kind": kind,
        **meta,
        "disclosure": disclosure.to_json(),
        "arrays": {k: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)}
                   for k, v in sorted(arrays.items())},
        "arrays_sha256": hashlib.sha256(blob).hexdigest(),
    }
    if policy is not None:
        doc["policy"] = policy.evaluate(json.loads(json.dumps(meta.get("summary"),
                                                              default=_json_default)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        write_atomic(tmp / "arrays.npz", blob)
        write_atomic(tmp / "result.json",
                    json.dumps(doc, indent=1, sort_keys=True, default=_json_default).encode())
        replace_dir(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def read_result(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(metadata, arrays), after checking format, array digest and disclosure card."""
    path = Path(path)
    try:
        doc = json.loads((path / "result.json").read_text())
        blob = (path / "arrays.npz").read_bytes()
    except (OSError, ValueError) as exc:
        raise ResultError(f"{path}: not a readable result: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
        raise ResultError(f"{path}: not a {RESULT_FORMAT} result")
    if hashlib.sha256(blob).hexdigest() != doc.get("arrays_sha256"):
        raise ResultError(f"{path}: arrays.npz does not match arrays_sha256")
    read_card(doc.get("disclosure") or {})  # strict, or legacy (all nine items); else refused
    with np.load(io.BytesIO(blob)) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return doc, arrays
