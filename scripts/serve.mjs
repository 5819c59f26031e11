// Serves the teaching page (web/) on 127.0.0.1 and prints its URL.
// Usage: node scripts/serve.mjs [--port N]   (default port 8080; 0 picks a free one)
// Also importable: `startServer({port})` resolves to {url, close()} (used by the browser tests).
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sirv from "sirv";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "web");

/** The page's security headers: its own files only, no inline script, no remote origins.
 *  connect-src 'self' covers the WebAssembly binary, compiled while it streams in (instantiateStreaming). */
export const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

export function startServer({ port = 8080, host = "127.0.0.1" } = {}) {
  const assets = sirv(root, {
    dev: true, // no caching: a rebuilt WASM module is served at once
    extensions: ["html"],
    setHeaders(res) {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    },
  });
  const server = http.createServer((req, res) =>
    assets(req, res, () => {
      res.statusCode = 404;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end("Not found");
    }),
  );
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ url: `http://${host}:${actual}/`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf("--port");
  const port = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.PORT ?? 8080);
  startServer({ port })
    .then(({ url }) => {
      console.log(`attention-lab is running at ${url}`);
      console.log(`Try: ${url}?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123`);
      console.log("Press Ctrl+C to stop.");
    })
    .catch((err) => {
      if (err.code === "EADDRINUSE") {
        console.error(`Port ${port} is in use. Run: PORT=8081 npm start`);
      } else console.error(err);
      process.exit(1);
    });
}
