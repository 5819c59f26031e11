// Post-link step of the threaded WebAssembly build (CMakeLists.txt, attention_core_mt): makes
// Emscripten 3.1.6's pthreads glue work as an ES module in Node as well as in browsers.
//   1. The glue (<name>.mjs) reads CommonJS's `require` and `__dirname` when it runs in Node, and an ES
//      module has neither (ReferenceError at load). A two-line prelude defines them for the module
//      only: Node's built-in modules through process.getBuiltinModule (Node >= 20.16), the folder from
//      import.meta.url; in a browser both stay undefined and the glue never reads them.
//   2. The glue starts each pthread worker (<name>.worker.js) as a classic Worker. In browsers it is
//      started as a module Worker ({type: "module"}; the file is valid as either): a dev server that
//      rewrites the worker's import() of the glue adds an `import` statement to it (Vite's injectQuery
//      helper), which a classic script cannot hold. Node keeps its worker_threads Worker of the .cjs.
//      The worker imports the glue from the URL the facade hands it (mainScriptUrlOrBlob,
//      web/lib/load-core.js), so a bundler may rename both files.
//   3. A header (WORKER_HEADER) says what the worker file is, and keeps it above Vite's
//      build.assetsInlineLimit (4096 bytes): Vite inlines a smaller asset as a data: URL, and a Worker
//      from a data: URL has an opaque origin, which can neither import the glue nor share the memory.
//   4. The worker file is a script that calls require() in Node; under the package's
//      "type": "module" Node would load a .js as an ES module, so a copy is written as
//      <name>.worker.cjs for Node (browsers keep loading the .js: a .cjs is served with no JavaScript
//      MIME type by many hosts).
// Usage: node scripts/pthread-glue.mjs <name>   (in the build folder; idempotent)
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { Buffer } from "node:buffer";

const MARK = "// attention-lab: pthread-glue prelude";
const PRELUDE = `${MARK} (scripts/pthread-glue.mjs): CommonJS's require and __dirname, for this module only, in Node.
var require = typeof process == "object" && typeof process.getBuiltinModule == "function" ? process.getBuiltinModule : undefined;
var __dirname = typeof process == "object" && typeof process.getBuiltinModule == "function" ? decodeURIComponent(new URL(".", import.meta.url).pathname) : undefined;
`;

/** Emscripten 3.1.6's start of a pthread worker in the glue, and what replaces it (see 2 above). */
const START_WORKER = "PThread.unusedWorkers.push(new Worker(pthreadMainJs))";
const START_MODULE_WORKER = 'PThread.unusedWorkers.push(ENVIRONMENT_IS_NODE?new Worker(pthreadMainJs):new Worker(pthreadMainJs,{type:"module"}))';

/** The glue with the prelude in front of it and its pthread workers started as module Workers in browsers (unchanged when it has both). */
export function patchGlue(text) {
  let patched = text.startsWith(MARK) ? text : PRELUDE + text;
  if (!patched.includes(START_MODULE_WORKER)) {
    if (patched.split(START_WORKER).length !== 2) throw new Error(`pthread-glue: the glue does not start its pthread workers as Emscripten 3.1.6 does (${START_WORKER}, once): check the Emscripten version`);
    patched = patched.replace(START_WORKER, START_MODULE_WORKER);
  }
  return patched;
}

const WORKER_MARK = "// attention-lab: the threaded core's pthread worker";
const WORKER_HEADER = `${WORKER_MARK} (Emscripten 3.1.6's, as scripts/pthread-glue.mjs leaves it).
//
// attention_core_mt.mjs (the threaded glue) starts one Worker of this file per thread of its pool (the
// facade's pthreadPoolSize: threads - 1), before the load resolves: a module Worker in browsers (a dev
// server may add an import statement to it, as Vite's does), worker_threads' in Node. Each Worker is sent
// {cmd: "load", wasmModule, wasmMemory, urlOrBlob}: it imports the glue from urlOrBlob (the URL the
// facade located it at, web/lib/load-core.js; beside this file when there is none), instantiates the
// compiled module on the shared memory, and then runs the threads the core's ThreadPool starts
// ({cmd: "run"}). In Node the copy attention_core_mt.worker.cjs runs under node:worker_threads.
//
// Bundlers emit this file, the glue and the two threaded binaries through web/lib/wasm-source.js's
// new URL("./attention_core_mt.worker.js", import.meta.url) and its siblings. Vite inlines an asset
// smaller than its build.assetsInlineLimit (4096 bytes by default) as a data: URL; a Worker started
// from a data: URL has an opaque origin, which could neither import the glue nor share the page's
// memory, and the core would run on one thread: this header also keeps the file above that size.
`;

/** Vite's build.assetsInlineLimit default: the worker file must be larger, or Vite inlines it as a data: URL. */
const VITE_INLINE_LIMIT = 4096;

/** The worker file with the header (unchanged when it has it). */
export function patchWorker(text) {
  if (text.startsWith(WORKER_MARK)) return text;
  const patched = WORKER_HEADER + text;
  if (Buffer.byteLength(patched) <= VITE_INLINE_LIMIT) throw new Error(`pthread-glue: the worker file is ${Buffer.byteLength(patched)} bytes, not above Vite's inline limit (${VITE_INLINE_LIMIT})`);
  return patched;
}

if (import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const name = process.argv[2];
  if (!name) {
    console.error("usage: node scripts/pthread-glue.mjs <name>");
    process.exit(2);
  }
  writeFileSync(`${name}.mjs`, patchGlue(readFileSync(`${name}.mjs`, "utf8")));
  writeFileSync(`${name}.worker.js`, patchWorker(readFileSync(`${name}.worker.js`, "utf8")));
  copyFileSync(`${name}.worker.js`, `${name}.worker.cjs`);
}
