"""Publishing results: bundles with an in-toto/SLSA statement in a DSSE envelope, their
verification (a directory, an archive or a `registry:` reference), the ed25519 keys that sign
them, and a model directory checked against a run or a model signature.

Public surface: `publish(...) -> Published`; `verify_bundle(target, key) -> Report` and
`verify_target(...)` (a bundle or a `registry:` reference), whose steps end `PASS`, `FAIL`,
`WARN` or `SKIP`; `read_receipt(path)`; `is_archive`, `write_tar_gz`; `parse_target`,
`subject_descriptor`, `push_bundle` (`prov publish --to registry:`); the modules `keys`
(`generate`, `load_private`, `load_public`, `key_id`) and `model_dir` (`from_run`,
`from_signature`, `compare`). Rendering the report is the CLI's
(`provenance/cli/verify_cmd.py`).
"""

from provenance.publish import keys, model_dir
from provenance.publish.archive import is_archive, write_tar_gz
from provenance.publish.bundle import Published, publish
from provenance.publish.receipts import read_receipt
from provenance.publish.registry import Target, parse_target, push_bundle, subject_descriptor
from provenance.publish.remote import verify_target
from provenance.publish.verify import FAIL, PASS, SKIP, WARN, Report, verify_bundle

__all__ = [
    "FAIL",
    "PASS",
    "SKIP",
    "WARN",
    "Published",
    "Report",
    "Target",
    "is_archive",
    "keys",
    "model_dir",
    "parse_target",
    "publish",
    "push_bundle",
    "read_receipt",
    "subject_descriptor",
    "verify_bundle",
    "verify_target",
    "write_tar_gz",
]
