// loadAttentionLab({wasmPaths}) in Node (issue 41, item 2): one location for every file of the core, a
// folder or a function from a file's name to its URL (sql.js's locateFile, onnxruntime-web's
// env.wasm.wasmPaths). Its refusals, before anything loads; a missing file's error naming the file
// asked for; the relaxed-SIMD twin falling back to the plain binary with a console note (a child
// process with --experimental-wasm-relaxed-simd); the threaded files found through it; and, in this
// process (node --test runs each file in one, so the first load happens here), a load through a
// function and the once-per-realm rule with it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AttentionError, loadAttentionLab } from "attention-lab";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const LIB = path.join(ROOT, "web", "lib");
const WASM = readFileSync(path.join(LIB, "attention_core.wasm"));

/** The AttentionError a call rejects with, as {code, slot, message, hint}. */
async function refusal(options) {
  const err = await loadAttentionLab(options).then(() => assert.fail("it loaded"), (e) => e);
  assert.ok(err instanceof AttentionError, String(err));
  return { code: err.code, slot: err.slot, message: err.message, hint: err.hint };
}

/** What a fresh Node process (with `flags`) loads with `options` (a JS expression): kernel, threads, the first outputs; and its stderr. */
async function child(options, flags = []) {
  const script = `
    import { loadAttentionLab } from "attention-lab";
    const lab = await loadAttentionLab(${options});
    const y = lab.run("SelfAttention_v2", { d_in: 3, d_out: 2 }, lab.seededTokens(4, 3, 7), { seed: 123, trace: false }).output;
    console.log(JSON.stringify({ kernel: lab.kernel, threads: lab.threads, hasCheckpoints: lab.hasCheckpoints, first: Array.from(y.data.slice(0, 4)) }));
    process.exit(0);`;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [...flags, "--input-type=module", "-e", script], { cwd: ROOT });
  return { ...JSON.parse(stdout), stderr };
}

