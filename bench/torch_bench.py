#!/usr/bin/python3
"""PyTorch reference for npm run bench (run with Debian's /usr/bin/python3 and python3-torch).

torch.nn.MultiheadAttention(768, 12, batch_first=True, bias=True) in eval mode, causal boolean mask,
need_weights=False, under torch.no_grad(), on one thread (OPENBLAS_NUM_THREADS=1 and
torch.set_num_threads(1)). bench/run.mjs starts it once and talks to it one line at a time so that
the engines interleave:
    "T reps"            -> {"T": T, "samples_ms": [...]}   (one warm-up forward first)
    "check T out.f32"   -> {"T": T, "max_abs_diff": ..., "max_abs_ref": ...}  against our output
    "quit"
With --weights FILE the module holds the same parameters as ours (raw float32, in this order:
W_query.weight, W_key.weight, W_value.weight (768 x 768 each, (out, in)), out_proj.weight, out_proj.bias;
in_proj_bias is zero because ours has qkv_bias=False); with --inputs DIR it reads DIR/x_T.f32 as the
(1, T, 768) input. The first line it prints describes the set-up (versions, BLAS, a GEMM check).
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    import torch
except Exception as e:  # noqa: BLE001 - report any import problem as data
    print(json.dumps({"ready": False, "error": f"import torch failed: {e}"}), flush=True)
    sys.exit(0)

D, H = 768, 12


def loaded_blas():
    """Which BLAS/LAPACK shared objects this process has mapped (after a matmul ran)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path)
                if "blas" in name or "lapack" in name or "mkl" in name:
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def gemm_gflops():
    """Single-thread (1024 x 768) @ (768 x 768) GFLOP/s: OpenBLAS gives tens, the reference BLAS ~1-2."""
    a = torch.randn(1024, 768)
    b = torch.randn(768, 768)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * 1024 * 768 * 768 / best / 1e9


def main():
    args = sys.argv[1:]
    weights = args[args.index("--weights") + 1] if "--weights" in args else None
    inputs = args[args.index("--inputs") + 1] if "--inputs" in args else None
    torch.set_num_threads(1)
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
    gflops = gemm_gflops()
    blas = loaded_blas()
    config = torch.__config__.show()
    uses_openblas = any("openblas" in b.lower() for b in blas)
    warnings = []
    if not uses_openblas:
        warnings.append("torch does not use OpenBLAS (mapped BLAS: %s): install libopenblas0-pthread; its numbers will be ~20x too slow" % (", ".join(blas) or "none found"))
    if gflops < 5:
        warnings.append(f"single-thread sgemm runs at {gflops:.1f} GFLOP/s: looks like the reference BLAS")
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        warnings.append("OPENBLAS_NUM_THREADS is not 1: PyTorch may use several threads")
    print(json.dumps({
        "ready": True, "torch": torch.__version__, "blas": blas, "uses_openblas": uses_openblas,
        "gemm_gflops_1024x768x768": round(gflops, 2), "threads": torch.get_num_threads(),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "build_blas_info": sorted(set(re.findall(r"\b(?:BLAS_INFO|LAPACK_INFO)=[^,\s]+", config))),
        "warnings": warnings,
    }), flush=True)

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
