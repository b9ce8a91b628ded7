"""Shrink, in place, the CUDA fatbin of a shared library to what one architecture (default
sm_90) loads, so that the file compresses to a fraction of its size.

    python prune_fatbin.py IN.so OUT.so [--keep 90]

The file's layout is unchanged (same size, same offsets, same entry headers). In a container
(one compiled unit) that has machine code (ELF) for the kept architecture, every other entry
is replaced; in one that has none, its PTX for architectures up to the kept one stays (the
driver would JIT it) and only other architectures' machine code is replaced. A replaced entry
gets the payload of the smallest entry of the same kind and architecture in the file (a
valid, tiny, zstd-compressed cubin or PTX), with its header's payload and uncompressed sizes
set to that entry's, the rest of its space zeros. So every entry is still a valid image of
its architecture (cuobjdump lists and extracts them all), and the driver, which loads the
entry matching the device, gets exactly the bytes it got before. Check afterwards, with the
toolkit's cuobjdump: -lelf/-lptx list every entry, and `-xelf all -arch sm_90` extracts
cubins identical to the original's.
"""
import argparse
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50


def sections(data):
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    out = []
    for i in range(shnum):
        name, typ, flags, addr, offset, size = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize)
        out.append([name, offset, size])
    stroff = out[shstrndx][1]
    for s in out:
        s[0] = data[stroff + s[0]:data.index(b"\0", stroff + s[0])].decode()
    return out


def containers(data, start, end):
    """Yield, per fatbin container, its entries: (header_offset, kind, sm, p0, p1)."""
    pos = start
    while pos < end:
        magic, version, hsize, fsize = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned
            continue
        e, cend, entries = pos + hsize, pos + hsize + fsize, []
        while e < cend:
            kind, ever, ehsize, padded = struct.unpack_from("<HHII", data, e)
            sm = struct.unpack_from("<I", data, e + 28)[0]
            if ehsize < 64 or kind not in (1, 2):
                sys.exit(f"bad entry at {e - start}: kind {kind} header {ehsize}")
            entries.append((e, kind, sm, e + ehsize, e + ehsize + padded))
            e += ehsize + padded
        if e != cend:
            sys.exit(f"container at {pos - start} does not end where its size says")
        yield entries
        pos = cend


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--keep", type=int, default=90)
    a = ap.parse_args()
    with open(a.src, "rb") as fh:
        data = bytearray(fh.read())
    fat = [s for s in sections(data) if s[0] == ".nv_fatbin"]
    if not fat:
        sys.exit("no .nv_fatbin section")
    _, start, size = fat[0]
    allc = list(containers(data, start, start + size))
    # the smallest entry of each (kind, sm, header size): (payload bytes, payload size, unc size)
    small = {}
    for entries in allc:
        for h, kind, sm, p0, _p1 in entries:
            psize = struct.unpack_from("<I", data, h + 16)[0]
            unc = struct.unpack_from("<Q", data, h + 56)[0]
            key = (kind, sm, p0 - h)
            if key not in small or psize < small[key][1]:
                small[key] = (bytes(data[p0:p0 + psize]), psize, unc)
    kept = replaced = kept_bytes = replaced_bytes = 0
    for entries in allc:
        has_sass = any(k == 2 and sm == a.keep for _, k, sm, _, _ in entries)
        for h, kind, sm, p0, p1 in entries:
            if (kind == 2 and sm == a.keep) or (kind == 1 and not has_sass and sm <= a.keep):
                kept += 1
                kept_bytes += p1 - p0
                continue
            payload, psize, unc = small[(kind, sm, p0 - h)]
            if psize > p1 - p0:
                sys.exit("smallest entry does not fit")
            data[p0:p1] = bytes(p1 - p0)
            data[p0:p0 + psize] = payload
            struct.pack_into("<I", data, h + 16, psize)
            struct.pack_into("<Q", data, h + 56, unc)
            replaced += 1
            replaced_bytes += p1 - p0
    with open(a.dst, "wb") as fh:
        fh.write(data)
    print(f"{len(allc)} containers; kept {kept} entries ({kept_bytes / 1e6:.1f} MB), "
          f"replaced {replaced} ({replaced_bytes / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
