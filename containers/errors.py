"""The one error an image read raises: a bad source, bad bytes, or a refused image."""

from __future__ import annotations

from provenance.model.errors import ProvError


class ImageError(ProvError):
    """The image cannot be read or was refused; the message is one line for the user."""
