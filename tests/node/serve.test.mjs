// scripts/serve.mjs as a reader runs it (npm start ends with it): --help prints the usage and exits 0;
// a wrong argument says which and how to fix it, and exits non-zero without starting a server;
// --port/--host are honoured and the page is served with its security headers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SECURITY_HEADERS, parseCommandLine } from "../../scripts/serve.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SERVE = path.join(ROOT, "scripts", "serve.mjs");
const env = { ...process.env };
delete env.PORT;
const serve = (args, extra = {}) => spawnSync(process.execPath, [SERVE, ...args], { encoding: "utf8", timeout: 20_000, env: { ...env, ...extra } });

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
