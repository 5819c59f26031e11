// scripts/serve.mjs as a reader runs it (npm start ends with it): --help prints the usage and exits 0;
// a wrong argument says which and how to fix it, and exits non-zero without starting a server;
// --port/--host are honoured and the page is served with its security headers. npm start
// (scripts/start.mjs) reads the same command line before it builds anything, and its server holds a
// request for a binary still being built until that build ends: then it is served, or answered 503
// with the reason.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SECURITY_HEADERS, parseCommandLine, startServer } from "../../scripts/serve.mjs";
import { builtLater } from "../../scripts/start.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SERVE = path.join(ROOT, "scripts", "serve.mjs");
const env = { ...process.env };
delete env.PORT;
const START = path.join(ROOT, "scripts", "start.mjs");
const serve = (args, extra = {}, script = SERVE) => spawnSync(process.execPath, [script, ...args], { encoding: "utf8", timeout: 20_000, env: { ...env, ...extra } });

test("--help and -h print the usage (port, host, what is served) and exit 0", () => {
  for (const flag of ["--help", "-h"]) {
    const r = serve([flag]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.match(r.stdout, /^Usage: node scripts\/serve\.mjs \[--port N\] \[--host ADDRESS\]/);
    assert.match(r.stdout, /--port N .*default 8080.*PORT.*0 picks a free one/);
    assert.match(r.stdout, /--host ADDRESS .*default 127\.0\.0\.1/);
    assert.match(r.stdout, /the files of web\/: index\.html, embed\.html,/);
    assert.match(r.stdout, /\?class=MultiHeadAttention&d_in=768/);
  }
});

test("a wrong argument names itself and the fix, and exits 2 without serving", () => {
  const cases = [
    [["--prot", "9000"], {}, /serve: Unknown option '--prot'/],
    [["--port", "abc"], {}, /serve: --port "abc" is not a port: give a whole number from 0 to 65535/],
    [["--port", "70000"], {}, /serve: --port "70000" is not a port/],
    [["--port", "80.5"], {}, /serve: --port "80.5" is not a port/],
    [["--port"], {}, /serve: Option '--port <value>' argument missing/],
    [["9000"], {}, /serve: Unexpected argument '9000'/],
    [["--host", ""], {}, /serve: --host is empty/],
    [[], { PORT: "eighty" }, /serve: PORT "eighty" is not a port/],
  ];
  for (const [args, extra, message] of cases) {
    const r = serve(args, extra);
    assert.equal(r.status, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message, args.join(" "));
    assert.match(r.stderr, /Run node scripts\/serve\.mjs --help for the options\./);
    assert.equal(r.stdout, "", `${args.join(" ")} started nothing`);
  }
});

test("the command line is read into a port and a host: --port over PORT over 8080", () => {
  assert.deepEqual(parseCommandLine([], {}), { port: 8080, host: "127.0.0.1" });
  assert.deepEqual(parseCommandLine([], { PORT: "9001" }), { port: 9001, host: "127.0.0.1" });
  assert.deepEqual(parseCommandLine(["--port", "0", "--host", "0.0.0.0"], { PORT: "9001" }), { port: 0, host: "0.0.0.0" });
  assert.deepEqual(parseCommandLine(["--port=9002"], {}), { port: 9002, host: "127.0.0.1" });
  assert.deepEqual(parseCommandLine(["--help", "--port", "x"], {}), { help: true });
});

test("--port 0 --host 127.0.0.1 serves the page with its security headers and prints its URL", async () => {
  const child = spawn(process.execPath, [SERVE, "--port", "0", "--host", "127.0.0.1"], { env, stdio: ["ignore", "pipe", "pipe"] });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        const m = out.match(/attention-lab is running at (http:\/\/127\.0\.0\.1:\d+\/)/);
        if (m) resolve(m[1]);
      });
      child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${out}`)));
    });
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<attention-lab/);
    assert.equal(res.headers.get("content-security-policy"), SECURITY_HEADERS["Content-Security-Policy"]);
  } finally {
    child.kill();
  }
});

test("npm start's script reads the command line first: --help prints serve's usage, a wrong argument exits 2 before any build", () => {
  const help = serve(["--help"], {}, START);
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: node scripts\/serve\.mjs \[--port N\] \[--host ADDRESS\]/);
  const wrong = serve(["--port", "abc"], {}, START);
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /^start: --port "abc" is not a port: give a whole number from 0 to 65535/);
  assert.match(wrong.stderr, /Run npm start -- --help for the options\./);
  assert.equal(wrong.stdout, "", "nothing was built");
});

test("npm start serves the first view's files at once and holds the binaries built after it", () => {
  for (const file of ["attention_core.mjs", "attention_core_lean.wasm", "attention_core_lean_fma.wasm", "attention-lab.js"]) assert.equal(builtLater(`/lib/${file}`), false, file);
  for (const file of ["attention_core.wasm", "attention_core_fma.wasm", "attention_core_mt.mjs", "attention_core_mt.wasm", "attention_core_mt_fma.wasm", "attention_core_mt.worker.js"]) {
    assert.equal(builtLater(`/lib/${file}`), true, file);
  }
  assert.equal(builtLater("/index.html"), false);
  assert.equal(builtLater("/app/lib/attention_core.wasm"), false);
});

test("a held file is served once its build ends, or answered 503 with the reason; other files at once", async () => {
  const held = (p) => p === "/lib/attention-lab.d.ts";
  let finish;
  const building = new Promise((resolve) => (finish = resolve));
  const server = await startServer({ port: 0, hold: { held, until: building } });
  try {
    const waiting = fetch(`${server.url}lib/attention-lab.d.ts`);
    const other = await fetch(`${server.url}lib/attention-lab.js`);
    assert.equal(other.status, 200, "a file not held is served while the build runs");
    const early = await Promise.race([waiting.then(() => "answered"), new Promise((r) => setTimeout(() => r("held"), 300))]);
    assert.equal(early, "held");
    finish();
    const res = await waiting;
    assert.equal(res.status, 200);
    assert.match(await res.text(), /export function loadAttentionLab/);
    assert.equal((await fetch(`${server.url}lib/%E0%A4%A`)).status, 404, "a path that does not decode is sirv's to answer");
  } finally {
    await server.close();
  }
  const failed = await startServer({ port: 0, hold: { held, until: Promise.reject(new Error("scripts/build.sh --rest-of-page failed (exit 2)")) } });
  try {
    const res = await fetch(`${failed.url}lib/attention-lab.d.ts`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), "/lib/attention-lab.d.ts was not built: scripts/build.sh --rest-of-page failed (exit 2)");
    assert.equal((await fetch(failed.url)).status, 200);
  } finally {
    await failed.close();
  }
});
