"""The pieces of the disclosure card that every runner writes the same way (the card itself is
defined once, in provenance/model/disclosure.py)."""

from __future__ import annotations

from typing import Any

from provenance.model.disclosure import (
    Checkpoint,
    Environment,
    NoCalibration,
    Text,
    Truncation,
    Vocabulary,
)
from runners.prepare import Prepared

NOT_CALIBRATED = NoCalibration("no quantized weights or KV cache were calibrated")


def checkpoint(prep: Prepared, engine: str | None = None) -> Checkpoint:
    return Checkpoint(digest=prep.model_digest, tokenizer_digest=prep.tokenizer_digest,
                      reference_engine=engine)


def text(prep: Prepared) -> Text:
    return Text(digest=prep.text_digest,
                source=f"the run's evaluation text: its first {len(prep.ids)} of "
                       f"{prep.truncated_from} tokens",
                tokens_total=int(prep.truncated_from))


def environment(run_ids: list[str | None], runtime: dict[str, Any]) -> Environment:
    """Run ids ("standalone" for a run outside `prov exec`) and each side's runtime facts."""
    return Environment(run_ids=tuple(r or "standalone" for r in run_ids), runtime=runtime)


def full_vocabulary(note: str | None = None, size: int | None = None) -> Truncation:
    return Truncation(Vocabulary.FULL, size=size, note=note)


def top_k(residual_bucket: bool, note: str, k: int | None = None) -> Truncation:
    """`k`: the ids an engine returned per position, when the configuration says."""
    return Truncation(Vocabulary.TOP_K, k=k, residual_bucket=residual_bucket, note=note)
