"""Engine adapters behind one interface: teacher-forced scoring of a token sequence."""

from runners.engines.base import EngineConfig, EngineError, ScoreOutput

__all__ = ["EngineConfig", "EngineError", "ScoreOutput", "load_engine"]


def load_engine(config: EngineConfig):
    """The adapter for config.engine; imports its heavy library only now."""
    if config.engine == "transformers":
        from runners.engines.transformers_engine import TransformersEngine

        return TransformersEngine(config)
    if config.engine == "vllm":
        from runners.engines.vllm_engine import VLLMEngine

        return VLLMEngine(config)
    raise EngineError(f"unknown engine {config.engine!r} (known: transformers, vllm)")
