"""Which kernel torch's dispatcher chose for `scaled_dot_product_attention`, per signature.

When torch has been imported, `torch.nn.functional.scaled_dot_product_attention` is
replaced by a thin wrapper: it calls the original with exactly the arguments it was given
and returns its result (or lets its exception through) untouched. The first time a
signature (device type, dtype, head dim, has a mask, is_causal, dropout > 0, enable_gqa,
the backends allowed right then) is seen, and only after the original returned, the
wrapper asks torch's own chooser, `torch._fused_sdp_choice`, which of
`torch.nn.attention.SDPBackend` it picks for those arguments; afterwards a call costs one
set lookup. torch's sdpa runs the same chooser (with its debug messages off) to pick the
kernel it then runs, so the answer is the kernel that ran.

The chooser is not asked, and the signature not marked seen, where asking could show in
the program: under torch.compile's tracing, with tensors that are not plain
`torch.Tensor` (fake, functional, proxy, subclass), inside a `TorchDispatchMode` (it
would see one more op), or while a CUDA graph is being captured. TorchScript keeps
resolving the name to the aten op: the wrapper is entered in its builtin table. Any
failure is noted in the probe's errors and never reaches the program. Standard library
only, Python 3.8+.
"""

import sys

_ALLOWED = (("FLASH_ATTENTION", "flash_sdp_enabled", "_get_flash_sdp_enabled"),
            ("EFFICIENT_ATTENTION", "mem_efficient_sdp_enabled",
             "_get_mem_efficient_sdp_enabled"),
            ("CUDNN_ATTENTION", "cudnn_sdp_enabled", "_get_cudnn_sdp_enabled"),
            ("MATH", "math_sdp_enabled", "_get_math_sdp_enabled"))


def _allowed_getters(torch):
    """The getters of the backends a call may use (`sdpa_kernel` sets them): torch._C's
    own where it has them (what `torch.backends.cuda.*_sdp_enabled` return; one call less
    on every sdpa call), else the public ones."""
    return tuple(getattr(torch._C, c, None) or getattr(torch.backends.cuda, public)
                 for _, public, c in _ALLOWED)


def _observable(torch):
    """True where asking the chooser could show in the program (see the module doc)."""
    dispatch = sys.modules.get("torch.utils._python_dispatch")
    in_mode = getattr(dispatch, "is_in_torch_dispatch_mode", None)
    if in_mode is not None and in_mode():
        return True
    stack = getattr(torch._C, "_len_torch_dispatch_stack", None)
    if in_mode is None and (stack is None or stack() > 0):
        return True
    cuda = torch.cuda
    return cuda.is_initialized() and cuda.is_current_stream_capturing()


class SdpaWatcher:
    def __init__(self, probe, torch):
        self.probe = probe
        self.torch = torch
        self.seen = set()
        self.kernels = []  # one dict per signature, in the order first seen
        self.allowed = _allowed_getters(torch)
        self.plain = torch.Tensor

    def install(self):
        torch = self.torch
        functional = torch.nn.functional
        original = functional.scaled_dot_product_attention
        if getattr(original, "_prov_probe_original", None) is not None:
            return  # already ours (torch imported twice under one probe)
        wrapper = self._wrapper(original, torch.compiler.is_compiling)
        functional.scaled_dot_product_attention = wrapper
        self._tell_torchscript(original, wrapper)

    def _wrapper(self, original, is_compiling):
        import functools  # loaded already by the library it wraps
        watcher = self

        def scaled_dot_product_attention(*args, **kwargs):
            if is_compiling():
                return original(*args, **kwargs)
            out = original(*args, **kwargs)
            try:
                watcher.observe(args, kwargs)
            except Exception as exc:  # a failure in recording never reaches the program
                watcher.failed(exc)
            return out

        functools.update_wrapper(scaled_dot_product_attention, original, updated=())
        scaled_dot_product_attention._prov_probe_original = original
        return scaled_dot_product_attention

    def _tell_torchscript(self, original, wrapper):
        builtins = sys.modules.get("torch.jit._builtins")
        table = getattr(builtins, "_builtin_table", None)
        if isinstance(table, dict) and id(original) in table:
            table[id(wrapper)] = table[id(original)]
        elif builtins is not None and isinstance(getattr(builtins, "_builtin_ops", None), list):
            builtins._builtin_ops.append((wrapper, "aten::scaled_dot_product_attention"))

    def observe(self, args, kwargs):
        """Called after every sdpa call: kept cheap (no helper calls until a new signature)."""
        n, plain = len(args), self.plain
        if n >= 3 and not kwargs:  # the common form: positions only
            q, k, v = args[0], args[1], args[2]
            mask = args[3] if n > 3 else None
        else:
            q = args[0] if n > 0 else kwargs.get("query")
            k = args[1] if n > 1 else kwargs.get("key")
            v = args[2] if n > 2 else kwargs.get("value")
            mask = args[3] if n > 3 else kwargs.get("attn_mask")
        if type(q) is not plain or type(k) is not plain or type(v) is not plain or (
                mask is not None and type(mask) is not plain):
            return  # nothing of a traced or subclassed tensor is touched (FX would record it)
        dropout = float(args[4] if n > 4 else kwargs.get("dropout_p", 0.0))
        causal = bool(args[5] if n > 5 else kwargs.get("is_causal", False))
        gqa = bool(kwargs.get("enable_gqa", False))
        flash, efficient, cudnn, math = self.allowed
        signature = (q.device.type, q.dtype, q.shape[-1], mask is not None, causal,
                     dropout > 0, gqa, (flash(), efficient(), cudnn(), math()))
        torch = self.torch
        if signature in self.seen or _observable(torch):
            return  # not marked seen when observable: a later plain call is asked
        self.seen.add(signature)
        from . import _fault

        _fault("sdpa choice")  # the probe's own tests: a recording failure stays inside
        with torch._C.DisableTorchFunction():  # a TorchFunctionMode must not see the question
            choice = torch._fused_sdp_choice(q, k, v, mask, dropout, causal,
                                             scale=kwargs.get("scale"), enable_gqa=gqa)
        self.kernels.append(self._entry(signature, choice))
        self.probe.record.facts.setdefault("torch", {})["sdpa_kernels"] = list(self.kernels)

    def _entry(self, signature, choice):
        device, dtype, head_dim, has_mask, causal, dropout, gqa, flags = signature
        allowed = "+".join(row[0] for i, row in enumerate(_ALLOWED) if flags[i])
        name = str(dtype)
        backend = self.torch.nn.attention.SDPBackend
        kernel = next((b for b, m in backend.__members__.items() if int(m) == int(choice)),
                      "index %s" % choice)
        return {"device": device, "dtype": name[6:] if name.startswith("torch.") else name,
                "head_dim": int(head_dim), "has_mask": has_mask, "is_causal": causal,
                "dropout": dropout, "enable_gqa": gqa, "allowed": allowed, "kernel": kernel}

    def failed(self, exc):
        if not getattr(self, "_noted", False):
            self._noted = True  # once: the same failure would repeat on every call
            self.probe.record.error("sdpa kernel", exc)
