"""Which leaves are identity, context or redacted: one table, not scattered ifs.

identity: can change numerics or behaviour; it decides whether two runs are comparable.
context:  true but not numerics-relevant (hostnames, paths, clocks, timestamps, UUIDs).
redacted: a secret; its presence is recorded, its value never is.

Patterns are matched against key segments: `*` matches one segment, `**` any number
(including none), and a segment such as `PIP_*` is a shell-style glob within one segment.
The first matching row wins; a leaf no row matches is identity, so a new fact is
comparable by default rather than silently ignored.
"""

from __future__ import annotations

import enum
from fnmatch import fnmatchcase
from functools import lru_cache

from provenance.model.keys import matches, split_key

REDACTED = "<redacted>"


class LeafKind(enum.StrEnum):
    IDENTITY = "identity"
    CONTEXT = "context"
    REDACTED = "redacted"


C = LeafKind.CONTEXT
I = LeafKind.IDENTITY  # noqa: E741 - reads as a column of the table

# Variables that say who runs where (a user's shell, a terminal, a temp directory), read by
# many libraries in passing (tempfile, getpass, subprocess's PATH lookup): recorded when a
# process reads them (`env.<NAME>`) or starts with another value (`runtime.process_env`),
# never a reason to refuse. What a program found on PATH shows in its own facts (code,
# libraries).
WHO_AND_WHERE = ("HOME", "USER", "LOGNAME", "USERNAME", "PWD", "OLDPWD", "SHLVL", "SHELL",
                 "TERM", "TERM_*", "COLORTERM", "COLUMNS", "LINES", "HOSTNAME", "DISPLAY",
                 "TMPDIR", "TEMP", "TMP", "XDG_*", "SSH_*", "MAIL", "LS_COLORS", "_", "PATH")

CLASSIFICATION: tuple[tuple[str, LeafKind], ...] = (
    # who, where and when: never numerics
    ("host.**", C),
    ("collectors.**", C),
    ("warnings.**", C),
    # python: paths differ between two copies of one environment
    ("python.executable", C),
    ("python.prefix", C),
    ("python.base_prefix", C),
    ("python.sys_path", C),
    ("python.packages.*.location", C),
    ("python.packages.*.installer", C),
    ("python.packages.*.record_sha256", C),
    ("python.packages.*.direct_url.url", C),
    ("python.packages.*.direct_url.dir_info.**", C),
    ("python.packages.*.shadowed", C),
    # os: the kernel is recorded but the libc and packages carry the numerics
    ("os.kernel.version", C),
    ("os.kernel.release", C),
    ("cpu.mhz", C),
    # gpu: per-board facts that differ between two identical cards
    ("gpu.devices.*.uuid", C),
    ("gpu.devices.*.serial", C),
    ("gpu.devices.*.pci_bus_id", C),
    ("gpu.devices.*.temperature_c", C),
    ("gpu.devices.*.clocks.**", C),
    ("gpu.devices.*.memory_used_mib", C),
    ("gpu.devices.*.power_draw_w", C),
    ("gpu.devices.*.utilization_pct", C),
    # env: where caches and installers live is not what the workload computes with; the
    # same for a process's environment at start (`runtime.process_env`, exec/probe/envread)
    *((f"{section}.{name}", C) for section in ("env", "runtime.process_env") for name in (
        "VIRTUAL_ENV", "CONDA_*", "PIP_*", "UV_*", "*_CACHE*", "HF_HOME", "TORCH_HOME",
        "LANG",
        # the time zone changes how clocks are printed, not what a model computes (selftest)
        "TZ",
        *WHO_AND_WHERE)),
    ("torch.probe_seconds", C),
    ("torch.cache", C),
    # images: the config digest and DiffIDs are the identity that survives every save
    # format; registry/manifest digests, compressed blob digests and dates depend on how
    # the image was stored or read (a daemon's save synthesizes its manifest)
    ("image.source", C),
    ("image.repo_tags", C),
    ("image.repo_digests", C),
    ("image.reference", C),
    ("image.index_digest", C),
    ("image.manifest_digest", C),
    ("image.manifest_media_type", C),
    ("image.manifest_synthesized", C),
    ("image.created", C),
    ("image.layers.*.digest", C),
    ("image.layers.*.size", C),
    ("image.layers.*.media_type", C),
    ("image.layers.*.compression", C),
    ("image.layers.*.created", C),
    ("python.site_packages", C),
    ("python.packages.*.layer", C),
    ("python.packages.*.debian_package", C),
    ("os.dpkg.*.layer", C),
    ("os.apk.*.layer", C),
    ("cuda.toolkit.*.path", C),
    ("cuda.toolkit.*.layer", C),
    ("cuda.libraries.*.paths", C),
    # a run's declared parameters can move the numbers (`--param temperature=0.7`); its
    # name and tags are labels
    # where an invariance probe reached its server (engine `server`): what that server
    # computes is its own record, bound as `server.*`, not its address
    ("run.params.server_url", C),
    ("run.params.**", I),
    ("run.**", C),
    # the in-process probe (provenance/exec/probe): how it ran is context; what it saw
    # inside the processes (torch flags at exit, libraries, imported code) is identity
    ("probe.**", C),
    ("runtime.torch.changed.**", C),
    # the kernel torch's sdpa dispatcher chose, per call signature: it decides the numerics
    ("runtime.torch.sdpa_kernels.**", I),
    ("runtime.libs.*.path", C),
    # the driver's PTX JIT compiler is mapped only when its compute cache misses (a cold
    # ~/.nv/ComputeCache: seen on the H200, NVFP4 Marlin kernels shipped as PTX); what it
    # compiles is fixed by the PTX (in the library holding it) and the driver (gpu.*)
    ("runtime.libs.libnvidia-ptxjitcompiler*.*", C),
    # the command line as typed is for people; its identity is code.program + code.args
    ("code.command", C),
    # where a server listens is not what it computes (two starts of one server, `--port`)
    ("code.args.port", C),
    # and where the server behind `prov serve`'s front listens: what it computes is in its
    # own words (`upstream.*`), not in its address
    ("code.args.upstream", C),
    ("code.args.host", C),
    ("code.args.server_url", C),
    ("code.script.path", C),
    ("code.script.changed_during_run", C),
    ("code.modules.*.files_checked", C),
    ("runtime.transformers.models.*.commit", I),
    ("model.files.*.source", C),
    # a config file read by its values: its bytes' digest also moves with a comment or
    # whitespace, which changes nothing (config_values.py)
    ("inputs.files.*.text_sha256", C),
    # what a run read, by content (provenance/exec/probe/inputs.py): identity, like the
    # model files; `runtime.process_env.*` too (a child re-executed with another value)
    ("inputs.files.**", I),
    # a per-process shared-memory name vLLM draws at random
    ("runtime.vllm.envs.VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME", C),
    # a JIT-compiled library is known by its cache key (`libs.<name>.jit`); its bytes differ
    # between two fresh caches of one configuration (gate/libraries.py)
    ("libs.*.sha256", C),
    # the server run a client talked to (exec/serving): its identity keys are copied under
    # `server.*` and stay identity; which run, where and how many exchanges are context
    *((f"server.{name}", C) for name in ("run_id", "store", "state", "manifest_digest",
                                         "url", "exchanges.**", "command_env.**")),
    ("**", I),
)


