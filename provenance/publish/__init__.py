"""Publishing results: bundles with an in-toto/SLSA statement in a DSSE envelope, and verify.

Public surface: `publish.bundle.publish`, `publish.verify.verify_bundle`,
`publish.verify_command.verify_bundle_command`; the rest is internal.
"""
