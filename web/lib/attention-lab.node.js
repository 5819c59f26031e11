// attention-lab in Node: package.json's exports pick this file under the "node" condition (Node,
// and tools that run in it such as vitest and Jest, whatever globals they add: jsdom's `window`
// changes nothing). It is ./attention-lab.js, the browser module, with Node's facts handed to its
// loadAttentionLab: the machine's cores, and the files read from disk (Node's fetch cannot read a
// file: URL): a file: wasmUrl or wasmPaths, and by default the folder of this file, or, when this
// file was bundled (esbuild --platform=node) and the .wasm files were not copied beside the bundle,
// the attention-lab package that Node resolves from the bundle's folder. Only this file imports
// node: modules.
import { access, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { AttentionError, loadAttentionLab as loadFromBrowserModule } from "./attention-lab.js";

export * from "./attention-lab.js";

/** The key under which ./attention-lab.js takes Node's facts (see loadAttentionLab there). */
const NODE = Symbol.for("attention-lab.node");

/**
 * This file's URL: import.meta.url, or in a CommonJS bundle of it (esbuild --format=cjs leaves
 * import.meta empty) the bundle's own file.
 */
function ownUrl() {
  if (typeof import.meta.url === "string") return import.meta.url;
  // eslint-disable-next-line no-undef -- CommonJS's module-scope name, defined where import.meta is not
  return typeof __filename === "string" ? pathToFileURL(__filename).href : pathToFileURL(path.join(process.cwd(), "attention-lab.js")).href;
}

/** A file: URL's path for a message (the URL itself when it names no local path). */
function filePath(url) {
  try {
    return fileURLToPath(url);
  } catch {
    return String(url);
  }
}

/** A location a caller gave (wasmPaths): a URL when it has a scheme, else a path resolved against the working directory. */
function toUrl(href) {
  if (/^[a-z][a-z0-9+.-]+:/i.test(href)) return new URL(href);  // two letters at least: C:\ is a path
  const folder = /[/\\]$/.test(href);
  return pathToFileURL(`${path.resolve(href)}${folder ? path.sep : ""}`);
}

const exists = (url) => access(url).then(() => true, () => false);

/** The folder found: beside this file, or the installed package's (remembered once found). */
let found = null;

/**
 * The folder holding attention_core.wasm: this file's own (the package, or a bundle with the .wasm
 * files copied beside it), else the package Node resolves from there (a bundle run in the project it
 * was built in). AttentionError "wasm_fetch" naming the folders tried and the fix when neither has it.
 */
async function folder() {
  if (found !== null) return found;
  const here = ownUrl();
  const candidates = [new URL(".", here)];
  try {
    const installed = createRequire(here).resolve("attention-lab/package.json");
    candidates.push(pathToFileURL(path.join(path.dirname(installed), "web", "lib", path.sep)));
  } catch {
    // no attention-lab package where this file is: only its own folder
  }
  const tried = [];
  for (const candidate of candidates) {
    if (tried.includes(filePath(candidate))) continue;
    if (await exists(new URL("attention_core.wasm", candidate))) return (found = candidate);
    tried.push(filePath(candidate));
  }
  const bundled = !(await exists(new URL("./attention-lab.node.js", new URL(".", here))));
  if (!bundled) {
    throw new AttentionError({ code: "wasm_fetch", message: `attention_core.wasm is missing from ${tried[0]}: this copy of attention-lab has no WebAssembly core`, hint: "Reinstall the package (npm install attention-lab); in a checkout, build it (npm run build). Or pass loadAttentionLab({wasmPaths}) with the folder that holds the .wasm files." });
  }
  throw new AttentionError({
    code: "wasm_fetch",
    message: `attention_core.wasm could not be found for the bundle ${filePath(here)}: attention-lab was bundled into it, and ${tried.length === 1 ? `${tried[0]} does not hold the .wasm files` : `neither ${tried.join(" nor ")} holds the .wasm files`}`,
    hint: `Copy them beside the bundle (cp node_modules/attention-lab/web/lib/attention_core* ${tried[0]}), or leave the package out of the bundle (esbuild --external:attention-lab), or pass loadAttentionLab({wasmPaths: "/path/to/attention-lab/web/lib/"}).`,
  });
}

const node = {
  cores: availableParallelism(),
  readFile: async (url) => {
    const bytes = await readFile(new URL(url));
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  },
  filePath,
  toUrl,
  folder,
};

/** Node's loadAttentionLab: the browser module's, with Node's facts (same options, same errors). */
export function loadAttentionLab(options) {
  if (options === undefined || options === null) return loadFromBrowserModule({ [NODE]: node });
  if (typeof options !== "object") return loadFromBrowserModule(options);  // "bad_options"
  let opts;
  try {
    opts = { ...options };
  } catch {
    return loadFromBrowserModule(options);  // a throwing getter: reported as "unreadable_argument" there
  }
  return loadFromBrowserModule({ ...opts, [NODE]: node });
}
