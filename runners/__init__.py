"""Runners: the exec supervisor, repeatability and divergence runs, engine adapters, their
analysis and results.

Importing this package is cheap: torch, transformers and vLLM are imported only inside the
engine adapters, in the worker process that runs them.
"""
