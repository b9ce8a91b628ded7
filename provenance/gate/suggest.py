"""Which presets a refusal suggests: only those that would really cover the keys named.

Each preset is matched as the gate matches a `--vary` (declared.py: its patterns and what
follows from the differences they cover); a JIT key (`libs.<name>.jit`) is covered by a
preset that covers one of the other refused keys, its cause. Presets are then chosen
greedily, the one covering most of the keys left first, so a key two presets cover is
named once, under the preset that also covers its neighbours (a KV-dtype pair's Triton
launcher under `kv-cache-dtype`, not `attention-backend`). Beside the presets, each package
that differs is a candidate under its key (`python.packages.numpy` covers the version and
what follows from it), so a package upgrade's refusal names the one declaration it needs.
"""

from __future__ import annotations

from provenance.gate.declared import Declared
from provenance.gate.follows import PACKAGES, Context, is_jit
from provenance.model import join_key, split_key


def _covered(d: Declared, keys: dict[str, tuple[str, ...]]) -> set[str]:
    plain = {k for k, parts in keys.items() if not is_jit(parts) and d.covers(parts)}
    jit = {k for k, parts in keys.items() if is_jit(parts) and (plain or d.direct(parts))}
    return plain | jit


def _packages(keys: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`python.packages.<name>` of every refused package key, as a one-pattern candidate."""
    found = [join_key(p[:3]) for p in keys.values() if len(p) > 2 and p[:2] == PACKAGES]
    return {k: (k,) for k in dict.fromkeys(found)}


def suggest_presets(presets: dict[str, tuple[str, ...]], keys: list[str],
                    context: Context | None = None) -> dict[str, list[str]]:
    """preset (or package key) -> the refused `keys` it would cover, each key under one."""
    parts = {k: tuple(split_key(k)) for k in keys}
    candidates = {**presets, **_packages(parts)}
    cover = {name: _covered(Declared.of(name, pats, context), parts)
             for name, pats in candidates.items()}
    out: dict[str, list[str]] = {}
    left = set(keys)
    while left:
        best = max(cover, key=lambda n: len(cover[n] & left), default=None)
        if best is None or not cover[best] & left:
            break
        out[best] = [k for k in keys if k in cover[best] & left]
        left -= cover[best]
    return out
