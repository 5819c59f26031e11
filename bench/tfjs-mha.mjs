// The WASM peer for npm run bench: the same causal multi-head attention in TF.js ops on the WASM
// backend (SIMD on; one thread in Node, the threaded build on a cross-origin isolated page), with the
// same parameters and input as ours.
//   4 matMuls for the projections (weights pre-transposed once to (in, out), outside the timing),
//   K transposed once, per head one 2-D matMul for the scores (no transposeB: ~15x slower there), + a (T, T) mask holding -inf above the diagonal,
//   softmax, one 2-D matMul with the values (TF.js's best figures come from 2-D matMuls per head),
//   concat, out_proj.
// Works in Node (binaries read from node_modules) and in a browser (pass the URL prefix).
import * as tfCore from "@tensorflow/tfjs-core";
import * as tfWasmNs from "@tensorflow/tfjs-backend-wasm";

const tf = tfCore.default?.matMul ? tfCore.default : tfCore;
const tfWasm = tfWasmNs.setWasmPaths ? tfWasmNs : tfWasmNs.default;

/**
 * Sets up the WASM backend. `wasmPrefix`: a directory path (Node) or URL prefix (browser) ending in "/".
 * `threads` > 1: tfjs-backend-wasm-threaded-simd.wasm with that many threads (a cross-origin isolated
 * page only: it needs SharedArrayBuffer).
 */
export async function initTfjs(wasmPrefix, { threads = 1 } = {}) {
  tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", threads > 1);
  tf.env().set("WASM_HAS_SIMD_SUPPORT", true);
  tfWasm.setThreadsCount(threads);
  tfWasm.setWasmPaths(wasmPrefix);
  const ok = await tf.setBackend("wasm");
  if (!ok) throw new Error("tf.setBackend('wasm') failed");
  await tf.ready();
  return {
    version: tfWasm.version_wasm,
    backend: tf.getBackend(),
    threads: tfWasm.getThreadsCount(),
    simd: await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"),
  };
}

/**
 * `params`: our module.parameters() for MultiHeadAttention(d, d, ..., qkv_bias=False):
 * W_query.weight, W_key.weight, W_value.weight, out_proj.weight ((out, in) each), out_proj.bias.
 * Returns {forward(x: Float32Array of T*d, T) -> Float32Array, dispose()}.
 */
export function makeTfjsMha(params, numHeads) {
  const get = (name) => {
    const p = params.find((q) => q.name === name);
    if (!p) throw new Error(`no parameter ${name}`);
    return p;
  };
  const d = get("W_query.weight").shape[0];
  const hd = d / numHeads;
  const scale = 1 / Math.sqrt(hd);
  // (out, in) -> (in, out) once, so every timed matMul is a plain x @ W.
  const w = (name) => tf.tidy(() => tf.transpose(tf.tensor2d(get(name).data, get(name).shape)));
  const Wq = w("W_query.weight");
  const Wk = w("W_key.weight");
  const Wv = w("W_value.weight");
  const Wo = w("out_proj.weight");
  const bo = tf.tensor1d(get("out_proj.bias").data);
  const masks = new Map();
  const maskFor = (T) => {
    if (!masks.has(T)) {
      const m = new Float32Array(T * T);
      for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -Infinity;
      masks.set(T, tf.tensor2d(m, [T, T]));
    }
    return masks.get(T);
  };
  return {
    forward(xData, T) {
      const mask = maskFor(T);
      const out = tf.tidy(() => {
        const x = tf.tensor2d(xData, [T, d]);
        const q = tf.matMul(x, Wq);
        // K^T once per forward: TF.js-WASM's matMul with transposeB runs ~15x slower than without.
        const kT = tf.transpose(tf.matMul(x, Wk));
        const v = tf.matMul(x, Wv);
        const heads = [];
        for (let h = 0; h < numHeads; h++) {
          const qh = tf.slice(q, [0, h * hd], [T, hd]);
          const kTh = tf.slice(kT, [h * hd, 0], [hd, T]);
          const vh = tf.slice(v, [0, h * hd], [T, hd]);
          const scores = tf.add(tf.mul(tf.matMul(qh, kTh), scale), mask);
          heads.push(tf.matMul(tf.softmax(scores), vh));
        }
        return tf.add(tf.matMul(tf.concat(heads, 1), Wo), bo);
      });
      const data = out.dataSync();
      out.dispose();
      return data;
    },
    dispose() {
      for (const t of [Wq, Wk, Wv, Wo, bo, ...masks.values()]) t.dispose();
      masks.clear();
    },
  };
}
