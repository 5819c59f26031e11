// Copies the browser files the page needs from pinned npm packages into web/vendor/ (git-ignored), so
// the page works offline from any static host: no CDN, nothing fetched beyond its own files.
//   gpt-tokenizer: GPT-2's BPE (r50k_base) as ES modules, with its vocabulary, for the GPT-2 panel.
// Only the files that esm/encoding/r50k_base.js imports (followed transitively) are copied, keeping
// their relative layout; the `//# sourceMappingURL` lines are dropped (the maps are not copied).
// Usage: node scripts/vendor.mjs   (run by scripts/build.sh)
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGES = [
  { name: "gpt-tokenizer", dir: "esm", entries: ["encoding/r50k_base.js"], extra: ["LICENSE"] },
];

/** Relative specifiers of the static imports and re-exports at the start of a line (rolldown's output). */
function imports(source) {
  const specs = [];
  for (const m of source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']+)["']|^import\s*["'](\.[^"']+)["']/gm)) specs.push(m[1] ?? m[2]);
  return specs;
}

for (const pkg of PACKAGES) {
  const from = path.join(ROOT, "node_modules", pkg.name);
  const to = path.join(ROOT, "web", "vendor", pkg.name);
  const { version } = JSON.parse(await readFile(path.join(from, "package.json"), "utf8"));
  await rm(to, { recursive: true, force: true });
  const seen = new Set();
  const queue = [...pkg.entries];
  while (queue.length) {
    const rel = queue.pop();
    if (seen.has(rel)) continue;
    seen.add(rel);
    const source = await readFile(path.join(from, pkg.dir, rel), "utf8");
    for (const spec of imports(source)) queue.push(path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec)));
    await mkdir(path.dirname(path.join(to, rel)), { recursive: true });
    await writeFile(path.join(to, rel), source.replace(/^\/\/# sourceMappingURL=.*$/m, ""));
  }
  for (const file of pkg.extra) await copyFile(path.join(from, file), path.join(to, file));
  console.log(`vendor: ${pkg.name} ${version} -> web/vendor/${pkg.name}/ (${seen.size} modules)`);
}
