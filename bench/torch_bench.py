#!/usr/bin/python3
"""PyTorch reference for npm run bench (run with Debian's /usr/bin/python3 and python3-torch).

torch.nn.MultiheadAttention(768, 12, batch_first=True, bias=True) in eval mode, causal boolean mask,
need_weights=False, under torch.no_grad(), on BENCH_TORCH_THREADS threads (default 1; OPENBLAS_NUM_THREADS
and torch.set_num_threads set to it by bench/baseline.mjs's torchEnv). bench/run.mjs starts it once and talks to it one line at a time so that
the engines interleave:
    "T reps"            -> {"T": T, "samples_ms": [...]}   (one warm-up forward first)
    "check T out.f32"   -> {"T": T, "max_abs_diff": ..., "max_abs_ref": ...}  against our output
    "quit"
With --weights FILE the module holds the same parameters as ours (raw float32, in this order:
W_query.weight, W_key.weight, W_value.weight (768 x 768 each, (out, in)), out_proj.weight, out_proj.bias;
in_proj_bias is zero because ours has qkv_bias=False); with --inputs DIR it reads DIR/x_T.f32 as the
(1, T, 768) input. The first line it prints describes the set-up (versions, BLAS, a GEMM check:
bench/torch_baseline.py's report(), judged by bench/baseline.mjs).
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_baseline import report, threads  # noqa: E402

try:
    import torch
except Exception as e:  # noqa: BLE001 - report any import problem as data
    print(json.dumps({"ready": False, "error": f"import torch failed: {e}"}), flush=True)
    sys.exit(0)

D, H = 768, 12


def main():
    args = sys.argv[1:]
    weights = args[args.index("--weights") + 1] if "--weights" in args else None
    inputs = args[args.index("--inputs") + 1] if "--inputs" in args else None
    torch.set_num_threads(threads())
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True, bias=True).eval()
    if weights:
        import numpy as np
        w = np.fromfile(weights, dtype=np.float32)
        n = D * D
        assert w.size == 4 * n + D, f"{weights}: {w.size} floats, expected {4 * n + D}"
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.from_numpy(w[: 3 * n].reshape(3 * D, D)))
            mha.in_proj_bias.zero_()
            mha.out_proj.weight.copy_(torch.from_numpy(w[3 * n: 4 * n].reshape(D, D)))
            mha.out_proj.bias.copy_(torch.from_numpy(w[4 * n:]))

    def x_for(T):
        path = os.path.join(inputs, f"x_{T}.f32") if inputs else None
        if path and os.path.exists(path):
            import numpy as np
            return torch.from_numpy(np.fromfile(path, dtype=np.float32).reshape(1, T, D))
        return torch.randn(1, T, D)

    masks = {}

    def mask_for(T):
        if T not in masks:
            masks[T] = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        return masks[T]

    xs = {}
    ready = report(torch)
    ready["build_blas_info"] = sorted(set(re.findall(r"\b(?:BLAS_INFO|LAPACK_INFO)=[^,\s]+", torch.__config__.show())))
    print(json.dumps(ready), flush=True)

    with torch.no_grad():
        for line in sys.stdin:
            parts = line.split()
            if not parts or parts[0] == "quit":
                break
            try:
                if parts[0] == "check":
                    import numpy as np
                    T = int(parts[1])
                    x = xs.setdefault(T, x_for(T))
                    out, _ = mha(x, x, x, attn_mask=mask_for(T), need_weights=False)
                    ref = torch.from_numpy(np.fromfile(parts[2], dtype=np.float32).reshape(1, T, D))
                    print(json.dumps({"T": T, "max_abs_diff": float((out - ref).abs().max()), "max_abs_ref": float(ref.abs().max())}), flush=True)
                    continue
                T, reps = int(parts[0]), int(parts[1])
                x = xs.setdefault(T, x_for(T))
                mask = mask_for(T)
                mha(x, x, x, attn_mask=mask, need_weights=False)  # warm-up
                samples = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    mha(x, x, x, attn_mask=mask, need_weights=False)
                    samples.append((time.perf_counter() - t0) * 1000)
                print(json.dumps({"T": T, "samples_ms": samples}), flush=True)
            except Exception as e:  # noqa: BLE001
                print(json.dumps({"error": str(e)}), flush=True)


if __name__ == "__main__":
    main()
