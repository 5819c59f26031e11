// Writes dist/: the teaching page, the embed example, the widget and the library with its .wasm, ready
// to copy to any static host (no server side; the files fetch nothing from other origins). Run by
// scripts/build.sh after the WebAssembly build and the vendored tokenizer.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PAGE_PARTS } from "../bin/page-server.mjs";
import { bundleDist } from "./dist-bundle.mjs";
import { withPreloads } from "./modulepreload.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WEB = path.join(ROOT, "web");
const DIST = path.join(ROOT, "dist");
/** What the page and the widget load (npx attention-lab serves the same); web/wasm (the bindings' C++ source) stays out. */
const PARTS = PAGE_PARTS;

for (const part of PARTS) {
  if (!existsSync(path.join(WEB, part))) throw new Error(`dist: web/${part} is missing (run scripts/build.sh)`);
}
rmSync(DIST, { recursive: true, force: true });
mkdirSync(DIST);
for (const part of PARTS) cpSync(path.join(WEB, part), path.join(DIST, part), { recursive: true });
// the library's CommonJS build (npm pack writes it, for Jest) is for Node only
rmSync(path.join(DIST, "lib", "attention-lab.cjs"), { force: true });

// A static host that cannot send Cross-Origin-Opener-Policy / -Embedder-Policy (GitHub Pages, say):
// coi-serviceworker (the pinned npm package) registers itself as a service worker that adds both to
// every response of the site, then reloads once, so the page is cross-origin isolated and the core runs
// on threads. A classic script of the site's own (the CSP's script-src 'self' and worker-src 'self'
// allow it); where the page is isolated already (npm start's server, a host that sends the headers) it
// does nothing. The pages of web/ do not carry it: npm start sends the headers itself.
export const COI_SCRIPT = "coi-serviceworker.js";
export const COI_TAG = `<script src="${COI_SCRIPT}"></script>`;
// (minified like the site's own scripts, its licence comment kept; a classic script: no name changes at its top level)
const { transformSync } = await import("esbuild");
const coi = readFileSync(path.join(ROOT, "node_modules", "coi-serviceworker", "coi-serviceworker.js"), "utf8");
writeFileSync(path.join(DIST, COI_SCRIPT), transformSync(coi, { loader: "js", minify: true, target: "es2022", legalComments: "inline" }).code);
for (const page of ["index.html", "embed.html"]) {
  const file = path.join(DIST, page);
  const html = readFileSync(file, "utf8");
  const anchor = '  <script src="app/file-notice.js" defer></script>';
  if (!html.includes(anchor)) throw new Error(`dist: ${page} has no ${anchor.trim()} to put ${COI_TAG} before`);
  writeFileSync(file, html.replace(anchor, `  ${COI_TAG}\n${anchor}`));
}
// For hosts, the page's and the library's JavaScript bundled by what loads together and minified
// (scripts/dist-bundle.mjs), and the style sheets minified: a reader's first view fetches a few files
// instead of ~50 (bench target 4a). The vendored tokenizer is left as it was published; the Node-only
// pthread worker (.cjs) is not served to browsers. The pages' modulepreload lists then name the
// bundles the widget's entry imports.
const modules = await bundleDist(WEB, DIST);
for (const page of ["index.html", "embed.html"]) {
  const file = path.join(DIST, page);
  writeFileSync(file, withPreloads(readFileSync(file, "utf8"), modules, page));
}
/** Classic scripts (not modules): their top-level names are globals, kept as they are. */
const CLASSIC = new Set(["file-notice.js", "attention_core_mt.worker.js"]);
let before = 0;
let after = 0;
for (const dir of ["app", "lib"]) {
  for (const name of readdirSync(path.join(DIST, dir))) {
    const loader = /\.(m?js)$/.test(name) ? "js" : name.endsWith(".css") ? "css" : null;
    if (loader === null) continue;
    const file = path.join(DIST, dir, name);
    const source = readFileSync(file, "utf8");
    const format = loader === "js" && !CLASSIC.has(name) ? "esm" : undefined;
    const { code } = transformSync(source, { loader, format, minify: true, target: loader === "js" ? "es2022" : undefined, legalComments: "inline" });
    writeFileSync(file, code);
    before += Buffer.byteLength(source);
    after += Buffer.byteLength(code);
  }
}
console.log(`dist: ${PARTS.join(", ")}, ${COI_SCRIPT} -> ${path.relative(ROOT, DIST)}/ (JavaScript bundled, JavaScript and CSS minified: ${(before / 1000).toFixed(0)} -> ${(after / 1000).toFixed(0)} KB)`);
