"""Weights swapped under one directory name (file names and sizes unchanged), read by a
user's own script through transformers, `safetensors.torch.load_file` and `numpy.load`;
the model's other files (generation config, tokenizer, chat template) changed in place."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.exec_support import PYTHON, penv, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.probe.reads_support import compare, exec_run, swap_safetensors
from tests.runners.vllm_venv import CACHE

GENERATE = """
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
text = tok.apply_chat_template([{"role": "user", "content": "the cat"}], tokenize=False)
ids = torch.tensor([tok.encode(text)])
out = model.generate(ids, max_new_tokens=3, do_sample=False)
print(out[0, ids.shape[1]:].tolist())
"""
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
WEIGHT = 'model.files."model.safetensors".sha256'


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A copy of the demo model (built by project code, cached) with a chat template."""
    from runners.demo.build import ensure

    out = tmp_path / "models" / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), out)
    (out / "chat_template.jinja").write_text(TEMPLATE)
    return out


def generate(penv, tmp_path, model_dir):
    (tmp_path / "generate.py").write_text(GENERATE)
    return exec_run(penv, tmp_path, PYTHON, "generate.py", str(model_dir))


def test_transformers_weights_swapped_under_one_name_are_refused_naming_the_file(
        penv, tmp_path, model_dir):
    a = generate(penv, tmp_path, model_dir)
    assert {"model.safetensors", "generation_config.json", "chat_template.jinja",
            "tokenizer.json"} <= set(a["facts"]["model"]["files"])
    swap_safetensors(model_dir / "model.safetensors")
    b = generate(penv, tmp_path, model_dir)
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == [WEIGHT], refused
    assert compare(penv, a, b, "weights") == (0, {})


@pytest.mark.parametrize("name", ["generation_config.json", "tokenizer.json",
                                  "chat_template.jinja"])
def test_transformers_generation_config_tokenizer_and_template_are_refused(
        penv, tmp_path, model_dir, name):
    a = generate(penv, tmp_path, model_dir)
    path = model_dir / name
    if name == "chat_template.jinja":
        path.write_text(TEMPLATE.replace(": ", ":: "))
    else:
        doc = json.loads(path.read_text())
        if name == "generation_config.json":
            doc["max_new_tokens"] = 2
        else:
            doc["normalizer"] = {"type": "Lowercase"}
        path.write_text(json.dumps(doc))
    b = generate(penv, tmp_path, model_dir)
    rc, refused = compare(penv, a, b)
    assert rc == 3 and f'model.files."{name}".sha256' in refused, refused
    assert all(k.startswith(("model.files.", "runtime.transformers.tokenizers.")) for k in
               refused), refused


LOAD_FILE = """
import sys
from safetensors.torch import load_file
w = load_file(sys.argv[1] + "/model.safetensors")
print(round(float(sum(t.double().sum() for t in w.values())), 6))
"""
NUMPY = """
import sys
import numpy as np
w = np.load(sys.argv[1] + "/weight.npy")
print(float(w.sum()))
"""


def test_weights_read_by_safetensors_load_file_are_refused_and_pass_with_vary_weights(
        penv, tmp_path, model_dir):
    (tmp_path / "direct.py").write_text(LOAD_FILE)
    a = exec_run(penv, tmp_path, PYTHON, "direct.py", str(model_dir))
    assert "model.safetensors" in a["facts"]["model"]["files"]
    swap_safetensors(model_dir / "model.safetensors")
    b = exec_run(penv, tmp_path, PYTHON, "direct.py", str(model_dir))
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == [WEIGHT], refused
    assert compare(penv, a, b, "weights") == (0, {})


def test_a_weight_read_by_numpy_load_is_refused(penv, tmp_path):
    import numpy as np

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    np.save(ckpt / "weight.npy", np.ones((4, 4), dtype=np.float32))
    (tmp_path / "npload.py").write_text(NUMPY)
    a = exec_run(penv, tmp_path, PYTHON, "npload.py", str(ckpt))
    np.save(ckpt / "weight.npy", np.full((4, 4), 2.0, dtype=np.float32))  # same size
    b = exec_run(penv, tmp_path, PYTHON, "npload.py", str(ckpt))
    rc, refused = compare(penv, a, b)
    assert rc == 3 and list(refused) == ['inputs.files."ckpt/weight.npy".sha256'], refused
    assert compare(penv, a, b, "inputs") == (0, {})
