"""The in-process probe of `prov exec`: what a run's own Python processes resolved.

Two halves that never import each other:
- `inproc/` is the directory `prov exec` puts first on the command's PYTHONPATH. Its
  `sitecustomize` starts `_prov_probe` inside every Python process of the run (standard
  library only, Python 3.8+, imports nothing of prov), chains to the environment's own
  `sitecustomize`, and writes one JSON file per process into `$PROV_RUN_DIR/probe/`.
- `host` runs in prov: `environment()` is what the command's environment gets, `collect()`
  turns the per-process files into run facts (attributing libraries and checking imported
  files against RECORD on this side, to keep the in-process half cheap).
"""
