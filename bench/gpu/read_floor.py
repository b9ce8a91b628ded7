"""A Triton kernel with the fused analysis kernel's access pattern and no arithmetic to speak
of (one add per logit): bench_gpu_analysis.py times it to show how much of the fused
kernel's time is memory and how much is its per-logit instructions."""

import triton
import triton.language as tl


@triton.jit
def read_floor_kernel(r_ptr, c_ptr, out_ptr, V, stride_r, stride_c, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    acc = tl.zeros([BLOCK_V], tl.float32)
    for v0 in range(0, V, BLOCK_V):
        idx = v0 + offs
        msk = idx < V
        acc += tl.load(r_ptr + row * stride_r + idx, mask=msk, other=0).to(tl.float32)
        acc += tl.load(c_ptr + row * stride_c + idx, mask=msk, other=0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
