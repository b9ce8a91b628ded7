"""Scan an image: open the source, walk the layers once, catalog, and shape the facts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from containers.catalog import DbHistory, databases_in, os_section, wants, wants_verifying
from containers.cuda_stack import cuda_section
from containers.digest import chain_ids
from containers.dists import PythonDist, PythonHistory, python_dists, python_section
from containers.errors import ImageError
from containers.filehash import MemberDigester
from containers.mediatypes import check_layer_type, compression_note
from containers.owners import library_owners
from containers.resolve import check_config
from containers.sources import Opened, open_source
from containers.verify import KINDS, Coverage, PackageCheck, verify_files
from containers.walk import Layer, LayerRead, walk

# progress(event, layer_index, done_bytes, total_bytes); event: "start", "advance", "end"
Progress = Callable[[str, int, int, int | None], None]

_MACHINE = {"amd64": "x86_64", "arm64": "aarch64", "arm": "armv7l", "386": "i686"}


@dataclass
class LayerInfo:
    index: int
    digest: str
    size: int | None
    media_type: str
    diff_id: str
    chain_id: str
    compression: str = ""
    created_by: str = ""
    created: str = ""
    comment: str = ""
    empty_history: list[str] = field(default_factory=list)


@dataclass
class ImageScan:
    """What one scan found; `facts()` is a manifest's facts (image, os, python, cuda)."""

    opened: Opened
    layers: list[LayerInfo]
    os: dict[str, Any]
    python: dict[str, Any]
    python_dists: list[PythonDist]
    cuda: dict[str, Any]
    warnings: list[str]
    # package key -> its file check (None: the scan did not verify files)
    files: dict[str, PackageCheck] | None = None
    coverage: Coverage | None = None  # what the file check covered (None: not verified)

    @property
    def config_digest(self) -> str:
        return self.opened.resolved.config_digest

    @property
    def reference(self) -> str | None:
        return self.opened.reference

    def image_section(self) -> dict[str, Any]:
        from provenance.model.redact import KnownSecrets, redact_text

        r = self.opened.resolved
        cfg = r.config.get("config") if isinstance(r.config.get("config"), dict) else {}
        known = KnownSecrets()  # a value hidden in ENV is hidden in history lines too
        config = _config_section(cfg, known)  # first: it fills `known`
        sec: dict[str, Any] = {
            "source": self.opened.source,
            "config_digest": r.config_digest,
            "manifest_digest": r.manifest_digest,
            "manifest_media_type": r.manifest_media_type,
            "manifest_synthesized": r.manifest_synthesized,
            "platform": r.platform,
        }
        if r.index_digest:
            sec["index_digest"] = r.index_digest
        if self.opened.reference:
            sec["reference"] = redact_text(self.opened.reference)
        if self.opened.repo_tags:
            sec["repo_tags"] = list(self.opened.repo_tags)
        if self.opened.repo_digests:
            sec["repo_digests"] = list(self.opened.repo_digests)
        if isinstance(r.config.get("created"), str):
            sec["created"] = r.config["created"]
        layers: dict[str, Any] = {}
        for li in self.layers:
            entry: dict[str, Any] = {
                "digest": li.digest,
                "media_type": li.media_type,
                "diff_id": li.diff_id,
                "chain_id": li.chain_id,
                "compression": li.compression,
            }
            if li.size is not None:
                entry["size"] = li.size
            if li.created_by:
                entry["created_by"] = redact_command(li.created_by, known)
            if li.created:
                entry["created"] = li.created
            layers[str(li.index)] = entry
        sec["layers"] = layers
        if config:
            sec["config"] = known.hide_in_tree(config) if known else config
        return sec

    def facts(self) -> dict[str, Any]:
        facts = {
            "image": self.image_section(),
            "os": self.os,
            "python": self.python,
            "cuda": self.cuda or "unavailable: no CUDA toolkit or libraries in the image",
        }
        if self.warnings:
            facts["warnings"] = list(self.warnings)
        return facts

    def file_checks(self) -> dict[str, dict[str, Any]] | None:
        """The file verification as plain data (what an image lock records)."""
        if self.files is None:
            return None
        out: dict[str, dict[str, Any]] = {}
        for key, check in self.files.items():
            entry: dict[str, Any] = {"checked": check.checked}
            if check.skipped:
                entry["skipped"] = check.skipped
            for kind in KINDS:
                issues = getattr(check, kind)
                if issues:
                    entry[kind] = [
                        {k: v for k, v in asdict(i).items() if v not in (None, "")}
                        for i in issues
                    ]
            out[key] = entry
        return out


def redact_command(text: str, known=None) -> str:
    """A build command (a history line `/bin/sh -c ...`, `|2 TOKEN=x /bin/sh -c ...`) with
    secrets hidden by the one redaction pass (model.redact.redact_command_text), its
    spacing kept."""
    from provenance.model.redact import redact_command_text

    return redact_command_text(text, known=known)


def _config_section(cfg: dict[str, Any], known) -> dict[str, Any]:
    """The config's Env, Entrypoint, Cmd, WorkingDir, User and Labels, each through the one
    redaction pass; what it hides is added to `known` (model.redact.KnownSecrets)."""
    from provenance.model.redact import redact_argv, redact_value

    config: dict[str, Any] = {}
    env: dict[str, Any] = {}
    for item in cfg.get("Env") or []:
        if isinstance(item, str):
            name, _, value = item.partition("=")
            env[name] = redact_value(name, value, known=known)
    if env:
        config["env"] = env
    for key, out in (("Entrypoint", "entrypoint"), ("Cmd", "cmd")):
        value = cfg.get(key)
        if isinstance(value, list) and value:
            config[out] = redact_argv([str(v) for v in value], known=known)
    for key, out in (("WorkingDir", "working_dir"), ("User", "user")):
        if isinstance(cfg.get(key), str) and cfg[key]:
            config[out] = cfg[key]
    labels = cfg.get("Labels")
    if isinstance(labels, dict) and labels:
        config["labels"] = {str(k): redact_value(str(k), str(v), known=known)
                            for k, v in labels.items()}
    return config


