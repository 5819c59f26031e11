// Post-link step of the threaded WebAssembly build (CMakeLists.txt, attention_core_mt): makes
// Emscripten 3.1.6's pthreads glue work as an ES module in Node as well as in browsers.
//   1. The glue (<name>.mjs) reads CommonJS's `require` and `__dirname` when it runs in Node, and an ES
//      module has neither (ReferenceError at load). A two-line prelude defines them for the module
//      only: Node's built-in modules through process.getBuiltinModule (Node >= 20.16), the folder from
//      import.meta.url; in a browser both stay undefined and the glue never reads them.
//   2. The worker file (<name>.worker.js) is a classic script that calls require() in Node; under the
//      package's "type": "module" Node would load a .js as an ES module, so a copy is written as
//      <name>.worker.cjs for Node (browsers keep loading the .js: a .cjs is served with no JavaScript
//      MIME type by many hosts).
// Usage: node scripts/pthread-glue.mjs <name>   (in the build folder; idempotent)
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";

const MARK = "// attention-lab: pthread-glue prelude";
const PRELUDE = `${MARK} (scripts/pthread-glue.mjs): CommonJS's require and __dirname, for this module only, in Node.
var require = typeof process == "object" && typeof process.getBuiltinModule == "function" ? process.getBuiltinModule : undefined;
var __dirname = typeof process == "object" && typeof process.getBuiltinModule == "function" ? decodeURIComponent(new URL(".", import.meta.url).pathname) : undefined;
`;

/** The glue with the prelude in front of it (unchanged when it has one already). */
export function patchGlue(text) {
  return text.startsWith(MARK) ? text : PRELUDE + text;
}

if (import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const name = process.argv[2];
  if (!name) {
    console.error("usage: node scripts/pthread-glue.mjs <name>");
    process.exit(2);
  }
  writeFileSync(`${name}.mjs`, patchGlue(readFileSync(`${name}.mjs`, "utf8")));
  copyFileSync(`${name}.worker.js`, `${name}.worker.cjs`);
}
