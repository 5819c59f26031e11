// Writes web/lib/attention-lab.cjs: the Node entry (attention-lab.node.js, with the browser module,
// its helpers and the single-thread glue) bundled as one CommonJS file, for loaders that cannot
// require an ES module: Jest's default CommonJS mode, on Node < 24.9 (Jest's own module system has no
// require(esm) there). package.json's exports give it under "require" inside "node", after
// "module-sync": Node itself (>= 20.19: require of an ES module) takes the ES module for import and
// require alike, so a process never holds two copies of the lab. Run by scripts/build.sh.
// Usage: node scripts/commonjs.mjs   (from any folder)
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const OUT = path.join(ROOT, "web", "lib", "attention-lab.cjs");

const BANNER = `// attention-lab for CommonJS (Jest's default mode): web/lib/attention-lab.node.js and what it imports,
// bundled by scripts/commonjs.mjs. Node imports and requires web/lib/attention-lab.node.js itself.
var __attentionLabUrl = require("node:url").pathToFileURL(__filename).href;`;

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: ["web/lib/attention-lab.node.js"],
  outfile: OUT,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  // this file's own URL, so that the .wasm files beside it are found (import.meta is empty in CommonJS)
  define: { "import.meta.url": "__attentionLabUrl" },
  banner: { js: BANNER },
  minify: true,
  legalComments: "none",
  logLevel: "silent",
});
if (result.warnings.length > 0) throw new Error(`commonjs: esbuild warned:\n${result.warnings.map((w) => w.text).join("\n")}`);

