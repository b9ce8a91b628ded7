"""Publishing results: bundles with an in-toto/SLSA statement in a DSSE envelope, and verify.

Public surface: `publish.bundle.publish`, `publish.verify.verify_bundle`,
`publish.remote.verify_target` (a bundle or a `registry:` reference); the rest is
internal. Rendering the report is the CLI's (`provenance/cli/verify_cmd.py`).
"""
