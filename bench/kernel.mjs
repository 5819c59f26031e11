// node bench/kernel.mjs [--quick]: the f32x4 gemm kernel in WebAssembly (GFLOP/s per shape, % of the
// measured f32x4 peak, Eigen on the same shapes). Build first: bash scripts/build.sh.
import createKernelBench from "../build/wasm/attention_kernel_bench.mjs";

const bench = await createKernelBench();
const quick = process.argv.includes("--quick") ? 1 : 0;
console.log(JSON.stringify(JSON.parse(bench.UTF8ToString(bench._kernel_bench_json(quick))), null, 2));
