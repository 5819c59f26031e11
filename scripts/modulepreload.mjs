// node scripts/modulepreload.mjs [--check]: the <link rel="modulepreload"> lines of web/index.html and
// web/embed.html, one per module of the widget's static import graph (web/app/attention-lab-element.js
// and every module it imports, statically, transitively; dynamic import()s load later by design). A
// module script's imports are found only once it has arrived, so without them the browser fetches the
// graph level by level (five levels deep: ~0.2 s of a slow machine's first view); with them, all at
// once. Written between the markers below; --check (npm run lint) fails when a page's list is stale.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "web");
const ENTRY = "app/attention-lab-element.js";
const PAGES = ["index.html", "embed.html"];
const BEGIN = "  <!-- modulepreload: the widget's static imports (scripts/modulepreload.mjs writes these) -->\n";
const END = "  <!-- /modulepreload -->\n";
const ENTRY_TAG = `  <script type="module" src="${ENTRY}"></script>\n`;

/** The relative specifiers a module imports statically (import ... from "./x", import "./x", export ... from "./x"). */
export function staticImports(source) {
  const out = [];
  const re = /^\s*(?:import|export)\s+(?:[^"'();]*?\sfrom\s+)?["'](\.{1,2}\/[^"']+)["']/gm;
  for (const m of source.matchAll(re)) out.push(m[1]);
  return out;
}

/**
 * The entry's static import graph below it, as paths relative to web/, in the order first met (breadth
 * first). A module the build writes (lib/attention_core.mjs, Emscripten's glue: it imports nothing) is
 * listed whether or not it is built yet: lint runs before the build on a fresh clone.
 */
export function importGraph(entry = ENTRY) {
  const seen = new Set([entry]);
  const queue = [entry];
  const out = [];
  while (queue.length) {
    const file = queue.shift();
    const full = path.join(WEB, file);
    if (!existsSync(full)) continue;
    for (const spec of staticImports(readFileSync(full, "utf8"))) {
      const dep = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
      if (seen.has(dep)) continue;
      seen.add(dep);
      out.push(dep);
      queue.push(dep);
    }
  }
  return out;
}

/** `html` with its modulepreload block (after the entry's script tag) listing `modules`. */
export function withPreloads(html, modules, page) {
  const block = BEGIN + modules.map((m) => `  <link rel="modulepreload" href="${m}">\n`).join("") + END;
  const start = html.indexOf(BEGIN);
  if (start >= 0) {
    const end = html.indexOf(END, start);
    if (end < 0) throw new Error(`modulepreload: ${page} has ${BEGIN.trim()} without ${END.trim()}`);
    return html.slice(0, start) + block + html.slice(end + END.length);
  }
  if (!html.includes(ENTRY_TAG)) throw new Error(`modulepreload: ${page} has no ${ENTRY_TAG.trim()} to put the list after`);
  return html.replace(ENTRY_TAG, ENTRY_TAG + block);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes("--check");
  const modules = importGraph();
  const stale = [];
  for (const page of PAGES) {
    const file = path.join(WEB, page);
    const html = readFileSync(file, "utf8");
    const next = withPreloads(html, modules, page);
    if (next === html) continue;
    if (check) stale.push(page);
    else writeFileSync(file, next);
  }
  if (stale.length) {
    console.error(`modulepreload: ${stale.join(", ")} do not list the widget's ${modules.length} static imports; run node scripts/modulepreload.mjs`);
    process.exit(1);
  }
  console.log(`modulepreload: web/${PAGES.join(", web/")} ${check ? "list" : "now list"} the widget's ${modules.length} static imports`);
}
