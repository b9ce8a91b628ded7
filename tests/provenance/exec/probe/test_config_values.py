"""A small JSON/TOML config a run read is recorded by its values (probe/config_values.py)."""

from __future__ import annotations

import json

from provenance.exec.probe.config_values import MAX_BYTES, MAX_LEAVES, config_values


def test_json_and_toml_tables_become_their_leaves():
    doc = {"attention_backend": "TRITON_ATTN", "kv": {"dtype": "fp8", "scales": [1.0, 0.5]},
           "seed": 0, "none": None}
    assert config_values("cfg.json", json.dumps(doc).encode()) == {
        "attention_backend": "TRITON_ATTN", "kv": {"dtype": "fp8", "scales": [1.0, 0.5]},
        "seed": 0, "none": "null"}
    toml = b'attention_backend = "FLASH_ATTN"\n[sampling]\ntemperature = 0.7\n'
    assert config_values("run.toml", toml) == {"attention_backend": "FLASH_ATTN",
                                               "sampling": {"temperature": 0.7}}


def test_anything_else_is_left_to_its_digest():
    assert config_values("prompt.txt", b'{"a": 1}') is None  # another format
    assert config_values("cfg.json", b"[1, 2]") is None  # not a table
    assert config_values("cfg.json", b'{"a": [{"b": 1}]}') is None  # a list of tables
    assert config_values("cfg.json", b"{not json") is None
    assert config_values("cfg.json", b"\xff\xfe") is None
    big = json.dumps({"k": "x" * MAX_BYTES}).encode()
    assert config_values("cfg.json", big) is None
    many = json.dumps({f"k{i}": i for i in range(MAX_LEAVES + 1)}).encode()
    assert config_values("cfg.json", many) is None
    deep: dict = {}
    node = deep
    for _ in range(50):
        node["d"] = {}
        node = node["d"]
    assert config_values("cfg.json", json.dumps(deep).encode()) is None
