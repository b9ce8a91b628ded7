"""Leak census: `python -m tests.hostile.leaks CHECKOUT OUT.json` plants every secret in one
run made by CHECKOUT's prov and counts, per surface, the secrets that reach it."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.hostile import test_secret_surfaces as t


def main() -> None:
    checkout = Path(sys.argv[1]).resolve()
    os.environ["PYTHONPATH"] = str(checkout)
    t.ALLOW_FAILURES = True
    with tempfile.TemporaryDirectory(prefix="prov-leaks-") as tmp:
        root, texts, secrets = t.plant_and_read(Path(tmp))
        printed = t.printed_leaks(texts, secrets)
        stored = t.stored_leaks(root, secrets)

    def surface(path: str) -> str:
        for key in ("store/objects", "store/runs", "store/index", "cache", "b.tar.gz", "b/"):
            if key in path:
                return key
        return path

    per_surface = Counter(s for s, _ in printed)
    per_surface.update(Counter(surface(p) for p, _ in set(stored)))
    leaked = {label for _, label in printed} | {label for _, label in stored}
    doc = {"checkout": str(checkout), "planted": len(secrets), "leaked": len(leaked),
           "per_surface": dict(sorted(per_surface.items())),
           "leaked_shapes": sorted(leaked)}
    print(json.dumps(doc, indent=1))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
