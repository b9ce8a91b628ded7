"""A transformers forward on CUDA with attn_implementation="sdpa", for `prov exec` (#17).

    python bench/gpu/sdpa_workload.py MODEL_DIR OUT.json

The ground truth of which SDPA kernel ran: the first call of
torch.nn.functional.scaled_dot_product_attention is intercepted and torch's own dispatcher,
torch._fused_sdp_choice, is asked with that call's exact arguments; the answer and the
tensors' shapes and dtypes go to OUT.json. The call itself is passed through unchanged.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend
    from transformers import AutoModelForCausalLM

    seen: dict = {}
    original = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False):
        if not seen:
            choice = torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal,
                                             scale=scale, enable_gqa=enable_gqa)
            seen.update({"kernel": SDPBackend(choice).name, "q": list(q.shape),
                         "k": list(k.shape), "dtype": str(q.dtype), "is_causal": is_causal,
                         "mask": attn_mask is not None, "enable_gqa": enable_gqa})
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    F.scaled_dot_product_attention = spy
    torch.nn.functional.scaled_dot_product_attention = spy
    model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16,
                                                 attn_implementation="sdpa").to("cuda")
    ids = torch.arange(1, 1025, device="cuda").unsqueeze(0) % model.config.vocab_size
    with torch.no_grad():
        logits = model(ids).logits
    seen["logits_sum"] = float(logits.float().sum())
    seen["attn_implementation"] = model.config._attn_implementation
    with open(sys.argv[2], "w") as fh:
        json.dump(seen, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