def _history(config: dict[str, Any], n_layers: int) -> list[dict[str, Any]]:
    """History entries of the layers that exist (empty_layer entries have none)."""
    hist = [h for h in config.get("history", []) if not h.get("empty_layer")]
    return hist if len(hist) == n_layers else [{}] * n_layers


def scan_opened(
    opened: Opened, progress: Progress | None = None, verify: bool = False,
    all_files: bool = False,
) -> ImageScan:
    r = opened.resolved
    diff_ids = check_config(r.config, len(r.layers), f"{opened.source}: config")
    infos = _layer_infos(r, diff_ids)
    for i, desc in enumerate(r.layers):  # before any byte is read
        check_layer_type(desc.media_type, f"{opened.source}: layer {i}")
    read = _LayerChecks(opened, diff_ids, infos, progress, MemberDigester() if verify else None)
    on_bytes = None
    if progress is not None:

        def on_bytes(index: int, done: int) -> None:
            progress("advance", index, done, r.layers[index].size)

    view = walk(
        _layer_list(opened, progress),
        wants_verifying if verify else wants,
        on_layer=read.on_layer,
        on_bytes=on_bytes,
        hash_files=read.hasher or False,
    )
    warnings = list(opened.notes) + read.notes + view.warnings
    os_sec, parsed = os_section(view, read.history)
    machine = r.platform.split("/")
    os_sec["system"] = machine[0] if machine else ""
    if len(machine) > 1:
        os_sec["machine"] = _MACHINE.get(machine[1], machine[1])
    dists = python_dists(view, set((os_sec.get("dpkg") or {}).keys()), warnings,
                         read.py_history)
    py = python_section(dists)
    libs = set(view.names)  # shared objects (catalog.wants); owners decide which are CUDA's
    owners = library_owners(view, dists, parsed, libs)
    cu = cuda_section(view, os_sec, py, owners)
    files = coverage = None
    if verify:
        files, coverage = verify_files(view, dists, parsed, all_files)
    return ImageScan(opened, infos, os_sec, py, dists, cu, warnings, files, coverage)


def _layer_infos(r, diff_ids: list[str]) -> list[LayerInfo]:
    """One LayerInfo per layer, from the manifest, the config's DiffIDs and its history."""
    hist = _history(r.config, len(r.layers))
    return [LayerInfo(index=i, digest=desc.digest, size=desc.size, media_type=desc.media_type,
                      diff_id=diff_id, chain_id=chain,
                      created_by=str(hist[i].get("created_by", "")),
                      created=str(hist[i].get("created", "")))
            for i, (desc, diff_id, chain) in enumerate(
                zip(r.layers, diff_ids, chain_ids(diff_ids), strict=True))]


def _layer_list(opened: Opened, progress: Progress | None):
    """The layers to walk, in order; a blob listed twice is read once (keyed by digest)."""
    layers = opened.resolved.layers
    listed = Counter(d.digest for d in layers)
    last = {d.digest: i for i, d in enumerate(layers)}
    for i, desc in enumerate(layers):
        what = f"{opened.source}: layer {i} ({desc.digest[:19]})"
        if progress is not None:
            progress("start", i, 0, desc.size)
        key = desc.digest if listed[desc.digest] > 1 else None
        yield Layer(i, what, lambda d=desc, w=what: opened.blobs.open(d.digest, d.size, w),
                    key, last[desc.digest] == i)


@dataclass
class _LayerChecks:
    """What the walk reports after each layer: its DiffID checked against the config, its
    compression noted, the package-database histories advanced."""

    opened: Opened
    diff_ids: list[str]
    infos: list[LayerInfo]
    progress: Progress | None
    hasher: MemberDigester | None
    history: DbHistory = field(default_factory=DbHistory)
    py_history: PythonHistory = field(default_factory=PythonHistory)
    databases: set[str] = field(default_factory=set)  # the OS databases the layers so far hold
    notes: list[str] = field(default_factory=list)

    def on_layer(self, index: int, read: LayerRead, staged: dict[str, bytes]) -> None:
        source, layers = self.opened.source, self.opened.resolved.layers
        if read.diff_id != self.diff_ids[index]:
            raise ImageError(
                f"{source}: layer {index}: DiffID mismatch: config says "
                f"{self.diff_ids[index]}, content is {read.diff_id}"
            )
        self.infos[index].compression = read.compression
        note = compression_note(layers[index].media_type, read.compression,
                                f"{source}: layer {index}")
        if note:
            self.notes.append(note)
        self.history.on_layer(index, staged)
        self.py_history.on_layer(index, staged)
        if self.hasher is not None:
            self.databases.update(databases_in(staged))
            self.hasher.narrow(self.databases)
        if self.progress is not None:
            self.progress("end", index, read.compressed, layers[index].size)


def scan_image(
    source: str,
    progress: Progress | None = None,
    platform: str | None = None,
    verify_files: bool = False,
    all_files: bool = False,
) -> ImageScan:
    """Open `source`, read every layer once, and catalog what the final file view holds;
    with `verify_files`, every file a package claims is re-hashed in the same pass (and
    with `all_files`, the files no package lists are recorded too, with their layer)."""
    opened = open_source(source, platform)
    try:
        return scan_opened(opened, progress, verify_files, all_files)
    finally:
        opened.close()
