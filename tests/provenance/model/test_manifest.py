import json

import pytest

from provenance.model import (
    REDACTED,
    LeafKind,
    Manifest,
    ManifestError,
    classify,
    join_key,
    split_key,
)


def sample() -> Manifest:
    return Manifest(
        {
            "python": {
                "version": "3.11.7",
                "executable": "/venv/bin/python",
                "packages": {"torch": {"version": "2.13.0", "location": "/venv/lib"}},
            },
            "os": {
                "dpkg": {"python3.11": {"version": "3.11.2-6"}, "libc6:amd64": {"version": "2.36"}}
            },
            "gpu": "unavailable: timed out after 15 s",
            "env": {"HF_TOKEN": REDACTED, "NCCL_ALGO": "Ring", "LIST": ["a", 'q"uote', "ü\n"]},
            "host": {"hostname": "node-1", "pid": 4},
            "cpu": {"isa_flags": ["avx2", "fma"], "cores": 2, "ratio": 0.5, "ok": True},
        }
    )


def test_keys_round_trip_with_dots_and_quotes():
    for parts in (["a", "b"], ["os", "dpkg", "python3.11", "version"], ["x", 'we"ird.k', "y"]):
        assert split_key(join_key(parts)) == parts
    assert join_key(["os", "dpkg", "python3.11"]) == 'os.dpkg."python3.11"'


def test_classification_table():
    assert classify("python.packages.torch.version") is LeafKind.IDENTITY
    assert classify("python.packages.torch.location") is LeafKind.CONTEXT
    assert classify("host.hostname") is LeafKind.CONTEXT
    assert classify("gpu.devices.0.uuid") is LeafKind.CONTEXT
    assert classify("gpu.devices.0.compute_capability") is LeafKind.IDENTITY
    assert classify("env.HF_TOKEN", REDACTED) is LeafKind.REDACTED
    assert classify("env.PIP_INDEX_URL") is LeafKind.CONTEXT
    # mapped only on a cold compute cache: context; any other library stays identity
    ptxjit = 'runtime.libs."libnvidia-ptxjitcompiler.so.1"'
    assert classify(ptxjit + ".build_id") is LeafKind.CONTEXT
    assert classify(ptxjit + ".owner") is LeafKind.CONTEXT
    assert classify('runtime.libs."libnvidia-ml.so.1".build_id') is LeafKind.IDENTITY
    assert classify("env.HF_HUB_CACHE") is LeafKind.CONTEXT
    assert classify("env.NCCL_ALGO") is LeafKind.IDENTITY


def test_toml_round_trip_is_byte_identical():
    text = sample().to_toml()
    again = Manifest.loads(text).to_toml()
    assert again == text


def test_toml_writer_agrees_with_tomlkit():
    import tomlkit

    m = sample()
    assert tomlkit.parse(m.to_toml()).unwrap() == json.loads(m.to_json())


def test_json_round_trip_and_same_digest():
    m = sample()
    back = Manifest.loads(m.to_json())
    assert back.digest() == m.digest()
    assert back.to_toml() == m.to_toml()


def test_digest_covers_identity_only():
    a, b = sample(), sample()
    b.facts["host"]["hostname"] = "node-2"
    b.facts["env"]["HF_TOKEN"] = REDACTED
    assert a.digest() == Manifest(b.facts).digest()
    c = sample()
    c.facts["python"]["packages"]["torch"]["version"] = "2.14.0"
    c2 = Manifest(c.facts)
    assert c2.digest() != a.digest()
    changed = {k for k, v in c2.section_digests().items() if a.section_digests()[k] != v}
    assert changed == {"python"}


def test_future_schema_version_is_a_clear_error():
    doc = json.loads(sample().to_json())
    doc["schema_version"] = 99
    with pytest.raises(ManifestError, match="schema version 99 is newer"):
        Manifest.loads(json.dumps(doc))


def test_corrupted_files_are_clear_errors(tmp_path):
    p = tmp_path / "m.toml"
    text = sample().to_toml()
    p.write_text(text[: len(text) // 2] + "[[[")
    with pytest.raises(ManifestError, match="invalid TOML"):
        Manifest.read(p)
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ManifestError, match="not UTF-8"):
        Manifest.read(p)
    p.write_text(text.replace('"2.13.0"', '"2.13.1"'))
    with pytest.raises(ManifestError, match="does not match the content"):
        Manifest.read(p)
    with pytest.raises(ManifestError, match="no such file"):
        Manifest.read(tmp_path / "missing.toml")


def test_unsupported_leaf_is_rejected():
    with pytest.raises(ManifestError):
        Manifest({"a": {"b": None}}).digest()