describe("loadAttentionLab({wasmPaths})", () => {
  let server;
  let base;
  let dir;
  const served = [];
  before(async () => {
    // /lib/ serves web/lib; /plain/ only attention_core.wasm; anything else answers 404
    server = http.createServer((req, res) => {
      served.push(req.url);
      const [, folder, file] = req.url.match(/^\/(lib|plain)\/([\w.]+)$/) ?? [];
      const ok = folder === "lib" ? readdirSync(LIB).includes(file) : folder === "plain" && file === "attention_core.wasm";
      if (!ok) return res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      res.writeHead(200, { "content-type": file.endsWith(".wasm") ? "application/wasm" : "text/javascript" }).end(readFileSync(path.join(LIB, file)));
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${server.address().port}`;
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-wasm-paths-"));
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  test("what is not a folder ending in / or a function giving URLs is wasm_url naming wasmPaths, with the fix", async () => {
    const noSlash = await refusal({ wasmPaths: "https://cdn.example.test/attention-lab" });
    assert.deepEqual([noSlash.code, noSlash.slot], ["wasm_url", "wasmPaths"]);
    assert.equal(noSlash.message, 'wasmPaths "https://cdn.example.test/attention-lab" does not end with "/": it names the folder the .wasm files are in, and each file\'s name is added to it');
    assert.match(noSlash.hint, /^Pass "https:\/\/cdn\.example\.test\/attention-lab\/", or a function: \(file\) => `https:\/\/cdn\.example\.test\/attention-lab\/\$\{file\}`\.$/);
    assert.equal((await refusal({ wasmPaths: new URL("https://cdn.example.test/lib") })).code, "wasm_url", "a URL object without the final /");
    for (const wasmPaths of [3, "", "  ", {}, true, [`${base}/lib/`]]) {
      const r = await refusal({ wasmPaths });
      assert.deepEqual([r.code, r.slot], ["wasm_url", "wasmPaths"], String(wasmPaths));
      assert.match(r.message, /^wasmPaths must be a folder's URL ending in "\/" or a function from a file name to its URL, got /);
    }
    const throws = await refusal({ wasmPaths: () => { throw new Error("no CDN configured"); } });
    assert.deepEqual([throws.code, throws.slot, throws.message], ["wasm_url", "wasmPaths", "wasmPaths threw while locating attention_core.wasm (Error: no CDN configured)"]);
    const nothing = await refusal({ wasmPaths: () => undefined });
    assert.deepEqual([nothing.code, nothing.slot, nothing.message], ["wasm_url", "wasmPaths", 'wasmPaths("attention_core.wasm") must return a URL or a non-empty string, got undefined']);
    const getter = await refusal({ wasmPaths: { get href() { throw new Error("no"); } } });
    assert.deepEqual([getter.code, getter.slot], ["unreadable_argument", "wasmPaths"]);
  });

  test("one source at a time: wasmPaths with wasmUrl or wasmBinary is wasm_options", async () => {
    const two = await refusal({ wasmUrl: `${base}/lib/attention_core.wasm`, wasmPaths: `${base}/lib/` });
    assert.deepEqual([two.code, two.slot, two.message], ["wasm_options", "wasmPaths", "loadAttentionLab was given both wasmUrl and wasmPaths"]);
    const three = await refusal({ wasmUrl: `${base}/lib/attention_core.wasm`, wasmBinary: WASM, wasmPaths: `${base}/lib/` });
    assert.deepEqual([three.code, three.slot, three.message], ["wasm_options", "wasmPaths", "loadAttentionLab was given wasmUrl, wasmBinary and wasmPaths together"]);
    assert.match(three.hint, /^Pass one: wasmPaths for the folder every \.wasm is served from/);
  });

  test("a missing file is wasm_fetch naming the file asked for and its URL or path, under wasmPaths", async () => {
    const empty = await refusal({ wasmPaths: `${base}/empty/`, threads: 1 });
    assert.deepEqual([empty.code, empty.slot], ["wasm_fetch", "wasmPaths"]);
    assert.equal(empty.message, `attention_core.wasm could not be fetched: attention_core.wasm from wasmPaths (${base}/empty/attention_core.wasm) answered 404 Not Found`);
    assert.match(empty.hint, /^Check that wasmPaths serves attention_core\.wasm: copy node_modules\/attention-lab\/web\/lib\/attention_core\* there/);
    // in Node a path (no scheme) is a folder on disk, resolved against the working directory
    const nowhere = path.join(dir, "nowhere");
    const disk = await refusal({ wasmPaths: `${nowhere}/`, threads: 1 });
    assert.deepEqual([disk.code, disk.slot, disk.message], ["wasm_fetch", "wasmPaths", `attention_core.wasm could not be read from ${path.join(nowhere, "attention_core.wasm")} (ENOENT)`]);
    const lean = await refusal({ wasmPaths: `${base}/empty/`, threads: 1, checkpoints: false });
    assert.match(lean.message, /^attention_core\.wasm could not be fetched: /, "the lean load tried its binary, then the full one: the error names the last");
    assert.match(lean.hint, /\(Tried first: attention_core_lean\.wasm\.\)$/);
  });

  test("where the engine has relaxed SIMD, a missing attention_core_fma.wasm falls back to attention_core.wasm with a console note naming it", async () => {
    const plain = await child(`{ wasmPaths: "${base}/plain/", threads: 1 }`, ["--experimental-wasm-relaxed-simd"]);
    const reference = await child("{ threads: 1 }");
    assert.deepEqual({ ...plain, stderr: "" }, { ...reference, stderr: "" }, "the plain binary's bits");
    assert.equal(plain.kernel, "simd128");
    assert.equal(plain.stderr.trim(), `attention-lab: attention_core_fma.wasm could not be fetched: attention_core_fma.wasm from wasmPaths (${base}/plain/attention_core_fma.wasm) answered 404 Not Found; attention_core.wasm runs instead: products as a multiply then an add (lab.kernel "simd128"), the same results within 1e-6.`);
    const fma = await child(`{ wasmPaths: "${base}/lib/", threads: 1 }`, ["--experimental-wasm-relaxed-simd"]);
    assert.deepEqual([fma.kernel, fma.stderr], ["relaxed_madd", ""], "the twin, where it is");
    // neither there: the error names the plain binary, the last asked for, and says the twin was tried first
    const script = `import { loadAttentionLab } from "attention-lab";
      loadAttentionLab({ wasmPaths: "${base}/empty/", threads: 1 }).catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message, hint: e.hint })));`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--experimental-wasm-relaxed-simd", "--input-type=module", "-e", script], { cwd: ROOT });
    const none = JSON.parse(stdout);
    assert.equal(none.code, "wasm_fetch");
    assert.equal(none.message, `attention_core.wasm could not be fetched: attention_core.wasm from wasmPaths (${base}/empty/attention_core.wasm) answered 404 Not Found`);
    assert.match(none.hint, /\(Tried first: attention_core_fma\.wasm\.\)$/);
  });

  test("a folder on disk keeps threads and the lean binary: the threaded glue, its worker and binary, or the lean binary, all from there", async () => {
    const folder = path.join(dir, "copy");
    mkdirSync(folder);
    for (const name of readdirSync(LIB).filter((n) => n.startsWith("attention_core"))) copyFileSync(path.join(LIB, name), path.join(folder, name));
    const threaded = await child(`{ wasmPaths: ${JSON.stringify(`${folder}/`)}, threads: 2 }`);
    const reference = await child("{ threads: 1 }");
    assert.deepEqual([threaded.threads, threaded.kernel, threaded.first], [2, "simd128", reference.first]);
    const lean = await child(`{ wasmPaths: new URL(${JSON.stringify(`file://${folder}/`)}), threads: 1, checkpoints: false }`);
    assert.deepEqual([lean.threads, lean.hasCheckpoints, lean.first], [1, false, reference.first]);
  });

  test("a function from each file's name to its URL loads the core; the same source again gives the same lab, another one is wasm_loaded", async () => {
    served.length = 0;
    const asked = [];
    const locate = (file) => {
      asked.push(file);
      return new URL(file, `${base}/lib/`);
    };
    const lab = await loadAttentionLab({ wasmPaths: locate });
    // Node cannot import the threaded glue from http:, so the load runs on one thread, from attention_core.wasm
    assert.equal(lab.threads, 1);
    assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).headDim, 64);
    assert.ok(served.includes("/lib/attention_core.wasm"), served.join(" "));
    assert.equal(asked[0], "attention_core.wasm", "asked at once, for the key that tells another wasmPaths from this one");
    assert.deepEqual([...new Set(asked)].sort(), ["attention_core.wasm", "attention_core_mt.mjs", "attention_core_mt.wasm", "attention_core_mt.worker.cjs"]);
    assert.equal(await loadAttentionLab({ wasmPaths: (file) => `${base}/lib/${file}` }), lab, "another function giving the same URLs");
    assert.equal(await loadAttentionLab({ wasmPaths: `${base}/lib/` }), lab, "the folder those URLs are in");
    assert.equal(await loadAttentionLab(), lab);
    const other = await refusal({ wasmPaths: `${base}/plain/` });
    assert.deepEqual([other.code, other.slot], ["wasm_loaded", "wasmPaths"]);
    assert.equal(other.message, `the core is already loaded from wasmPaths (a function: attention_core.wasm -> "${base}/lib/attention_core.wasm"); it is loaded once, so it cannot also be loaded from wasmPaths "${base}/plain/"`);
  });
});
