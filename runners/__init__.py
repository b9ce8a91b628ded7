"""Runners: the exec supervisor, repeatability and divergence runners, engine adapters.

torch and vLLM are imported lazily, inside the functions that need them, never here.
"""
