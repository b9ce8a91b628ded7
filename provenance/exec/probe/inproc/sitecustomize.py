"""prov's in-process probe, started by Python's `site` module at interpreter start-up.

`prov exec` puts this file's directory first on PYTHONPATH. Here we:
1. start the probe (`_prov_probe.start`), never letting a failure reach the program;
2. take our directory back off `sys.path`, so the program sees the path it would have had
   (PYTHONPATH itself stays, so child interpreters get the probe too);
3. run the environment's own `sitecustomize`, if there is one further down `sys.path`, as
   `site` would have: under the name `sitecustomize`, its errors left to `site` to report
   exactly as it reports them without prov.
Python 3.8+, standard library only.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _start_probe():
    try:
        import _prov_probe

        _prov_probe.start()
    except Exception:  # the probe must never break the program; it records what it can
        pass


def _leave_sys_path():
    def ours(entry):
        try:
            return os.path.abspath(entry or os.curdir) == _HERE
        except Exception:
            return False

    sys.path[:] = [p for p in sys.path if not ours(p)]
    sys.path_importer_cache.pop(_HERE, None)


def _chain():
    """Run the next `sitecustomize` on sys.path (ours is gone from it by now)."""
    # the import system's own modules (always loaded): importing importlib.util would
    # load contextlib & co. into a program that may never have imported them
    bootstrap = sys.modules.get("_frozen_importlib")
    external = sys.modules.get("_frozen_importlib_external")
    if bootstrap is None or external is None:
        from importlib import _bootstrap as bootstrap
        from importlib import _bootstrap_external as external
    spec = external.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = bootstrap.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # errors propagate to `site`, which reports them


_start_probe()
_leave_sys_path()
_chain()
