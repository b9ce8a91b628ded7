"""Child-process check for test_hidden_states.py: logits rebuilt from hidden states in chunks
and analysed by the fused Triton kernel (TRITON_INTERPRET=1 on CPU) against the same chunks
analysed by the host's float64 numpy code; prints one JSON document. Run as a script (torch
stays out of the pytest process)."""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from runners.gpu.rebuild import analyse_hidden


def main() -> None:
    g = torch.Generator().manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    n, h, v, chunk = 50, 32, 700, 16  # 4 chunks, the last partial
    ref_h = torch.randn(n, h, generator=g).to(torch.bfloat16)
    cand_h = (ref_h.float() + 0.05 * torch.randn(n, h, generator=g)).to(torch.bfloat16)
    cand_h[3] = ref_h[3]  # one identical row
    head = (torch.randn(v, h, generator=g) * 0.5).to(torch.bfloat16)
    nxt = torch.randint(0, v, (n,), generator=g).numpy()
    rows = np.array([0, 17, 49])
    engine = {"ref": (ref_h[rows] @ head.T).float().numpy(),
              "cand": (cand_h[rows] @ head.T).float().numpy()}
    samples = {side: (rows, engine[side]) for side in engine}
    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        fused = analyse_hidden(ref_h, cand_h, head, nxt, Path(tmp) / "f", samples,
                               chunk_rows=chunk, fused=True)
        host = analyse_hidden(ref_h, cand_h, head, nxt, Path(tmp) / "h", samples,
                              chunk_rows=chunk, fused=False)
        report["files"] = sorted(p.name for p in (Path(tmp) / "f").iterdir())
        report["rows_on_disk"] = int(np.load(Path(tmp) / "f" / "kl_ref_cand.npy").shape[0])
        report["top1_equal"] = bool(all(np.array_equal(fused.arrays[k], host.arrays[k])
                                        for k in ("ref_top1", "cand_top1")))
        report["max_abs_diff"] = {k: float(np.abs(fused.arrays[k] - host.arrays[k]).max())
                                  for k in ("kl_ref_cand", "kl_cand_ref", "delta_p", "margin")}
        report["identical_row_kl"] = [float(fused.arrays["kl_ref_cand"][3]),
                                      float(fused.arrays["kl_cand_ref"][3])]
        report["host_kl_mean"] = float(np.mean(host.arrays["kl_ref_cand"]))
        report["floor"] = fused.floor
        report["chunk_rows"] = fused.chunk_rows
        # the whole matrix at once, analysed by the host: chunking changes nothing
        lr, lc = (ref_h @ head.T).float().numpy(), (cand_h @ head.T).float().numpy()
        from runners.analysis import position_stats

        st = position_stats(lr, lc, nxt)
        report["chunked_equals_whole"] = bool(
            np.array_equal(st.kl_ref_cand, host.arrays["kl_ref_cand"])
            and np.array_equal(st.ref_top1, host.arrays["ref_top1"]))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
