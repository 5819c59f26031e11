// npm's prepack hook (package.json "prepack"): refuses to pack a tree whose WebAssembly core is not
// built, so `npm pack` / `npm publish` never ship a package without its .wasm (they would, silently:
// "files" lists the two built files, and npm skips a listed file that is missing).
// It checks that web/lib/attention_core.mjs, attention_core.wasm, attention_core_fma.wasm and their lean
// twins (attention_core_lean.wasm, attention_core_lean_fma.wasm), and the
// threaded build's attention_core_mt.mjs, attention_core_mt.wasm, attention_core_mt_fma.wasm and its
// pthread worker (attention_core_mt.worker.js, .worker.cjs) exist, are not empty, are what the build
// makes (each .wasm starts with the WebAssembly magic, each .mjs exports createAttentionCore), and, when
// the tree has a build (build/wasm/), are the same bytes as it; and that the page's vendored GPT-2
// tokenizer (web/vendor/, which the build copies from node_modules) is there: the package ships the
// page and the element (npx attention-lab, import "attention-lab/element"), whose GPT-2 panel imports it.
// Usage: node scripts/prepack.mjs [root]   (exit 1 with the reason on stderr)
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The built files the package ships (package.json "files"), in the order their problems are listed. */
export const PACKED = [
  "attention_core.mjs", "attention_core.wasm", "attention_core_fma.wasm", "attention_core_lean.wasm", "attention_core_lean_fma.wasm",
  "attention_core_mt.mjs", "attention_core_mt.wasm", "attention_core_mt_fma.wasm", "attention_core_mt.worker.js", "attention_core_mt.worker.cjs",
];

const BUILD = "Run `npm run build` (or `bash scripts/build.sh`), then pack again.";

/** The reasons the tree at root cannot be packed (empty when it can). */
export function packProblems(root) {
  const problems = [];
  for (const name of PACKED) {
    const file = path.join(root, "web", "lib", name);
    const shown = `web/lib/${name}`;
    if (!existsSync(file)) {
      problems.push(`${shown} is missing: this tree is not built, and the package would have no WebAssembly core.`);
      continue;
    }
    const bytes = readFileSync(file);
    if (bytes.length === 0) {
      problems.push(`${shown} is empty (0 bytes): an interrupted build?`);
      continue;
    }
    if (name.endsWith(".wasm") && !bytes.subarray(0, 4).equals(Buffer.from([0x00, 0x61, 0x73, 0x6d]))) {
      problems.push(`${shown} is not a WebAssembly module (it does not start with \\0asm).`);
    }
    if (name.endsWith(".mjs") && !/\bexport default createAttentionCore\b/.test(bytes.toString("utf8"))) {
      problems.push(`${shown} is not Emscripten's glue for the core (it does not export createAttentionCore).`);
    }
    const built = path.join(root, "build", "wasm", name);
    if (existsSync(built) && statSync(built).isFile() && !readFileSync(built).equals(bytes)) {
      problems.push(`${shown} differs from build/wasm/${name}: the copy in web/lib is stale (the build copies it there).`);
    }
  }
  return problems;
}

/** The vendored files the page imports (scripts/vendor.mjs writes them), relative to web/. */
export const VENDORED = ["vendor/gpt-tokenizer/encoding/r50k_base.js", "vendor/gpt-tokenizer/bpeRanks/r50k_base.js"];

/** The reasons the page's own files (beside the core) cannot be packed: the vendored tokenizer missing. */
export function pageProblems(root) {
  return VENDORED.filter((f) => !existsSync(path.join(root, "web", f))).map((f) => `web/${f} is missing: the build copies the page's GPT-2 tokenizer there (node scripts/vendor.mjs).`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), ".."));
  const problems = [...packProblems(root), ...pageProblems(root)];
  if (problems.length > 0) {
    console.error(`prepack: refusing to pack attention-lab:\n${problems.map((p) => `  - ${p}`).join("\n")}\n${BUILD}`);
    process.exit(1);
  }
}
