"""`[tool.prov]` of the nearest pyproject.toml: presets added or extended, keys ignored."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.gate.patterns import parse_pattern
from provenance.gate.presets import ALWAYS_IGNORED, PRESETS
from provenance.model.errors import ProvError


@dataclass
class GateConfig:
    presets: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(PRESETS))
    ignore: tuple[str, ...] = ALWAYS_IGNORED
    source: str | None = None  # the pyproject.toml that extended the built-ins

    def expand(self, spec: str) -> tuple[str, ...]:
        """The key patterns a --vary names: a preset's, or the spec itself as a pattern."""
        if spec in self.presets:
            return self.presets[spec]
        if not spec or spec.startswith(".") or spec.endswith("."):
            raise ProvError(f"--vary {spec!r}: not a preset or dotted key")
        parse_pattern(spec)
        return (spec,)


# every key `[tool.prov]` may hold (prov lock writes [tool.prov] into pylock.toml, not here)
KNOWN_KEYS = frozenset({"ignore", "presets"})


def find_pyproject(start: Path | None = None) -> Path | None:
    start = (start or Path.cwd()).absolute()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProvError(f"{where} must be a list of key patterns")
    for v in value:
        parse_pattern(v)
    return tuple(value)


def load_config(start: Path | None = None) -> GateConfig:
    """Built-in presets and ignores, extended by `[tool.prov]` of the nearest pyproject.toml."""
    config = GateConfig()
    path = find_pyproject(start) if not os.environ.get("PROV_NO_PYPROJECT") else None
    if path is None:
        return config
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProvError(f"{path}: cannot read [tool.prov]: {exc}") from None
    section = data.get("tool", {}).get("prov")
    if not isinstance(section, dict):
        return config
    config.source = str(path)
    unknown = sorted(set(section) - KNOWN_KEYS)
    if unknown:  # a typo (`ignor`) would otherwise silently ignore nothing
        raise ProvError(f"{path}: [tool.prov] has unknown key(s) {', '.join(unknown)} "
                        f"(known: {', '.join(sorted(KNOWN_KEYS))})")
    if "ignore" in section:
        config.ignore = config.ignore + _string_list(section["ignore"], f"{path}: tool.prov.ignore")
    presets = section.get("presets", {})
    if not isinstance(presets, dict):
        raise ProvError(f"{path}: tool.prov.presets must be a table of lists")
    for name, patterns in presets.items():
        extra = _string_list(patterns, f"{path}: tool.prov.presets.{name}")
        config.presets[name] = tuple(dict.fromkeys(config.presets.get(name, ()) + extra))
    return config

