"""A tiny model the project builds itself: generated text, a byte-level BPE, a Qwen3-shaped net."""
