#!/usr/bin/env node
// npx attention-lab (package.json "bin"): serves the teaching page from the installed package on
// 127.0.0.1 and a free port, and prints its URL. Node alone: no build, no Emscripten, no network (the
// package holds the page, the widget, the library and its built WebAssembly binaries). The server sends
// the page's security headers and the two that make it cross-origin isolated, so the core runs on threads.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PAGE_PARTS, parseCommandLine, servePage } from "./page-server.mjs";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WEB = path.join(PACKAGE, "web");

export const USAGE = `Usage: npx attention-lab [--port N] [--host ADDRESS]

Serves the teaching page of attention-lab (index.html; embed.html shows the <attention-lab> element in
a page) from this installed package, with the headers that make it cross-origin isolated (so the
WebAssembly core runs on threads), and prints the URL. Nothing is built and nothing is fetched from the
network. The page keeps its state in the URL, e.g.
  ?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12

Options:
  --port N          the port, 0 to 65535 (default: a free one, or the PORT environment variable)
  --host ADDRESS    the address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)
  -h, --help        print this and exit`;

/** The page's files this copy of the package lacks (web/lib's core among them), as paths under the package. */
export function missingParts(web = WEB) {
  const wanted = [...PAGE_PARTS, "lib/attention-lab.js", "lib/attention_core.mjs", "lib/attention_core.wasm", "app/attention-lab-element.js"];
  return wanted.filter((p) => !existsSync(path.join(web, p))).map((p) => `web/${p}`);
}

async function main() {
  let options;
  try {
    options = parseCommandLine(process.argv.slice(2), process.env, "0");
  } catch (err) {
    console.error(`attention-lab: ${err.message}\nRun npx attention-lab --help for the options.`);
    process.exit(2);
  }
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const missing = missingParts();
  if (missing.length > 0) {
    console.error(`attention-lab: this copy of the package has no ${missing.join(", ")}: reinstall it (npm install attention-lab), or in a checkout run npm start.`);
    process.exit(1);
  }
  const { version } = JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8"));
  let server;
  try {
    server = await servePage({ dir: WEB, ...options });
  } catch (err) {
    if (err.code === "EADDRINUSE") console.error(`attention-lab: port ${options.port} is in use. Run: npx attention-lab --port 0 (a free one)`);
    else if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN") console.error(`attention-lab: cannot listen on ${options.host} (${err.code}): give an address of this machine, e.g. --host 127.0.0.1`);
    else console.error(`attention-lab: ${err.message}`);
    process.exit(1);
  }
  console.log(`attention-lab ${version} is running at ${server.url}`);
  console.log(`Try: ${server.url}?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123`);
  console.log("Press Ctrl+C to stop.");
}

// Run as a command (npx and npm link it as node_modules/.bin/attention-lab: a symbolic link), not when imported.
if (process.argv[1] && realpathSync(path.resolve(process.argv[1])) === fileURLToPath(import.meta.url)) await main();
