"""The git state of the working directory, read with gitpython (imported only when needed).

Recorded: repository root and remotes (credentials stripped), HEAD commit, branch (or
detached), dirty flag, the diff against HEAD (stored as an object by the caller) and the
names of untracked files. Outside a repository: `{"repository": false}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provenance.model.redact import strip_url_credentials


def _find_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _parse_porcelain(out: str) -> tuple[list[str], list[str]]:
    """(changed tracked paths, untracked paths) from `git status --porcelain=v1 -z`."""
    changed: list[str] = []
    untracked: list[str] = []
    items = out.split("\0")
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        if code == "??":
            untracked.append(path)
        elif code != "!!":
            changed.append(path)
            if "R" in code or "C" in code:
                i += 1  # the source path of a rename or copy follows
    return changed, untracked


def git_state(cwd: Path | None = None) -> tuple[dict[str, Any], bytes | None]:
    """(facts, diff bytes or None). Never raises: a broken repository is recorded as such."""
    cwd = (cwd or Path.cwd()).absolute()
    if _find_root(cwd) is None:
        return {"repository": False}, None
    try:
        import git  # gitpython
    except ImportError:
        return {"repository": True, "error": "gitpython is not installed"}, None
    try:
        repo = git.Repo(cwd, search_parent_directories=True)
        # `git status` refreshes the index under .git/index.lock when it can; a prov killed
        # at that moment would leave a stale lock in the user's repository. Reading needs none.
        repo.git.update_environment(GIT_OPTIONAL_LOCKS="0")
    except Exception as exc:  # InvalidGitRepositoryError, a bare or broken .git
        return {"repository": True, "error": f"{type(exc).__name__}: {exc}"[:300]}, None
    facts: dict[str, Any] = {"repository": True, "root": str(repo.working_tree_dir)}
    diff: bytes | None = None
    try:
        try:
            facts["head"] = repo.head.commit.hexsha
        except ValueError:
            facts["head"] = "none: no commits yet"
        facts["branch"] = "detached" if repo.head.is_detached else repo.active_branch.name
        remotes = {}
        for remote in repo.remotes:
            try:
                remotes[remote.name] = strip_url_credentials(remote.url)
            except Exception:  # a remote without url
                continue
        if remotes:
            facts["remotes"] = remotes
        status = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all")
        changed, untracked = _parse_porcelain(status)
        facts["dirty"] = bool(changed)
        facts["changed"] = sorted(changed)
        facts["untracked"] = sorted(untracked)
        if changed:
            against = [] if facts["head"].startswith("none") else ["HEAD"]
            args = [*against, "--binary"] if against else ["--cached", "--binary"]
            diff = repo.git.diff(*args, stdout_as_string=False, strip_newline_in_stdout=False)
    except Exception as exc:  # git missing, permission problems: recorded, never fatal
        facts["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[
            :300
        ]
    finally:
        repo.close()
    return facts, diff
