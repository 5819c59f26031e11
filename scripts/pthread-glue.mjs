// Post-link step of the threaded WebAssembly build (CMakeLists.txt, attention_core_mt): makes
// Emscripten 3.1.6's pthreads glue work as an ES module in Node as well as in browsers.
//   1. The glue (<name>.mjs) reads CommonJS's `require` and `__dirname` when it runs in Node, and an ES
//      module has neither (ReferenceError at load). A two-line prelude defines them for the module
//      only: Node's built-in modules through process.getBuiltinModule (Node >= 20.16), the folder from
//      import.meta.url; in a browser both stay undefined and the glue never reads them.
//   2. The worker file (<name>.worker.js) imports the glue as `e.data.urlOrBlob ? import(url) :
//      import("./<name>.mjs")`: a non-literal import() into which Vite's dev server injects an
//      `import` statement (its injectQuery helper), which a classic script cannot hold. Written as one
//      template literal, Vite leaves it alone; the glue's URL comes from the facade
//      (mainScriptUrlOrBlob, load-core.js), so a bundler may rename both files.
//   3. A header (WORKER_HEADER) says what the worker file is, and keeps it above Vite's
//      build.assetsInlineLimit (4096 bytes): Vite inlines a smaller asset as a data: URL, and a Worker
//      from a data: URL has an opaque origin, which can neither import the glue nor share the memory.
//   4. The worker file is a classic script that calls require() in Node; under the package's
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

/** The glue with the prelude in front of it (unchanged when it has one already). */
export function patchGlue(text) {
  return text.startsWith(MARK) ? text : PRELUDE + text;
}

const WORKER_MARK = "// attention-lab: the threaded core's pthread worker";
const WORKER_HEADER = `${WORKER_MARK} (Emscripten 3.1.6's, as scripts/pthread-glue.mjs leaves it).
//
// attention_core_mt.mjs (the threaded glue) starts one classic Worker of this file per thread of its
// pool (the facade's pthreadPoolSize: threads - 1), before the load resolves. Each Worker is sent
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
// The glue is imported through one template literal, which Vite's dev server leaves as it is (it
// injects an import statement for a bare import(expression), and a classic script cannot hold one).
`;

/** Vite's build.assetsInlineLimit default: the worker file must be larger, or Vite inlines it as a data: URL. */
const VITE_INLINE_LIMIT = 4096;

/** Emscripten's import of the glue in the worker, and what replaces it (see 2 above). */
const WORKER_IMPORT = /\(e\.data\.urlOrBlob\?import\(e\.data\.urlOrBlob\):import\("\.\/([\w.-]+\.mjs)"\)\)/;

/** The worker file with its import as one template literal and the header (unchanged when it has them). */
export function patchWorker(text) {
  if (text.startsWith(WORKER_MARK)) return text;
  const m = WORKER_IMPORT.exec(text);
  if (!m) throw new Error("pthread-glue: the worker file has no import of the glue in the form Emscripten 3.1.6 writes (e.data.urlOrBlob?import(...):import(...)): check the Emscripten version");
  const patched = WORKER_HEADER + text.replace(m[0], `import(\`\${e.data.urlOrBlob||"./${m[1]}"}\`)`);
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
