// attention-lab in Node: package.json's exports pick this file under the "node" condition (Node,
// and tools that run in it such as vitest, whatever globals they add: jsdom's `window` changes
// nothing). It is ./attention-lab.js, the browser module, with a loadAttentionLab that reads
// attention_core.wasm from disk when no wasmUrl/wasmBinary is given (Node's fetch cannot read a
// file: URL) and reads a file: wasmUrl from disk too. Only this file imports node: modules.
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { AttentionError, loadAttentionLab as loadFromBrowserModule } from "./attention-lab.js";

export * from "./attention-lab.js";

/** The key under which ./attention-lab.js takes a reader of its .wasm (see loadAttentionLab there). */
const DEFAULT_WASM = Symbol.for("attention-lab.defaultWasm");

/** The key under which ./attention-lab.js takes the bytes of a file: wasmUrl read here (its errors stay wasmUrl's). */
const FILE_BYTES = Symbol.for("attention-lab.fileBytes");

/** The key under which ./attention-lab.js takes Node's facts for its threads ({cores}): Node can always run the threaded core. */
const NODE_THREADS = Symbol.for("attention-lab.nodeThreads");

/** The binaries the browser module may pick (attention_core[_mt|_lean][_fma].wasm), read from beside this file. */
const BINARIES = ["attention_core.wasm", "attention_core_fma.wasm", "attention_core_mt.wasm", "attention_core_mt_fma.wasm", "attention_core_lean.wasm", "attention_core_lean_fma.wasm"];
const readDefault = (file) => readFile(new URL(`./${BINARIES.includes(file) ? file : BINARIES[0]}`, import.meta.url));
const node = () => ({ cores: availableParallelism() });

/** A file: wasmUrl's path (a string "file:..." or a URL object with protocol file:), else null; never throws. */
function filePath(wasmUrl) {
  try {
    const href = typeof wasmUrl === "string" ? wasmUrl : wasmUrl !== null && typeof wasmUrl === "object" ? wasmUrl.href : null;  // any realm's URL (jsdom's under vitest)
    return typeof href === "string" && /^file:/i.test(href) ? fileURLToPath(href) : null;
  } catch {
    return null;  // not a file URL that names a path: the browser module refuses it with its own code
  }
}

/** Node's loadAttentionLab: the browser module's, with the .wasm read from disk (same options, same errors). */
export async function loadAttentionLab(options) {
  if (options === undefined || options === null) return loadFromBrowserModule({ [DEFAULT_WASM]: readDefault, [NODE_THREADS]: node() });
  if (typeof options !== "object") return loadFromBrowserModule(options);  // "bad_options"
  let opts;
  try {
    opts = { ...options };
  } catch {
    return loadFromBrowserModule(options);  // a throwing getter: reported as "unreadable_argument" there
  }
  const path = filePath(opts.wasmUrl);
  if (path === null) return loadFromBrowserModule({ ...opts, [DEFAULT_WASM]: readDefault, [NODE_THREADS]: node() });
  let bytes;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const reason = err?.code;  // ENOENT, EACCES, EISDIR...
    throw new AttentionError({ code: "wasm_fetch", slot: "wasmUrl", message: `attention_core.wasm could not be read from ${path} (${typeof reason === "string" ? reason : "unreadable"})`, hint: "Check the path; new URL(\"./attention_core.wasm\", import.meta.url) is relative to the file that writes it." });
  }
  return loadFromBrowserModule({ ...opts, [FILE_BYTES]: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), [NODE_THREADS]: node() });
}
