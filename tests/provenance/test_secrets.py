"""Planted secrets never reach a manifest, a summary, a diff or an error message."""

from __future__ import annotations

import json

from tests.helpers import run_prov
from tests.provenance.collectors.test_python_env import make_dist

# (variable, value, secret substring that must never appear anywhere)
PLANTED = [
    ("HF_TOKEN", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("HUGGING_FACE_HUB_TOKEN", "hf_ZZZZyyyyXXXXwwwwVVVVuuuuTTTTssss", "hf_ZZZZyyyyXXXXwwwwVVVV"),
    ("HF_ENDPOINT", "https://mirroruser:mirrorPa55word@hf-mirror.internal", "mirrorPa55word"),
    ("PIP_INDEX_URL", "https://ci-bot:ciIndexSecret99@pypi.internal/simple", "ciIndexSecret99"),
    ("PIP_EXTRA_INDEX_URL", "https://__token__:pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6@x.org/s",
     "pypi-AgEIcHlwaS5vcmc"),
    ("VLLM_API_KEY", "plain-value-but-secret-name-1", "plain-value-but-secret-name-1"),
    ("NCCL_DEBUG_SUBSYS", "ghp_1234567890abcdefghijABCDEFGHIJ123456", "ghp_1234567890abcdef"),
    ("CUDA_MY_SETTING", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("TORCH_EXTRA", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36P",
     "SflKxwRJSMeKKF2QT4fwpMeJf36P"),
    ("TRANSFORMERS_NOTE", "sk-proj-abcdefghijklmnopqrstuvwx1234", "sk-proj-abcdefghijklmnop"),
    ("OMP_LABEL", "glpat-aBcDeFgHiJkLmNoPqRsT", "glpat-aBcDeFgHiJkLmNoPqRsT"),
    ("MKL_CHANNEL", "xoxb-123456789012-abcdefABCDEF", "xoxb-123456789012"),
    ("RAY_ADDRESS", "redis://:rayRedisPassw0rd@10.0.0.1:6379", "rayRedisPassw0rd"),
    ("UV_INDEX_URL", "https://oauth2accesstoken:ya29.uvSecretTokenValue@pkg.dev/simple", "ya29.uvSecretTokenValue"),
    ("TRITON_HINT", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "AIzaSyA1b2C3d4E5f6G7h8"),
    ("HF_HUB_URL", "https://hf.co/api?token=queryTokenValue77&x=1", "queryTokenValue77"),
    ("CONDA_NOTE", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz"),
    ("VLLM_HEADER", "Authorization: Bearer bearerTokenValue1234567890", "bearerTokenValue1234567890"),
    ("PYTORCH_PEM", "-----BEGIN RSA PRIVATE KEY-----MIIEow", "BEGIN RSA PRIVATE KEY"),
    ("HF_INNOCENT", "Zx9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qaz", "Zx9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qaz"),
    ("TORCH_DB_PASSWORD", "hunter2", "hunter2"),
    ("OPENAI_API_KEY", "sk-notrecordedatall0123456789abcdef", "sk-notrecordedatall"),
    ("NVIDIA_CRED", "credential-value-xyz", "credential-value-xyz"),
]
DIST_SECRET = "distUrlPassw0rd42"


def planted_env(tmp_path):
    make_dist(tmp_path / "site", "private-pkg", "1.0", direct_url={
        "url": f"https://deploy:{DIST_SECRET}@git.example.com/org/private.git",
        "vcs_info": {"vcs": "git", "commit_id": "0" * 40},
    })
    env = {name: value for name, value, _ in PLANTED}
    env["PYTHONPATH"] = str(tmp_path / "site")
    env["PROV_STORE"] = str(tmp_path / "store")
    return env


def test_at_least_twenty_secret_shapes_never_appear(tmp_path):
    assert len(PLANTED) >= 20
    env = planted_env(tmp_path)
    toml_out, json_out = tmp_path / "m.toml", tmp_path / "m.json"
    p1 = run_prov("snapshot", "--out", str(toml_out), env=env, check=True)
    p2 = run_prov("snapshot", "--json", "--out", str(json_out), "--format", "json", env=env, check=True)
    p3 = run_prov("diff", str(toml_out), str(json_out), "--json", env=env)
    p4 = run_prov("diff", str(toml_out), str(json_out), env=env)
    texts = [p.stdout + p.stderr for p in (p1, p2, p3, p4)]
    texts += [toml_out.read_text(), json_out.read_text()]
    store = tmp_path / "store"
    if store.exists():
        texts += [f.read_bytes().decode("utf-8", "replace") for f in store.rglob("*") if f.is_file()]
    for name, _value, secret in PLANTED + [("direct_url", "", DIST_SECRET)]:
        for text in texts:
            assert secret not in text, f"{name} leaked"
    manifest = json.loads(json_out.read_text())
    assert manifest["env"]["HF_TOKEN"] == "<redacted>"
    assert manifest["env"]["PIP_INDEX_URL"] == "https://<redacted>@pypi.internal/simple"
    assert "OPENAI_API_KEY" not in manifest["env"]  # not a numerics variable: not recorded
    assert manifest["python"]["packages"]["private-pkg"]["version"] == "1.0"
