"""Locks: PEP 751 `pylock.toml` for Python environments, and image locks (`prov pin`),
written from a manifest and verified against one. Imports only the manifest model; the
command that scans an image and checks it against its lock is the CLI's
(`provenance/cli/verify_image.py`).

Image locks: `image_lock.lock_from_facts(facts, files=...) -> str` (TOML; `files` is
`ImageScan.file_checks()`), `image_lock.read_lock(text)`, `image_lock.lock_packages(facts)`
(what a lock pins), `image_lock.compare(lock, facts, files) -> list[Difference]`, and
`kind.lock_kind(text)`.
"""
