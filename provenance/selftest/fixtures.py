"""Fixtures of the user-program rows: other weights under the same file name.

`swap_safetensors` rewrites a safetensors file in place with other values: every float
tensor scaled (x * scale + 0.01), header (names, shapes, dtypes, metadata) byte for byte
the same, so the file keeps its name, directory and size. numpy and the standard library
only: the selftest's own process never imports torch.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

# safetensors dtype -> numpy dtype computed in (BF16 goes through float32, see _scaled)
_FLOATS = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def swap_safetensors(path: Path, scale: float = -1.0) -> None:
    """Other weights under the same name and size (see the module docstring)."""
    data = bytearray(Path(path).read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in _FLOATS:
            continue
        start, end = (base + o for o in info["data_offsets"])
        data[start:end] = _scaled(bytes(data[start:end]), info["dtype"], scale)
    size = Path(path).stat().st_size
    Path(path).write_bytes(bytes(data))
    assert Path(path).stat().st_size == size


def _scaled(raw: bytes, dtype: str, scale: float) -> bytes:
    if dtype == "BF16":  # bfloat16 is the top half of a float32
        wide = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        out = (wide * np.float32(scale) + np.float32(0.01)).astype(np.float32)
        return (out.view(np.uint32) >> 16).astype("<u2").tobytes()
    values = np.frombuffer(raw, dtype=np.dtype(_FLOATS[dtype]).newbyteorder("<"))
    return (values * scale + 0.01).astype(values.dtype).tobytes()