_COMPILED = tuple((tuple(p.split(".")), kind) for p, kind in CLASSIFICATION)


_ANY = ("**",)


def _is_plain(pattern: tuple[str, ...]) -> bool:
    """No `**` and no glob inside a segment: compared segment by segment, without the
    matcher (a snapshot classifies thousands of leaves; the matcher was most of its digest)."""
    return all(seg == "*" or ("*" not in seg and "?" not in seg) for seg in pattern)


def _rows_for(section: str) -> tuple[tuple[tuple[str, ...], LeafKind, bool], ...]:
    """The rows that can match keys of one section, in table order (first match wins)."""
    return tuple(
        (pattern, kind, _is_plain(pattern))
        for pattern, kind in _COMPILED
        if pattern[0] in ("*", "**", section)
        or ("*" in pattern[0] and fnmatchcase(section, pattern[0]))
    )


# A manifest has thousands of leaves but a handful of sections: index the table by section.
_BY_SECTION: dict[str, tuple[tuple[tuple[str, ...], LeafKind, bool], ...]] = {}


@lru_cache(maxsize=65536)
def _classify_parts(parts: tuple[str, ...]) -> LeafKind:
    rows = _BY_SECTION.get(parts[0]) if parts else None
    if rows is None:
        rows = _BY_SECTION[parts[0] if parts else ""] = _rows_for(parts[0] if parts else "")
    n = len(parts)
    for pattern, kind, plain in rows:
        if pattern == _ANY:
            return kind
        if plain:  # a pattern without `**` names keys of its own length only
            same = len(pattern) == n
            if same and all(p == "*" or p == k for p, k in zip(pattern, parts, strict=True)):
                return kind
        elif matches(pattern, parts):
            return kind
    return LeafKind.IDENTITY


def classify(key: str | tuple[str, ...], value: object = None) -> LeafKind:
    """Kind of the leaf at `key` holding `value`; a redacted value is always REDACTED."""
    if value == REDACTED:
        return LeafKind.REDACTED
    parts = tuple(split_key(key)) if isinstance(key, str) else tuple(key)
    return _classify_parts(parts)
