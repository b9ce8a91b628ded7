"""The directory `prov exec` puts first on PYTHONPATH (see `sitecustomize.py`).

Only two top-level names live here, `sitecustomize` and `_prov_probe`; nothing in this
directory imports `provenance`, so it works in any interpreter of Python 3.8 or later.
"""
