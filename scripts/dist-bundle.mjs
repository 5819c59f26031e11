// dist/'s JavaScript as a host serves it: the modules bundled by what loads together (scripts/dist.mjs
// calls bundleDist after copying web/'s files, then minifies each file). Unbundled, a first view
// fetched ~40 modules of 0.3 to 9 KB gzip, each compressed on its own; bundled, the widget is three
// files and the panels one more (bench target 4a: ~16 KB gzip less). Every URL the code builds from
// import.meta.url still resolves as in web/: each bundle is written in the folder its modules come
// from (app/ or lib/), and a file whose name the code reads keeps it.
//   app/attention-lab-element.js  the widget and its static imports (Rollup), but:
//   app/worker-url.js             worker-url.js with the strings it imports: as shipped (AS_SHIPPED)
//                                 its module is a file named worker-url.js
//   app/panels.js                 the compare and checkpoint panels, which the page loads together
//                                 once idle; they import what they share with the widget from its files
//   app/export.js, gpt2-panel.js, checkpoint-load.js, checkpoint-code.js  the other dynamic imports
//   app/run-worker.js             the Worker, one file (esbuild; its own realm, nothing to share)
//   lib/attention-lab.js          the facade with every module it imports statically (the glue included),
//   lib/checkpoint-calls.js       the code that reads files (checkpoint-calls.js, file-reads.js,
//                                 gpt2-model.js), which the facade imports on the first call that reads a
//                                 file (lab-files.js): a first view that reads none does not fetch it, and
//   lib/head-split.js, head-split-worker.js, importing it
// What loads by URL (the threaded glue and its worker) and the classic file-notice.js stay as they are.
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { importGraph } from "./modulepreload.mjs";

/** The library's entries: the facade (its chunk holds every module it imports), the head split and its Worker. */
const LIB_ENTRIES = ["attention-lab", "head-split", "head-split-worker"];

/** The facade's modules that load on first use (lab-files.js imports checkpoint-calls.js): one chunk, named after its entry. */
const LIB_LATER = new Set(["checkpoint-calls.js", "file-reads.js", "gpt2-model.js"]);

/** The panels the page loads together once idle (compare, checkpoint) and their own modules: one file. */
const PANELS = /^(compare-|checkpoint-panel\.js|checkpoint-tokens\.js|strings-panels\.js)/;

/** worker-url.js's chunk: it and what it imports (AS_SHIPPED: its file is named worker-url.js). */
const WORKER_URL = new Set(["worker-url.js", "strings.js", "format.js"]);

/** Imports that leave a folder's bundle as they are written: the other folder's files, the vendored tokenizer. */
const OUTSIDE = (id) => /^\.\.\/(lib|vendor|app)\//.test(id);

/** Rollup's chunks of `input` (name -> file) for the folder `dir`, as {fileName: chunk}. */
async function rollupChunks(input, dir, manualChunks) {
  const { rollup } = await import("rollup");
  const warnings = [];
  const bundle = await rollup({ input, external: OUTSIDE, preserveEntrySignatures: "allow-extension", onwarn: (w) => warnings.push(w) });
  const { output } = await bundle.generate({ format: "es", entryFileNames: "[name].js", chunkFileNames: "[name].js", manualChunks });
  await bundle.close();
  const bad = warnings.filter((w) => w.code !== "CIRCULAR_DEPENDENCY");
  if (bad.length) throw new Error(`dist: Rollup on ${Object.keys(input).join(", ")}: ${bad.map((w) => w.message).join("; ")}`);
  const chunks = {};
  for (const chunk of output) {
    if (chunk.type !== "chunk") throw new Error(`dist: Rollup emitted an asset (${chunk.fileName}) from ${dir}`);
    if (chunks[chunk.fileName]) throw new Error(`dist: two bundles named ${chunk.fileName}`);
    chunks[chunk.fileName] = chunk;
  }
  return chunks;
}

/**
 * Bundles dist/app and dist/lib in place (`web` the sources, `dist` the copy of them), removes the
 * modules merged into bundles, and returns the static imports of app/attention-lab-element.js, as
 * paths under dist/ (what the pages' modulepreload lists name).
 */
export async function bundleDist(web, dist) {
  // The element's static imports in its file, but worker-url.js and the strings it imports (a chunk
  // importing the element's and imported by it would be a cycle); the panels loaded once idle in one.
  const first = new Set(["app/attention-lab-element.js", ...importGraph()].filter((f) => f.startsWith("app/")).map((f) => path.join(web, f)));
  const app = await rollupChunks({ "attention-lab-element": path.join(web, "app/attention-lab-element.js") }, "app", (id) => {
    const name = path.basename(id);
    if (WORKER_URL.has(name)) return "worker-url";
    if (first.has(id)) return "attention-lab-element";
    return PANELS.test(name) ? "panels" : undefined;
  });
  const lib = await rollupChunks(Object.fromEntries(LIB_ENTRIES.map((n) => [n, path.join(web, "lib", `${n}.js`)])), "lib", (id) => {
    const name = path.basename(id);
    if (LIB_LATER.has(name)) return "checkpoint-calls";
    return LIB_ENTRIES.slice(1).includes(path.basename(name, ".js")) ? undefined : "attention-lab";
  });
  const { build } = await import("esbuild");
  const worker = await build({ entryPoints: [path.join(web, "app/run-worker.js")], bundle: true, format: "esm", write: false, external: ["../lib/*"], logLevel: "silent" });
  // what stays a file of its own: the bundles, the classic script, and lib's files loaded by URL
  const kept = {
    app: new Set([...Object.keys(app), "run-worker.js", "file-notice.js"]),
    lib: new Set([...Object.keys(lib), "attention_core_mt.mjs", "attention_core_mt.worker.js", "attention-lab.node.js"]),
  };
  for (const dir of ["app", "lib"]) {
    for (const name of readdirSync(path.join(dist, dir))) if (/\.(m?js)$/.test(name) && !kept[dir].has(name)) rmSync(path.join(dist, dir, name));
  }
  for (const [dir, chunks] of [["app", app], ["lib", lib]]) {
    for (const [name, chunk] of Object.entries(chunks)) writeFileSync(path.join(dist, dir, name), chunk.code);
  }
  writeFileSync(path.join(dist, "app/run-worker.js"), worker.outputFiles[0].text);
  return staticImports(app, lib);
}

/** The element's static import graph across the two folders' bundles, breadth first, as dist/ paths. */
function staticImports(app, lib) {
  const chunks = { app, lib };
  const out = [];
  const queue = ["app/attention-lab-element.js"];
  while (queue.length) {
    const file = queue.shift();
    const [dir, name] = file.split("/");
    const chunk = chunks[dir][name];
    if (!chunk) throw new Error(`dist: ${file} is imported but no bundle is named so`);
    for (const spec of chunk.imports) {
      const dep = path.posix.normalize(path.posix.join(dir, spec));
      if (dep === "app/attention-lab-element.js" || out.includes(dep)) continue;
      out.push(dep);
      queue.push(dep);
    }
  }
  return out;
}
