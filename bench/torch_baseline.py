"""PyTorch's baseline as npm run bench checks it before quoting a ratio (issue 21.1). Imported by
bench/torch_bench.py, bench/torch_gpt2.py and bench/torch_generate.py (run with Debian's /usr/bin/python3).

The bench's Node side (bench/baseline.mjs) starts each PyTorch process with OPENBLAS_NUM_THREADS and
BENCH_TORCH_THREADS set to the thread count asked for, and with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
removed for that process only, so OpenBLAS picks its kernel from the CPU. It then judges report()'s
figures against the native GEMM reference (bench/gemm_reference.cpp): a baseline below 60% of what
this machine's Eigen AVX-512 product reaches is reported as invalid, not as a ratio.
"""
import ctypes
import os
import time


def threads():
    """The thread count this process was asked to use (BENCH_TORCH_THREADS, default 1)."""
    try:
        return max(1, int(os.environ.get("BENCH_TORCH_THREADS", "1")))
    except ValueError:
        return 1


def loaded_blas():
    """The BLAS shared objects this process mapped, and OpenBLAS's own report (its core, config and threads)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                fields = line.split()
                name = os.path.basename(fields[-1]) if len(fields) >= 6 else ""
                if "blas" in name or "lapack" in name or "mkl" in name:
                    libs.add(os.path.realpath(fields[-1]))
    except OSError:
        pass
    info = {"blas": sorted(libs), "corename": None, "config": None, "openblas_threads": None}
    for lib in sorted(libs):
        try:
            so = ctypes.CDLL(lib)
            so.openblas_get_corename.restype = ctypes.c_char_p
            so.openblas_get_config.restype = ctypes.c_char_p
            info.update(corename=so.openblas_get_corename().decode(), config=so.openblas_get_config().decode(),
                        openblas_threads=so.openblas_get_num_threads())
            break
        except (OSError, AttributeError):
            continue
    return info


def gemm_gflops(torch, reps=5):
    """(1024 x 768) @ (768 x 768) torch.mm on this process's threads, best of reps, in GFLOP/s."""
    a, b = torch.randn(1024, 768), torch.randn(768, 768)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * 1024 * 768 * 768 / best / 1e9


def report(torch):
    """The set-up line's baseline fields: versions, threads, the BLAS and its core, the GEMM figure, warnings.

    Call it after torch.set_num_threads(threads()) so that the GEMM runs as the timed work will."""
    gflops = gemm_gflops(torch)
    blas = loaded_blas()
    warnings = []
    if not blas["corename"]:
        warnings.append("torch does not run on OpenBLAS (mapped: %s): install libopenblas0-pthread" % (", ".join(blas["blas"]) or "none"))
    want = str(threads())
    if os.environ.get("OPENBLAS_NUM_THREADS") != want:
        warnings.append(f"OPENBLAS_NUM_THREADS is {os.environ.get('OPENBLAS_NUM_THREADS')}, not {want}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(var):
            warnings.append(f"{var}={os.environ[var]} forces OpenBLAS's kernel choice")
    return {
        "ready": True, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"), "openblas_l2_size": os.environ.get("OPENBLAS_L2_SIZE"),
        **blas, "uses_openblas": bool(blas["corename"]), "gemm_gflops_1024x768x768": round(gflops, 2), "warnings": warnings,
    }
