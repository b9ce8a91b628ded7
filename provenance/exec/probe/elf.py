"""The GNU build-id of an ELF file: the linker's own identity for one build of a library.

Read from the PT_NOTE segments named by the program headers (only the header tables and the
notes are read, never the whole file). Returns None for a file that is not ELF or has no
build-id note.
"""

from __future__ import annotations

import struct

PT_NOTE = 4
NT_GNU_BUILD_ID = 3


def _notes(data: bytes, little: bool):
    """(name, type, desc) of each note in a note segment."""
    end = "<" if little else ">"
    offset = 0
    while offset + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from(end + "III", data, offset)
        offset += 12
        name = data[offset : offset + namesz]
        offset += (namesz + 3) & ~3
        desc = data[offset : offset + descsz]
        offset += (descsz + 3) & ~3
        yield name.rstrip(b"\0"), ntype, desc


def build_id(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            ident = fh.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF":
                return None
            is64, little = ident[4] == 2, ident[5] == 1
            end = "<" if little else ">"
            if is64:
                phoff, = struct.unpack_from(end + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
            else:
                phoff, = struct.unpack_from(end + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
            for i in range(phnum):
                entry = table[i * phentsize : (i + 1) * phentsize]
                if len(entry) < phentsize:
                    break
                if is64:
                    ptype, _flags, offset, _va, _pa, filesz = struct.unpack_from(
                        end + "IIQQQQ", entry)
                else:
                    ptype, offset, _va, _pa, filesz = struct.unpack_from(end + "IIIII", entry)
                if ptype != PT_NOTE or filesz > 1 << 20:
                    continue
                fh.seek(offset)
                for name, ntype, desc in _notes(fh.read(filesz), little):
                    if name == b"GNU" and ntype == NT_GNU_BUILD_ID:
                        return desc.hex()
    except (OSError, struct.error):
        return None
    return None
