// Where the WebAssembly core comes from, and how a binary is fetched (or read from disk in Node) and
// compiled: loadAttentionLab's `wasmUrl` (one .wasm), `wasmBinary` (its bytes), `wasmPaths` (the
// folder every file is served from, or a function from a file name to its URL: sql.js's locateFile,
// onnxruntime-web's env.wasm.wasmPaths), or none of them: the files beside this module (which a
// bundler that follows new URL("./x.wasm", import.meta.url) emits), or in Node the folder the Node
// entry finds. A located load (wasmPaths or the default) picks the binary (threaded, lean, relaxed
// SIMD) and falls back to its plain-SIMD twin when the relaxed-SIMD one is missing.
// Used by load-core.js only; Node's file reading comes from attention-lab.node.js as `node` (this
// file imports no node: module and reads no global to guess where it runs).
import { AttentionError, errorText, isArrayBuffer, isTypedArray, reading, typedBuffer, typedByteLength, typedOffset, valueText } from "./values.js";

export const SOURCE_HINT = "Pass loadAttentionLab({wasmPaths}) with the folder the package's .wasm files are served from (docs/bundlers.md), {wasmUrl} with one .wasm's URL, or {wasmBinary} with its bytes.";

/** What a realm whose Content-Security-Policy refuses WebAssembly is told ("wasm_csp"). */
const CSP_MESSAGE = "the page's Content-Security-Policy does not let WebAssembly compile ('wasm-unsafe-eval' is missing from its script-src)";
const CSP_HINT = "Add 'wasm-unsafe-eval' to the script-src directive of the page's Content-Security-Policy (its HTTP header or its <meta http-equiv> tag), e.g. script-src 'self' 'wasm-unsafe-eval' (or to default-src when the policy has no script-src).";

/** The smallest WebAssembly module: the magic "\0asm" and version 1. */
const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

/**
 * AttentionError "wasm_csp" (with the directive to add) when this realm may not compile WebAssembly at
 * all: its Content-Security-Policy lacks 'wasm-unsafe-eval', so even the empty module is refused. Else
 * null. Asked when a compile failed, so that the refusal is not reported as a broken binary; the
 * element reports a failed load with it too.
 */
export async function cspRefusal() {
  if (typeof WebAssembly !== "object") return null;  // no WebAssembly here: not the CSP's doing
  try {
    await WebAssembly.compile(EMPTY_MODULE);
    return null;
  } catch {
    return loadError("wasm_csp", CSP_MESSAGE, CSP_HINT);
  }
}

/** This module's URL, by a name (see besideThisModule). */
const here = import.meta.url;

export function loadError(code, message, hint, slot = "") {
  return new AttentionError({ code, slot, message, hint });
}

/** A string for a message: quoted, cut at 120 characters. */
const quoted = (s) => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);

