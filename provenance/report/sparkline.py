"""One line of disagreement along the context, for the terminal under a summary table."""

from __future__ import annotations

import numpy as np

BARS = "▁▂▃▄▅▆▇█"


def sparkline(disagree: np.ndarray, width: int = 60) -> str:
    """Disagreement rate per bucket: ▁ where none; any disagreement shows at least ▂."""
    d = np.asarray(disagree, dtype=np.float64)
    if len(d) == 0:
        return ""
    width = max(1, min(width, len(d)))
    edges = np.linspace(0, len(d), width + 1).astype(np.int64)
    chars = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        rate = float(d[a:max(b, a + 1)].mean())
        if rate <= 0:
            chars.append(BARS[0])
        else:
            chars.append(BARS[1 + min(int(rate * (len(BARS) - 1)), len(BARS) - 2)])
    return "".join(chars)


def sparkline_line(disagree: np.ndarray, width: int = 60) -> str:
    d = np.asarray(disagree, dtype=bool)
    return (f"top-1 disagreement along the context ({len(d)} positions, {int(d.sum())} "
            f"disagree): {sparkline(d, width)}")


def scores_disagreement(record_a: dict, record_b: dict) -> np.ndarray | None:
    """Top-1 disagreement of two worker runs from their declared scores.npz outputs, or None
    when either is gone or no longer matches its run record."""
    from provenance.report.declared import declared_output

    tops = []
    for rec in (record_a, record_b):
        found = declared_output(rec, "scores.npz")
        if found is None:
            return None
        with np.load(found) as npz:
            if "scores" not in npz.files or "ids" not in npz.files:
                return None
            ids = np.asarray(npz["ids"])  # small; the scores are streamed below
        top = top1_streamed(found)
        if top is None:
            return None
        tops.append((ids, top))
    (ids_a, top_a), (ids_b, top_b) = tops
    if not np.array_equal(ids_a, ids_b) or top_a.shape != top_b.shape:
        return None
    return top_a != top_b





def runs_sparkline(record_a: dict, record_b: dict, width: int = 60) -> str | None:
    """The sparkline line for two worker runs (None when their scores are not at hand)."""
    d = scores_disagreement(record_a, record_b)
    return None if d is None else sparkline_line(d, width)


def top1_streamed(path, chunk_bytes: int = 64 << 20) -> np.ndarray | None:
    """argmax per row of scores.npy inside an npz, read in chunks: a [100k, 150k] float32
    score matrix (60 GB) never has to fit in memory for one line of terminal output."""
    import zipfile

    fmt = np.lib.format
    with zipfile.ZipFile(path) as zf, zf.open("scores.npy") as fh:
        version = fmt.read_magic(fh)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read is None:
            return None
        shape, fortran, dtype = read(fh)
        if fortran or len(shape) != 2 or dtype.hasobject:
            return None
        rows, cols = shape
        row_bytes = max(cols * dtype.itemsize, 1)
        per = max(1, chunk_bytes // row_bytes)
        out = np.empty(rows, dtype=np.int64)
        for start in range(0, rows, per):
            n = min(per, rows - start)
            buf = fh.read(n * row_bytes)
            if len(buf) != n * row_bytes:
                return None
            out[start:start + n] = np.argmax(np.frombuffer(buf, dtype=dtype).reshape(n, cols),
                                             axis=-1)
        return out
