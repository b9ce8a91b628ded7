"""The result table: rich in the terminal, Markdown for the docs, JSON as written."""

from __future__ import annotations

from typing import Any

MAX_KEYS = 6


def _keys(row: dict[str, Any], limit: int = MAX_KEYS) -> str:
    keys = row.get("keys") or []
    if not keys:
        return "–"
    shown = ", ".join(f"`{k}`" for k in keys[:limit])
    return shown + (f" … (+{len(keys) - limit})" if len(keys) > limit else "")


def _outputs(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        return "–"
    return "yes: " + ", ".join(row["outputs_changed"]) if row["outputs_changed"] else "no"


def _declared(row: dict[str, Any]) -> str:
    """The user-program rows: what the row's declaration (`--vary`) made of a refusal."""
    if not row.get("vary") or row.get("vary_ok") is None:
        return "–"
    flags = " ".join(f"--vary {v}" for v in row["vary"])
    if row["vary_ok"]:
        return f"passes with {flags}"
    return f"refused with {flags}: " + ", ".join(row.get("vary_keys") or [])


def _has_declarations(result: dict[str, Any]) -> bool:
    return any("vary" in r for r in result["rows"])


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    declared = _has_declarations(result)
    lines = [
        f"Run {result['date']} on {m['cpu']} ({m['cores']} cores, Linux {m['kernel']}, "
        f"Python {m['python']}), device `{result['device']}`, {result['seconds']} s.",
        "",
        "| perturbation | class | outputs changed | identity changed | identity keys that "
        "changed |" + (" declared |" if declared else "") + " verdict |",
        "|---|---|---|---|---|" + ("---|" if declared else "") + "---|",
    ]
    for r in result["rows"]:
        ident = ("yes" if r["identity_changed"] else "no") if r["status"] == "ok" else "–"
        verdict = r["verdict"] + (f" ({r['finding']})" if r.get("finding") else "")
        if r["status"] != "ok":
            verdict = f"{r['verdict']}: {r['reason'][:200]}"
        extra = f" {_declared(r)} |" if declared else ""
        lines.append(f"| {r['name']}: {r['what']} | {r['expect']} | {_outputs(r)} | {ident} | "
                     f"{_keys(r)} |{extra} {verdict} |")
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(result["counts"].items()))
    lines += ["", f"Verdicts: {counts}."]
    return "\n".join(lines) + "\n"


def render(result: dict[str, Any], con) -> None:
    from rich.table import Table

    declared = _has_declarations(result)
    t = Table(title=f"prov selftest identity ({result['device']}, {result['date']})")
    cols = ("perturbation", "class", "outputs changed", "identity", "keys",
            *(("declared",) if declared else ()), "verdict")
    for col in cols:
        t.add_column(col, overflow="fold")
    style = {"sound": "green", "missed cause": "bold red", "noise": "bold yellow",
             "failed": "red", "not run": "dim", "declaration refused": "bold red"}
    for r in result["rows"]:
        ident = ("yes" if r["identity_changed"] else "no") if r["status"] == "ok" else "–"
        v = r["verdict"]
        note = r["finding"] if r["status"] == "ok" else r["reason"][:300]
        t.add_row(r["name"], r["expect"], _outputs(r), ident,
                  _keys(r, 4).replace("`", ""),
                  *((_declared(r),) if declared else ()),
                  f"[{style.get(v, '')}]{v}[/]" + (f"\n{note}" if note else ""))
    con.print(t)
    con.print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items()))
              + f"  ({result['seconds']} s; runs in {result['store']})")
