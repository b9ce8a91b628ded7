"""The sweep spec (TOML): what to run, over which axes, against which reference cell.

```toml
[sweep]
name = "attn-x-dtype"
engine = "transformers"          # the runners' engines: transformers, vllm
model = "/models/tiny"           # a model directory reachable on every node
text = "eval.txt"                # relative paths are relative to the spec file
max_tokens = 256
block = 64
repeats = 2                      # runs per cell (>= 2 gives a repeatability verdict)
retries = 2                      # extra attempts of a cell whose worker or node died

[axes]                           # engine options, each a list of values
attn = ["eager", "sdpa"]
dtype = ["float32", "bfloat16"]

[reference]                      # one value per axis: the cell everything is compared to
attn = "eager"
dtype = "float32"

[options]                        # fixed engine options of every cell (optional)
device = "cpu"

[resources]                      # Ray resources of every cell (optional)
num_cpus = 1
num_gpus = 0

[[resources.when]]               # resources of the cells that match, instead (optional)
match = { dtype = "bfloat16" }
resources = { odd_node = 1 }

[gate]                           # optional: extra --vary patterns, env keys to ignore
vary = []

[[skip]]                         # cells not to run, with the reason shown in their place
match = { attn = "eager", dtype = "bfloat16" }
reason = "why this combination is not run (e.g. the engine does not offer it)"

[invariance]                     # optional: run the batch-invariance probes in every cell
fillers = 16                     # every key optional, defaults as `prov run invariance`:
seed = 0                         # fillers, seed, needle_tokens, filler_min, filler_max,
needle_tokens = 96               # placements, max_new, control, probes
probes = ["run_to_run", "needle", "batch_size"]
```

Validation is done here, once, with one clear line per problem: a sweep that fails on its
third cell because of a typo in the spec wastes a cluster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from runners.engines import EngineConfig, EngineError

SCALAR = (str, int, float, bool)
TOP_KEYS = {"sweep", "axes", "reference", "options", "resources", "gate", "skip",
            "invariance"}
SWEEP_KEYS = {"name", "engine", "model", "text", "max_tokens", "block", "repeats", "retries"}
RESOURCE_KEYS = {"num_cpus", "num_gpus", "memory", "resources", "when"}


class SpecError(ProvError, ValueError):
    """The spec is unusable; the message says where and why, in one line."""


@dataclass(frozen=True)
class ResourceRule:
    match: dict[str, Any]
    resources: dict[str, float]


@dataclass(frozen=True)
class SkipRule:
    match: dict[str, Any]
    reason: str


@dataclass
class SweepSpec:
    name: str
    engine: str
    model: Path
    text: Path
    axes: dict[str, list[Any]]
    reference: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 256
    block: int = 64
    repeats: int = 1
    retries: int = 2
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: dict[str, float] = field(default_factory=dict)
    rules: list[ResourceRule] = field(default_factory=list)
    vary: list[str] = field(default_factory=list)
    skips: list[SkipRule] = field(default_factory=list)
    # [invariance]: every InvarianceSpec field (defaults filled in), or None: no probes
    invariance: dict[str, Any] | None = None
    digest: str = ""  # sha256 of the spec file's bytes
    path: Path | None = None

    def resources_for(self, cell: dict[str, Any]) -> dict[str, float]:
        """Custom Ray resources of a cell: those of every matching rule (merged in order),
        or the defaults when no rule matches (a rule steers a cell *elsewhere*, so it
        replaces the defaults rather than adding to them)."""
        matched: dict[str, float] = {}
        hit = False
        for rule in self.rules:
            if all(cell.get(k) == v for k, v in rule.match.items()):
                matched.update(rule.resources)
                hit = True
        return matched if hit else dict(self.resources)

    def skip_reason(self, cell: dict[str, Any]) -> str | None:
        """The reason of the first [[skip]] rule that matches the cell, else None."""
        for rule in self.skips:
            if all(cell.get(k) == v for k, v in rule.match.items()):
                return rule.reason
        return None


def _table(doc: dict, key: str, where: str, required: bool = False) -> dict:
    val = doc.get(key)
    if val is None:
        if required:
            raise SpecError(f"{where}: missing [{key}] table")
        return {}
    if not isinstance(val, dict):
        raise SpecError(f"{where}: [{key}] must be a table")
    return val


def _unknown(table: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise SpecError(f"{where}: unknown key(s) {', '.join(extra)} "
                        f"(allowed: {', '.join(sorted(allowed))})")


def _pos_int(val: Any, where: str, minimum: int = 1) -> int:
    if not isinstance(val, int) or isinstance(val, bool) or val < minimum:
        raise SpecError(f"{where}: must be an integer >= {minimum}, got {val!r}")
    return val


def _number(val: Any, where: str) -> float:
    if not isinstance(val, int | float) or isinstance(val, bool) or val < 0:
        raise SpecError(f"{where}: must be a number >= 0, got {val!r}")
    return float(val)


def _resources(table: Any, where: str) -> dict[str, float]:
    if not isinstance(table, dict):
        raise SpecError(f"{where}: must be a table of resource = amount")
    return {str(k): _number(v, f"{where}.{k}") for k, v in table.items()}


def _path(val: Any, base: Path, where: str) -> Path:
    if not isinstance(val, str) or not val:
        raise SpecError(f"{where}: must be a path string")
    p = Path(val).expanduser()
    return p if p.is_absolute() else (base / p)


def _sweep_table(doc: dict, where: str) -> tuple[dict, str]:
    sw = _table(doc, "sweep", where, required=True)
    _unknown(sw, SWEEP_KEYS, f"{where} [sweep]")
    for key in ("engine", "model", "text"):
        if key not in sw:
            raise SpecError(f"{where} [sweep]: missing {key}")
    if not isinstance(sw["engine"], str):
        raise SpecError(f"{where} [sweep].engine: must be a string")
    return sw, sw["engine"]


def _axes(doc: dict, where: str) -> dict[str, list[Any]]:
    axes_t = _table(doc, "axes", where, required=True)
    if not axes_t:
        raise SpecError(f"{where} [axes]: no axis given")
    axes: dict[str, list[Any]] = {}
    for name, values in axes_t.items():
        if not isinstance(values, list) or not values:
            raise SpecError(f"{where} [axes].{name}: must be a non-empty list of values")
        if any(not isinstance(v, SCALAR) for v in values):
            raise SpecError(f"{where} [axes].{name}: values must be strings or numbers")
        if len(set(map(str, values))) != len(values):
            raise SpecError(f"{where} [axes].{name}: duplicate values")
        axes[name] = list(values)
    return axes


def _options(doc: dict, engine: str, axes: dict[str, list[Any]], where: str) -> dict:
    options = _table(doc, "options", where)
    clash = sorted(set(options) & set(axes))
    if clash:
        raise SpecError(f"{where} [options]: {', '.join(clash)} is also an axis")
    # every cell must be a valid engine spec: check now, not on the third cell
    for name, values in axes.items():
        for v in values:
            _engine_spec(engine, {**options, name: v}, f"{where} [axes].{name}")
    return options


def _reference(doc: dict, axes: dict[str, list[Any]], where: str) -> dict:
    ref = _table(doc, "reference", where, required=True)
    if set(ref) != set(axes):
        missing = sorted(set(axes) - set(ref))
        extra = sorted(set(ref) - set(axes))
        raise SpecError(f"{where} [reference]: needs exactly one value per axis"
                        + (f"; missing {', '.join(missing)}" if missing else "")
                        + (f"; not axes: {', '.join(extra)}" if extra else ""))
    for name, val in ref.items():
        if val not in axes[name]:
            raise SpecError(f"{where} [reference].{name}: {val!r} is not one of the axis "
                            f"values {axes[name]!r}")
    return ref


def _resource_rules(res_t: dict, axes: dict[str, list[Any]], where: str) -> list[ResourceRule]:
    rules = []
    for i, rule in enumerate(res_t.get("when", []) or []):
        w = f"{where} [[resources.when]] #{i + 1}"
        if not isinstance(rule, dict) or set(rule) != {"match", "resources"}:
            raise SpecError(f"{w}: needs exactly `match` and `resources`")
        if not isinstance(rule["match"], dict) or not rule["match"]:
            raise SpecError(f"{w}.match: must be a non-empty table of axis = value")
        for k, v in rule["match"].items():
            if k not in axes or v not in axes[k]:
                raise SpecError(f"{w}.match: {k} = {v!r} names no axis value")
        rules.append(ResourceRule(dict(rule["match"]), _resources(rule["resources"], w)))
    return rules


def _skip_rules(doc: dict, axes: dict[str, list[Any]], ref: dict[str, Any],
                where: str) -> list[SkipRule]:
    rules = doc.get("skip", []) or []
    if not isinstance(rules, list):
        raise SpecError(f"{where} [[skip]]: must be an array of tables")
    out = []
    for i, rule in enumerate(rules):
        w = f"{where} [[skip]] #{i + 1}"
        if not isinstance(rule, dict) or set(rule) != {"match", "reason"}:
            raise SpecError(f"{w}: needs exactly `match` and `reason`")
        if not isinstance(rule["reason"], str) or not rule["reason"].strip():
            raise SpecError(f"{w}.reason: must be a non-empty string")
        if not isinstance(rule["match"], dict) or not rule["match"]:
            raise SpecError(f"{w}.match: must be a non-empty table of axis = value")
        for k, v in rule["match"].items():
            if k not in axes or v not in axes[k]:
                raise SpecError(f"{w}.match: {k} = {v!r} names no axis value")
        if all(ref.get(k) == v for k, v in rule["match"].items()):
            raise SpecError(f"{w}: matches the reference cell, which every cell needs")
        out.append(SkipRule(dict(rule["match"]), rule["reason"].strip()))
    return out


def _vary(doc: dict, where: str) -> list[str]:
    gate_t = _table(doc, "gate", where)
    _unknown(gate_t, {"vary"}, f"{where} [gate]")
    vary = gate_t.get("vary", [])
    if not isinstance(vary, list) or any(not isinstance(v, str) for v in vary):
        raise SpecError(f"{where} [gate].vary: must be a list of keys, patterns or presets")
    return list(vary)


def _invariance(doc: dict, where: str) -> dict[str, Any] | None:
    """The [invariance] table as InvarianceSpec's fields, defaults filled in (so a spec
    that writes a default out and one that leaves it out plan the same cells)."""
    if "invariance" not in doc:
        return None
    from dataclasses import asdict, fields

    from runners.invariance import InvarianceSpec

    w = f"{where} [invariance]"
    table = _table(doc, "invariance", where)
    _unknown(table, {f.name for f in fields(InvarianceSpec)}, w)
    kw: dict[str, Any] = {}
    for key, val in table.items():
        if key == "control":
            if not isinstance(val, str):
                raise SpecError(f"{w}.control: must be a string, got {val!r}")
            kw[key] = val
        elif key == "probes":
            if not isinstance(val, list) or not val or \
                    any(not isinstance(v, str) for v in val) or len(set(val)) != len(val):
                raise SpecError(f"{w}.probes: must be a non-empty list of distinct probe names")
            kw[key] = tuple(val)
        else:
            kw[key] = _pos_int(val, f"{w}.{key}", 0 if key == "seed" else 1)
    spec = InvarianceSpec(**kw)
    try:
        spec.check()
    except ValueError as exc:
        raise SpecError(f"{w}: {exc}") from None
    return {**asdict(spec), "probes": list(spec.probes)}


def parse_spec(text: str, where: str = "spec", base: Path | None = None) -> SweepSpec:
    base = base or Path.cwd()
    from provenance.model.inputs import InputError, parse_toml

    try:
        doc = parse_toml(text, where)  # depth-limited: a 100k-deep spec is one line
    except InputError as exc:
        raise SpecError(str(exc)) from None
    _unknown(doc, TOP_KEYS, where)
    sw, engine = _sweep_table(doc, where)
    axes = _axes(doc, where)
    options = _options(doc, engine, axes, where)
    ref = _reference(doc, axes, where)
    res_t = _table(doc, "resources", where)
    _unknown(res_t, RESOURCE_KEYS, f"{where} [resources]")
    rules = _resource_rules(res_t, axes, where)
    vary = _vary(doc, where)
    skips = _skip_rules(doc, axes, ref, where)
    invariance = _invariance(doc, where)
    name = sw.get("name", "sweep")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where} [sweep].name: must be a non-empty string")
    return SweepSpec(
        name=name, engine=engine,
        model=_path(sw["model"], base, f"{where} [sweep].model"),
        text=_path(sw["text"], base, f"{where} [sweep].text"),
        axes=axes, reference=dict(ref), options=dict(options),
        max_tokens=_pos_int(sw.get("max_tokens", 256), f"{where} [sweep].max_tokens", 2),
        block=_pos_int(sw.get("block", 64), f"{where} [sweep].block"),
        repeats=_pos_int(sw.get("repeats", 1), f"{where} [sweep].repeats"),
        retries=_pos_int(sw.get("retries", 2), f"{where} [sweep].retries", 0),
        num_cpus=_number(res_t.get("num_cpus", 1), f"{where} [resources].num_cpus"),
        num_gpus=_number(res_t.get("num_gpus", 0), f"{where} [resources].num_gpus"),
        resources=_resources(res_t.get("resources", {}), f"{where} [resources].resources"),
        rules=rules, vary=vary, skips=skips, invariance=invariance,
        digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def _engine_spec(engine: str, options: dict[str, Any], where: str) -> EngineConfig:
    spec = engine + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")
    try:
        return EngineConfig.parse(spec)
    except EngineError as exc:
        raise SpecError(f"{where}: {exc}") from None


def load_spec(path: Path) -> SweepSpec:
    path = Path(path)
    from provenance.model.inputs import InputError, read_text

    if not path.exists():
        raise SpecError(f"{path}: no such spec file")
    try:
        text = read_text(path, "spec")
    except InputError as exc:
        raise SpecError(str(exc)) from None
    spec = parse_spec(text, str(path), path.resolve().parent)
    spec.path = path
    return spec


def engine_config(spec: SweepSpec, cell: dict[str, Any]) -> EngineConfig:
    return _engine_spec(spec.engine, {**spec.options, **cell}, "cell")
