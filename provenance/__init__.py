"""prov: provenance manager for LLM inference experiments.

Importing this package is cheap on purpose: no torch, vllm, docker or cyclonedx here.
"""

__version__ = "0.1.0"
