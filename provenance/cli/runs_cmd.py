"""`prov runs` (newest first) and `prov show RUN` (a unique run id prefix is enough)."""

from __future__ import annotations

import re
import sys

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

STATE_STYLE = {
    "complete": "green",
    "running": "cyan",
    "serving": "cyan",
    "abandoned": "red",
    "failed": "red",
}


def _info_json(info) -> dict:
    return {
        "run_id": info.run_id,
        "state": info.state,
        "name": info.name,
        "started_at": info.started_at,
        "ended_at": info.ended_at,
        "exit_status": info.exit_status,
        "manifest_digest": info.manifest_digest,
        "record": info.record_digest,
        "command": info.command,
    }


@app.command()
def runs(
    limit: int = typer.Option(50, "--limit", "-n", min=0, max=10**9,
                              help="Show at most this many (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List recorded runs, newest first."""
    from provenance.cli.output import print_json
    from provenance.store import open_store

    store = open_store()
    infos = [] if not (store.root / "objects").is_dir() else store.list_runs(limit or None)
    if as_json:
        print_json([_info_json(i) for i in infos])
        return
    from provenance.cli.output import duration, seconds_between, state_text, table

    def styled(row: list[str]) -> list[str]:
        style = STATE_STYLE.get(row[2].split(" ")[0], "")
        return [row[0][:12], row[1], f"[{style}]{row[2]}[/{style}]" if style else row[2],
                *row[3:]]

    rows = [[i.run_id, i.name or "", state_text(i.state, i.exit_status),
             "" if i.exit_status is None else str(i.exit_status),
             i.started_at.replace("T", " ")[:19],
             duration(seconds_between(i.started_at, i.ended_at)), " ".join(i.command)]
            for i in infos]
    columns = ["run", "name", "state", "exit", "started", "duration", "command"]
    table(f"runs in {store.root}", columns, rows, styled, no_wrap=("run",))


# Libraries whose version decides numerics: CUDA stack, BLAS, torch, attention kernels.
KEY_LIBS = re.compile(
    r"(libcuda\.|libcudart|libcudnn|libnccl|libcublas|libcufft|libcusparse|libcurand|libnvrtc"
    r"|libnvJitLink|libtorch|libc10|flash_attn|flashinfer|xformers|vllm|_multiarray_umath"
    r"|openblas|libmkl|libgomp|libiomp|libdnnl|triton|^libm\.so|^_C\.)",
    re.IGNORECASE,
)


def _print_show(info, rec, all_libs: bool = False) -> None:
    from provenance.cli.output import duration, plain_rows, seconds_between, state_text

    rows = [
        ("run", info.run_id),
        ("state", state_text(info.state, rec.exit_status, rec.signal)),
        ("command", " ".join(rec.command)),
        ("cwd", rec.cwd or ""),
        ("started", rec.started_at),
    ]
    if rec.name:
        rows.insert(1, ("name", rec.name))
    if rec.ended_at:
        took = duration(seconds_between(rec.started_at, rec.ended_at))
        rows.append(("ended", f"{rec.ended_at}  ({took})"))
    if rec.exit_status is not None:
        sig = f"  ({rec.signal})" if rec.signal else ""
        rows.append(("exit", f"{rec.exit_status}{sig}"))
    if rec.error:
        rows.append(("error", rec.error))
    if rec.live:  # a running command's facts so far (exec/live.py)
        engines = ", ".join(rec.live.get("engines") or []) or "no engine yet"
        rows.append(("live", f"facts update {rec.live.get('update')} at "
                             f"{rec.live.get('updated_at')} ({engines})"))
    # a started run's manifest is its snapshot
    rows.append(("manifest", f"{rec.manifest_digest}  (object {rec.run_manifest_object})"))
    rows.append(("snapshot", f"cache {(rec.snapshot or {}).get('cache', '?')}"))
    rows += _git_rows(rec.git or {})
    for k, v in sorted((rec.tags or {}).items()):
        rows.append(("tag", f"{k}={v}"))
    for k, v in sorted((rec.params or {}).items()):
        rows.append(("param", f"{k}={v}"))
    for label, log in sorted((rec.logs or {}).items()):
        rows.append((label, f"{log['digest']}  ({log['size']} bytes)"))
    for path, out in sorted((rec.outputs or {}).items()):
        rows.append(("output", f"{path}  {out.get('type')}  {out.get('digest', '')}"))
    for path, f in sorted((rec.run_dir or {}).items()):
        rows.append(("run file", f"{path}  {f.get('digest', '')}"))
    from provenance.exec import engine_rows

    rows += engine_rows(rec.facts or {})  # what the in-process probe saw
    from provenance.exec import server_rows

    rows += server_rows(rec.facts or {})  # the server runs a client talked to
    rows += _library_rows(rec.loaded_libraries or [], all_libs)
    rows += _drift_rows(rec.drift or {})
    res = rec.resources or {}
    if res:
        rows.append(
            (
                "cpu",
                f"command {res.get('child_cpu_s')} s, prov {res.get('prov_cpu_s')} s "
                f"({res.get('prov_cpu_while_running_s')} s while the command ran)",
            )
        )
    for w in rec.warnings or []:
        rows.append(("warning", w))
    plain_rows(rows)


def _git_rows(git: dict) -> list[tuple[str, str]]:
    if not git.get("repository"):
        return [("git", git.get("error", "not a git repository"))]
    dirty = " dirty" if git.get("dirty") else ""
    rows = [("git", f"{git.get('root')}  {git.get('branch')} {git.get('head')}{dirty}")]
    if git.get("diff"):
        rows.append(("git diff", f"{git['diff']}  ({git.get('diff_size', 0)} bytes)"))
    if git.get("untracked"):
        rows.append(("untracked", f"{len(git['untracked'])} file(s)"))
    return rows


def _library_rows(libs: list, all_libs: bool) -> list[tuple[str, str]]:
    if not libs:
        return []
    shown = libs if all_libs else [lib for lib in libs
                                   if KEY_LIBS.search(lib["name"]) or lib.get("jit")]
    more = "" if all_libs else "; the numerics-relevant ones below (--libs: all)"
    rows = [("libs", f"{len(libs)} shared libraries loaded{more}")]
    rows += [("", f"{lib['path']}  {_jit_label(lib)}{lib.get('sha256')}") for lib in shown]
    return rows


def _jit_label(lib: dict) -> str:
    """A JIT-compiled library is known by its cache key; its bytes follow as context."""
    jit = lib.get("jit")
    return f"jit {jit.get('kind')}:{jit.get('key')}  " if isinstance(jit, dict) else ""


def _drift_rows(drift: dict) -> list[tuple[str, str]]:
    if drift.get("detected"):
        rows = [("drift", f"{drift.get('changes_total')} identity key(s) changed during run")]
        for c in drift.get("changes", [])[:20]:
            rows.append(("", f"{c['change']} {c['key']}: {c.get('a')} -> {c.get('b')}"))
        return rows
    return [("drift", "none")] if drift.get("checked") else []


@app.command()
def show(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it."),
    as_json: bool = typer.Option(False, "--json", help="The full run record as JSON."),
    libs: bool = typer.Option(False, "--libs", help="List every loaded library, not the key ones."),
    cat: str = typer.Option(
        None,
        "--cat",
        help="Write a stored file of the run: stdout, stderr, git.diff, or a PROV_RUN_DIR path.",
    ),
) -> None:
    """Show one run's record."""
    from provenance.cli.output import print_json
    from provenance.store import open_store

    store = open_store()
    if not (store.root / "objects").is_dir():
        raise ProvError(f"no store at {store.root}")
    info = store.get_run(run)
    rec = info.record
    if cat is not None:
        digest = None
        if cat in (rec.logs or {}):
            digest = rec.log_digest(cat)
        elif cat == "git.diff":
            digest = (rec.git or {}).get("diff")
        elif cat in (rec.run_dir or {}):
            digest = rec.run_dir[cat].get("digest")
        if not digest:
            raise ProvError(f"run {info.run_id} has no stored {cat!r}")
        for chunk in store.objects.open_verified(store.resolve_object(digest)):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
    if as_json:
        print_json({**rec.to_doc(), "state": info.state, "record": info.record_digest})
        return
    _print_show(info, rec, all_libs=libs)
