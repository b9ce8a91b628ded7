"""One selftest run through the Python API instead of the CLI:
`python -m provenance.selftest.api_run JSON` calls `run_supervised(argv, env_extra=...)`
as the runners do, so variables given only to the command are tested too."""

from __future__ import annotations

import json
import sys


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv or sys.argv[1:])[0])
    from provenance.exec import run_supervised

    res = run_supervised(spec["argv"], name=spec["name"], tags={"selftest": "identity"},
                         outputs=spec["outputs"], env_extra=spec["env_extra"], stream=False)
    return res.exit_status


if __name__ == "__main__":
    sys.exit(main())
