"""Collectors: one module per source of facts, each returning one manifest section.

Every collector runs under a hard timeout (`provenance.collectors.base.run_all`); a failure
or a timeout becomes `unavailable: <reason>` in the manifest, never a crashed snapshot.
"""
