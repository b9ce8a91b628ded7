"""One small module per file format, each a pure `parse(...)` over bytes or text."""

from containers.catalogers.dpkg import DpkgPackage, parse_status
from containers.catalogers.os_release import parse_os_release

__all__ = ["DpkgPackage", "parse_os_release", "parse_status"]
