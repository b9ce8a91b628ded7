# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""The run sections' types say what `prov exec` really writes: a user's script that imports
torch, changes a flag, calls sdpa, reads a model directory, a prompt, a config file and an
environment variable, run for real; every section of its record is held to its TypedDict
(no key the type does not name, every required key there, nested types too)."""

from __future__ import annotations

import subprocess
import sys
import types
import typing

from provenance.model.run_sections import ProbedFacts
from tests.exec_support import PROV, last_run, penv, prov_cache  # noqa: F401 - fixtures

SCRIPT = """
import json, os, sys
import torch
torch.set_num_threads(1)
q = torch.randn(1, 2, 4, 8)
torch.nn.functional.scaled_dot_product_attention(q, q, q)
config = json.load(open(os.path.join(sys.argv[1], "config.json")))
prompt = open("prompt.txt").read()
settings = json.load(open("settings.json"))
print(config["hidden_size"], len(prompt), settings["temperature"], os.getenv("MY_SETTING"))
"""


def required(typed_dict: type, hint: object) -> bool:
    """Whether a TypedDict's key must be there (`__required_keys__` misses NotRequired
    under postponed annotations on Python 3.11)."""
    origin = typing.get_origin(hint)
    if origin is typing.NotRequired:
        return False
    return origin is typing.Required or typed_dict.__total__


def problems(value: object, hint: object, at: str) -> list[str]:
    """Where `value` does not fit the type `hint` (TypedDicts, dict[K, V], list[V] and
    unions followed; other hints are left to the manifest's own checks)."""
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{at}: {type(value).__name__}, not a {hint.__name__}"]
        fields = typing.get_type_hints(hint, include_extras=True)
        out = [f"{at}.{k}: not in {hint.__name__}" for k in value if k not in fields]
        out += [f"{at}.{k}: required by {hint.__name__}, absent"
                for k, h in fields.items() if required(hint, h) and k not in value]
        for k, v in value.items():
            if k in fields:
                out += problems(v, fields[k], f"{at}.{k}")
        return out
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Required, typing.NotRequired):
        return problems(value, args[0], at)
    if origin in (typing.Union, types.UnionType):
        tries = [problems(value, a, at) for a in args]
        return [] if any(not t for t in tries) else tries[0]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{at}: {type(value).__name__}, not a dict"]
        return [p for k, v in value.items() for p in problems(v, args[1], f"{at}.{k}")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{at}: {type(value).__name__}, not a list"]
        return [p for i, v in enumerate(value) for p in problems(v, args[0], f"{at}[{i}]")]
    if isinstance(hint, type) and hint is not typing.Any and not isinstance(value, hint):
        return [f"{at}: {type(value).__name__}, not {hint.__name__}"]
    return []


def test_every_section_prov_exec_wrote_fits_its_type(penv, tmp_path):
    from runners.demo.build import ensure
    from tests.runners.vllm_venv import CACHE

    model = ensure(CACHE / "demo-model", steps=120)
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "prompt.txt").write_text("the cat sat on the mat\n")
    (tmp_path / "settings.json").write_text('{"temperature": 0.5}\n')
    env = dict(penv, MY_SETTING="on")
    p = subprocess.run([PROV, "exec", "-q", "--", sys.executable, "script.py", str(model)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    facts = last_run(env)["facts"]
    # every section the types name was written, and each fits
    written = set(typing.get_type_hints(ProbedFacts)) & set(facts)
    assert written == {"probe", "code", "runtime", "model", "inputs", "env"}, sorted(facts)
    seen = {k: facts[k] for k in written}
    assert problems(seen, ProbedFacts, "facts") == []
    # the parts that are there only sometimes were there this time (the check had teeth)
    assert facts["code"]["script"]["sha256"].startswith("sha256:")
    assert facts["runtime"]["torch"]["changed"]["num_threads"]["at_exit"] == 1 or \
        facts["runtime"]["torch"]["flags"]["num_threads"] == 1
    assert facts["runtime"]["torch"]["sdpa_kernels"]
    assert facts["model"]["files"]["config.json"]["sha256"].startswith("sha256:")
    assert facts["inputs"]["files"]["settings.json"]["values"]
    assert facts["env"]["MY_SETTING"] == "on"


def test_the_checker_finds_what_does_not_fit():
    bad = {"probe": {"state": "on", "processes": "two"},
           "code": {"script": {"path": "/x.py"}, "surprise": 1},
           "model": {"files": {"w.safetensors": {"sha256": "sha256:00", "size": 1,
                                                 "source": "read", "extra": True}}}}
    assert sorted(problems(bad, ProbedFacts, "facts")) == [
        "facts.code.script.sha256: required by ScriptFact, absent",
        "facts.code.surprise: not in CodeSection",
        "facts.model.files.w.safetensors.extra: not in ModelFile",
        "facts.probe.processes: str, not int",
    ]
