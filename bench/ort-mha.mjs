// The onnxruntime-web peer for npm run bench: the book's MultiHeadAttention as PyTorch exports it to
// ONNX (bench/onnx_export.py, holding our parameters), run by onnxruntime-web's WASM execution provider
// (its SIMD build, threaded when numThreads > 1) with every graph optimisation on. Works in Node
// (the package's wasm files from node_modules) and in a browser (the import map of bench/ort-browser.html
// maps "onnxruntime-web" to its ES module build; pass the URL prefix of its dist/).
import * as ortNs from "onnxruntime-web";

const ort = ortNs.InferenceSession ? ortNs : ortNs.default;

/**
 * Loads the model (the bytes of bench/onnx_export.py's output) on `threads` threads (ort.env.wasm.numThreads:
 * read once per realm, so one thread count per process or page). `wasmPaths`: where its .wasm/.mjs
 * live (a URL prefix ending in "/"; in Node leave it out). Returns {info, forward(x, T) -> Promise<Float32Array>,
 * dispose()}; x is (1, T, 768) row-major, the output (1, T, 768) context_vec.
 */
export async function makeOrtMha(modelBytes, { threads = 1, wasmPaths } = {}) {
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.simd = true;
  if (wasmPaths) ort.env.wasm.wasmPaths = wasmPaths;
  const session = await ort.InferenceSession.create(modelBytes, { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
  const [input] = session.inputNames;
  const [output] = session.outputNames;
  return {
    info: { version: ort.env.versions?.web ?? "?", threads: ort.env.wasm.numThreads, executionProvider: "wasm", graphOptimizationLevel: "all" },
    async forward(x, T) {
      const r = await session.run({ [input]: new ort.Tensor("float32", x, [1, T, x.length / T]) });
      return r[output].data;
    },
    dispose: () => session.release(),
  };
}

/** max |a - b| over two equal-length arrays (the peer's output against ours). */
export function maxAbsDiff(a, b) {
  let d = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}
