// The teaching page's HTTP server with no dependency but Node: what `npx attention-lab` (bin/attention-lab.mjs)
// runs from the installed package, and the one home of the page's response headers and command line,
// which npm start's server (scripts/serve.mjs, sirv with a build's held files) imports.
import { createReadStream, statSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";

/** The page's security headers: its own files only, no inline script, no remote origins.
 *  connect-src 'self' covers the WebAssembly binary, compiled while it streams in (instantiateStreaming). */
export const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

/** Cross-origin isolation (issue 21.2): with both, the page may share memory with its Workers
 *  (crossOriginIsolated, SharedArrayBuffer), so the facade loads the threaded core. require-corp
 *  holds every subresource to same-origin or CORP-marked: the page loads only its own files. */
export const ISOLATION_HEADERS = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

/** What the page and the widget load from web/ (web/wasm, the bindings' C++ source, stays out). */
export const PAGE_PARTS = ["index.html", "embed.html", "app", "lib", "vendor"];

/** Content types by extension: a module script or a .wasm must be sent as one (nosniff; instantiateStreaming). */
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * The command line (`--port N`, `--host ADDRESS`, `-h/--help`) read into {port, host} or {help: true};
 * the port is --port, else PORT, else `defaultPort` (0: a free one). Throws an Error whose message says
 * what is wrong and how to write it.
 */
export function parseCommandLine(args, env = process.env, defaultPort = "8080") {
  let values;
  try {
    ({ values } = parseArgs({ args, strict: true, allowPositionals: false, options: { port: { type: "string" }, host: { type: "string" }, help: { type: "boolean", short: "h" } } }));
  } catch (err) {
    throw new Error(err.message.replace(/\. To specify a positional argument.*$/s, "."));
  }
  if (values.help) return { help: true };
  const portText = values.port ?? env.PORT ?? defaultPort;
  const from = values.port !== undefined ? "--port" : env.PORT !== undefined ? "PORT" : "the default";
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) throw new Error(`${from} ${JSON.stringify(portText)} is not a port: give a whole number from 0 to 65535 (0 picks a free one)`);
  const host = values.host ?? "127.0.0.1";
  if (host.trim() === "") throw new Error("--host is empty: give an address such as 127.0.0.1 or 0.0.0.0");
  return { port: Number(portText), host };
}

/**
 * The file under `dir` that the URL path `pathname` names, or null: a page part (PAGE_PARTS) only, no
 * `..`, no hidden file; "/" is index.html and "/embed" embed.html.
 */
export function fileFor(dir, pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return null;
  const parts = decoded.split("/").filter((p) => p !== "");
  if (parts.some((p) => p === ".." || p === "." || p.startsWith("."))) return null;
  if (parts.length === 0) parts.push("index.html");
  if (parts.length === 1 && !parts[0].includes(".") && PAGE_PARTS.includes(`${parts[0]}.html`)) parts[0] += ".html";
  if (!PAGE_PARTS.includes(parts[0])) return null;
  const file = path.join(dir, ...parts);
  try {
    return statSync(file).isFile() ? file : null;
  } catch {
    return null;
  }
}

/** Answers one request from `dir`: GET and HEAD of a page file, with the page's headers; 404 and 405 as text. */
function answer(dir, req, res) {
  for (const [k, v] of Object.entries({ ...SECURITY_HEADERS, ...ISOLATION_HEADERS })) res.setHeader(k, v);
  const text = (status, body, extra = {}) => {
    res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", ...extra });
    res.end(body);
  };
  if (req.method !== "GET" && req.method !== "HEAD") return text(405, "Method not allowed", { Allow: "GET, HEAD" });
  const file = fileFor(dir, new URL(req.url, "http://host").pathname);
  if (file === null) return text(404, "Not found");
  const { size } = statSync(file);
  res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream", "Content-Length": size, "Cache-Control": "no-cache" });
  if (req.method === "HEAD") return res.end();
  createReadStream(file).on("error", () => res.destroy()).pipe(res);
}

/**
 * Serves the page's files of `dir` (a web/ folder: PAGE_PARTS) on host:port (0: a free one), with the
 * page's security headers and the two that make it cross-origin isolated (the core then runs on
 * threads). Resolves to {url, close()}; rejects with the listen error (EADDRINUSE...).
 */
export function servePage({ dir, port = 0, host = "127.0.0.1" }) {
  const server = http.createServer((req, res) => answer(dir, req, res));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      const shown = host.includes(":") ? `[${host}]` : host;
      resolve({ url: `http://${shown}:${actual}/`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
