"""The disclosure card: a KL (or any divergence) figure is publishable only with all nine items.

A card missing an item, or with an empty one, cannot be constructed, and results.write_result
takes only a constructed card, so the runners cannot produce a result without it. "Not
applicable" is allowed, but it has to be said (with a reason), never left blank.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from provenance.model.errors import ProvError

ITEMS = (
    "reference_checkpoint",
    "runtime_environment",
    "evaluation_text",
    "calibration_data",
    "context_lengths",
    "sampled_positions",
    "kl_direction",
    "vocabulary_truncation",
    "aggregation",
)


class DisclosureError(ProvError, ValueError):
    """A disclosure card with a missing or empty item."""


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict | list | tuple):
        return len(value) == 0
    return False


@dataclass(frozen=True)
class DisclosureCard:
    reference_checkpoint: Any
    runtime_environment: Any
    evaluation_text: Any
    calibration_data: Any
    context_lengths: Any
    sampled_positions: Any
    kl_direction: Any
    vocabulary_truncation: Any
    aggregation: Any

    def __post_init__(self) -> None:
        missing = [f.name for f in fields(self) if _empty(getattr(self, f.name))]
        if missing:
            raise DisclosureError(f"disclosure card is missing: {', '.join(missing)}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DisclosureCard:
        missing = [k for k in ITEMS if _empty(data.get(k))]
        if missing:
            raise DisclosureError(f"disclosure card is missing: {', '.join(missing)}")
        unknown = sorted(set(data) - set(ITEMS))
        if unknown:
            raise DisclosureError(f"disclosure card has unknown items: {', '.join(unknown)}")
        return cls(**{k: data[k] for k in ITEMS})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
