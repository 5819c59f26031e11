// Writes dist/: the teaching page, the embed example, the widget and the library with its .wasm, ready
// to copy to any static host (no server side; the files fetch nothing from other origins). Run by
// scripts/build.sh after the WebAssembly build and the vendored tokenizer.
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WEB = path.join(ROOT, "web");
const DIST = path.join(ROOT, "dist");
/** What the page and the widget load; web/wasm (the bindings' C++ source) stays out. */
const PARTS = ["index.html", "embed.html", "app", "lib", "vendor"];

for (const part of PARTS) {
  if (!existsSync(path.join(WEB, part))) throw new Error(`dist: web/${part} is missing (run scripts/build.sh)`);
}
rmSync(DIST, { recursive: true, force: true });
mkdirSync(DIST);
for (const part of PARTS) cpSync(path.join(WEB, part), path.join(DIST, part), { recursive: true });
console.log(`dist: ${PARTS.join(", ")} -> ${path.relative(ROOT, DIST)}/`);