/** The last part of a URL's path ("attention_core.wasm"), or "the .wasm" when it has none. */
function fileName(url) {
  const name = String(url).split(/[?#]/)[0].split("/").pop();
  return name ? name : "the .wasm";
}

/** A string, or a URL of any realm (jsdom's under vitest, a Location) read by its href; null for anything else. */
function hrefOf(v, what) {
  if (typeof v === "string") return v;
  if (v === null || typeof v !== "object") return null;
  const href = reading(what, () => v.href);
  return typeof href === "string" ? href : null;
}

/**
 * The source that `wasmUrl`, `wasmBinary` or `wasmPaths` names, checked: null for none of them (the
 * default, see defaultSource); {kind, key, label, slot, compile} for one binary (wasmUrl, wasmBinary);
 * {kind, key, label, slot, locate} for wasmPaths. `key` tells a second call's source from the first's.
 */
export function sourceOf({ wasmUrl, wasmBinary, wasmPaths }, node) {
  const given = Object.entries({ wasmUrl, wasmBinary, wasmPaths }).filter(([, v]) => v !== undefined && v !== null).map(([k]) => k);
  if (given.length > 1) {
    const which = given.length === 2 ? `both ${given[0]} and ${given[1]}` : `${given.join(", ").replace(/, (\w+)$/, " and $1")} together`;
    throw loadError("wasm_options", `loadAttentionLab was given ${which}`, "Pass one: wasmPaths for the folder every .wasm is served from, wasmUrl to fetch one .wasm, or wasmBinary when you have its bytes already.", given.at(-1));
  }
  if (given[0] === "wasmUrl") return urlSource(wasmUrl, node);
  if (given[0] === "wasmBinary") return binarySource(wasmBinary);
  if (given[0] === "wasmPaths") return pathsSource(wasmPaths, node);
  return null;
}

/** wasmUrl: a non-empty string (resolved by fetch) or a URL; in Node a file: URL is read from disk. */
function urlSource(wasmUrl, node) {
  const url = hrefOf(wasmUrl, "wasmUrl");
  if (url === null || url.trim() === "") {
    throw loadError("wasm_url", `wasmUrl must be a URL or a non-empty string, got ${valueText(wasmUrl)}`, "Pass where attention_core.wasm is served, e.g. \"/assets/attention_core.wasm\" or new URL(\"./attention_core.wasm\", import.meta.url); or {wasmPaths} with the folder of every .wasm.", "wasmUrl");
  }
  const where = { file: fileName(url), label: `wasmUrl ${quoted(url)}`, slot: "wasmUrl", check: "Check that the URL serves the .wasm (the browser's network panel shows the request)" };
  return { kind: "url", key: url, label: where.label, slot: "wasmUrl", compile: () => fetchWasm(url, where, node) };
}

/**
 * wasmPaths: a folder's URL ending in "/" (a string, resolved against the page, or in Node against
 * the working directory when it is a path; or a URL), or a function from a file name to its URL.
 * The function is asked once here (for attention_core.wasm, which tells this source from another)
 * and again for each file the load needs.
 */
function pathsSource(wasmPaths, node) {
  if (typeof wasmPaths === "function") {
    const locate = (file) => {
      let got;
      try {
        got = wasmPaths(file);
      } catch (err) {
        throw loadError("wasm_url", `wasmPaths threw while locating ${file} (${errorText(err)})`, "The function gets a file name such as \"attention_core_fma.wasm\" and returns its URL.", "wasmPaths");
      }
      const href = hrefOf(got, "wasmPaths");
      if (href === null || href.trim() === "") {
        throw loadError("wasm_url", `wasmPaths(${JSON.stringify(file)}) must return a URL or a non-empty string, got ${valueText(got)}`, "Return where that file is served, e.g. (file) => `https://cdn.example/attention-lab/${file}`.", "wasmPaths");
      }
      return absolute(href, node, "wasmPaths");
    };
    const probe = locate("attention_core.wasm");
    return { kind: "paths", key: probe.href, label: `wasmPaths (a function: attention_core.wasm -> ${quoted(probe.href)})`, slot: "wasmPaths", locate: async (file) => locate(file) };
  }
  const base = hrefOf(wasmPaths, "wasmPaths");
  if (base === null || base.trim() === "") {
    throw loadError("wasm_url", `wasmPaths must be a folder's URL ending in "/" or a function from a file name to its URL, got ${valueText(wasmPaths)}`, "For example \"/assets/attention-lab/\", new URL(\"./wasm/\", import.meta.url) or (file) => `/assets/${file}`.", "wasmPaths");
  }
  if (!base.endsWith("/")) {
    throw loadError("wasm_url", `wasmPaths ${quoted(base)} does not end with "/": it names the folder the .wasm files are in, and each file's name is added to it`, `Pass ${quoted(`${base}/`)}, or a function: (file) => \`${base}/\${file}\`.`, "wasmPaths");
  }
  const folder = absolute(base, node, "wasmPaths");
  // the key is the URL of attention_core.wasm, as for a function: a folder and a function that give the same URLs are the same source
  return { kind: "paths", key: new URL("attention_core.wasm", folder).href, label: `wasmPaths ${quoted(base)}`, slot: "wasmPaths", locate: async (file) => new URL(file, folder) };
}

/** href as an absolute URL: Node's rule (a path or a URL) from the Node entry; else against the page's (or worker's) URL, as fetch does. */
function absolute(href, node, slot) {
  try {
    if (node !== undefined) return node.toUrl(href);
    return new URL(href, globalThis.document?.baseURI ?? globalThis.location?.href);
  } catch (err) {
    throw loadError("wasm_url", `${slot} gives ${quoted(href)}, which is not a URL (${errorText(err)})`, "Give a URL such as \"https://cdn.example/attention-lab/\", or one relative to the page such as \"/assets/\".", slot);
  }
}

/**
 * The default, a located source: the files beside this module, or in Node the folder that the Node
 * entry finds (beside it, or the installed package when it is bundled).
 */
export function defaultSource(node) {
  const locate = node !== undefined ? async (file) => new URL(file, await node.folder()) : async (file) => besideThisModule(file);
  return { kind: "default", key: "", label: "the .wasm files beside attention-lab.js", slot: "", locate };
}

/**
 * A file beside this module. The files a browser load can need as literal patterns, so that webpack,
 * Vite and Rollup's import-meta-assets plugin emit them and give their URLs: the two single-thread
 * full binaries, and the threaded core (its two binaries, its glue and the glue's pthread worker,
 * which imports the glue by the URL load-core.js hands it: mainScriptUrlOrBlob). Every other file by
 * a name (bundlers leave it alone: a bundle without the lean binaries falls back to the full ones).
 */
function besideThisModule(file) {
  try {
    switch (file) {
      case "attention_core.wasm": return new URL("./attention_core.wasm", import.meta.url);
      case "attention_core_fma.wasm": return new URL("./attention_core_fma.wasm", import.meta.url);
      case "attention_core_mt.wasm": return new URL("./attention_core_mt.wasm", import.meta.url);
      case "attention_core_mt_fma.wasm": return new URL("./attention_core_mt_fma.wasm", import.meta.url);
      case "attention_core_mt.mjs": return new URL("./attention_core_mt.mjs", import.meta.url);
      case "attention_core_mt.worker.js": return new URL("./attention_core_mt.worker.js", import.meta.url);
      default: return new URL(`./${file}`, here);  // not new URL(name, import.meta.url), which webpack would try to resolve
    }
  } catch {
    throw loadError("wasm_url", `${file} cannot be located: this copy of attention-lab.js has no URL of its own (bundled into a classic script, where import.meta is empty)`, SOURCE_HINT);
  }
}

/**
 * The binaries a located load tries, in order: the one picked (`_mt` threaded, `_lean` without the
 * checkpoint readers, `_fma` where the engine has relaxed SIMD), then its plain-SIMD twin; a lean load
 * then the full ones (a bundle has no lean binary).
 */
export function binaryFiles({ threaded, lean, fma }) {
  const kinds = threaded ? ["_mt"] : lean ? ["_lean", ""] : [""];
  return kinds.flatMap((kind) => (fma ? [`attention_core${kind}_fma.wasm`, `attention_core${kind}.wasm`] : [`attention_core${kind}.wasm`]));
}

/**
 * The first of `files` that a located source serves, compiled: {module, label, file, note}. A file
 * that cannot be fetched or compiled gives way to the next; when a relaxed-SIMD binary gave way to a
 * plain one, `note` says so, for the console (a missing twin slows the products, it breaks nothing;
 * "" otherwise). The last file's error when none loads. A wasmPaths function that throws ends the
 * load at once.
 */
export async function compileLocated(source, files, node) {
  const failed = [];
  for (const file of files) {
    const url = await source.locate(file);
    const where = { file, label: `${file} ${source.kind === "paths" ? "from wasmPaths" : "beside attention-lab.js"} (${url.href})`, slot: source.slot, check: checkFor(source, file, node) };
    try {
      const module = await fetchWasm(url.href, where, node);
      const note = files[0].includes("_fma") && !file.includes("_fma") ? `attention-lab: ${failed[0].message}; ${file} runs instead: products as a multiply then an add (lab.kernel "simd128"), the same results within 1e-6.` : "";
      return { module, label: where.label, file, note };
    } catch (err) {
      if (!(err instanceof AttentionError) || err.code === "wasm_csp" || file === files.at(-1)) {
        if (failed.length > 0 && err instanceof AttentionError && err.code !== "wasm_csp") err.hint = `${err.hint} (Tried first: ${failed.map((f) => f.file).join(", ")}.)`;
        throw err;
      }
      failed.push({ file, message: err.message });  // every message names its file
    }
  }
  throw new Error("compileLocated: no file to try");  // binaryFiles never gives none
}

/** The sentence a missing located file's error starts its hint with: where to put `file`. */
function checkFor(source, file, node) {
  if (source.kind === "paths") return `Check that wasmPaths serves ${file}: copy node_modules/attention-lab/web/lib/attention_core* there (every .wasm, attention_core_mt.mjs and its worker)`;
  if (node !== undefined) return `Copy ${file} from node_modules/attention-lab/web/lib/ beside the others, or reinstall the package`;
  return `Copy ${file} beside the file that imports attention-lab, or tell the bundler to (new URL("./${file}", import.meta.url) is the pattern webpack, Vite and Rollup's import-meta-assets plugin follow)`;
}

/** The bytes of an ArrayBuffer or a view of one (null when it is neither, or detached). */
function bytesOf(v) {
  try {
    if (isArrayBuffer(v)) return new Uint8Array(v);
    if (isTypedArray(v)) return new Uint8Array(typedBuffer.call(v), typedOffset.call(v), typedByteLength.call(v));
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);  // a DataView
  } catch {
    // a detached buffer
  }
  return null;
}

/** FNV-1a of the bytes with their length: what tells a second wasmBinary from the first. */
function fingerprint(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return `${bytes.length}:${(h >>> 0).toString(16)}`;
}

/** wasmBinary: the bytes of a WebAssembly module, checked before anything is compiled. */
function binarySource(wasmBinary) {
  const bytes = bytesOf(wasmBinary);
  if (bytes === null) {
    throw loadError("wasm_binary", `wasmBinary must be an ArrayBuffer or a typed array or DataView of attention_core.wasm's bytes, got ${ArrayBuffer.isView(wasmBinary) || isArrayBuffer(wasmBinary) ? "a detached buffer" : valueText(wasmBinary)}`, "Pass the bytes of the file, e.g. await (await fetch(url)).arrayBuffer() or fs.readFileSync(path).", "wasmBinary");
  }
  wasmBytes(bytes, "wasmBinary", "wasmBinary");
  const label = `wasmBinary (${bytes.length} bytes)`;
  return { kind: "binary", key: fingerprint(bytes), label, slot: "wasmBinary", compile: () => compileBytes(bytes, label, "wasmBinary") };
}

/** `bytes` when they start as every WebAssembly module does ("\0asm"), else AttentionError "wasm_binary" naming `what` under `slot`. */
function wasmBytes(bytes, what, slot) {
  const magic = [0x00, 0x61, 0x73, 0x6d];  // "\0asm": every WebAssembly module starts with it
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) {
    const head = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, "0")).join(" ");
    throw loadError("wasm_binary", `${what} is not a WebAssembly module: ${bytes.length} bytes${bytes.length ? ` starting ${head}` : ""}, not 00 61 73 6d ("\\0asm")`, bytes[0] === 0x3c ? "These bytes start with \"<\": an HTML page (a server's 404 or fallback page), not the .wasm. Check the URL they were fetched from." : "Pass the bytes of attention_core.wasm itself, from the same build as attention_core.mjs.", slot);
  }
  return bytes;
}

