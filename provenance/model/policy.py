"""The acceptance policy, defined once: thresholds on a result's statistics and a verdict.

A policy is a TOML file of `[[check]]` tables (docs/reference/policy.md). Each check names a
statistic as the result's JSON spells it (a dotted path into the statistics document: a
result's `summary`, `prov compare --json`'s document, a sweep cell's row) and one condition:
`min` and/or `max` (numbers), `equals` (a string, boolean or number) or `one_of` (a list of
them). `parse_policy` refuses anything else, naming the file and the item.

The verdict is separate from comparability (the gate decides that, before any check runs):

- FAIL: some check failed, whatever the others did (one failed criterion is enough to
  reject, evidence missing elsewhere cannot rescue it);
- NOT_EVALUATED: no check failed, but some statistic is missing from the result or is the
  marker `{"not_computable": REASON}` (or is not a number where a threshold needs one);
- PASS: every check passed;
- NOT_COMPARABLE: the gate refused; no check is evaluated (`not_comparable`).

Each verdict has its exit code (`VERDICT_EXIT`, from the one table in errors.py).
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provenance.model.errors import (
    EXIT_DIFFERS,
    EXIT_NOT_EVALUATED,
    EXIT_OK,
    EXIT_REFUSED,
    ProvError,
)

PASS, FAIL, NOT_COMPARABLE, NOT_EVALUATED = "PASS", "FAIL", "NOT_COMPARABLE", "NOT_EVALUATED"
VERDICT_EXIT = {PASS: EXIT_OK, FAIL: EXIT_DIFFERS, NOT_COMPARABLE: EXIT_REFUSED,
                NOT_EVALUATED: EXIT_NOT_EVALUATED}
# where several verdicts meet (the cells of a sweep): the first of these present wins
PRECEDENCE = (FAIL, NOT_COMPARABLE, NOT_EVALUATED, PASS)
CONDITIONS = ("min", "max", "equals", "one_of")
CHECK_KEYS = ("statistic", *CONDITIONS, "note")
TOP_KEYS = ("name", "check")
NOT_COMPUTABLE = "not_computable"


class PolicyError(ProvError):
    """A policy file that cannot be used: unreadable, not TOML, an unknown or malformed key."""


Scalar = str | bool | int | float


@dataclass(frozen=True)
class Check:
    statistic: str
    min: float | None = None
    max: float | None = None
    equals: Scalar | None = None
    one_of: tuple[Scalar, ...] | None = None
    note: str | None = None

    def condition(self) -> dict[str, Any]:
        """The condition as written (`min`/`max`, `equals` or `one_of`), for the record."""
        out = {k: getattr(self, k) for k in CONDITIONS if getattr(self, k) is not None}
        if "one_of" in out:
            out["one_of"] = list(out["one_of"])
        return out


@dataclass(frozen=True)
class Policy:
    path: str
    sha256: str
    checks: tuple[Check, ...]
    name: str | None = None

    def evaluate(self, stats: Any) -> dict[str, Any]:
        """The recorded block: path, digest, verdict and each check with what was observed."""
        checks = [evaluate_check(c, stats) for c in self.checks]
        outcomes = {c["outcome"] for c in checks}
        verdict = FAIL if "fail" in outcomes else (
            NOT_EVALUATED if "not_evaluated" in outcomes else PASS)
        return self._block(verdict, checks)

    def not_comparable(self, why: str) -> dict[str, Any]:
        """The block when the gate refused: no check is evaluated."""
        checks = [{"statistic": c.statistic, **c.condition(), "observed": None,
                   "outcome": "not_evaluated", "reason": f"not comparable: {why}",
                   **({"note": c.note} if c.note else {})} for c in self.checks]
        return self._block(NOT_COMPARABLE, checks)

    def _block(self, verdict: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, **({"name": self.name}
                                                             if self.name else {}),
                "verdict": verdict, "checks": checks}


def overall(verdicts: list[str]) -> str:
    """One verdict over several (a sweep's cells): FAIL, then NOT_COMPARABLE, then
    NOT_EVALUATED; PASS only when every one passed (and there was at least one)."""
    if not verdicts:
        return NOT_EVALUATED
    return next(v for v in PRECEDENCE if v in verdicts)


# ---- reading ------------------------------------------------------------------------------

def load_policy(path: Path | str) -> Policy:
    """Read and validate a policy file (before any run starts)."""
    from provenance.model.inputs import InputError, read_input

    path = Path(path)
    try:  # a regular file, bounded: a FIFO or /dev/zero is one line, never a hang
        data = read_input(path, "toml")
    except InputError as exc:  # "toml PATH: REASON"
        why = str(exc).rsplit(": ", 1)[-1]
        raise PolicyError(f"{path}: cannot read the policy: {why}") from None
    return parse_policy(data, str(path))


def parse_policy(data: bytes, where: str) -> Policy:
    from provenance.model.inputs import InputError, check_toml_depth, parse_error

    try:
        text = data.decode("utf-8")
        check_toml_depth(text, where)
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, InputError, ValueError) as exc:
        # ValueError: a 5,000-digit integer; InputError: nested past the bound
        raise PolicyError(f"{where}: not a TOML policy: {parse_error(exc)}") from None
    unknown = sorted(set(doc) - set(TOP_KEYS))
    if unknown:
        raise PolicyError(f"{where}: unknown key {unknown[0]!r} (a policy has "
                          f"{', '.join(TOP_KEYS)})")
    name = doc.get("name")
    if name is not None and not (isinstance(name, str) and name.strip()):
        raise PolicyError(f"{where}: name: must be a non-empty string")
    tables = doc.get("check")
    if not tables:
        raise PolicyError(f"{where}: an empty policy: no [[check]] table")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise PolicyError(f"{where}: check: must be [[check]] tables")
    checks = tuple(_check(t, f"{where}: check {i + 1}") for i, t in enumerate(tables))
    return Policy(where, hashlib.sha256(data).hexdigest(), checks, name)


def _check(t: dict[str, Any], where: str) -> Check:
    stat = t.get("statistic")
    if not isinstance(stat, str) or not stat or "" in stat.split("."):
        raise PolicyError(f"{where}: statistic: must be a dotted name such as "
                          "'top1_agreement' or 'kl_ref_cand.p99'")
    where = f"{where} ({stat})"
    unknown = sorted(set(t) - set(CHECK_KEYS))
    if unknown:
        raise PolicyError(f"{where}: unknown key {unknown[0]!r} (a check has "
                          f"{', '.join(CHECK_KEYS)})")
    given = [k for k in CONDITIONS if k in t]
    if not given:
        raise PolicyError(f"{where}: no condition: give min and/or max, equals or one_of")
    if len(given) > 1 and set(given) != {"min", "max"}:
        raise PolicyError(f"{where}: {' and '.join(given)}: one condition per check "
                          "(min and max together is one)")
    bounds = {k: _threshold(t[k], f"{where}: {k}") for k in ("min", "max") if k in t}
    if len(bounds) == 2 and bounds["min"] > bounds["max"]:
        raise PolicyError(f"{where}: min {bounds['min']} is above max {bounds['max']}")
    note = t.get("note")
    if note is not None and not isinstance(note, str):
        raise PolicyError(f"{where}: note: must be a string")
    one_of = t.get("one_of")
    if one_of is not None:
        if not isinstance(one_of, list) or not one_of:
            raise PolicyError(f"{where}: one_of: must be a non-empty list")
        one_of = tuple(_scalar(v, f"{where}: one_of") for v in one_of)
    equals = _scalar(t["equals"], f"{where}: equals") if "equals" in t else None
    return Check(stat, bounds.get("min"), bounds.get("max"), equals, one_of, note)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _threshold(v: Any, where: str) -> float:
    if not _is_number(v):
        raise PolicyError(f"{where}: must be a number, not {_kind(v)} {v!r}")
    if not math.isfinite(v):
        raise PolicyError(f"{where}: must be a finite number, not {v!r}")
    return v


def _scalar(v: Any, where: str) -> Scalar:
    if isinstance(v, str | bool) or (_is_number(v) and math.isfinite(v)):
        return v
    raise PolicyError(f"{where}: must be a string, boolean or finite number, not {_kind(v)}")


def _kind(v: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(
        type(v), type(v).__name__)


# ---- evaluating ---------------------------------------------------------------------------

_MISSING = object()


def resolve(doc: Any, path: str) -> Any:
    """The value at a dotted path, `_MISSING` if absent; a not-computable marker met on the
    way is returned as found. A key may itself hold dots (a configuration's label): at each
    table the longest run of segments that is a key wins. Lists are indexed by number."""
    parts = path.split(".")
    node = doc
    while parts:
        if is_not_computable(node):
            return node
        if isinstance(node, dict):
            for n in range(len(parts), 0, -1):
                key = ".".join(parts[:n])
                if key in node:
                    node, parts = node[key], parts[n:]
                    break
            else:
                return _MISSING
        elif isinstance(node, list) and parts[0].isdigit() and int(parts[0]) < len(node):
            node, parts = node[int(parts[0])], parts[1:]
        else:
            return _MISSING
    return node


def is_not_computable(v: Any) -> bool:
    return isinstance(v, dict) and NOT_COMPUTABLE in v


def not_computable(reason: str) -> dict[str, str]:
    """The marker a result holds for a statistic its evidence cannot give (a check of it is
    NOT_EVALUATED): `{"not_computable": REASON}`."""
    return {NOT_COMPUTABLE: reason}


def evaluate_check(c: Check, stats: Any) -> dict[str, Any]:
    observed = resolve(stats, c.statistic)
    outcome, reason = _judge(c, observed)
    return {"statistic": c.statistic, **c.condition(),
            "observed": None if observed is _MISSING else observed, "outcome": outcome,
            **({"reason": reason} if reason else {}), **({"note": c.note} if c.note else {})}


def _judge(c: Check, v: Any) -> tuple[str, str | None]:
    if v is _MISSING:
        return "not_evaluated", "missing from the result"
    if is_not_computable(v):
        return "not_evaluated", f"not computable: {v[NOT_COMPUTABLE]}"
    if c.equals is not None:
        return ("pass", None) if _same(v, c.equals) else ("fail", f"{v!r} is not {c.equals!r}")
    if c.one_of is not None:
        return (("pass", None) if any(_same(v, w) for w in c.one_of)
                else ("fail", f"{v!r} is not one of {list(c.one_of)!r}"))
    if not _is_number(v) or not math.isfinite(v):
        return "not_evaluated", f"not a finite number: {_kind(v) if not _is_number(v) else v}"
    if c.min is not None and v < c.min:
        return "fail", f"{v!r} is below min {c.min!r}"
    if c.max is not None and v > c.max:
        return "fail", f"{v!r} is above max {c.max!r}"
    return "pass", None


def _same(v: Any, want: Scalar) -> bool:
    """Equal and of the same kind: true is not 1, "1" is not 1; 1 equals 1.0."""
    if isinstance(want, bool) or isinstance(v, bool):
        return isinstance(v, bool) and isinstance(want, bool) and v == want
    if isinstance(want, str):
        return isinstance(v, str) and v == want
    return _is_number(v) and v == want


def refused_under(policy: Policy | None, exc: ProvError) -> ProvError:
    """A gate refusal under a policy is its NOT_COMPARABLE verdict (exit 3)."""
    if policy is None or exc.exit_code != EXIT_REFUSED:
        return exc
    return ProvError(f"{exc}; policy {policy.path}: NOT_COMPARABLE", EXIT_REFUSED)


def policy_exit(block: dict[str, Any] | None, default: int = 0) -> int:
    """The exit status: the policy's verdict when there is one, else the command's own."""
    return default if block is None else VERDICT_EXIT[block["verdict"]]


__all__ = ["FAIL", "NOT_COMPARABLE", "NOT_EVALUATED", "PASS", "VERDICT_EXIT", "Check",
           "Policy", "PolicyError", "evaluate_check", "is_not_computable", "load_policy",
           "not_computable", "overall", "parse_policy", "policy_exit", "refused_under",
           "resolve"]
