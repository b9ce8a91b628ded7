"""One small module per file format, each a pure `parse(...)` over bytes or text.

The public API the host collectors use (standard library only, Python 3.8-compatible: the
Python collector runs inside the interpreter it inspects).
"""

from containers.catalogers.dpkg import DpkgPackage, parse_status, parse_status_d_entry
from containers.catalogers.os_release import parse_os_release
from containers.catalogers.python_dist import (
    NO_RECORD,
    content_fingerprint,
    headers,
    normalize_name,
    record_rows,
)

__all__ = ["NO_RECORD", "DpkgPackage", "content_fingerprint", "headers", "normalize_name",
           "parse_os_release", "parse_status", "parse_status_d_entry", "record_rows"]
