"""Readers that run inside another interpreter, where prov itself is not importable.

Each file here is standalone: standard library only, Python 3.8+, no import of prov or of
anything else of the project (tests/test_import_rules.py holds this directory to that), so
the same file is loaded in two places:
- the snapshot's subprocess of the target interpreter puts this directory first on its
  `sys.path` and imports the reader by its file name (`collectors/torch_probe.py`);
- `prov exec` names this directory to the in-process probe (`PROV_PROBE_READERS`, set by
  `exec/probe/host.py`), which adds it to its package path: the reader loads there as
  `_prov_probe.<name>` (`exec/probe/inproc/_prov_probe`).
Nothing else lives here: every file is importable by its bare name in those interpreters.
"""
