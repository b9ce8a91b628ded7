"""torch's sdpa under the probe: the kernel torch's dispatcher chose, and nothing changed."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)
from tests.provenance.exec.probe.probe_support import probe_files, run_plain, run_probed

# SDPA_CASE=math forces the math kernel the way a user would; the script reads it, so it is
# identity too (`env.SDPA_CASE`), declared below where the kernel alone is looked at
DIRECT = """
import os, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(1, 2, 8, 64, generator=g) for _ in range(3))
if os.environ.get("SDPA_CASE") == "math":
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
else:
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print(repr(float(out.sum())))
"""
SIG = "cpu/float32/head_dim:64/mask:no/causal:yes/dropout:no/gqa:no/allowed:"
ALL = "FLASH_ATTENTION+EFFICIENT_ATTENTION+CUDNN_ATTENTION+MATH"

# What ran, told by torch's profiler in a process without the probe: the independent oracle
PROFILED = DIRECT.replace("print(", "0 and print(") + """
from torch.profiler import profile
with profile() as prof:
    with sdpa_kernel(SDPBackend.MATH) if os.environ.get("SDPA_CASE") == "math" else open(os.devnull):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
names = {e.name for e in prof.events()}
print("FLASH_ATTENTION" if "aten::_scaled_dot_product_flash_attention_for_cpu" in names
      else "MATH" if "aten::_scaled_dot_product_attention_math" in names else sorted(names))
"""


def exec_run(penv, tmp_path, case):
    script = tmp_path / "sdpa.py"
    script.write_text(DIRECT)
    p = prov("exec", "-q", "--", PYTHON, str(script), env=dict(penv, SDPA_CASE=case))
    assert p.returncode == 0, p.stderr
    return last_run(penv)


def profiled_kernel(tmp_path, case):
    (tmp_path / "profiled.py").write_text(PROFILED)
    p = run_plain(tmp_path, str(tmp_path / "profiled.py"), SDPA_CASE=case)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().strip()


def test_the_kernel_recorded_is_the_one_torch_ran_and_forcing_math_is_refused(penv, tmp_path):
    a = exec_run(penv, tmp_path, "")
    b = exec_run(penv, tmp_path, "math")
    ka, kb = (r["facts"]["runtime"]["torch"]["sdpa_kernels"] for r in (a, b))
    assert ka == {SIG + ALL: profiled_kernel(tmp_path, "")}
    assert kb == {SIG + "MATH": profiled_kernel(tmp_path, "math")}
    assert kb[SIG + "MATH"] == "MATH" and ka[SIG + ALL] != "MATH"
    p = prov("compare", a["run_id"], b["run_id"], "--json", env=penv)
    refused = json.loads(p.stdout)["refused"]
    assert p.returncode == 3 and refused, refused
    assert set(refused) == {"env.SDPA_CASE"} | {"runtime.torch.sdpa_kernels." + SIG + x
                                                for x in (ALL, "MATH")}
    p = prov("compare", a["run_id"], b["run_id"], "--vary", "attention-backend", "--vary",
             "env.SDPA_CASE", "--json", env=penv)
    assert p.returncode == 0, json.loads(p.stdout)["refused"]


def test_show_lists_the_sdpa_kernel_in_the_engine_block(penv, tmp_path):
    rec = exec_run(penv, tmp_path, "math")
    text = prov("show", rec["run_id"], env=penv).stdout.decode()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "sdpa kernel MATH: " + SIG + "MATH" in lines


# keywords and positions, a mask, a second dtype; TorchScript, FX, a dispatch mode and
# torch.compile's tracer see what they see without the probe
TRACED = """
import torch, torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
g = torch.Generator().manual_seed(0)
q = torch.randn(1, 2, 4, 16, generator=g)
mask = torch.ones(4, 4, dtype=torch.bool).tril()
print(repr(float(F.scaled_dot_product_attention(query=q, key=q, value=q, attn_mask=mask).sum())))
print(repr(float(F.scaled_dot_product_attention(q.double(), q.double(), q.double(), None, 0.0, True).sum())))
class M(torch.nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x, is_causal=True)
print(torch.fx.symbolic_trace(M()).code)
print(torch.jit.script(M()).graph)
class Log(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        print("op", func)
        return func(*args, **(kwargs or {}))
with Log():
    F.scaled_dot_product_attention(q, q, q)
e = torch._dynamo.explain(lambda x: F.scaled_dot_product_attention(x * 2, x, x, is_causal=True))(q)
print("graphs", e.graph_count, "breaks", e.graph_break_count)  # the wrapper is traced through
"""


def test_output_tracing_and_dispatch_are_unchanged_and_both_calls_are_recorded(tmp_path):
    (tmp_path / "traced.py").write_text(TRACED)
    probed = run_probed(tmp_path, "traced.py", timeout=300)
    plain = run_plain(tmp_path, "traced.py", timeout=300)
    assert probed.returncode == plain.returncode == 0, probed.stderr
    assert (probed.stdout, probed.stderr) == (plain.stdout, plain.stderr)
    assert b"scaled_dot_product_attention" in plain.stdout  # FX and TorchScript saw the op
    assert plain.stdout.endswith(b"graphs 1 breaks 0\n")
    [doc] = probe_files(tmp_path)
    seen = {(e["dtype"], e["has_mask"], e["is_causal"]) for e in doc["torch"]["sdpa_kernels"]}
    # neither the call inside the dispatch mode (the mode would see the question) nor the
    # one being traced by dynamo is asked about
    assert seen == {("float32", True, False), ("float64", False, True)}
    assert doc["errors"] == []


def test_a_failure_in_recording_stays_inside_the_probe(tmp_path):
    (tmp_path / "sdpa.py").write_text(DIRECT)
    probed = run_probed(tmp_path, "sdpa.py", PROV_PROBE_FAULT="sdpa choice")
    plain = run_plain(tmp_path, "sdpa.py")
    assert (probed.returncode, probed.stdout, probed.stderr) == (0, plain.stdout, plain.stderr)
    [doc] = probe_files(tmp_path)
    assert doc["errors"] == ["sdpa kernel: RuntimeError: injected probe fault at sdpa choice"]
    assert "sdpa_kernels" not in doc["torch"]
