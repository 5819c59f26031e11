// The page's server that the npm package ships (bin/page-server.mjs) and its command, npx attention-lab
// (bin/attention-lab.mjs), on this checkout's web/: only the page's files, each with its content type and
// the page's headers (security and cross-origin isolation), nothing above web/ or beside the page's parts;
// --help, a wrong argument, and a copy of the package without its built core each get a clear answer.
// tests/browser/element-package.test.mjs runs the command from the installed tarball in Chromium.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ISOLATION_HEADERS, PAGE_PARTS, SECURITY_HEADERS, fileFor, parseCommandLine, servePage } from "../../bin/page-server.mjs";
import { missingParts } from "../../bin/attention-lab.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const WEB = path.join(ROOT, "web");
const BIN = path.join(ROOT, "bin", "attention-lab.mjs");
const VERSION = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
const env = { ...process.env };
delete env.PORT;

test("a URL path names a file of the page's parts, or nothing: no .., no hidden file, nothing beside the parts", () => {
  assert.deepEqual(PAGE_PARTS, ["index.html", "embed.html", "app", "lib", "vendor"]);
  assert.equal(fileFor(WEB, "/"), path.join(WEB, "index.html"));
  assert.equal(fileFor(WEB, "/embed"), path.join(WEB, "embed.html"));
  assert.equal(fileFor(WEB, "/embed.html"), path.join(WEB, "embed.html"));
  assert.equal(fileFor(WEB, "/app/attention-lab-element.js"), path.join(WEB, "app", "attention-lab-element.js"));
  assert.equal(fileFor(WEB, "/lib/attention%2Dlab.js"), path.join(WEB, "lib", "attention-lab.js"), "percent-decoded");
  for (const refused of ["/wasm/bindings.cpp", "/../package.json", "/app/../../package.json", "/lib/%2e%2e/%2e%2e/package.json", "/app/..%2F..%2Fpackage.json", "/.git/config", "/app", "/lib/", "/app/%E0%A4%A", "/app/style.css%00.js", "/missing.html"]) {
    assert.equal(fileFor(WEB, refused), null, refused);
  }
});

test("the command line: a free port by default (or PORT), --port and --host checked; npm start's default stays 8080", () => {
  assert.deepEqual(parseCommandLine([], {}, "0"), { port: 0, host: "127.0.0.1" });
  assert.deepEqual(parseCommandLine([], { PORT: "9001" }, "0"), { port: 9001, host: "127.0.0.1" });
  assert.deepEqual(parseCommandLine([], {}), { port: 8080, host: "127.0.0.1" });
  assert.throws(() => parseCommandLine(["--port", "x"], {}, "0"), /^Error: --port "x" is not a port: give a whole number from 0 to 65535 \(0 picks a free one\)$/);
});

test("servePage: each file with its content type and the page's headers; 404 and 405 otherwise", async () => {
  const server = await servePage({ dir: WEB });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(server.url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<attention-lab url-state lean><\/attention-lab>/);
    for (const [k, v] of Object.entries({ ...SECURITY_HEADERS, ...ISOLATION_HEADERS })) assert.equal(page.headers.get(k), v, k);
    const types = {
      "app/attention-lab-element.js": "text/javascript; charset=utf-8",
      "app/style.css": "text/css; charset=utf-8",
      "lib/attention_core.wasm": "application/wasm",
      "lib/attention_core.mjs": "text/javascript; charset=utf-8",
      "embed.html": "text/html; charset=utf-8",
    };
    for (const [file, type] of Object.entries(types)) {
      const res = await fetch(`${server.url}${file}`);
      assert.equal(res.status, 200, file);
      assert.equal(res.headers.get("content-type"), type, file);
      assert.equal(Number(res.headers.get("content-length")), (await res.arrayBuffer()).byteLength, file);
    }
    const head = await fetch(`${server.url}lib/attention_core.wasm`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.ok(Number(head.headers.get("content-length")) > 100_000);
    const missing = await fetch(`${server.url}wasm/bindings.cpp`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get("cross-origin-embedder-policy"), "require-corp", "every answer carries the headers");
    const post = await fetch(server.url, { method: "POST", body: "x" });
    assert.deepEqual([post.status, post.headers.get("allow")], [405, "GET, HEAD"]);
  } finally {
    await server.close();
  }
});

test("npx attention-lab --help prints the usage and exits 0; a wrong argument names itself and exits 2", () => {
  const help = spawnSync(process.execPath, [BIN, "--help"], { encoding: "utf8", env });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: npx attention-lab \[--port N\] \[--host ADDRESS\]/);
  assert.match(help.stdout, /--port N +the port, 0 to 65535 \(default: a free one, or the PORT environment variable\)/);
  const wrong = spawnSync(process.execPath, [BIN, "--port", "70000"], { encoding: "utf8", env });
  assert.equal(wrong.status, 2);
  assert.equal(wrong.stdout, "");
  assert.equal(wrong.stderr, 'attention-lab: --port "70000" is not a port: give a whole number from 0 to 65535 (0 picks a free one)\nRun npx attention-lab --help for the options.\n');
});

test("npx attention-lab in a copy of the package without its built core says what is missing and exits 1", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-bin-"));
  try {
    mkdirSync(path.join(dir, "web", "app"), { recursive: true });
    writeFileSync(path.join(dir, "web", "index.html"), "");
    assert.deepEqual(missingParts(path.join(dir, "web")), ["web/embed.html", "web/lib", "web/vendor", "web/lib/attention-lab.js", "web/lib/attention_core.mjs", "web/lib/attention_core.wasm", "web/app/attention-lab-element.js"]);
    assert.deepEqual(missingParts(), [], "this checkout, built");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("npx attention-lab serves this checkout's page on a free port and prints its URL", async () => {
  const child = spawn(process.execPath, [BIN], { env, stdio: ["ignore", "pipe", "pipe"] });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        const m = new RegExp(`^attention-lab ${VERSION.replace(/\./g, "\\.")} is running at (http://127\\.0\\.0\\.1:\\d+/)\nTry: \\1\\?class=MultiHeadAttention&d_in=768`, "m").exec(out);
        if (m) resolve(m[1]);
      });
      child.on("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const res = await fetch(`${url}app/run-worker.js`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /import \{ loadAttentionLab \} from "\.\.\/lib\/attention-lab\.js"/);
  } finally {
    child.kill();
  }
});
