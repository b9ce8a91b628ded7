"""Locks: PEP 751 `pylock.toml` for Python environments, and image locks (`prov pin`),
written from a manifest and verified against one. Imports only the manifest model (the
image-lock verify command reaches the image through the containers public API).

Image locks: `image_lock.lock_from_facts(facts, files=...) -> str` (TOML; `files` is
`ImageScan.file_checks()`), `image_lock.read_lock(text)`,
`image_lock.compare(lock, facts, files) -> list[Difference]`, and
`verify_command.verify_lock_command(lock, source, as_json) -> int` for `prov verify --lock`.
"""
