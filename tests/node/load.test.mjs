// loadAttentionLab's options (wasmUrl, wasmBinary) and its once-per-realm rule, in a process of its
// own (node --test runs each file in one) so that the first load happens here. The tests run in
// order: bad options and failed loads first (none of them is remembered), then a load from a served
// URL, then the second calls.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { AttentionError, loadAttentionLab } from "attention-lab";

const WASM = readFileSync(new URL("../../web/lib/attention_core.wasm", import.meta.url));
/** A valid WebAssembly module, but not this build's: no imports, no exports. */
const OTHER_BUILD = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

/** The AttentionError a call rejects with, as {code, slot}, its message and hint (and it must reject, not throw). */
async function refusal(options) {
  let promise;
  assert.doesNotThrow(() => {
    promise = loadAttentionLab(options);
  });
  const err = await promise.then(() => assert.fail("it loaded"), (e) => e);
  assert.ok(err instanceof AttentionError, String(err));
  return { code: err.code, slot: err.slot, message: err.message, hint: err.hint };
}

describe("loadAttentionLab({wasmUrl, wasmBinary})", () => {
  let server;
  let base;
  const served = [];
  before(async () => {
    server = http.createServer((req, res) => {
      served.push(req.url);
      if (req.url === "/core.wasm") {
        res.writeHead(200, { "content-type": "application/wasm" }).end(WASM);
      } else if (req.url === "/fallback.wasm") {
        res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>");
      } else if (req.url === "/other.wasm") {
        res.writeHead(200, { "content-type": "application/wasm" }).end(OTHER_BUILD);
      } else if (req.url === "/octets.wasm") {
        res.writeHead(200, { "content-type": "application/octet-stream" }).end(WASM);
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      }
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  test("options that are not its own are refused, naming the option", async () => {
    const string = await refusal("core.wasm");
    assert.deepEqual([string.code, string.slot], ["bad_options", "loadAttentionLab"]);
    assert.match(string.hint, /\{wasmUrl: .*\}, \{wasmBinary: bytes\}, or nothing/);
    const unknown = await refusal({ wasmFile: "/core.wasm" });
    assert.deepEqual([unknown.code, unknown.slot], ["unknown_option", "wasmFile"]);
    assert.match(unknown.message, /no option "wasmFile"/);
    assert.equal(unknown.hint, "The options of loadAttentionLab are wasmUrl, wasmBinary, wasmPaths, threads, checkpoints.");
    const near = await refusal({ wasmPath: "/lib/" });
    assert.deepEqual([near.code, near.slot, near.message], ["unknown_option", "wasmPath", 'loadAttentionLab has no option "wasmPath": did you mean wasmPaths?']);
    const typo = await refusal({ wasmUlr: "/core.wasm" });
    assert.deepEqual([typo.code, typo.slot, typo.message], ["unknown_option", "wasmUlr", 'loadAttentionLab has no option "wasmUlr": did you mean wasmUrl?']);
    const both = await refusal({ wasmUrl: `${base}/core.wasm`, wasmBinary: WASM });
    assert.deepEqual([both.code, both.slot], ["wasm_options", "wasmBinary"]);
    assert.match(both.message, /both wasmUrl and wasmBinary/);
    const getter = await refusal({ get wasmUrl() { throw new Error("no"); } });
    assert.equal(getter.code, "unreadable_argument");
  });

  test("a wasmUrl that is not a URL or a non-empty string is wasm_url", async () => {
    for (const wasmUrl of [3, "", "  ", {}, { href: 3 }, { href: "" }, [`${base}/core.wasm`], true]) {
      const r = await refusal({ wasmUrl });
      assert.deepEqual([r.code, r.slot], ["wasm_url", "wasmUrl"], String(wasmUrl));
      assert.match(r.message, /^wasmUrl must be a URL or a non-empty string, got /);
    }
  });

  test("wasmBinary that is not the bytes of a WebAssembly module is wasm_binary, with what it got", async () => {
    const notBytes = await refusal({ wasmBinary: "attention_core.wasm" });
    assert.deepEqual([notBytes.code, notBytes.slot], ["wasm_binary", "wasmBinary"]);
    assert.match(notBytes.message, /must be an ArrayBuffer or a typed array or DataView .* got "attention_core\.wasm"/);
    assert.match((await refusal({ wasmBinary: [0, 97, 115, 109] })).message, /got an object/);
    const empty = await refusal({ wasmBinary: new Uint8Array(0) });
    assert.match(empty.message, /is not a WebAssembly module: 0 bytes, not 00 61 73 6d/);
    const html = await refusal({ wasmBinary: new TextEncoder().encode("<!doctype html><title>404</title>") });
    assert.match(html.message, /33 bytes starting 3c 21 64 6f, not 00 61 73 6d/);
    assert.match(html.hint, /an HTML page/);
    const detached = WASM.buffer.slice(WASM.byteOffset, WASM.byteOffset + WASM.length);
    structuredClone(detached, { transfer: [detached] });
    assert.match((await refusal({ wasmBinary: detached })).message, /got a detached buffer/);
    const cut = await refusal({ wasmBinary: WASM.subarray(0, 4096) });
    assert.equal(cut.code, "wasm_binary");
    assert.match(cut.message, /^wasmBinary \(4096 bytes\) is not a WebAssembly module that compiles \(CompileError: /);
    // a valid module, but not this build's: no imports, no exports
    const other = await refusal({ wasmBinary: OTHER_BUILD });
    assert.deepEqual([other.code, other.slot], ["wasm_binary", "wasmBinary"]);
    assert.match(other.message, /^the WebAssembly module from wasmBinary \(8 bytes\) does not fit attention_core\.mjs/);
  });

  test("a wasmUrl that cannot be fetched is wasm_fetch naming it; one that serves a page is wasm_binary", async () => {
    const missing = await refusal({ wasmUrl: `${base}/nowhere/attention_core.wasm` });
    assert.deepEqual([missing.code, missing.slot], ["wasm_fetch", "wasmUrl"]);
    assert.equal(missing.message, `attention_core.wasm could not be fetched: wasmUrl "${base}/nowhere/attention_core.wasm" answered 404 Not Found`);
    const closed = await refusal({ wasmUrl: "http://127.0.0.1:9/attention_core.wasm" });
    assert.equal(closed.code, "wasm_fetch");
    assert.match(closed.message, /could not be fetched from wasmUrl "http:\/\/127\.0\.0\.1:9\/attention_core\.wasm" \(TypeError: fetch failed\)/);
    const page = await refusal({ wasmUrl: new URL("/fallback.wasm", base) });
    assert.equal(page.code, "wasm_binary");
    assert.match(page.message, /^what wasmUrl ".*\/fallback\.wasm" answered is not a WebAssembly module that compiles/);
    assert.match(page.hint, /fallback page answers 200/);
    const file = await refusal({ wasmUrl: new URL("./no-such/attention_core.wasm", import.meta.url) });
    assert.deepEqual([file.code, file.slot], ["wasm_fetch", "wasmUrl"]);
    assert.match(file.message, /could not be read from .*no-such\/attention_core\.wasm \(ENOENT\)/);
  });

  test("a wasmUrl whose .wasm is not this build's is refused under wasmUrl, naming it (once reported as wasmBinary)", async () => {
    const served = await refusal({ wasmUrl: `${base}/other.wasm` });
    assert.deepEqual([served.code, served.slot], ["wasm_binary", "wasmUrl"]);
    assert.match(served.message, new RegExp(`^the WebAssembly module from wasmUrl "${base}/other\\.wasm" does not fit attention_core\\.mjs`));
    assert.match(served.hint, /^Serve this package's own attention_core\.wasm/);
    // a file: URL, which the Node entry reads from disk: its failures stay wasmUrl's too
    const json = new URL("../fixtures/bad_inputs.json", import.meta.url);
    const notWasm = await refusal({ wasmUrl: json });
    assert.deepEqual([notWasm.code, notWasm.slot], ["wasm_binary", "wasmUrl"]);
    assert.match(notWasm.message, new RegExp(`^wasmUrl "${json.href.replace(/[.]/g, "\\.")}" is not a WebAssembly module: \\d+ bytes starting 7b `));
    const both = await refusal({ wasmUrl: json, wasmBinary: WASM });
    assert.deepEqual([both.code, both.slot], ["wasm_options", "wasmBinary"], "a file: wasmUrl and wasmBinary are still two sources");
  });

  test("after those failures (none remembered) it loads from a served URL; the same URL, or nothing, gives the same lab; another source is wasm_loaded", async () => {
    served.length = 0;
    const first = loadAttentionLab({ wasmUrl: `${base}/core.wasm` });
    const during = loadAttentionLab();  // while it loads: the same load
    const lab = await first;
    assert.equal(await during, lab);
    assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).headDim, 64);
    assert.equal(await loadAttentionLab(), lab);
    assert.equal(await loadAttentionLab({ wasmUrl: `${base}/core.wasm` }), lab);
    assert.deepEqual(served, ["/core.wasm"]);  // fetched once
    const again = await refusal({ wasmBinary: WASM });
    assert.deepEqual([again.code, again.slot], ["wasm_loaded", "wasmBinary"]);
    assert.equal(again.message, `the core is already loaded from wasmUrl "${base}/core.wasm"; it is loaded once, so it cannot also be loaded from wasmBinary (${WASM.length} bytes)`);
    assert.match(again.hint, /on the first call of loadAttentionLab \(before any <attention-lab> element connects\)/);
    assert.equal((await refusal({ wasmUrl: `${base}/octets.wasm` })).code, "wasm_loaded");
    // bad options are still bad options once loaded
    assert.equal((await refusal({ wasmUrl: 3 })).code, "wasm_url");
  });

  test("in a process of its own: a .wasm served as application/octet-stream (no streaming compile) and wasmBinary each load and run", async () => {
    const script = (options) => `
      import { loadAttentionLab } from "attention-lab";
      import { readFileSync } from "node:fs";
      const lab = await loadAttentionLab(${options});
      const y = lab.run("SelfAttention_v2", { d_in: 3, d_out: 2 }, lab.seededTokens(4, 3, 7), { seed: 123, trace: false }).output;
      console.log(JSON.stringify({ shape: y.shape, first: Array.from(y.data.slice(0, 2)) }));`;
    const run = async (options) => JSON.parse((await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script(options)], { cwd: new URL("../..", import.meta.url) })).stdout);
    const lab = await loadAttentionLab();
    const y = lab.run("SelfAttention_v2", { d_in: 3, d_out: 2 }, lab.seededTokens(4, 3, 7), { seed: 123, trace: false }).output;
    const want = { shape: y.shape, first: Array.from(y.data.slice(0, 2)) };
    assert.deepEqual(await run(`{ wasmUrl: "${base}/octets.wasm" }`), want);
    assert.deepEqual(await run(`{ wasmBinary: new Uint8Array(readFileSync("web/lib/attention_core.wasm")).buffer }`), want);
  });

  test("the browser module imported by path in Node reads no global to guess: it fetches its file: URL, and says to import the package instead", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", `
      import { loadAttentionLab } from "./web/lib/attention-lab.js";
      const e = await loadAttentionLab().then(() => null, (err) => err);
      console.log(JSON.stringify({ code: e?.code, message: e?.message, hint: e?.hint }));`], { cwd: new URL("../..", import.meta.url) });
    const e = JSON.parse(stdout);
    assert.equal(e.code, "wasm_fetch");
    assert.match(e.message, /^attention_core\.wasm could not be fetched from attention_core\.wasm beside attention-lab\.js \(file:\/\/.*\/web\/lib\/attention_core\.wasm\) \(TypeError: fetch failed\)$/);
    assert.match(e.hint, /In Node, import "attention-lab" itself \(its Node entry reads the file from disk\)/);
  });
});
