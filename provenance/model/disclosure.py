"""The disclosure card, defined once: a divergence figure is publishable only with nine typed items.

Each item is a typed value (below) or `NotApplicable(reason)`; digests are "sha256:<64 hex>",
counts are integers, the KL direction and the vocabulary mode are enumerations, and "none"
(no calibration) and "not applicable" are explicit values with a reason, never free-text
prefixes. `DisclosureCard.from_dict` refuses a card with a missing, unknown or malformed item,
naming each item and why; the runners build cards from these types, `prov publish` checks
cards with `publish_problems`, the report takes the names from `ITEMS`, and
docs/concepts/disclosure.md's table is generated from `FIELDS` (`fields_table`).

Results written before the strict card hold free-text items; `read_card` reads such a card
as a `LegacyCard` (all nine items present and non-empty, kept verbatim, shown as legacy) and
`publish_problems` refuses it, naming the first item that is not strict.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
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

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class DisclosureError(ProvError, ValueError):
    """A disclosure card with a missing, unknown or malformed item."""


class Direction(StrEnum):
    """Which KL: the reference's distribution first, the candidate's first, or both."""

    REF_CAND = "KL(ref||cand)"
    CAND_REF = "KL(cand||ref)"
    BOTH = "both"


class Vocabulary(StrEnum):
    """Over which vocabulary a divergence was computed."""

    FULL = "full"
    TOP_K = "top_k"


class _Bad(Exception):
    """One malformed value: `where` (a dotted path below the item) and why."""

    def __init__(self, why: str, where: str = "") -> None:
        super().__init__(why)
        self.why, self.where = why, where


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _text(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _Bad(f"must be a non-empty string, got {_kind(v)}", where)
    return v


def _digest(v: Any, where: str) -> str:
    if not isinstance(v, str) or not _DIGEST.match(v):
        raise _Bad('must be "sha256:<64 lowercase hex>", got '
                    + (repr(v[:40]) if isinstance(v, str) else _kind(v)), where)
    return v


def _count(v: Any, where: str, least: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise _Bad(f"must be an integer >= {least}, got "
                   + (repr(v) if isinstance(v, int | float) else _kind(v)), where)
    return v


def _enum(cls: type[StrEnum], v: Any, where: str) -> Any:
    try:
        return cls(v)
    except (ValueError, TypeError):
        allowed = ", ".join(repr(m.value) for m in cls)
        raise _Bad(f"must be one of {allowed}, got {v!r}"[:200], where) from None


def _object(v: Any, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(f"must be an object, got {_kind(v)}")
    missing = [k for k in required if k not in v]
    if missing:
        raise _Bad(f"needs {', '.join(required)}; missing {', '.join(missing)}")
    unknown = sorted(set(v) - set(required) - set(optional))
    if unknown:
        raise _Bad(f"unknown key(s) {', '.join(map(str, unknown))}; allowed: "
                   f"{', '.join(required + optional)}")
    return v


def _opt(v: dict[str, Any], key: str, check: Callable[[Any, str], Any]) -> Any:
    return check(v[key], key) if key in v else None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass(frozen=True)
class NotApplicable:
    """The item does not apply to this figure, and why (e.g. no KL in a bitwise repeat)."""

    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"not_applicable": self.reason}


@dataclass(frozen=True)
class NoCalibration:
    """Nothing was calibrated (no quantized weights or KV cache), and why that holds."""

    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"none": self.reason}


@dataclass(frozen=True)
class Checkpoint:
    digest: str
    name: str | None = None
    tokenizer_digest: str | None = None
    reference_engine: str | None = None
    chat_template_digest: str | None = None

    @classmethod
    def parse(cls, v: Any) -> Checkpoint:
        d = _object(v, ("digest",), ("name", "tokenizer_digest", "reference_engine",
                                     "chat_template_digest"))
        return cls(_digest(d["digest"], "digest"), _opt(d, "name", _text),
                   _opt(d, "tokenizer_digest", _digest), _opt(d, "reference_engine", _text),
                   _opt(d, "chat_template_digest", _digest))

    def to_json(self) -> dict[str, Any]:
        return _drop_none(self.__dict__)


@dataclass(frozen=True)
class Environment:
    """Where the sides ran: the manifest's digest and/or the runs (their manifests are in the
    store; "standalone" for a run outside `prov exec`); `runtime` holds the resolved runtime
    facts by side."""

    run_ids: tuple[str, ...] = ()
    manifest_digest: str | None = None
    runtime: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, v: Any) -> Environment:
        d = _object(v, (), ("manifest_digest", "run_ids", "runtime"))
        if "manifest_digest" not in d and "run_ids" not in d:
            raise _Bad("needs manifest_digest or run_ids")
        ids = d.get("run_ids", ["-"])
        if not isinstance(ids, list) or not ids:
            raise _Bad(f"must be a non-empty list of run ids, got {_kind(ids)}", "run_ids")
        runtime = d.get("runtime", {})
        if not isinstance(runtime, dict) or not all(isinstance(x, dict)
                                                    for x in runtime.values()):
            raise _Bad("must be an object of side -> runtime facts (objects)", "runtime")
        return cls(tuple(_text(x, "run_ids") for x in d.get("run_ids", [])),
                   _opt(d, "manifest_digest", _digest), runtime)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.manifest_digest is not None:
            out["manifest_digest"] = self.manifest_digest
        if self.run_ids:
            out["run_ids"] = list(self.run_ids)
        if self.runtime:
            out["runtime"] = self.runtime
        return out


@dataclass(frozen=True)
class Text:
    digest: str
    source: str
    tokens_total: int | None = None
    token_ids_digest: str | None = None
    chat_template_digest: str | None = None

    @classmethod
    def parse(cls, v: Any) -> Text:
        d = _object(v, ("digest", "source"),
                    ("tokens_total", "token_ids_digest", "chat_template_digest"))
        return cls(_digest(d["digest"], "digest"), _text(d["source"], "source"),
                   _opt(d, "tokens_total", _count), _opt(d, "token_ids_digest", _digest),
                   _opt(d, "chat_template_digest", _digest))

    def to_json(self) -> dict[str, Any]:
        return _drop_none(self.__dict__)


@dataclass(frozen=True)
class Calibration:
    digest: str
    source: str

    @classmethod
    def parse(cls, v: Any) -> Calibration | NoCalibration:
        if isinstance(v, dict) and set(v) == {"none"}:
            return NoCalibration(_text(v["none"], "none"))
        d = _object(v, ("digest", "source"), ())
        return cls(_digest(d["digest"], "digest"), _text(d["source"], "source"))

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "source": self.source}


def _lengths(v: Any) -> tuple[int, ...]:
    if not isinstance(v, list) or not v:
        raise _Bad(f"must be a non-empty list of positive token counts, got {_kind(v)}")
    return tuple(_count(n, f"[{i}]") for i, n in enumerate(v))


@dataclass(frozen=True)
class Positions:
    rule: str
    count: int | None = None

    @classmethod
    def parse(cls, v: Any) -> Positions:
        d = _object(v, ("rule",), ("count",))
        return cls(_text(d["rule"], "rule"), _opt(d, "count", _count))

    def to_json(self) -> dict[str, Any]:
        return _drop_none({"count": self.count, "rule": self.rule})


@dataclass(frozen=True)
class Truncation:
    """`full`: every id of the vocabulary (`size` ids); `top_k`: the `k` ids an engine
    returned per position, with or without one residual-mass bucket per side."""

    mode: Vocabulary
    size: int | None = None
    k: int | None = None
    residual_bucket: bool | None = None
    note: str | None = None

    @classmethod
    def parse(cls, v: Any) -> Truncation:
        d = _object(v, ("mode",), ("size", "k", "residual_bucket", "note"))
        mode = _enum(Vocabulary, d["mode"], "mode")
        bucket = d.get("residual_bucket")
        if mode is Vocabulary.FULL and ("k" in d or "residual_bucket" in d):
            raise _Bad('"full" takes no k or residual_bucket', "mode")
        if mode is Vocabulary.TOP_K and not isinstance(bucket, bool):
            raise _Bad(f'"top_k" needs true or false, got {_kind(bucket)}', "residual_bucket")
        return cls(mode, _opt(d, "size", _count), _opt(d, "k", _count), bucket,
                   _opt(d, "note", _text))

    def to_json(self) -> dict[str, Any]:
        return _drop_none({"mode": getattr(self.mode, "value", self.mode), "size": self.size,
                           "k": self.k,
                           "residual_bucket": self.residual_bucket, "note": self.note})


@dataclass(frozen=True)
class Bootstrap:
    level: float
    block: int
    resamples: int
    seed: int

    @classmethod
    def parse(cls, v: Any) -> Bootstrap:
        d = _object(v, ("level", "block", "resamples", "seed"), ())
        level = d["level"]
        if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
            raise _Bad(f"must be a number in (0, 1), got {level!r}"[:80], "bootstrap.level")
        return cls(float(level), _count(d["block"], "bootstrap.block"),
                   _count(d["resamples"], "bootstrap.resamples"),
                   _count(d["seed"], "bootstrap.seed", least=0))

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Aggregation:
    method: str
    bootstrap: Bootstrap | None = None
    block: int | None = None
    runs: int | None = None

    @classmethod
    def parse(cls, v: Any) -> Aggregation:
        d = _object(v, ("method",), ("bootstrap", "block", "runs"))
        boot = None
        if "bootstrap" in d:
            try:
                boot = Bootstrap.parse(d["bootstrap"])
            except _Bad as bad:
                raise _Bad(bad.why, bad.where or "bootstrap") from None
        return cls(_text(d["method"], "method"), boot, _opt(d, "block", _count),
                   _opt(d, "runs", _count))

    def to_json(self) -> dict[str, Any]:
        return _drop_none({"method": self.method, "block": self.block, "runs": self.runs,
                           "bootstrap": self.bootstrap.to_json() if self.bootstrap else None})


@dataclass(frozen=True)
class Field:
    """One item: its parser (JSON -> typed value), its JSON type, and what it says."""

    name: str
    parse: Callable[[Any], Any]
    types: tuple[type, ...]
    shape: str
    says: str


FIELDS = (
    Field("reference_checkpoint", Checkpoint.parse, (Checkpoint,),
          '`{"digest": D}`; optional `name`, `tokenizer_digest` (D), `reference_engine`, '
          "`chat_template_digest` (D)",
          "the model the candidate is measured against"),
    Field("runtime_environment", Environment.parse, (Environment,),
          '`{"manifest_digest": D}` and/or `{"run_ids": [str, ...]}`; optional `runtime` '
          "(side -> resolved runtime facts)",
          "where both sides ran"),
    Field("evaluation_text", Text.parse, (Text,),
          '`{"digest": D, "source": str}`; optional `tokens_total` (int), `token_ids_digest`'
          ", `chat_template_digest` (D)",
          "the text scored"),
    Field("calibration_data", Calibration.parse, (Calibration, NoCalibration),
          '`{"digest": D, "source": str}` or `{"none": reason}`',
          "what quantisation was calibrated on"),
    Field("context_lengths", _lengths, (tuple,),
          "non-empty list of positive integers (token counts)",
          "how long the scored sequences were"),
    Field("sampled_positions", Positions.parse, (Positions,),
          '`{"rule": str}`; optional `count` (int)',
          "which positions count"),
    Field("kl_direction", lambda v: _enum(Direction, v, ""), (Direction,),
          "one of " + ", ".join(f"`{m.value}`" for m in Direction)
          + " (KL in nats)",
          "KL(P_ref‖P_cand), KL(P_cand‖P_ref) or both"),
    Field("vocabulary_truncation", Truncation.parse, (Truncation,),
          '`{"mode": "full"}` (optional `size`) or `{"mode": "top_k", "residual_bucket": '
          "bool}` (optional `k`); optional `note`",
          "full vocabulary or top-k"),
    Field("aggregation", Aggregation.parse, (Aggregation,),
          '`{"method": str}`; optional `block`, `runs` (int), `bootstrap` '
          '`{"level": (0,1), "block", "resamples", "seed": int}`',
          "how per-position values become a figure"),
)
assert tuple(f.name for f in FIELDS) == ITEMS
_BY_NAME = {f.name: f for f in FIELDS}


def parse_item(name: str, value: Any) -> Any:
    """The typed value of one item, or DisclosureError naming the item and why."""
    if isinstance(value, dict) and set(value) == {"not_applicable"}:
        try:
            return NotApplicable(_text(value["not_applicable"], "not_applicable"))
        except _Bad as bad:
            raise DisclosureError(_message(name, bad)) from None
    try:
        return _BY_NAME[name].parse(value)
    except _Bad as bad:
        raise DisclosureError(_message(name, bad)) from None


def _message(name: str, bad: _Bad) -> str:
    if not bad.where:
        return f"{name} ({bad.why})"
    return f"{name}{'' if bad.where.startswith('[') else '.'}{bad.where} ({bad.why})"


def _item_json(v: Any) -> Any:
    if isinstance(v, StrEnum):
        return v.value
    if isinstance(v, tuple):
        return list(v)
    return v.to_json()


def problems(data: Any) -> list[str]:
    """Every missing, unknown or malformed item, as "item (why)"; empty: the card is strict."""
    if not isinstance(data, dict):
        return [f"{item} (missing: no disclosure card)" for item in ITEMS]
    out = []
    for name in ITEMS:
        if name not in data:
            out.append(f"{name} (missing)")
            continue
        try:
            parse_item(name, data[name])
        except DisclosureError as exc:
            out.append(str(exc))
    out += [f"{k} (not one of the nine items)" for k in sorted(map(str, set(data) - set(ITEMS)))]
    return out


@dataclass(frozen=True)
class DisclosureCard:
    reference_checkpoint: Checkpoint | NotApplicable
    runtime_environment: Environment | NotApplicable
    evaluation_text: Text | NotApplicable
    calibration_data: Calibration | NoCalibration | NotApplicable
    context_lengths: tuple[int, ...] | NotApplicable
    sampled_positions: Positions | NotApplicable
    kl_direction: Direction | NotApplicable
    vocabulary_truncation: Truncation | NotApplicable
    aggregation: Aggregation | NotApplicable

    legacy = False

    def __post_init__(self) -> None:
        """A card built in code holds typed values: its JSON must parse back to itself."""
        if isinstance(self.context_lengths, list):
            object.__setattr__(self, "context_lengths", tuple(self.context_lengths))
        wrong = [f"{f.name} (must be {' or '.join(t.__name__ for t in f.types)} or "
                 f"NotApplicable, got {type(getattr(self, f.name)).__name__})"
                 for f in FIELDS
                 if not isinstance(getattr(self, f.name), (*f.types, NotApplicable))]
        found = wrong or problems(self.to_json())
        if found:
            raise DisclosureError(f"disclosure card: {'; '.join(found)}")

    @classmethod
    def from_dict(cls, data: Any) -> DisclosureCard:
        found = problems(data)
        if found:
            raise DisclosureError(f"disclosure card: {'; '.join(found)}")
        return cls(**{k: parse_item(k, data[k]) for k in ITEMS})

    @classmethod
    def not_applicable(cls, reason: str) -> DisclosureCard:
        """Every item not applicable for one reason (a synthetic result: nothing ran)."""
        return cls(*(NotApplicable(reason),) * len(ITEMS))

    def to_json(self) -> dict[str, Any]:
        return {k: _item_json(getattr(self, k)) for k in ITEMS}


@dataclass(frozen=True)
class LegacyCard:
    """A card written before the strict card: nine non-empty free-text or free-form items,
    kept verbatim; `problems` says where it is not strict. Readable, never publishable."""

    items: dict[str, Any]
    problems: tuple[str, ...]

    legacy = True

    def to_json(self) -> dict[str, Any]:
        return dict(self.items)


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, dict | list) and not value


def read_card(data: Any) -> DisclosureCard | LegacyCard:
    """A stored card: strict if it parses; a LegacyCard if it only has the nine non-empty
    items the old card required; otherwise DisclosureError naming what is missing."""
    found = problems(data)
    if not found:
        return DisclosureCard.from_dict(data)
    if isinstance(data, dict) and set(data) == set(ITEMS) and \
            not any(_empty(data[k]) for k in ITEMS):
        return LegacyCard(dict(data), tuple(found))
    raise DisclosureError(f"disclosure card: {'; '.join(found)}")


def publish_problems(data: Any, manifest_digest: str | None = None,
                     kl: bool = True) -> list[str]:
    """What keeps a card from being published: any strict problem; for a KL figure (`kl`),
    also a reference checkpoint, runtime environment, evaluation text or KL direction that is
    "not applicable", and a runtime environment that does not name `manifest_digest`."""
    found = problems(data)
    if found or not kl:
        return found
    out = [f"{name} (a KL figure needs it: not_applicable is not allowed)"
           for name in ("reference_checkpoint", "runtime_environment", "evaluation_text",
                        "kl_direction") if isinstance(parse_item(name, data[name]),
                                                      NotApplicable)]
    env = data["runtime_environment"]
    if manifest_digest and isinstance(env, dict) and "not_applicable" not in env:
        got = env.get("manifest_digest")
        if got is None:
            out.append(f"runtime_environment (needs manifest_digest: the published run's "
                       f"manifest {manifest_digest})")
        elif got != manifest_digest:
            out.append(f"runtime_environment (manifest_digest {got} is not the published "
                       f"run's manifest {manifest_digest})")
    return out


def fields_table() -> str:
    """docs/concepts/disclosure.md's table of the nine items, generated from FIELDS."""
    rows = ["| item | what it says | JSON (D = `\"sha256:<64 hex>\"`) |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {f.says} | {f.shape.replace('|', chr(92) + '|')} |"
             for f in FIELDS]
    return "\n".join(rows) + "\n"
