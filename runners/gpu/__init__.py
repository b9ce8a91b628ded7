"""GPU analysis: a fused one-pass logit comparison, logits rebuilt from stored hidden states,
and on-device hidden-state digests.

torch and triton are imported inside the functions only (runners/ must stay light at CLI
start). `fused.analyse_fused` has a torch reference with the same interface
(bench/gpu/variants.py:analyse_torch), `digest.digest_triton` a host one
(`digest.digest_numpy`); tests compare them (CPU, TRITON_INTERPRET=1) and so does the bench.
"""
