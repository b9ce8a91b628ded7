"""Other weights under one name: the rewritten file read back by safetensors itself."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import load_file, save_file

from provenance.selftest.fixtures import swap_safetensors


def test_swapped_weights_keep_names_shapes_header_and_size(tmp_path):
    path = tmp_path / "model.safetensors"
    tensors = {"a.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
               "b.bias": np.linspace(-1, 1, 5).astype(np.float16),
               "c.ids": np.arange(4, dtype=np.int64)}
    save_file(tensors, str(path), metadata={"format": "pt"})
    before = path.read_bytes()
    swap_safetensors(path)
    after = path.read_bytes()
    n = int.from_bytes(before[:8], "little")
    assert len(after) == len(before) and after[:8 + n] == before[:8 + n]  # the same header
    got = load_file(str(path))
    assert np.array_equal(got["a.weight"], tensors["a.weight"] * np.float32(-1) + np.float32(0.01))
    assert np.allclose(got["b.bias"], -tensors["b.bias"].astype(np.float32) + 0.01, atol=1e-3)
    assert np.array_equal(got["c.ids"], tensors["c.ids"])  # integers are left alone
