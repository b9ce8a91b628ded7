"""A config file a user's script reads is recorded by its values: the refusal names the
setting, and the preset of that setting declares it (probe/config_values.py)."""

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

SCRIPT = """
import json, sys
cfg = json.load(open(sys.argv[1]))
print(cfg["attention_backend"], cfg.get("max_tokens"))
"""


def run(penv, tmp_path, cfg_text):
    (tmp_path / "cfg.json").write_text(cfg_text)
    (tmp_path / "user.py").write_text(SCRIPT)
    p = prov("exec", "-q", "--", PYTHON, "user.py", "cfg.json", env=penv, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return last_run(penv)


def compare(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)


def test_a_setting_in_a_config_file_is_named_and_declared_by_its_preset(penv, tmp_path):
    a = run(penv, tmp_path, json.dumps({"attention_backend": "FLASH_ATTN", "max_tokens": 8}))
    assert a["facts"]["inputs"]["files"]["cfg.json"]["values"] == {
        "attention_backend": "FLASH_ATTN", "max_tokens": 8}
    assert a["facts"]["code"]["args"] == {"0": "<input>"}
    b = run(penv, tmp_path, json.dumps({"attention_backend": "TRITON_ATTN", "max_tokens": 8}))
    rc, doc = compare(penv, a, b)
    key = 'inputs.files."cfg.json".values.attention_backend'
    assert rc == 3 and list(doc["refused"]) == [key], doc["refused"]
    rc, doc = compare(penv, a, b, "attention-backend")
    assert rc == 0 and key in doc["varied"]["attention-backend"]["keys"], doc["refused"]
    # another setting is not the attention backend
    c = run(penv, tmp_path, json.dumps({"attention_backend": "FLASH_ATTN", "max_tokens": 9}))
    rc, doc = compare(penv, a, c, "attention-backend")
    assert rc == 3 and list(doc["refused"]) == ['inputs.files."cfg.json".values.max_tokens']


def test_a_config_file_rewritten_with_the_same_values_compares_clean(penv, tmp_path):
    a = run(penv, tmp_path, json.dumps({"attention_backend": "FLASH_ATTN"}))
    b = run(penv, tmp_path, json.dumps({"attention_backend": "FLASH_ATTN"}, indent=4) + "\n")
    rc, doc = compare(penv, a, b)
    assert rc == 0, doc["refused"]
