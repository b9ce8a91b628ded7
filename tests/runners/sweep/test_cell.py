"""A cell's private store (Ray nodes, `prov sweep --jobs`) redacts with the driver's key."""

from __future__ import annotations

import os
import stat

from provenance.model.redact import redact_record, store_key
from runners.sweep.cell import _private_store_key


def test_a_private_store_gives_a_secret_the_drivers_keyed_digest(tmp_path):
    """Two stores, two random keys, two digests of one secret: the gate then refused every
    cell whose facts held a redacted value (seen with --jobs on vLLM's tiktoken module)."""
    for d in ("driver", "other"):
        (tmp_path / d).mkdir()
    driver = store_key(tmp_path / "driver")
    _private_store_key(tmp_path / "cell", driver)
    assert store_key(tmp_path / "cell") == driver
    assert stat.S_IMODE(os.stat(tmp_path / "cell" / "redact.key").st_mode) == 0o600
    doc = {"facts": {"runtime": {"hf": {"api_key": "plain-k"}}}}
    assert redact_record(doc, store_key(tmp_path / "cell")) == redact_record(doc, driver)
    other = store_key(tmp_path / "other")
    assert redact_record(doc, other) != redact_record(doc, driver)  # the check can fail
