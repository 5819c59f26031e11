// PyTorch's baseline, checked before any ratio to it is printed (npm run bench, issue 21.1).
//
// A ratio to PyTorch means something only if PyTorch ran on a healthy BLAS: OpenBLAS with its kernel
// chosen from the CPU, at the thread count the row says. So every PyTorch process the bench starts
// gets torchEnv(threads): OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / BENCH_TORCH_THREADS set, and
// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed for that process only. Its set-up line
// (bench/torch_baseline.py) reports the mapped BLAS, openblas_get_corename() and its single-thread
// (1024 x 768) @ (768 x 768) torch.mm GFLOP/s, and judgeBaseline() compares that with this machine's
// own native GEMM (bench/gemm_reference.cpp: Eigen at -march=native, one thread).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** A baseline below this fraction of the native GEMM's GFLOP/s is invalid (the issue's ~60%). */
export const MIN_FRACTION_OF_NATIVE = 0.6;

/** Environment variables that force OpenBLAS's kernel or cache model: removed for PyTorch's processes. */
export const FORCING_VARS = ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"];

/**
 * The environment of a PyTorch process on `threads` threads: `base` (default process.env) without
 * FORCING_VARS, with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and BENCH_TORCH_THREADS set to `threads`.
 */
export function torchEnv(threads = 1, base = process.env) {
  const env = { ...base, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads), BENCH_TORCH_THREADS: String(threads) };
  for (const v of FORCING_VARS) delete env[v];
  return env;
}

/**
 * This machine's native single-thread GEMM, {gflops, simd, samples_ms} from
 * build/native/attention_lab_gemm_reference, or {error} when it is not built or fails.
 */
export function nativeGemm(reps = 10) {
  return bestOf([measureNativeGemm(reps)]);
}

/**
 * The best of several nativeGemm() measurements (taken at different moments of a run, e.g. just after
 * each PyTorch process measured its torch.mm), so that one measurement on a busy moment does not
 * make a healthy baseline look fast: {gflops, simd, measurements: [gflops...]} or {error}.
 */
export function bestOf(measurements) {
  const ok = measurements.filter((m) => m?.gflops > 0);
  if (!ok.length) return measurements.find((m) => m?.error) ?? { error: "no measurement" };
  const best = ok.reduce((a, b) => (b.gflops > a.gflops ? b : a));
  return { ...best, measurements: ok.map((m) => m.gflops) };
}

/** One run of build/native/attention_lab_gemm_reference: its JSON line, or {error}. */
export function measureNativeGemm(reps = 10) {
  const exe = path.join(ROOT, "build/native/attention_lab_gemm_reference");
  if (!existsSync(exe)) return { error: `${path.relative(ROOT, exe)} is not built (cmake --build --preset native --target attention_lab_gemm_reference)` };
  try {
    return JSON.parse(execFileSync(exe, ["--reps", String(reps)], { encoding: "utf8", timeout: 120_000 }));
  } catch (e) {
    return { error: `${path.relative(ROOT, exe)} failed: ${e?.message ?? e}` };
  }
}

/**
 * Whether a PyTorch set-up line is a baseline a ratio may be quoted against.
 * @param {object} torch   the set-up line of bench/torch_baseline.py's report() ({ready, corename, threads,
 *                         openblas_coretype, openblas_l2_size, gemm_gflops_1024x768x768, ...})
 * @param {object} native  nativeGemm()'s result ({gflops} or {error})
 * @param {number} threads the thread count the row claims
 * @returns {{valid: boolean, fraction: number|null, reasons: string[]}} fraction: torch.mm GFLOP/s over
 *   the native GEMM's, per thread (a two-thread PyTorch is compared with twice the one-thread reference)
 */
export function judgeBaseline(torch, native, threads = 1) {
  const reasons = [];
  if (!torch?.ready) return { valid: false, fraction: null, reasons: [`PyTorch did not start: ${torch?.error ?? "no set-up line"}`] };
  if (!torch.corename) reasons.push(`not OpenBLAS (mapped: ${(torch.blas ?? []).join(", ") || "none"})`);
  if (torch.threads !== threads) reasons.push(`ran on ${torch.threads} thread(s), not ${threads}`);
  for (const v of FORCING_VARS) if (torch[v.toLowerCase()]) reasons.push(`${v}=${torch[v.toLowerCase()]} was set`);
  let fraction = null;
  if (!(native?.gflops > 0)) reasons.push(`no native GEMM reference to judge it by (${native?.error ?? "no figure"})`);
  else {
    fraction = torch.gemm_gflops_1024x768x768 / (native.gflops * threads);
    if (!(fraction >= MIN_FRACTION_OF_NATIVE)) {
      reasons.push(`torch.mm at ${torch.gemm_gflops_1024x768x768} GFLOP/s is ${(100 * fraction).toFixed(0)}% of the native GEMM's ${(native.gflops * threads).toFixed(1)} (below ${100 * MIN_FRACTION_OF_NATIVE}%): a degraded BLAS kernel or a busy machine`);
    }
  }
  return { valid: reasons.length === 0, fraction, reasons };
}

/** One line for the bench's output: the baseline and its verdict. */
export function baselineLine(torch, native, verdict) {
  if (!torch?.ready) return `PyTorch: n/a (${torch?.error ?? "not started"})`;
  const blas = (torch.blas ?? []).map((b) => path.basename(b)).join(", ");
  const head = `PyTorch ${torch.torch}, ${torch.threads} thread(s), OpenBLAS core ${torch.corename ?? "NONE"} (${blas}), torch.mm 1024x768 @ 768x768 ${torch.gemm_gflops_1024x768x768} GFLOP/s`;
  const ref = native?.gflops ? `; native Eigen GEMM ${native.gflops} GFLOP/s per thread (${native.simd})` : "";
  return `${head}${ref}: ${verdict.valid ? `valid baseline (${(100 * verdict.fraction).toFixed(0)}% of native)` : `INVALID BASELINE, no ratio quoted: ${verdict.reasons.join("; ")}`}`;
}
