"""GPU analysis: a fused one-pass logit comparison and on-device hidden-state digests.

torch and triton are imported inside the functions only (runners/ must stay light at CLI
start). Every kernel has a reference implementation with the same interface:
`stats.analyse_torch` for `stats.analyse_fused`, `digest.digest_numpy` for
`digest.digest_triton`; tests compare them (CPU, TRITON_INTERPRET=1) and so does the bench.
"""
