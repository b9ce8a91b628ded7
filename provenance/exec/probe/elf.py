"""Two facts of an ELF shared object: its GNU build-id and its DT_SONAME.

The build-id is the linker's identity for one build; the soname is the name the dynamic
loader resolves (maps show the real file, `libgomp.so.1.0.0`, while a wheel ships and its
users ask for `libgomp.so.1`). Only the header tables, the notes and the dynamic section
are read, never the whole file. Anything that is not ELF gives (None, None).
"""

from __future__ import annotations

import struct
from typing import BinaryIO

PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
NT_GNU_BUILD_ID = 3
DT_NULL, DT_STRTAB, DT_SONAME = 0, 5, 14


def _segments(fh: BinaryIO) -> tuple[str, bool, list[tuple[int, int, int, int]]] | None:
    """(endianness, is64, [(type, offset, vaddr, filesz)]) from the program headers."""
    ident = fh.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF":
        return None
    is64, end = ident[4] == 2, "<" if ident[5] == 1 else ">"
    if is64:
        (phoff,) = struct.unpack_from(end + "Q", ident, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
    else:
        (phoff,) = struct.unpack_from(end + "I", ident, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
    fh.seek(phoff)
    table = fh.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        entry = table[i * phentsize : (i + 1) * phentsize]
        if len(entry) < (56 if is64 else 32):
            break
        if is64:
            ptype, _fl, offset, vaddr, _pa, filesz = struct.unpack_from(end + "IIQQQQ", entry)
        else:
            ptype, offset, vaddr, _pa, filesz = struct.unpack_from(end + "IIIII", entry)
        out.append((ptype, offset, vaddr, filesz))
    return end, is64, out


def _build_id(fh: BinaryIO, end: str, segments) -> str | None:
    for ptype, offset, _vaddr, filesz in segments:
        if ptype != PT_NOTE or filesz > 1 << 20:
            continue
        fh.seek(offset)
        data, pos = fh.read(filesz), 0
        while pos + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from(end + "III", data, pos)
            pos += 12
            name = data[pos : pos + namesz].rstrip(b"\0")
            pos += (namesz + 3) & ~3
            desc = data[pos : pos + descsz]
            pos += (descsz + 3) & ~3
            if name == b"GNU" and ntype == NT_GNU_BUILD_ID:
                return desc.hex()
    return None


def _file_offset(vaddr: int, segments) -> int | None:
    for ptype, offset, start, filesz in segments:
        if ptype == PT_LOAD and start <= vaddr < start + filesz:
            return offset + vaddr - start
    return None


def _soname(fh: BinaryIO, end: str, is64: bool, segments) -> str | None:
    dyn = next((s for s in segments if s[0] == PT_DYNAMIC), None)
    if dyn is None or dyn[3] > 1 << 20:
        return None
    fh.seek(dyn[1])
    data = fh.read(dyn[3])
    fmt, size = (end + "qQ", 16) if is64 else (end + "iI", 8)
    strtab = soname = None
    for pos in range(0, len(data) - size + 1, size):
        tag, value = struct.unpack_from(fmt, data, pos)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag == DT_SONAME:
            soname = value
    if strtab is None or soname is None:
        return None
    base = _file_offset(strtab, segments)
    if base is None:
        return None
    fh.seek(base + soname)
    raw = fh.read(256).split(b"\0", 1)[0]
    return raw.decode("utf-8", "replace") or None


def read_elf(path: str) -> tuple[str | None, str | None]:
    """(build-id hex, soname) of an ELF file; None for what it does not have."""
    try:
        with open(path, "rb") as fh:
            found = _segments(fh)
            if found is None:
                return None, None
            end, is64, segments = found
            return _build_id(fh, end, segments), _soname(fh, end, is64, segments)
    except (OSError, struct.error):
        return None, None


def build_id(path: str) -> str | None:
    return read_elf(path)[0]
