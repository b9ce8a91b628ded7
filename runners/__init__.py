"""Runners: repeatability, divergence, replay and invariance runs, sweeps, the engine adapters
(transformers, vLLM) and the workers that run them, their analysis and results. Every engine
run is a program under `prov exec`'s supervisor (`provenance/exec/`); `runners/api.py` is
the CLI's one door in.

Importing this package is cheap: torch, transformers and vLLM are imported only inside the
engine adapters, in the worker process that runs them.
"""
