"""transformers: every model and tokenizer the program loads through `from_pretrained`.

When `transformers.modeling_utils` / `transformers.tokenization_utils_base` finish loading,
their base classes' `from_pretrained` classmethods are wrapped: the original runs with the
same arguments and its result is returned untouched; afterwards the probe notes the
model's class, `_attn_implementation` (what transformers resolved), dtype, device map,
quantization config, `name_or_path`, revision and commit, and the directory its files came
from (a local directory, or the snapshot in the Hugging Face cache). A model still alive at
exit is read again (`set_attn_implementation` may have changed it).

The attention the user's own call requested is read from that call's arguments before it
runs (`AutoModel*.from_pretrained` is wrapped too: it moves `attn_implementation` into the
config it hands on, and `output_attentions=True` there sets eager into that config).
Python 3.8+, standard library only.
"""

import _thread
import os
import sys
import weakref

MODELS = "transformers.modeling_utils"
_REQUESTED = "prov: attn_implementation requested"  # kept beside the call's kwargs
TOKENIZERS = "transformers.tokenization_utils_base"
AUTO = "transformers.models.auto.auto_factory"


def _text(value):
    if value is None:
        return "none"
    text = str(value)
    return text[len("torch."):] if text.startswith("torch.") else text


def _source_dir(name_or_path, commit):
    """Where the files were read from: the local directory, or the hub cache snapshot."""
    if isinstance(name_or_path, str) and os.path.isdir(name_or_path):
        return os.path.abspath(name_or_path)
    constants = sys.modules.get("huggingface_hub.constants")
    cache = getattr(constants, "HF_HUB_CACHE", None)
    if isinstance(name_or_path, str) and commit and cache:
        path = os.path.join(cache, "models--" + name_or_path.replace("/", "--"), "snapshots",
                            commit)
        return path if os.path.isdir(path) else None
    return None


def _quantization(config):
    q = getattr(config, "quantization_config", None)
    if q is None:
        return "none"
    to_dict = getattr(q, "to_dict", None)
    q = to_dict() if callable(to_dict) else q
    if isinstance(q, dict):
        return ",".join("%s=%s" % (k, q[k]) for k in sorted(q) if not isinstance(q[k], dict))
    return str(q)


def requested_attention(kwargs):
    """What the load call asked for: `attn_implementation=`, else the `config=` object's own
    setting, else "default" (transformers then picks: sdpa where the class supports it, eager
    where it does not or where `output_attentions=True` was given first)."""
    asked = kwargs.get("attn_implementation")
    config = kwargs.get("config")
    if asked is None and config is not None and not isinstance(config, (str, os.PathLike)):
        asked = getattr(config, "_attn_implementation_internal", None)
    return "default" if asked is None else _text(asked)


def model_facts(model, kwargs):
    config = getattr(model, "config", None)
    name = getattr(config, "_name_or_path", None) or getattr(model, "name_or_path", None)
    commit = getattr(config, "_commit_hash", None)
    return {
        "class": type(model).__name__,
        "attn_implementation": _text(getattr(config, "_attn_implementation", None)),
        "attn_implementation_requested": kwargs.get(_REQUESTED, "default"),
        "dtype": _text(getattr(model, "dtype", None)),
        "device_map": _text(getattr(model, "hf_device_map", None)),
        "quantization": _quantization(config),
        "name_or_path": _text(name),
        "revision": _text(kwargs.get("revision", "main")),
        "commit": _text(commit),
        "dir": _source_dir(name, commit),
    }


def tokenizer_facts(tokenizer, kwargs):
    name = getattr(tokenizer, "name_or_path", None)
    init = getattr(tokenizer, "init_kwargs", None) or {}
    commit = init.get("_commit_hash") if isinstance(init, dict) else None
    template = getattr(tokenizer, "chat_template", None)
    return {
        "class": type(tokenizer).__name__,
        "name_or_path": _text(name),
        "revision": _text(kwargs.get("revision", "main")),
        "dir": _source_dir(name, commit),
        # the text travels to prov, which hashes it (hashlib is not imported here)
        "chat_template": template if isinstance(template, str) else None,
    }


class Watcher:
    """Wraps `from_pretrained` and keeps what each call loaded, in load order."""

    def __init__(self, probe):
        self.probe = probe
        self.models = []  # (facts, weakref or None)
        self.tokenizers = []
        self.local = _thread._local()  # per thread: what the user's own call asked for

    def on_module(self, name, module):
        if name == MODELS:
            self._wrap(module.PreTrainedModel, self.models, model_facts)
        elif name == TOKENIZERS:
            self._wrap(module.PreTrainedTokenizerBase, self.tokenizers, tokenizer_facts)
        elif name == AUTO:  # AutoModel*.from_pretrained moves `attn_implementation` into
            self._wrap(module._BaseAutoModelClass, None, None)  # the config it passes on

    def _wrap(self, cls, into, read):
        import functools  # loaded already by the library it wraps
        original = cls.__dict__["from_pretrained"].__func__
        watcher, local = self, self.local

        def from_pretrained(klass, *args, **kwargs):
            outer = getattr(local, "asked", None) is None
            if outer:  # the user's own call, read before transformers adjusts anything
                local.asked = watcher.probe.guarded(
                    "transformers requested", requested_attention, kwargs) or "unavailable"
            asked = local.asked
            try:
                loaded = original(klass, *args, **kwargs)
            finally:
                if outer:
                    local.asked = None
            if into is not None:
                noted = dict(kwargs)
                noted[_REQUESTED] = asked
                watcher.probe.guarded("transformers " + read.__name__, watcher._note, into,
                                      read, loaded, noted)
            return loaded

        functools.update_wrapper(from_pretrained, original, updated=())
        cls.from_pretrained = classmethod(from_pretrained)

    def _note(self, into, read, loaded, kwargs):
        try:
            ref = weakref.ref(loaded)
        except TypeError:
            ref = None
        into.append((read(loaded, kwargs), ref, kwargs))
        self.probe.record.facts["transformers"] = self.facts()
        self.probe.save("transformers load")

    def facts(self):
        """At exit: models re-read where still alive."""
        models = []
        for facts, ref, kwargs in self.models:
            alive = ref() if ref is not None else None
            models.append(model_facts(alive, kwargs) if alive is not None else facts)
        return {"models": models, "tokenizers": [f for f, _, _ in self.tokenizers]}
