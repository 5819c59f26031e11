// bench/baseline.mjs: the rule that decides whether npm run bench may quote a ratio to PyTorch (issue 21.1).
import assert from "node:assert/strict";
import { test } from "node:test";
import { FORCING_VARS, MIN_FRACTION_OF_NATIVE, judgeBaseline, torchEnv } from "../../bench/baseline.mjs";

const healthy = {
  ready: true, torch: "1.13.1", threads: 1, corename: "Zen", blas: ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"],
  openblas_coretype: null, openblas_l2_size: null, gemm_gflops_1024x768x768: 70.5,
};
const native = { gflops: 80, simd: "AVX2" };

test("a PyTorch process's environment sets its threads and drops OpenBLAS's kernel overrides", () => {
  const env = torchEnv(2, { PATH: "/usr/bin", OPENBLAS_CORETYPE: "Haswell", OPENBLAS_L2_SIZE: "512", OMP_NUM_THREADS: "8" });
  assert.deepEqual(env, { PATH: "/usr/bin", OPENBLAS_NUM_THREADS: "2", OMP_NUM_THREADS: "2", BENCH_TORCH_THREADS: "2" });
  assert.deepEqual(FORCING_VARS, ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]);
});

test("a healthy OpenBLAS at 88% of the native GEMM is a valid baseline", () => {
  const v = judgeBaseline(healthy, native, 1);
  assert.equal(v.valid, true);
  assert.deepEqual(v.reasons, []);
  assert.equal(v.fraction, 70.5 / 80);
});

test("the issue's degraded baseline (31 GFLOP/s where the machine reaches 75) is invalid, with the figures", () => {
  const v = judgeBaseline({ ...healthy, gemm_gflops_1024x768x768: 31 }, { gflops: 75 }, 1);
  assert.equal(v.valid, false);
  assert.ok(Math.abs(v.fraction - 31 / 75) < 1e-12);
  assert.equal(v.reasons.length, 1);
  assert.match(v.reasons[0], /31 GFLOP\/s is 41% of the native GEMM's 75\.0/);
  // the boundary: exactly 60% passes, just under fails
  assert.equal(judgeBaseline({ ...healthy, gemm_gflops_1024x768x768: 48 }, { gflops: 80 }, 1).valid, true);
  assert.equal(judgeBaseline({ ...healthy, gemm_gflops_1024x768x768: 47.9 }, { gflops: 80 }, 1).valid, false);
  assert.equal(MIN_FRACTION_OF_NATIVE, 0.6);
});

test("two threads are judged against twice the one-thread reference", () => {
  const two = { ...healthy, threads: 2, gemm_gflops_1024x768x768: 120 };
  assert.equal(judgeBaseline(two, native, 2).fraction, 120 / 160);
  assert.equal(judgeBaseline(two, native, 2).valid, true);
  assert.equal(judgeBaseline({ ...two, gemm_gflops_1024x768x768: 90 }, native, 2).valid, false);
  // a process that ran on another thread count than the row says is not that row's baseline
  const v = judgeBaseline(healthy, native, 2);
  assert.equal(v.valid, false);
  assert.match(v.reasons.join(";"), /ran on 1 thread\(s\), not 2/);
});

test("no OpenBLAS, a forced core, no reference or no PyTorch: invalid, each named", () => {
  assert.match(judgeBaseline({ ...healthy, corename: null, blas: ["/usr/lib/libblas.so.3"] }, native).reasons.join(), /not OpenBLAS \(mapped: \/usr\/lib\/libblas\.so\.3\)/);
  assert.match(judgeBaseline({ ...healthy, openblas_coretype: "Haswell" }, native).reasons.join(), /OPENBLAS_CORETYPE=Haswell/);
  assert.match(judgeBaseline(healthy, { error: "not built" }).reasons.join(), /no native GEMM reference .*not built/);
  const none = judgeBaseline({ ready: false, error: "import torch failed: No module named 'torch'" }, native);
  assert.deepEqual(none, { valid: false, fraction: null, reasons: ["PyTorch did not start: import torch failed: No module named 'torch'"] });
});

test("the native reference is the best of its measurements, so one busy moment does not lower it", async () => {
  const { bestOf } = await import("../../bench/baseline.mjs");
  const r = bestOf([{ gflops: 20.05, simd: "AVX2 + FMA" }, { error: "killed" }, { gflops: 57.3, simd: "AVX2 + FMA" }]);
  assert.equal(r.gflops, 57.3);
  assert.deepEqual(r.measurements, [20.05, 57.3]);
  assert.deepEqual(bestOf([{ error: "not built" }]), { error: "not built" });
  // judged against the best, PyTorch's 42 GFLOP/s is 73%: valid (against the busy 20.05 it looked like 210%)
  assert.equal(judgeBaseline({ ...healthy, gemm_gflops_1024x768x768: 42 }, r, 1).valid, true);
});
