// Serves the teaching page (web/) on 127.0.0.1 and prints its URL. `node scripts/serve.mjs --help` says how.
// Also importable: `startServer({port, host, dir, hold})` resolves to {url, close()} (used by the browser
// tests; `dir` another folder to serve with the same headers, e.g. dist/ for the bench's first view of
// it; `hold` files still being built, for npm start: scripts/start.mjs).
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sirv from "sirv";
import { ISOLATION_HEADERS, SECURITY_HEADERS, parseCommandLine as parsePageCommandLine } from "../bin/page-server.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "web");

// The page's headers and command line have one home, the server the npm package ships (npx attention-lab).
export { ISOLATION_HEADERS, SECURITY_HEADERS };

/**
 * A request for a file that `hold.held(pathname)` names waits for `hold.until` (a promise: the build
 * that writes the file) and is then served; if that build fails, it is answered 503 with the reason.
 */
function holding(hold, serve) {
  hold?.until.catch(() => {}); // a failed build is each held request's answer, not the process's end
  return (req, res, next) => {
    if (!hold) return serve(req, res, next);
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, "http://host").pathname);
    } catch {
      return serve(req, res, next); // not a path of any built file: sirv answers it
    }
    if (!hold.held(pathname)) return serve(req, res, next);
    hold.until.then(
      () => serve(req, res, next),
      (err) => {
        res.statusCode = 503;
        res.setHeader("Content-Type", "text/plain; charset=utf-8");
        res.end(`${pathname} was not built: ${err.message}`);
      },
    );
  };
}

export function startServer({ port = 8080, host = "127.0.0.1", dir = root, hold = null } = {}) {
  const assets = sirv(dir, {
    dev: true, // no caching: a rebuilt WASM module is served at once
    extensions: ["html"],
    setHeaders(res) {
      for (const [k, v] of Object.entries({ ...SECURITY_HEADERS, ...ISOLATION_HEADERS })) res.setHeader(k, v);
    },
  });
  const serve = holding(hold, assets);
  const server = http.createServer((req, res) =>
    serve(req, res, () => {
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

export const USAGE = `Usage: node scripts/serve.mjs [--port N] [--host ADDRESS]
       npm start [-- --port N]            (sets up and builds first)

Serves the teaching page and the <attention-lab> widget (the files of web/: index.html, embed.html,
app/, lib/ with the built WebAssembly core) over HTTP, with the page's security headers and the two
that make it cross-origin isolated (so the core runs on threads), and prints the URL. Build first (npm run build); the page keeps its state in the URL, e.g.
  http://127.0.0.1:8080/?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12

Options:
  --port N          the port, 0 to 65535 (default 8080, or the PORT environment variable; 0 picks a free one)
  --host ADDRESS    the address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)
  -h, --help        print this and exit

For dist/ (the same files, after npm run build), any static server works, e.g. python3 -m http.server -d dist.`;

/** The command line read into {port, host} or {help: true} (default port 8080); throws an Error whose message says what is wrong. */
export function parseCommandLine(args, env = process.env) {
  return parsePageCommandLine(args, env, "8080");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let options;
  try {
    options = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    console.error(`serve: ${err.message}\nRun node scripts/serve.mjs --help for the options.`);
    process.exit(2);
  }
  if (options.help) {
    console.log(USAGE);
    process.exit(0);
  }
  serveAndAnnounce(options);
}

/**
 * Starts the server for the command line's {port, host} (and `hold`, see startServer) and prints the
 * URL, or why it cannot listen and how to fix that (then exits 1). Resolves to the server.
 */
export function serveAndAnnounce({ port, host }, hold = null) {
  return startServer({ port, host, hold })
    .then((server) => {
      console.log(`attention-lab is running at ${server.url}`);
      console.log(`Try: ${server.url}?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123`);
      console.log("Press Ctrl+C to stop.");
      return server;
    })
    .catch((err) => {
      if (err.code === "EADDRINUSE") {
        console.error(`serve: port ${port} is in use. Run: npm start -- --port ${port + 1} (or --port 0 for a free one)`);
      } else if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN") {
        console.error(`serve: cannot listen on ${host} (${err.code}): give an address of this machine, e.g. --host 127.0.0.1`);
      } else console.error(err);
      process.exit(1);
    });
}
