"""A variable only one run read, set to the same value in both runs' environments.

`env.<NAME>` is a variable a run's processes read (exec/probe/envread.py). A code path
only one run takes reads variables the other never asks for: Triton's JIT, run by the
TRITON_ATTN backend alone, reads `CC`; the FLASH_ATTN run leaves it unread in the same
environment. That is no difference of the environments: the declared variable decides
which code runs, and that code's reads follow. So a key `env.<NAME>` (or a server's,
`server.env.<NAME>`) present on one side only is listed, not blocking, when both runs'
environments held NAME with one value: their `probe.command_env.<NAME>`
(`server.command_env.<NAME>`) digests are equal. Keyed by the store: two runs of two
stores, or a run without the digests, never match, and the key stays refused.
"""

from __future__ import annotations

from provenance.model import Manifest, join_key, split_key
from provenance.model.diff import Change

DIGESTS = {(): ("probe", "command_env"), ("server",): ("server", "command_env")}


def read_by_one_run(change: Change, a: Manifest, b: Manifest) -> bool:
    """An `env.<NAME>` key on one side only, NAME set alike in both runs' environments."""
    if change.change == "changed":
        return False
    key = tuple(split_key(change.key))
    prefix = key[:-2]
    if len(key) < 2 or key[-2] != "env" or prefix not in DIGESTS:
        return False
    digest = join_key((*DIGESTS[prefix], key[-1]))
    va, vb = a.get(digest), b.get(digest)
    return isinstance(va, str) and va == vb
