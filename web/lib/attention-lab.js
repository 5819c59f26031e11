// attention-lab: the library API (the one module that calls the raw WASM bindings, with the modules
// beside it that it is made of). Types and docs: ./attention-lab.d.ts. The page, the widget and the
// tests use only this facade. Its modules, one job each:
//   inputs.js           every JS argument read into plain values, and the core's answers read back
//   lab.js              the lab loadAttentionLab resolves to; lab-files.js its calls that read a file
//   handles.js          generators, modules and KV caches in WASM memory; trace.js the lazy trace
//   checkpoint-file.js  what a checkpoint call is given (an opened file, or the bytes of one)
//   checkpoint-calls.js reading files (file-reads.js) and GPT-2's whole model (gpt2-model.js): imported
//                       by the first call that reads a file, so a page that reads none never loads them
//   load-core.js        loading the core, where the first call says (wasm-source.js)
//
// Lifetimes: modules and generators live in WASM memory under numeric handles. Their parameters are
// written once (create, setParameter, fromParameters, loadCheckpoint, copyWeights) and a forward
// passes only its input. A FinalizationRegistry releases a handle when its JS object is
// garbage-collected, and `dispose()` releases it at once: nothing needs .delete().
//
// Every JS argument is read into plain values (numbers, strings, plain arrays, Float32Arrays) before
// the call into WASM, so no user code (a getter, a toString) runs inside a call.
import { readOptions } from "./inputs.js";
import { Lab } from "./lab.js";
import { loadCore } from "./load-core.js";
import { AttentionError, isTrustedTypesRefusal, valueText } from "./values.js";

export { AttentionError, isTrustedTypesRefusal };

// ---- loading the core ----------------------------------------------------------------------------
// Once per realm, where the first call says (load-core.js, wasm-source.js). This file reads no global to
// guess where it runs: Node gets ./attention-lab.node.js through the "node" condition of package.json's
// exports, which hands over Node's facts (its cores, its files) under the key below.

/** The key under which attention-lab.node.js passes Node's facts: {cores, readFile, filePath, toUrl, folder}. */
const NODE = Symbol.for("attention-lab.node");

/**
 * Loads the WASM core once and resolves to the lab (see the .d.ts for the options and the rule for a
 * second call). Never throws: bad options and failed loads reject with AttentionError.
 */
export function loadAttentionLab(options) {
  let read;
  try {
    if (options !== undefined && options !== null && typeof options !== "object") {
      throw new AttentionError({ code: "bad_options", slot: "loadAttentionLab", message: `the options of loadAttentionLab must be an object, got ${valueText(options)}`, hint: "Pass {wasmPaths: \"/assets/attention-lab/\"}, {wasmUrl: \"/assets/attention_core.wasm\"}, {wasmBinary: bytes}, or nothing." });
    }
    const { wasmUrl, wasmBinary, wasmPaths, threads, checkpoints, [NODE]: node } = readOptions(options, "loadAttentionLab");
    read = { wasmUrl, wasmBinary, wasmPaths, threads, checkpoints, node };
  } catch (err) {
    return Promise.reject(err);
  }
  return loadCore(read, (core) => new Lab(core));
}