/** WebAssembly.compile of the bytes (it copies them at once), its CompileError as AttentionError "wasm_binary" under `slot` (the option they came from). */
async function compileBytes(bytes, label, slot) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (err) {
    throw (await cspRefusal()) ?? loadError("wasm_binary", `${label} is not a WebAssembly module that compiles (${errorText(err)})`, "Pass the bytes of attention_core.wasm from the same build as attention_core.mjs.", slot);
  }
}

/**
 * The module at url, `where` = {file, label, slot, check}: the file asked for (every message names
 * it), how messages name the source, the option it came from ("" for the default) and the first
 * sentence of a missing file's hint. Compiled while it streams in when served as application/wasm;
 * in Node a file: URL is read from disk. AttentionError "wasm_fetch" when the request fails, answers
 * an error status or the file cannot be read; "wasm_binary" when what came is not the module.
 */
async function fetchWasm(url, where, node) {
  const { file, label, slot, check } = where;
  if (node !== undefined && /^file:/i.test(url)) {
    let bytes;
    try {
      bytes = await node.readFile(url);
    } catch (err) {
      const reason = err?.code;  // ENOENT, EACCES, EISDIR...
      throw loadError("wasm_fetch", `${file} could not be read from ${node.filePath(url)} (${typeof reason === "string" ? reason : "unreadable"})`, slot === "wasmUrl" ? "Check the path; new URL(\"./attention_core.wasm\", import.meta.url) is relative to the file that writes it." : `${check}. ${SOURCE_HINT}`, slot);
    }
    return compileBytes(wasmBytes(bytes, label, slot), label, slot);
  }
  if (typeof fetch !== "function") {
    throw loadError("wasm_fetch", `${file} cannot be fetched from ${label}: this realm has no fetch`, "Under Jest's jsdom environment the package's browser entry runs in Node: add testEnvironmentOptions: {customExportConditions: [\"node\"]} to the Jest config (docs/bundlers.md), so that the Node entry reads the file from disk; or pass {wasmBinary}.", slot);
  }
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin" });
  } catch (err) {
    throw loadError("wasm_fetch", `${file} could not be fetched from ${label} (${errorText(err)})`, `${check}. ${SOURCE_HINT} In Node, import "attention-lab" itself (its Node entry reads the file from disk).`, slot);
  }
  if (!response.ok) {
    throw loadError("wasm_fetch", `${file} could not be fetched: ${label} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`, `${check}. ${SOURCE_HINT}`, slot);
  }
  const streaming = typeof WebAssembly.compileStreaming === "function" && /^application\/wasm\b/i.test(response.headers.get("content-type") ?? "");
  try {
    return streaming ? await WebAssembly.compileStreaming(response) : await WebAssembly.compile(await response.arrayBuffer());
  } catch (err) {
    throw (await cspRefusal()) ?? loadError("wasm_binary", `what ${label} answered is not a WebAssembly module that compiles (${errorText(err)})`, `The URL must serve ${file} from the same build as attention_core.mjs, not a page (a server's fallback page answers 200 too).`, slot);
  }
}

/**
 * Whether this engine has the final relaxed-SIMD proposal's f32x4.relaxed_madd (Chromium by default;
 * Node 20 only with --experimental-wasm-relaxed-simd): WebAssembly.validate of a module whose one
 * function pushes three v128 constants and multiply-adds them. Nothing is compiled or run.
 */
export function hasRelaxedSimd() {
  const zeros = new Array(16).fill(0);
  const body = [0x00, ...[0, 1, 2].flatMap(() => [0xfd, 0x0c, ...zeros]), 0xfd, 0x85, 0x02, 0x0b];  // locals; 3 x v128.const; relaxed_madd; end
  const bytes = new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,  // "\0asm", version 1
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,        // type section: () -> v128
    0x03, 0x02, 0x01, 0x00,                          // function section: one function of that type
    0x0a, body.length + 2, 0x01, body.length, ...body,  // code section
  ]);
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}
