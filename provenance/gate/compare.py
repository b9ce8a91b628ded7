"""`compare_runs`: the one comparison every caller uses (`prov compare`, `prov run`, sweeps,
the selftest): resolve both sides -> the libraries both runs loaded and who owns them -> the
gate -> the declared outputs and the exchanges with their servers beside the verdict -> the
comparison record, stored when the
comparison passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from provenance.gate.check import GateResult, gate
from provenance.gate.config import GateConfig, load_config
from provenance.gate.exchanges import ExchangeComparison, compare_exchanges, exchanges_of
from provenance.gate.follows import Owners, library_owners
from provenance.gate.libraries import common_libraries
from provenance.gate.outputs import OutputComparison, compare_outputs, outputs_json
from provenance.store import Store
from provenance.store.records import now_iso
from provenance.store.resolve import Resolved, resolve
from provenance.store.states import RunState


@dataclass
class Comparison:
    a: Resolved
    b: Resolved
    vary: list[str]
    config: GateConfig
    result: GateResult
    libraries_compared: int
    record: str | None = None  # the stored comparison record (a passing comparison only)
    outputs: list[OutputComparison] | None = None  # None unless both sides are runs
    exchanges: ExchangeComparison | None = None  # both runs bound to server runs

    @property
    def ok(self) -> bool:
        return self.result.ok

    def to_json(self) -> dict[str, Any]:
        """The gate's verdict, as `prov compare --json` prints it (and the record holds)."""
        doc = self.result.to_json()
        doc["loaded_libraries_compared"] = self.libraries_compared
        if self.outputs is not None:
            doc["outputs"] = outputs_json(self.outputs)
        if self.exchanges is not None:
            doc["exchanges"] = self.exchanges.to_json()
        if self.record:
            doc["record"] = self.record
        if self.unfinished:
            doc["unfinished"] = self.unfinished
        return doc

    @property
    def unfinished(self) -> dict[str, str]:
        """side ("a", "b") -> the state of a run side that did not end under its prov:
        abandoned (prov was killed: its record holds what the run left), or still running
        or serving (its live facts). Said beside every verdict, never refusing by itself."""
        out = {}
        for side, r in (("a", self.a), ("b", self.b)):
            state = getattr(r.run, "state", None)
            if state in (RunState.ABANDONED, RunState.RUNNING, RunState.SERVING):
                out[side] = state
        return out


def _libraries(ra: Resolved, rb: Resolved) -> tuple[dict[str, Any], dict[str, Any]] | None:
    if ra.run is None or rb.run is None:
        return None
    return common_libraries(ra.run.record.loaded_libraries or [],
                            rb.run.record.loaded_libraries or [])


def _owners(ra: Resolved, rb: Resolved) -> tuple[Owners, Owners] | None:
    if ra.run is None or rb.run is None:
        return None
    return (library_owners(ra.run.record.loaded_libraries or [], ra.manifest),
            library_owners(rb.run.record.loaded_libraries or [], rb.manifest))


def _outputs(ra: Resolved, rb: Resolved) -> list[OutputComparison] | None:
    if ra.run is None or rb.run is None:
        return None
    return compare_outputs(ra.run.record.outputs or {}, rb.run.record.outputs or {})


def _exchanges(store: Store | None, ra: Resolved, rb: Resolved) -> ExchangeComparison | None:
    """Both runs' exchanges with their servers, matched (exchanges.py)."""
    if ra.run is None or rb.run is None or store is None:
        return None
    a, b = exchanges_of(store, ra.run.record), exchanges_of(store, rb.run.record)
    return compare_exchanges(a, b) if a is not None and b is not None else None


def compare_runs(store: Store | None, a: str | Resolved, b: str | Resolved, vary: Sequence[str],
                 config: GateConfig | None = None,
                 extra_ignore: Sequence[str] = (), record: bool = True) -> Comparison:
    """Compare what `a` and `b` name (run ids or prefixes, stored manifests, manifest files,
    or already resolved); a passing comparison is recorded in `store`.

    `config` defaults to the built-ins extended by `[tool.prov]`; `extra_ignore` adds
    always-ignored patterns for this comparison (listed in the record as ignored);
    `record=False` only looks (the selftest compares runs of several stores)."""
    ra = a if isinstance(a, Resolved) else resolve(a, store)
    rb = b if isinstance(b, Resolved) else resolve(b, store)
    config = config or load_config()
    if extra_ignore:
        config.ignore = tuple(dict.fromkeys(config.ignore + tuple(extra_ignore)))
    libs = _libraries(ra, rb)
    result = gate(ra.manifest, rb.manifest, list(vary), config, libs=libs,
                  owners=_owners(ra, rb))
    done = Comparison(ra, rb, list(vary), config, result, len(libs[0]) if libs else 0,
                      outputs=_outputs(ra, rb), exchanges=_exchanges(store, ra, rb))
    if result.ok and record:
        done.record = _record(store, done)
    return done


def _record(store: Store, c: Comparison) -> str:
    """Store the comparison record; both sides point at stored manifests."""
    from provenance import __version__

    for r in (c.a, c.b):
        if r.object is None:
            r.object = store.put_manifest(r.manifest)
    record = {"a": c.a.describe(), "b": c.b.describe(), "vary": c.vary,
              "config": c.config.source, "created_at": now_iso(),
              "prov_version": __version__, **c.to_json()}
    return store.put_comparison(record)
