"""Locks: PEP 751 `pylock.toml` for Python environments (and image locks), written from a
manifest and verified against one. Imports only the manifest model.
"""
